"""The shipped examples load: the node config strictly, the manifests as static pods."""

from __future__ import annotations

from pathlib import Path

from pykubelet.config import load_config
from pykubelet.kubelet.static_pods import read_static_pods

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_node_config_example():
    cfg = load_config(EXAMPLES / "node-config.yaml")
    assert cfg.uses_embedded_runtime
    assert cfg.staticPodPath == "/etc/pykubelet/manifests"


def test_static_pod_examples():
    pods, errors = read_static_pods(str(EXAMPLES / "static-pods"), "node1")
    assert errors == []
    assert sorted(p.name for p in pods) == ["batch-node1", "web-node1"]
    web = next(p for p in pods if p.name == "web-node1")
    assert web.spec.containers[0].readiness_probe is not None
    assert all(c.image_pull_policy == "IfNotPresent" for p in pods for c in p.all_containers())
