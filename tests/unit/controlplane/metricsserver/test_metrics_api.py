"""metrics.k8s.io served by a live control plane whose scraper reads canned
/metrics/resource texts: discovery lists the group, NodeMetrics and PodMetrics list and
get with label selectors and namespaces, a missing one is metrics-server's NotFound, and
nothing is scraped until the API is asked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cp_live import LiveAPI

T0 = 1_700_000_000_000  # ms


class FakeNodes:
    """/metrics/resource of node ``mx-node``: 0.5 core busy on the node, 0.1 in pod web."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, node: str) -> str:
        assert node == "mx-node"
        self.calls += 1
        t = T0 + self.calls * 1000
        return (f"node_cpu_usage_seconds_total {100 + self.calls * 0.5} {t}\n"
                f"node_memory_working_set_bytes 1073741824 {t}\n"
                + "".join(
                    f'container_cpu_usage_seconds_total{{container="app",namespace="mx",'
                    f'pod="{pod}"}} {self.calls * 0.1} {t}\n'
                    f'container_memory_working_set_bytes{{container="app",namespace="mx",'
                    f'pod="{pod}"}} 2097152 {t}\n'
                    for pod in ("web", "db")))


@pytest.fixture(scope="module")
def fake(api: LiveAPI) -> Iterator[FakeNodes]:
    scraper = api.cp.api.metrics_api.scraper  # type: ignore[union-attr]
    fake = FakeNodes()
    scraper.fetch, scraper.pair_gap = fake, 0.0
    token = api.node_token("mx-node")
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "mx-node", "labels": {"role": "worker"}}}
    assert api.call("POST", "/api/v1/nodes", node, token=token).status == 201
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}],
                        "allocatable": {"cpu": "2", "memory": "4Gi"},
                        "capacity": {"cpu": "4", "memory": "8Gi"}}}
    reply = api.call("PATCH", "/api/v1/nodes/mx-node/status", ready, token=token,
                     content_type="application/merge-patch+json")
    assert reply.status == 200, reply.body
    assert api.call("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mx"}}).status == 201
    for name, tier in (("web", "front"), ("db", "back")):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "labels": {"tier": tier}},
               "spec": {"containers": [{"name": "app", "image": "busybox"}]}}
        assert api.call("POST", "/api/v1/namespaces/mx/pods", pod).status == 201
    try:
        yield fake
    finally:
        api.call("DELETE", "/api/v1/namespaces/mx")
        api.call("DELETE", "/api/v1/nodes/mx-node")


