"""The streaming protocols end to end on loopback: our server functions against our client,
over WebSocket and SPDY, with an in-process command instead of a container."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from pykubelet.streaming import protocols as p
from pykubelet.streaming.client import (
    PortForwardClient,
    UpgradeRefused,
    forward_local,
    open_remote_command,
    run_remote_command,
    spdy_connect,
)
from pykubelet.streaming.server import (
    CommandFailed,
    CommandIO,
    serve_port_forward,
    serve_remote_command,
)

TRANSPORTS = ["websocket", "spdy"]


async def echo_command(io: CommandIO) -> int:
    """cat to stdout, 'err' to stderr, resizes reported on stdout; exit 3 on 'fail'."""
    data = b""
    while chunk := await io.read_stdin():
        data += chunk
        await io.write_stdout(chunk)
    await io.write_stderr(b"err")
    if io.opts.tty:
        while not io.resizes.empty():
            size = io.resizes.get_nowait()
            if size is not None:
                await io.write_stdout(f"[{size.width}x{size.height}]".encode())
    if b"boom" in data:
        raise CommandFailed("it went boom")
    return 3 if b"fail" in data else 0


@contextlib.asynccontextmanager
async def serving(opts: p.StreamOptions) -> AsyncIterator[str]:
    async def exec_handler(request: web.Request) -> web.StreamResponse:
        return await serve_remote_command(request, opts, echo_command)

    async def echo_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(65536):
            writer.write(chunk.upper())
            await writer.drain()
        writer.close()

    target = await asyncio.start_server(echo_server, "127.0.0.1", 0)
    tport = target.sockets[0].getsockname()[1]

    async def dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if port != 4242:
            raise ConnectionRefusedError(f"dial tcp4 127.0.0.1:{port}: connection refused")
        return await asyncio.open_connection("127.0.0.1", tport)

    async def pf_handler(request: web.Request) -> web.StreamResponse:
        return await serve_port_forward(request, [4242], dial)

    app = web.Application()
    app.router.add_route("*", "/exec", exec_handler)
    app.router.add_route("*", "/portforward", pf_handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        target.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_exec_stdin_stdout_stderr_and_exit_code(transport: str) -> None:
    async def go() -> None:
        opts = p.StreamOptions(stdin=True, stdout=True, stderr=True)
        async with serving(opts) as base:
            r = await run_remote_command(f"{base}/exec", opts, stdin=b"hello " * 20000,
                                         transport=transport)  # type: ignore[arg-type]
            assert r.stdout == b"hello " * 20000
            assert r.stderr == b"err"
            assert r.exit_code == 0
            r = await run_remote_command(f"{base}/exec", opts, stdin=b"fail",
                                         transport=transport)  # type: ignore[arg-type]
            assert r.exit_code == 3
            with pytest.raises(p.RemoteCommandError, match="it went boom"):
                await run_remote_command(f"{base}/exec", opts, stdin=b"boom",
                                         transport=transport)  # type: ignore[arg-type]

    asyncio.run(go())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tty_resize_reaches_the_command(transport: str) -> None:
    async def go() -> None:
        opts = p.StreamOptions(stdin=True, stdout=True, stderr=True, tty=True)
        assert opts.stderr is False  # a terminal has one output stream
        async with serving(opts) as base:
            cmd = await open_remote_command(f"{base}/exec", opts,
                                            transport=transport)  # type: ignore[arg-type]
            await cmd.resize(100, 30)
            await asyncio.sleep(0.1)
            await cmd.write_stdin(b"x")
            await cmd.close_stdin()
            out = b"".join([d async for _, d in cmd.output()])
            assert await cmd.wait() == 0
            await cmd.close()
            assert out == b"x[100x30]"

    asyncio.run(go())


@pytest.mark.parametrize("transport", [*TRANSPORTS, "websocket-spdy"])
def test_port_forward_both_ways_and_errors(transport: str) -> None:
    async def go() -> None:
        async with serving(p.StreamOptions()) as base:
            pf = await PortForwardClient.connect(f"{base}/portforward",
                                                 transport=transport)  # type: ignore[arg-type]
            conns = [await pf.dial(4242) for _ in range(3)]
            for i, c in enumerate(conns):
                await c.write(b"abc%d" % i)
            for i, c in enumerate(conns):
                assert await c.read() == b"ABC%d" % i
                await c.close()
            big = bytes(range(256)) * 4096  # 1 MiB through one connection
            c = await pf.dial(4242)
            await c.write(big.lower())
            got = b""
            while len(got) < len(big):
                got += await c.read()
            assert got == big.lower().upper()
            await c.close()
            if transport != "websocket":
                bad = await pf.dial(1)
                assert await bad.read() == b""
                assert "connection refused" in await bad.error()
                # kubectl port-forward: a local listener
                server = await forward_local(pf, 4242)
                lport = server.sockets[0].getsockname()[1]
                r, w = await asyncio.open_connection("127.0.0.1", lport)
                w.write(b"via local")
                await w.drain()
                assert await r.read(100) == b"VIA LOCAL"
                w.close()
                server.close()
            await pf.close()

    asyncio.run(go())


def test_spdy_upgrade_refused_without_a_common_protocol() -> None:
    async def go() -> None:
        async with serving(p.StreamOptions()) as base:
            with pytest.raises(UpgradeRefused) as info:
                await spdy_connect(f"{base}/exec", ("v9.channel.k8s.io",))
            assert info.value.status == 403

    asyncio.run(go())


def test_resize_decoder_splits_concatenated_json() -> None:
    d = p.ResizeDecoder()
    assert d.feed(b'{"Width":80,"Height":24}{"Wid') == [p.TerminalSize(80, 24)]
    assert d.feed(b'th":1,"Height":2}\n') == [p.TerminalSize(1, 2)]


def test_status_round_trip() -> None:
    assert p.exit_code_from_status(json.dumps(p.status_success()).encode()) == 0
    assert p.exit_code_from_status(json.dumps(p.status_exit_code(7)).encode()) == 7
    with pytest.raises(p.RemoteCommandError, match="nope"):
        p.exit_code_from_status(json.dumps(p.status_internal_error("nope")).encode())
    with pytest.raises(p.RemoteCommandError, match="plain text"):
        p.exit_code_from_status(b"plain text", json_status=False)
