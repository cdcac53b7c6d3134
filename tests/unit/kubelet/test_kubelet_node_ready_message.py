"""The node's Ready=False message says what upstream's kubelet says: a runtime whose
network is not ready is "container runtime network not ready: NetworkReady=false
reason:... message:..." (kubelet's runtime state errors, RuntimeCondition's String), not
"container runtime is down", which kubelet keeps for a runtime that does not answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import Pod
from pykubelet.client.bootstrap import NodeCredentials
from pykubelet.config import KubeletConfig
from pykubelet.controlplane.pki import PKI
from pykubelet.kubelet.agent import Kubelet
from pykubelet.kubelet.cluster import node_status
from pykubelet.kubelet.cluster.node import APINode
from pykubelet.kubelet.cri.runtime_service import CRICallError
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService

CNI_MESSAGE = "Network plugin returns error: cni plugin not initialized"


class NoCgroups:
    def ensure(self, pod: Pod) -> str:
        return ""

    def remove(self, uid: str) -> None:
        pass


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[APINode, FakeRuntimeService]]:
    runtime = FakeRuntimeService()
    config = KubeletConfig(nodeName="n1", rootDir=str(tmp_path / "root"), staticPodPath="",
                           podLogsDir=str(tmp_path / "logs"), healthzPort=0)
    k = Kubelet(config, runtime, pod_cgroups=NoCgroups(), memory_capacity=1 << 30,
                node_ips=["192.0.2.1"])
    k.pleg.healthy = lambda: True  # type: ignore[method-assign]  # never started here
    pki = PKI(tmp_path / "pki")
    paths = pki.issue("kubelet", "system:node:n1", dns=["n1"], ips=["127.0.0.1"])
    creds = NodeCredentials("https://127.0.0.1:1", "t", pki.ca_pem, paths.cert, paths.key)
    api = APINode(k, creds, address="127.0.0.1", kubelet_version="v0", server_port=0)
    try:
        yield api, runtime
    finally:
        k.stop()
        api.server.loop.close()  # never started


def ready(api: APINode) -> dict[str, str]:
    return node_status.conditions(api._readings())[-1]


def conditions(runtime_ok: bool, network_ok: bool) -> pb.StatusResponse:
    return pb.StatusResponse(status=pb.RuntimeStatus(conditions=[
        pb.RuntimeCondition(type="RuntimeReady", status=runtime_ok,
                            reason="" if runtime_ok else "RuntimeNotReady",
                            message="" if runtime_ok else "runc not found"),
        pb.RuntimeCondition(type="NetworkReady", status=network_ok,
                            reason="" if network_ok else "NetworkPluginNotReady",
                            message="" if network_ok else CNI_MESSAGE),
    ]))


def test_network_not_ready_reads_as_upstreams(node: tuple[APINode, FakeRuntimeService],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    api, runtime = node
    monkeypatch.setattr(runtime, "status", lambda: conditions(True, False))
    cond = ready(api)
    assert cond["status"] == "False"
    assert cond["reason"] == "KubeletNotReady"
    assert cond["message"] == ("container runtime network not ready: NetworkReady=false "
                               f"reason:NetworkPluginNotReady message:{CNI_MESSAGE}")


def test_runtime_and_network_not_ready_are_listed_as_an_aggregate(
        node: tuple[APINode, FakeRuntimeService], monkeypatch: pytest.MonkeyPatch) -> None:
    api, runtime = node
    monkeypatch.setattr(runtime, "status", lambda: conditions(False, False))
    assert ready(api)["message"] == (
        "[container runtime not ready: RuntimeReady=false reason:RuntimeNotReady "
        "message:runc not found, container runtime network not ready: NetworkReady=false "
        f"reason:NetworkPluginNotReady message:{CNI_MESSAGE}]")


def test_a_runtime_that_does_not_answer_is_down(node: tuple[APINode, FakeRuntimeService],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    api, runtime = node

    def fails() -> pb.StatusResponse:
        raise CRICallError("Status", "UNAVAILABLE", "connection refused")

    monkeypatch.setattr(runtime, "status", fails)
    assert ready(api)["message"].startswith("container runtime is down")
    monkeypatch.setattr(runtime, "status", lambda: conditions(True, True))
    assert ready(api)["status"] == "True"
