"""The runtime's gRPC metrics, counted by the CRI interceptor and served over HTTP by
prometheus-client, read back with its parser."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc
from pykubelet.runtime.cri.server import start_server
from pykubelet.runtime.cri.servicer import ImageServicer, RuntimeServicer
from pykubelet.runtime.errors import NotFound
from pykubelet.runtime.metrics import RuntimeMetrics

SERVICE = "runtime.v1.RuntimeService"


class Sandboxes:
    def ListPodSandbox(self, req: pb.ListPodSandboxRequest) -> pb.ListPodSandboxResponse:
        return pb.ListPodSandboxResponse()

    def PodSandboxStatus(self, req: pb.PodSandboxStatusRequest) -> pb.PodSandboxStatusResponse:
        raise NotFound("no such sandbox")


class Info:
    def Version(self, req: pb.VersionRequest) -> pb.VersionResponse:
        return pb.VersionResponse(runtime_name="fake")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def labels(method: str, code: str | None = None) -> tuple[tuple[str, str], ...]:
    d = {"grpc_type": "unary", "grpc_service": SERVICE, "grpc_method": method}
    if code:
        d["grpc_code"] = code
    return tuple(sorted(d.items()))


def test_calls_are_counted_by_method_and_code_and_served(tmp_path: Path) -> None:
    metrics = RuntimeMetrics()
    address = f"127.0.0.1:{free_port()}"
    http, _ = metrics.serve(address)
    sock = tmp_path / "cri.sock"
    srv = start_server(f"unix://{sock}", RuntimeServicer(Sandboxes(), None, Info()),
                       ImageServicer(None), max_workers=2, metrics=metrics)
    try:
        with grpc.insecure_channel(f"unix://{sock}") as ch:
            stub = pb_grpc.RuntimeServiceStub(ch)
            stub.Version(pb.VersionRequest())
            stub.ListPodSandbox(pb.ListPodSandboxRequest())
            stub.ListPodSandbox(pb.ListPodSandboxRequest())
            with pytest.raises(grpc.RpcError):
                stub.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id="x"))
        got = scrape(f"http://{address}/metrics")
    finally:
        srv.stop(None).wait()
        http.shutdown()
        http.server_close()
    assert got[("grpc_server_started_total", labels("ListPodSandbox"))] == 2
    assert got[("grpc_server_handled_total", labels("ListPodSandbox", "OK"))] == 2
    assert got[("grpc_server_handled_total", labels("PodSandboxStatus", "NotFound"))] == 1
    assert got[("grpc_server_handling_seconds_count", labels("Version"))] == 1
    assert got[("process_resident_memory_bytes", ())] > 0


def test_a_bad_address_is_refused() -> None:
    with pytest.raises(ValueError, match="must be HOST:PORT"):
        RuntimeMetrics().serve("localhost")
