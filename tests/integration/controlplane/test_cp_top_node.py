"""Resource metrics on a real node (marker root: runc, namespaces, a bridge): the agent's
/metrics/resource shows a busy container's CPU counter rising and its working set, read
from the cgroups runc made; the control plane scrapes the node (metrics-server's job) and
``kubectl top`` (the real kubectl on PATH) and ``pykubectl top`` print the same tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for
from node_process import IMAGE, NodeProcess, namespace_for, node_cluster
from prometheus_client.parser import text_string_to_metric_families

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

PYKUBECTL = [sys.executable, "-m", "pykubelet.cli.kubectl.main"]
BUSY = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "busy", "labels": {"app": "b"}},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [
            # a busy loop held to a fifth of a core (CFS quota): frugal on a shared host
            {"name": "spin", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
             "command": ["sh", "-c", "while :; do :; done"],
             "resources": {"limits": {"cpu": "200m", "memory": "64Mi"}}},
            {"name": "idle", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
             "command": ["sleep", "3600"]}]}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[ControlPlaneProcess, NodeProcess]]:
    from pykubelet.kubelet.agent import host_ips

    # the control plane reaches the node's server at the address it registers (see
    # test_cp_debug): its serving certificate must name it
    node_ip = host_ips()[0]
    with node_cluster(tmp_path_factory.mktemp("ktop"), "ktop-node1", 13,
                      cp_args=["--tls-san", node_ip],
                      extra_config={"nodeIP": node_ip}) as both:
        yield both


@pytest.fixture(scope="module")
def busy(cluster: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    cp, _node = cluster
    with namespace_for(cp, request, "ktop") as ns:
        cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(BUSY))
        try:
            wait_for(lambda: json.loads(cp.kubectl("get", "pod", "busy", "-n", ns, "-o",
                                                   "json").stdout)
                     .get("status", {}).get("phase") == "Running", timeout=60,
                     what="busy Running")
        except AssertionError:
            print(cp.kubectl("get", "pod", "busy", "-n", ns, "-o", "yaml").stdout)
            raise
        yield ns


def _samples(node: NodeProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], Any]:
    url = f"http://127.0.0.1:{node.healthz_port}/metrics/resource"
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_metrics_resource_from_the_cgroups(cluster: Any, busy: str) -> None:
    _cp, node = cluster
    spin = (("container", "spin"), ("namespace", busy), ("pod", "busy"))
    first = _samples(node)
    time.sleep(2)
    second = _samples(node)
    cpu0 = first[("container_cpu_usage_seconds_total", spin)]
    cpu1 = second[("container_cpu_usage_seconds_total", spin)]
    assert cpu1.timestamp > cpu0.timestamp
    rate = (cpu1.value - cpu0.value) / float(cpu1.timestamp - cpu0.timestamp)
    assert 0.05 < rate < 0.35, rate  # about the 200m quota
    assert second[("container_memory_working_set_bytes", spin)].value > 0
    pod = (("namespace", busy), ("pod", "busy"))
    assert second[("pod_cpu_usage_seconds_total", pod)].value >= cpu1.value
    start = second[("container_start_time_seconds", spin)].value
    assert time.time() - 300 < start <= time.time()
    assert second[("node_cpu_usage_seconds_total", ())].value > cpu1.value
    assert second[("node_memory_working_set_bytes", ())].value > 0
    assert second[("resource_scrape_error", ())].value == 0


def _top(cp: ControlPlaneProcess, program: list[str], *args: str
         ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KUBECONFIG=str(cp.kubeconfig),
               KUBECACHEDIR=str(cp.root.parent / "kubectl-cache"))
    return subprocess.run([*program, "top", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_kubectl_top_and_pykubectl_top(cluster: Any, busy: str) -> None:
    cp, node = cluster
    wait_for(lambda: _top(cp, ["kubectl"], "pods", "-n", busy).returncode == 0, timeout=60,
             what="kubectl top pods to answer")
    for args in (("pods", "-n", busy, "--containers"), ("nodes",), ("pods", "-A")):
        for _ in range(3):  # a scrape between the two commands changes the figures
            want = _top(cp, ["kubectl"], *args)
            got = _top(cp, PYKUBECTL, *args)
            if got.stdout == want.stdout:
                break
        assert want.returncode == 0, want.stderr
        assert (got.returncode, got.stdout) == (0, want.stdout), (got.stderr, want.stdout)
    rows = {ln.split()[1]: ln.split() for ln in _top(cp, ["kubectl"], "pods", "-n", busy,
                                                     "--containers").stdout.splitlines()[1:]}
    assert 50 <= int(rows["spin"][2].rstrip("m")) <= 350, rows
    assert int(rows["idle"][2].rstrip("m")) < 20, rows
    [header, line] = _top(cp, ["kubectl"], "nodes").stdout.splitlines()
    assert header.split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert line.split()[0] == node.name
    assert "<unknown>" not in line