def test_discovery_lists_the_group(api: LiveAPI) -> None:
    groups = api.call("GET", "/apis").json()["groups"]
    assert {"name": "metrics.k8s.io",
            "versions": [{"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}],
            "preferredVersion": {"groupVersion": "metrics.k8s.io/v1beta1",
                                 "version": "v1beta1"}} in groups
    agg = api.call("GET", "/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    assert "metrics.k8s.io" in [g["metadata"]["name"] for g in agg.json()["items"]]
    rl = api.call("GET", "/apis/metrics.k8s.io/v1beta1").json()
    assert [r["name"] for r in rl["resources"]] == ["nodes", "pods"]
    assert api.call("GET", "/apis/metrics.k8s.io").json()["name"] == "metrics.k8s.io"


def test_nothing_is_scraped_until_asked(api: LiveAPI, fake: FakeNodes) -> None:
    assert fake.calls == 0
    assert not api.cp.api.metrics_api.scraper.active()  # type: ignore[union-attr]


def test_node_metrics(api: LiveAPI, fake: FakeNodes) -> None:
    reply = api.call("GET", "/apis/metrics.k8s.io/v1beta1/nodes")
    assert reply.status == 200, reply.body
    body = reply.json()
    assert body["kind"] == "NodeMetricsList"
    [item] = [i for i in body["items"] if i["metadata"]["name"] == "mx-node"]
    assert item["usage"] == {"cpu": "500m", "memory": "1Gi"}
    assert item["window"] == "1s"
    assert item["metadata"]["labels"] == {"role": "worker"}
    assert fake.calls == 2  # the first request scraped twice for a rate
    one = api.call("GET", "/apis/metrics.k8s.io/v1beta1/nodes/mx-node").json()
    assert one["kind"] == "NodeMetrics"
    assert fake.calls == 2  # fresh within the resolution: no scrape
    none = api.call("GET", "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=role%3Dmaster")
    assert none.json()["items"] == []


def test_pod_metrics(api: LiveAPI, fake: FakeNodes) -> None:
    body = api.call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/mx/pods").json()
    assert body["kind"] == "PodMetricsList"
    assert sorted(i["metadata"]["name"] for i in body["items"]) == ["db", "web"]
    web = next(i for i in body["items"] if i["metadata"]["name"] == "web")
    assert web["containers"] == [{"name": "app", "usage": {"cpu": "100m", "memory": "2Mi"}}]
    assert web["metadata"]["namespace"] == "mx"
    sel = api.call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/mx/pods"
                   "?labelSelector=tier%3Dfront").json()
    assert [i["metadata"]["name"] for i in sel["items"]] == ["web"]
    every = api.call("GET", "/apis/metrics.k8s.io/v1beta1/pods").json()
    assert {"web", "db"} <= {i["metadata"]["name"] for i in every["items"]}
    other = api.call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods").json()
    assert other["items"] == []


def test_missing_metrics_are_not_found(api: LiveAPI, fake: FakeNodes) -> None:
    reply = api.call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/mx/pods/nope")
    assert reply.status == 404
    assert reply.json()["message"] == 'podmetrics.metrics.k8s.io "nope" not found'
    reply = api.call("GET", "/apis/metrics.k8s.io/v1beta1/nodes/nope")
    assert reply.json()["message"] == 'nodemetrics.metrics.k8s.io "nope" not found'


def test_only_get_and_list(api: LiveAPI, fake: FakeNodes) -> None:
    reply = api.call("DELETE", "/apis/metrics.k8s.io/v1beta1/nodes/mx-node")
    assert reply.status == 405
    assert api.call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/mx/nodes").status == 404


def _run(api: LiveAPI, program: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    kubeconfig = api.cp.kubeconfig_path
    env = dict(os.environ, KUBECONFIG=str(kubeconfig),
               KUBECACHEDIR=str(Path(kubeconfig).parent / "kube-cache"))
    return subprocess.run([*program, *args], capture_output=True, text=True, env=env,
                          timeout=60)


PYKUBECTL = [sys.executable, "-m", "pykubelet.cli.kubectl.main"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
@pytest.mark.parametrize("args", [
    ("top", "nodes", "-l", "role=worker"),
    ("top", "node", "mx-node", "--show-capacity"),
    ("top", "pods", "-n", "mx"),
    ("top", "pods", "-n", "mx", "--containers", "--sort-by", "memory"),
    ("top", "pod", "web", "-n", "mx", "--no-headers"),
    ("top", "pods", "-n", "mx", "-l", "tier=back"),
])
def test_pykubectl_top_prints_what_kubectl_top_prints(api: LiveAPI, fake: FakeNodes,
                                                       args: tuple[str, ...]) -> None:
    want = _run(api, ["kubectl"], *args)
    assert want.returncode == 0, want.stderr
    assert "mx-node" in want.stdout or "web" in want.stdout or "db" in want.stdout
    got = _run(api, PYKUBECTL, *args)
    assert (got.returncode, got.stdout) == (0, want.stdout), got.stderr


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
def test_errors_in_kubectls_words(api: LiveAPI, fake: FakeNodes) -> None:
    for args in (("top", "pods", "-n", "default"), ("top", "pod", "nope", "-n", "mx")):
        want = _run(api, ["kubectl"], *args)
        got = _run(api, PYKUBECTL, *args)
        assert (got.returncode, got.stdout, got.stderr) == (
            want.returncode, want.stdout, want.stderr), args


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
def test_without_the_group_both_say_the_api_is_not_available(
        api: LiveAPI, fake: FakeNodes, tmp_path: Path) -> None:
    server = api.cp.api
    assert server is not None
    saved, server.metrics_api = server.metrics_api, None
    try:
        env = dict(os.environ, KUBECONFIG=str(api.cp.kubeconfig_path),
                   KUBECACHEDIR=str(tmp_path))
        outs = [subprocess.run([*prog, "top", "nodes"], capture_output=True, text=True,
                               env=env, timeout=60) for prog in (["kubectl"], PYKUBECTL)]
    finally:
        server.metrics_api = saved
    assert outs[0].returncode == outs[1].returncode == 1
    assert outs[0].stderr == outs[1].stderr == "error: Metrics API not available\n"
