"""The shipped examples load: the node config strictly, the manifests as static pods."""

from __future__ import annotations

from pathlib import Path

from pykubelet.config import load_config
from pykubelet.kubelet.pod.static_pods import read_static_pods

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


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


def test_example_network_is_found_with_what_install_sh_installs():
    """examples/cni/10-pkdemo.conflist (the main job's network) is a valid default network,
    and each plugin it names is found along the example config's cniBinDir: pycni's in
    /opt/cni/bin (scripts/install.sh), portmap in /usr/lib/cni (containernetworking-plugins)."""
    from pycni import defaults, invoke
    from pycni.conf import load_conf_dir

    net, warnings = load_conf_dir(str(EXAMPLES / "cni"))
    assert warnings == []
    assert [p["type"] for p in net.plugins] == ["pycni-bridge", "portmap"]
    dirs = defaults.split_path(load_config(EXAMPLES / "node-config.yaml").cniBinDir)
    found = {p["type"]: invoke.find_plugin(p["type"], dirs) for p in net.plugins}
    found["host-local"] = invoke.find_plugin(net.plugins[0]["ipam"]["type"], dirs)
    assert found == {"pycni-bridge": "/opt/cni/bin/pycni-bridge",
                     "portmap": "/usr/lib/cni/portmap",
                     "host-local": "/opt/cni/bin/pycni-host-local"}
