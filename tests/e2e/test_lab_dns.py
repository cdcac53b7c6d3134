"""Cluster DNS end to end on a 1-node lab (``pykubelet lab up --nodes 1``): a ClusterFirst
pod's resolv.conf names the kube-dns Service (10.96.0.10), which node 1's control plane
serves through the node's service proxy, so ``nslookup kubernetes.default.svc.cluster.local``
in the pod answers the ``kubernetes`` Service's ClusterIP (issue 20, item 3).

Marker ``root``: it builds a lab (namespaces, bridges, runc containers)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
LAB = "dnse2e"
IMAGE = "localhost/busybox:latest"


def _run(env: dict[str, str], *args: str, check: bool = True,
         input: str | None = None) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(args), capture_output=True, text=True, env=env, input=input,
                         timeout=300)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n"
                             f"{res.stderr}")
    return res


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    kubeconfig = tmp_path_factory.mktemp("dnse2e") / "kubeconfig"
    env = dict(os.environ, KUBECONFIG=str(kubeconfig),
               KUBECACHEDIR=str(kubeconfig.parent / "cache"))
    _run(env, PYKUBELET, "lab", "down", "--name", LAB, check=False)
    try:
        _run(env, PYKUBELET, "lab", "up", "--nodes", "1", "--name", LAB)
        yield env
    finally:
        down = _run(env, PYKUBELET, "lab", "down", "--name", LAB, check=False)
        assert down.returncode == 0, down.stderr


def _json(env: dict[str, str], *args: str) -> Any:
    res = _run(env, "kubectl", "get", *args, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else {}


def test_pod_resolves_the_kubernetes_service(env: dict[str, str]) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dnsclient"},
           "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
               "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
               "command": ["sleep", "3600"]}]}}
    _run(env, "kubectl", "create", "-f", "-", input=json.dumps(pod))
    end = time.monotonic() + 120
    while _json(env, "pod", "dnsclient").get("status", {}).get("phase") != "Running":
        assert time.monotonic() < end, "the pod never ran"
        time.sleep(0.5)
    end = time.monotonic() + 60
    while not [a for s in _json(env, "endpoints", "kube-dns", "-n", "kube-system")
               .get("subsets") or [] for a in s.get("addresses") or []]:
        assert time.monotonic() < end, "kube-dns never had endpoints"
        time.sleep(0.5)
    conf = _run(env, "kubectl", "exec", "dnsclient", "--", "cat", "/etc/resolv.conf").stdout
    assert "nameserver 10.96.0.10" in conf, conf
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in conf, conf
    # busybox's nslookup asks for the name as given (no search list): the full name
    got = _run(env, "kubectl", "exec", "dnsclient", "--", "nslookup",
               "kubernetes.default.svc.cluster.local")
    answer = got.stdout.split("Name:", 1)[-1]
    assert "kubernetes.default.svc.cluster.local" in answer, got.stdout
    assert "Address: 10.96.0.1" in answer, got.stdout
