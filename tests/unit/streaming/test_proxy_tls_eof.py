"""A spliced upgrade on a TLS connection (the node server's exec/attach/port-forward, the
API server's proxy to it) ends without asyncio's "returning true from eof_received() has no
effect when using ssl" warning, which the agent logged at every stream's end: on TLS the
splice does not ask to keep a half-closed connection open (TLS has no half-close)."""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path

import pytest
from aiohttp import web

from pykubelet.controlplane.pki import PKI
from pykubelet.streaming.proxy import proxy_upgrade


async def echo_target(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A backend that accepts any upgrade and echoes until the end."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
    while data := await reader.read(65536):
        writer.write(data)
    writer.close()


def test_a_tls_splice_ends_without_the_eof_received_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pki = PKI(tmp_path / "pki")
    paths = pki.issue("server", "server", dns=["localhost"], ips=["127.0.0.1"])
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(str(paths.cert), str(paths.key))
    client_ctx = ssl.create_default_context(cadata=pki.ca_pem.decode())

    async def main() -> None:
        target = await asyncio.start_server(echo_target, "127.0.0.1", 0)
        tport = target.sockets[0].getsockname()[1]

        async def handler(request: web.Request) -> web.StreamResponse:
            return await proxy_upgrade(request, f"http://127.0.0.1:{tport}/x")

        app = web.Application()
        app.router.add_get("/x", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ctx)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            for _ in range(3):
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", port, ssl=client_ctx, server_hostname="127.0.0.1")
                writer.write(b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                             b"Upgrade: x\r\n\r\n")
                head = await reader.readuntil(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 101")
                writer.write(b"ping")
                assert await reader.readexactly(4) == b"ping"
                writer.close()  # TLS close_notify: the server side's EOF
                await writer.wait_closed()
            await asyncio.sleep(0.3)
        finally:
            await runner.cleanup()
            target.close()
            await target.wait_closed()

    with caplog.at_level(logging.WARNING, logger="asyncio"):
        asyncio.run(main())
    assert not [r for r in caplog.records if "eof_received" in r.getMessage()]
