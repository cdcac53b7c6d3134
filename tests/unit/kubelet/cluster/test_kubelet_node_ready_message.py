"""The node's Ready=False message says what upstream's kubelet says: a runtime whose
network is not ready is "container runtime network not ready: NetworkReady=false
reason:... message:..." (kubelet's runtime state errors, RuntimeCondition's String), not
"container runtime is down", which kubelet keeps for a runtime that does not answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from unit_agent_harness import new_kubelet, offline_api_node

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.kubelet.cluster import node_status
from pykubelet.kubelet.cluster.node import APINode
from pykubelet.kubelet.cri.runtime_service import CRICallError
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService

CNI_MESSAGE = "Network plugin returns error: cni plugin not initialized"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[APINode, FakeRuntimeService]]:
    runtime = FakeRuntimeService()
    k = new_kubelet(tmp_path, runtime)
    k.pleg.healthy = lambda: True  # type: ignore[method-assign]  # never started here
    api = offline_api_node(k, tmp_path / "pki")
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
