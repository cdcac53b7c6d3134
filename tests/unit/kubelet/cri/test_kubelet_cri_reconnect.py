"""The CRI client reconnects as kubelet's remote runtime does (cri-client's
remote_runtime.go: gRPC connect back-off from 100 ms up to 3 s, a 5 s minimum connect
timeout), not with gRPC's default back-off (1 s growing 1.6x to 120 s): a runtime that
restarts after a few seconds is used again within ~3 s of coming back, where the default
left the agent waiting 13 s in the faults run (issue 29)."""

from __future__ import annotations

import socket
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc
from pykubelet.kubelet.cri import cri_client
from pykubelet.kubelet.cri.cri_client import CRICallError, CRIClient


class Versioned(pb_grpc.RuntimeServiceServicer):  # type: ignore[misc]
    def Version(self, request: Any, context: Any) -> pb.VersionResponse:
        return pb.VersionResponse(version="0.1.0", runtime_name="test",
                                  runtime_version="1", runtime_api_version="v1")


def serve(sock: Path) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_RuntimeServiceServicer_to_server(Versioned(), server)
    server.add_insecure_port(f"unix:{sock}")
    server.start()
    return server


def test_the_channel_has_kubelets_connect_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    real = grpc.insecure_channel

    def channel(target: str, options: list[tuple[str, Any]]) -> Any:
        seen.update(options)
        return real(target)

    monkeypatch.setattr(cri_client.grpc, "insecure_channel", channel)
    CRIClient("unix:///nonexistent.sock").close()
    assert seen["grpc.initial_reconnect_backoff_ms"] == 100
    assert seen["grpc.max_reconnect_backoff_ms"] == 3000
    assert seen["grpc.min_reconnect_backoff_ms"] == 5000


def test_a_restarting_runtime_is_tried_from_100ms_to_3s_and_used_once_back(
        tmp_path: Path) -> None:
    """A runtime that accepts and drops connections (starting, not serving yet): over 6 s
    the client tries again at ~0.1, 0.26, 0.5, 0.9, 1.6, 2.6, 4.3 s (>= 7 connects; gRPC's
    default back-off tries at ~1, 2.6, 5.2 s: <= 5); once it serves, the next call within
    3 s (+ jitter) succeeds."""
    sock = tmp_path / "cri.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.listen(16)
    listener.settimeout(0.2)
    accepts = 0
    stop = threading.Event()

    def drop() -> None:
        nonlocal accepts
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            accepts += 1
            conn.close()

    thread = threading.Thread(target=drop, daemon=True)
    thread.start()
    client = CRIClient(f"unix://{sock}")
    server: grpc.Server | None = None
    try:
        end = time.monotonic() + 6.0
        while time.monotonic() < end:  # the agent's calls meanwhile, failing
            with pytest.raises(CRICallError):
                client.version()
            time.sleep(0.05)
        assert accepts >= 7
        stop.set()
        thread.join(2)
        listener.close()
        sock.unlink()
        server = serve(sock)
        back = time.monotonic()
        while True:
            try:
                assert client.version().runtime_name == "test"
                break
            except CRICallError:
                assert time.monotonic() - back < 10, "never reconnected"
                time.sleep(0.05)
        # kubelet's 3 s maximum back-off with gRPC's 20% jitter, plus scheduling slack
        assert time.monotonic() - back < 3.6 + 0.6
    finally:
        client.close()
        stop.set()
        listener.close()
        if server is not None:
            server.stop(None)
