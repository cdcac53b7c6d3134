"""Exec, Attach and PortForward over the real CRI socket, then the returned URL with our
streaming client over both WebSocket and SPDY, against busybox containers in real pods."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
from aiohttp import ClientSession

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.streaming import protocols as p
from pykubelet.streaming.client import (
    PortForwardClient,
    UpgradeRefused,
    forward_local,
    open_remote_command,
    run_remote_command,
)

pytestmark = [pytest.mark.root, pytest.mark.runc]
TRANSPORTS = ["websocket", "spdy"]


def exec_url(cri, cid: str, cmd: list[str], *, stdin=False, tty=False, stderr=True) -> str:
    return cri.runtime.Exec(pb.ExecRequest(container_id=cid, cmd=cmd, stdin=stdin,
                                           stdout=True, stderr=stderr and not tty, tty=tty),
                            timeout=10).url


@pytest.fixture
def pod(cri):  # type: ignore[no-untyped-def]
    pod_id, pod_cfg = cri.run_pod("rtstream")
    cid = cri.start_container(pod_id, pod_cfg, "app", [
        "sh", "-c", "mkdir -p /tmp/w && echo pf-ok > /tmp/w/index.html && "
                    "exec httpd -f -p 8080 -h /tmp/w"])
    return pod_id, pod_cfg, cid


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_exec_streams_and_exit_code(cri, pod, transport) -> None:  # type: ignore[no-untyped-def]
    _, _, cid = pod

    async def go() -> None:
        opts = p.StreamOptions(stdin=False, stdout=True, stderr=True)
        r = await run_remote_command(
            exec_url(cri, cid, ["sh", "-c", "echo out; echo err >&2; exit 3"]), opts,
            transport=transport)
        assert (r.stdout, r.stderr, r.exit_code) == (b"out\n", b"err\n", 3)
        big = bytes(range(256)) * 2048
        opts = p.StreamOptions(stdin=True, stdout=True, stderr=True)
        r = await run_remote_command(exec_url(cri, cid, ["cat"], stdin=True), opts,
                                     stdin=big, transport=transport)
        assert r.stdout == big
        assert r.exit_code == 0
        with pytest.raises(p.RemoteCommandError, match=r"executable file not found|no such"):
            await run_remote_command(exec_url(cri, cid, ["/no/such/thing"]),
                                     p.StreamOptions(), transport=transport)

    asyncio.run(go())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_exec_tty_with_resize(cri, pod, transport) -> None:  # type: ignore[no-untyped-def]
    _, _, cid = pod

    async def go() -> None:
        opts = p.StreamOptions(stdin=True, stdout=True, tty=True)
        url = exec_url(cri, cid, ["sh"], stdin=True, tty=True)
        cmd = await open_remote_command(url, opts, transport=transport)
        await cmd.resize(123, 45)
        await asyncio.sleep(0.3)
        await cmd.write_stdin(b"tty -s && echo is-a-tty; stty size; exit 5\n")
        out = b""

        async def collect() -> None:
            nonlocal out
            async for _, data in cmd.output():
                out += data

        await asyncio.wait_for(collect(), 20)
        assert await cmd.wait() == 5
        await cmd.close()
        assert b"is-a-tty" in out
        assert b"45 123" in out

    asyncio.run(go())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_exec_tty_starts_at_the_clients_size(cri, pod, transport) -> None:  # type: ignore[no-untyped-def]
    """Keys typed ahead, before the first resize even: the command they start sees the
    client's size, not the 0x0 terminal runc's late resize left it on (busybox's stty then
    fails with "stty: standard input"). A client that sends no size gets 80x24."""
    _, _, cid = pod

    async def session(resize: tuple[int, int] | None) -> bytes:
        opts = p.StreamOptions(stdin=True, stdout=True, tty=True)
        cmd = await open_remote_command(exec_url(cri, cid, ["sh"], stdin=True, tty=True), opts,
                                        transport=transport)
        await cmd.write_stdin(b"stty size; exit 7\n")
        if resize is not None:
            await cmd.resize(*resize)
        out = b""

        async def collect() -> None:
            nonlocal out
            async for _, data in cmd.output():
                out += data

        await asyncio.wait_for(collect(), 20)
        assert await cmd.wait() == 7
        await cmd.close()
        return out

    async def go() -> None:
        assert b"\n33 101" in await session((101, 33))
        assert b"\n24 80" in await session(None)

    asyncio.run(go())


def test_urls_are_single_use(cri, pod) -> None:  # type: ignore[no-untyped-def]
    _, _, cid = pod
    url = exec_url(cri, cid, ["true"])

    async def go() -> None:
        r = await run_remote_command(url, p.StreamOptions(), transport="spdy")
        assert r.exit_code == 0
        with pytest.raises(UpgradeRefused) as info:
            await run_remote_command(url, p.StreamOptions(), transport="spdy")
        assert info.value.status == 404
        async with ClientSession() as http, http.get(url) as resp:
            assert resp.status == 404

    asyncio.run(go())


def test_streaming_requests_are_checked(cri, pod) -> None:  # type: ignore[no-untyped-def]
    pod_id, pod_cfg, cid = pod
    rt = cri.runtime
    for req, code in [
        (pb.ExecRequest(container_id=cid, cmd=["sh"], tty=True, stderr=True, stdout=True),
         grpc.StatusCode.INVALID_ARGUMENT),
        (pb.ExecRequest(container_id=cid, cmd=[]), grpc.StatusCode.INVALID_ARGUMENT),
        (pb.ExecRequest(container_id=cid, cmd=["true"]), grpc.StatusCode.INVALID_ARGUMENT),
        (pb.ExecRequest(container_id="nope", cmd=["true"], stdout=True),
         grpc.StatusCode.NOT_FOUND),
    ]:
        with pytest.raises(grpc.RpcError) as info:
            rt.Exec(req, timeout=10)
        assert info.value.code() == code, req
    done = cri.start_container(pod_id, pod_cfg, "done", ["true"])
    cri.wait_exited(done)
    with pytest.raises(grpc.RpcError) as info:
        rt.Exec(pb.ExecRequest(container_id=done, cmd=["true"], stdout=True), timeout=10)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as info:
        rt.PortForward(pb.PortForwardRequest(pod_sandbox_id="nope", port=[80]), timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def _interactive_config(cri, name: str, command: list[str], *, tty: bool,  # type: ignore[no-untyped-def]
                        stdin_once: bool) -> pb.ContainerConfig:
    cc = cri.container_config(name, command)
    cc.stdin = True
    cc.stdin_once = stdin_once
    cc.tty = tty
    return cc


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_attach_tty_container(cri, pod, transport) -> None:  # type: ignore[no-untyped-def]
    pod_id, pod_cfg, _ = pod
    cc = _interactive_config(cri, f"tty-{transport}", ["sh"], tty=True, stdin_once=False)
    cid = cri.runtime.CreateContainer(pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cc, sandbox_config=pod_cfg), timeout=60).container_id
    cri.runtime.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)

    async def go() -> None:
        url = cri.runtime.Attach(pb.AttachRequest(container_id=cid, stdin=True, stdout=True,
                                                  tty=True), timeout=10).url
        opts = p.StreamOptions(stdin=True, stdout=True, tty=True)
        cmd = await open_remote_command(url, opts, transport=transport)
        await cmd.resize(101, 33)
        await asyncio.sleep(0.3)
        await cmd.write_stdin(b"stty size; echo attached-$((40+2)); exit 4\n")
        out = b""

        async def collect() -> None:
            nonlocal out
            async for _, data in cmd.output():
                out += data

        await asyncio.wait_for(collect(), 20)
        assert await cmd.wait() == 0  # attach reports no exit code, as kubelet's
        await cmd.close()
        assert b"attached-42" in out
        assert b"33 101" in out

    asyncio.run(go())
    st = cri.wait_exited(cid)
    assert st.exit_code == 4


def test_attach_stdin_once_closes_stdin(cri, pod) -> None:  # type: ignore[no-untyped-def]
    pod_id, pod_cfg, _ = pod
    cc = _interactive_config(cri, "cat", ["sh", "-c", "cat; echo stdin-closed"], tty=False,
                             stdin_once=True)
    cid = cri.runtime.CreateContainer(pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cc, sandbox_config=pod_cfg), timeout=60).container_id
    cri.runtime.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
    time.sleep(0.3)

    async def go() -> None:
        url = cri.runtime.Attach(pb.AttachRequest(container_id=cid, stdin=True, stdout=True,
                                                  stderr=True), timeout=10).url
        r = await run_remote_command(url, p.StreamOptions(stdin=True), stdin=b"through-attach\n",
                                     transport="spdy", timeout=20)
        assert b"through-attach" in r.stdout
        assert b"stdin-closed" in r.stdout

    asyncio.run(go())
    assert cri.wait_exited(cid).exit_code == 0
    with pytest.raises(grpc.RpcError) as info:
        cri.runtime.Attach(pb.AttachRequest(container_id=cid, stdout=True), timeout=10)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_port_forward_into_the_pod(cri, pod, transport) -> None:  # type: ignore[no-untyped-def]
    pod_id, _, _ = pod
    time.sleep(0.3)  # httpd listening

    async def go() -> None:
        url = cri.runtime.PortForward(pb.PortForwardRequest(pod_sandbox_id=pod_id,
                                                            port=[8080]), timeout=10).url
        pf = await PortForwardClient.connect(url, transport=transport)
        conn = await pf.dial(8080)
        await conn.write(b"GET /index.html HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := await asyncio.wait_for(conn.read(), 10):
            reply += chunk
        assert reply.startswith(b"HTTP/1.")
        assert b"pf-ok" in reply
        await conn.close()
        if transport == "spdy":  # one session, many connections, and kubectl's listener
            refused = await pf.dial(9)
            assert await asyncio.wait_for(refused.read(), 10) == b""
            assert "127.0.0.1:9" in await refused.error()
            server = await forward_local(pf, 8080)
            lport = server.sockets[0].getsockname()[1]
            for _ in range(3):
                r, w = await asyncio.open_connection("127.0.0.1", lport)
                w.write(b"GET / HTTP/1.0\r\n\r\n")
                await w.drain()
                assert b"pf-ok" in await asyncio.wait_for(r.read(), 10)
                w.close()
            server.close()
        await pf.close()

    asyncio.run(go())
