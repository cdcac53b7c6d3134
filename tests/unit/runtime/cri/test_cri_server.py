"""The CRI server over a real unix socket with fake handlers: routing, errors, socket mode."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import grpc
import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc
from pykubelet.runtime.cri.server import socket_path, start_server
from pykubelet.runtime.cri.servicer import ImageServicer, RuntimeServicer
from pykubelet.runtime.errors import NotFound


class FakeSandboxes:
    def ListPodSandbox(self, req: pb.ListPodSandboxRequest) -> pb.ListPodSandboxResponse:
        return pb.ListPodSandboxResponse(items=[pb.PodSandbox(id="p1")])

    def PodSandboxStatus(self, req: pb.PodSandboxStatusRequest) -> pb.PodSandboxStatusResponse:
        raise NotFound(f"pod sandbox {req.pod_sandbox_id!r} not found")

    def StopPodSandbox(self, req: pb.StopPodSandboxRequest) -> pb.StopPodSandboxResponse:
        raise ValueError("boom")


class FakeInfo:
    def Version(self, req: pb.VersionRequest) -> pb.VersionResponse:
        return pb.VersionResponse(runtime_name="fake", runtime_api_version="v1")


@pytest.fixture
def server(tmp_path: Path):
    sock = tmp_path / "run" / "cri.sock"
    srv = start_server(f"unix://{sock}", RuntimeServicer(FakeSandboxes(), None, FakeInfo()),
                       ImageServicer(None), max_workers=2)
    try:
        yield sock
    finally:
        srv.stop(None).wait()


@pytest.fixture
def stubs(server: Path):
    with grpc.insecure_channel(f"unix://{server}") as ch:
        yield pb_grpc.RuntimeServiceStub(ch), pb_grpc.ImageServiceStub(ch)


def test_socket_is_private(server: Path) -> None:
    assert stat.S_IMODE(os.stat(server).st_mode) == 0o600


def test_routes_and_error_mapping(stubs) -> None:
    runtime, images = stubs
    assert runtime.Version(pb.VersionRequest()).runtime_name == "fake"
    assert [p.id for p in runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items] == ["p1"]
    with pytest.raises(grpc.RpcError) as info:
        runtime.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id="zz"))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert info.value.details() == "pod sandbox 'zz' not found"
    with pytest.raises(grpc.RpcError) as info:
        runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id="zz"))
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert "StopPodSandbox: ValueError: boom" in info.value.details()
    for call, req in ((runtime.Attach, pb.AttachRequest()),
                      (runtime.PodSandboxStats, pb.PodSandboxStatsRequest()),
                      (runtime.CreateContainer, pb.CreateContainerRequest()),
                      (images.ListImages, pb.ListImagesRequest())):
        with pytest.raises(grpc.RpcError) as info:
            call(req)
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_stale_socket_is_replaced_but_a_live_one_is_not(tmp_path: Path, server: Path) -> None:
    with pytest.raises(ValueError, match="already serves"):
        start_server(f"unix://{server}", RuntimeServicer(None, None, None), ImageServicer(None))
    stale = tmp_path / "stale.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(stale))
    s.close()  # bound, never listening: what a killed runtime leaves
    srv = start_server(f"unix://{stale}", RuntimeServicer(None, None, FakeInfo()),
                       ImageServicer(None))
    try:
        with grpc.insecure_channel(f"unix://{stale}") as ch:
            assert pb_grpc.RuntimeServiceStub(ch).Version(pb.VersionRequest()).runtime_name
    finally:
        srv.stop(None).wait()


def test_listen_must_be_an_absolute_unix_path() -> None:
    assert socket_path("unix:///run/x.sock") == "/run/x.sock"
    for bad in ("tcp://127.0.0.1:1", "unix://relative.sock", "x.sock"):
        with pytest.raises(ValueError, match="--listen"):
            socket_path(bad)


def test_every_rpc_of_the_proto_is_routed() -> None:
    services = pb.DESCRIPTOR.services_by_name
    assert {m.name for m in services["RuntimeService"].methods} == set(RuntimeServicer.rpc_names)
    assert {m.name for m in services["ImageService"].methods} == set(ImageServicer.rpc_names)


def test_runc_must_be_an_executable_file(tmp_path) -> None:
    from click.testing import CliRunner

    from pykubelet.cli.main import main as cli

    plain = tmp_path / "not-executable"
    plain.write_text("")
    for bad in (str(tmp_path / "missing"), str(plain), str(tmp_path)):
        res = CliRunner().invoke(cli, ["runtime", "--root", str(tmp_path / "root"), "--listen",
                                       f"unix://{tmp_path}/x.sock", "--runc", bad])
        assert res.exit_code == 2, res.output
        assert "--runc" in res.output
        assert f"{bad}: not an executable file" in res.output
    assert not (tmp_path / "root").exists()  # refused before anything was made


def test_a_repeated_failure_is_warned_about_once() -> None:
    """kubelet retries a failing RunPodSandbox every 2 s: the runtime warns once, then logs
    the repeats at debug level until the outcome changes."""
    import logging

    from pykubelet.runtime.cri.instrument import _failure_level

    assert _failure_level("RunPodSandboxT", "UNAVAILABLE: x") == logging.WARNING
    assert _failure_level("RunPodSandboxT", "UNAVAILABLE: x") == logging.DEBUG
    assert _failure_level("RunPodSandboxT", "UNAVAILABLE: y") == logging.WARNING
    _failure_level("RunPodSandboxT", None)  # a success
    assert _failure_level("RunPodSandboxT", "UNAVAILABLE: y") == logging.WARNING
