"""The API server's HTTP and TLS serving, against an in-process control plane on
loopback: a scrape never stalls other requests, connections that send nothing are reaped
as Go's http.Server reaps them, and TLS and headers show what kube-apiserver's show
(issue 24 items 11, 18 and 22)."""

from __future__ import annotations

import asyncio
import io
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from cryptography import x509

from pykubelet.controlplane.apiserver import serving
from pykubelet.controlplane.server import ControlPlane, Options


@asynccontextmanager
async def control_plane(root: Path, **options: Any) -> AsyncIterator[ControlPlane]:
    cp = ControlPlane(Options(root=root, listen="127.0.0.1:0", scheduler=False,
                              controllers=False, **options))
    await cp.start()
    try:
        yield cp
    finally:
        await cp.stop()


def test_a_slow_scrape_does_not_hold_up_other_requests(tmp_path: Path) -> None:
    async def main() -> None:
        async with control_plane(tmp_path) as cp:
            assert cp.api is not None
            assert cp.tokens is not None
            real = cp.api.metrics
            assert real is not None

            started = threading.Event()

            def slow() -> bytes:
                started.set()
                time.sleep(1.5)  # a big registry's generation, as the probe saw (8.7 s)
                return real()

            cp.api.metrics = slow
            took: list[float] = []

            def other_client() -> None:
                """Another client, on its own thread (the test's loop is the server's)."""
                ctx = ssl._create_unverified_context()
                started.wait(10)
                t0 = time.monotonic()
                with urllib.request.urlopen(f"{cp.local_url}/healthz", context=ctx,
                                            timeout=10) as r:
                    assert r.status == 200
                took.append(time.monotonic() - t0)

            other = threading.Thread(target=other_client)
            other.start()
            headers = {"Authorization": f"Bearer {cp.tokens.admin}"}
            try:
                async with aiohttp.ClientSession(headers=headers) as s, s.get(
                        f"{cp.local_url}/metrics", ssl=False) as r:
                    await r.read()
                    assert r.status == 200
            finally:
                started.set()
                await asyncio.to_thread(other.join, 15)
            assert took, "the other client got no answer"
            assert took[0] < 0.5, took

    asyncio.run(main())


async def tls_connection(cp: ControlPlane) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    ctx = ssl.create_default_context(cafile=str(cp.pki.ca_cert_path))
    return await asyncio.open_connection("127.0.0.1", cp.port, ssl=ctx,
                                         server_hostname="localhost")


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True when the server closes the connection within ``seconds``."""
    try:
        await asyncio.wait_for(reader.read(), seconds)
    except TimeoutError:
        return False
    except (ConnectionError, ssl.SSLError):
        pass
    return True


def test_connections_that_send_no_whole_header_are_reaped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's http.Server as kube-apiserver sets it: ReadHeaderTimeout 32 s for a request's
    headers, IdleTimeout 90 s between requests (scaled down here); aiohttp's default kept
    a connection that sent half a header for 3,630 s."""
    assert (serving.READ_HEADER_TIMEOUT_S, serving.IDLE_TIMEOUT_S) == (32.0, 90.0)
    monkeypatch.setattr(serving, "READ_HEADER_TIMEOUT_S", 0.5)
    monkeypatch.setattr(serving, "IDLE_TIMEOUT_S", 1.0)

    async def main() -> None:
        async with control_plane(tmp_path) as cp:
            # a connection that sends nothing, one that sends half a header slowly
            silent = await tls_connection(cp)
            slow = await tls_connection(cp)
            slow[1].write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            await slow[1].drain()
            await asyncio.sleep(0.3)
            slow[1].write(b"X-A: 1\r\n")  # data keeps coming: the header deadline holds
            assert await closed_within(silent[0], 2.0)
            assert await closed_within(slow[0], 2.0)
            # a whole request is answered and the connection kept until it idles
            reader, writer = await tls_connection(cp)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            status = await asyncio.wait_for(reader.readline(), 5)
            assert status.startswith(b"HTTP/1.1 200")
            assert not await closed_within(reader, 0.6)  # past the header timeout: idle
            assert await closed_within(reader, 2.0)
            for _r, w in (silent, slow, (reader, writer)):
                w.close()

    asyncio.run(main())


def test_an_over_long_header_is_a_status(tmp_path: Path) -> None:
    """Upstream's MaxHeaderBytes is 1 MiB: a header line under it is served, one over it
    (or headers over it in all) is 431 with a Status body, as every other error here."""
    async def main() -> None:
        async with control_plane(tmp_path) as cp, aiohttp.ClientSession(
                max_line_size=4 << 20, max_field_size=4 << 20) as s:
            url = f"{cp.local_url}/healthz"
            async with s.get(url, headers={"X-Big": "a" * 100_000}, ssl=False) as r:
                assert r.status == 200
            for headers in ({"X-Big": "a" * ((1 << 20) + 5000)},
                            {f"X-Big-{i}": "a" * 300_000 for i in range(4)}):
                async with s.get(url, headers=headers, ssl=False) as r:
                    assert r.status == 431
                    assert r.content_type == "application/json"
                    body = await r.json()
                    assert body["kind"] == "Status"
                    assert body["code"] == 431
                    assert body["message"] == "Request Header Fields Too Large"
            reader, writer = await tls_connection(cp)  # a header line without a colon
            writer.write(b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n")
            answer = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.split()[1] == b"400"
            assert b"Content-Type: application/json" in head
            status = orjson.loads(body)
            assert (status["kind"], status["reason"], status["code"]) == (
                "Status", "BadRequest", 400)

    asyncio.run(main())


def test_bodies_and_upgraded_streams_are_not_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The header deadline and size apply to headers only: a stream after an upgrade
    (exec, attach, port-forward) may send more than MAX_HEADER_BYTES and stay open past
    the header timeout, a body may be bigger than the header limit."""
    monkeypatch.setattr(serving, "READ_HEADER_TIMEOUT_S", 0.3)

    async def echo(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            await ws.send_bytes(msg.data)
        return ws

    async def length(request: web.Request) -> web.Response:
        return web.Response(text=str(len(await request.read())))

    async def main() -> None:
        app = web.Application(client_max_size=8 << 20)
        app.router.add_get("/ws", echo)
        app.router.add_post("/body", length)
        runner = serving.APIServerRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            async with aiohttp.ClientSession() as s:
                async with s.post(f"http://127.0.0.1:{port}/body",
                                  data=io.BytesIO(b"x" * (3 << 20))) as r:
                    assert (r.status, await r.text()) == (200, str(3 << 20))
                async with s.ws_connect(f"http://127.0.0.1:{port}/ws") as ws:
                    for _ in range(3):
                        await ws.send_bytes(b"y" * (1 << 20))
                        assert len((await ws.receive()).data) == 1 << 20
                        await asyncio.sleep(0.3)
        finally:
            await runner.cleanup()

    asyncio.run(main())


def served_certificate(cp: ControlPlane) -> x509.Certificate:
    pem = ssl.get_server_certificate(("127.0.0.1", cp.port))
    return x509.load_pem_x509_certificate(pem.encode())


def handshake(cp: ControlPlane, ciphers: str) -> str | None:
    """The cipher a TLS 1.2 client offering only ``ciphers`` gets, None when refused."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(ciphers)
    try:
        with socket.create_connection(("127.0.0.1", cp.port), timeout=5) as raw, \
                ctx.wrap_socket(raw) as tls:
            cipher = tls.cipher()
            return cipher[0] if cipher else None
    except (ssl.SSLError, ConnectionError):
        return None


def test_tls_certificate_and_headers_show_what_kube_apiserver_shows(tmp_path: Path) -> None:
    """TLS 1.2 with Go's AEAD suites only (ECDHE with AES-GCM or ChaCha20-Poly1305, no
    CBC), a serving certificate naming only the addresses the server is reached at (on
    loopback: not every interface of the host), and no ``Server`` header."""
    async def main() -> None:
        cp0 = ControlPlane(Options(root=tmp_path, listen="127.0.0.1:0"))
        cp0.pki.issue("apiserver", "kube-apiserver", dns=["localhost", "other.example"],
                      ips=["127.0.0.1", "10.99.0.7"])  # an older certificate with more
        async with control_plane(tmp_path, extra_sans=["203.0.113.5", "api.example"]) as cp:
            for cbc in ("ECDHE-ECDSA-AES128-SHA256", "ECDHE-ECDSA-AES256-SHA384",
                        "ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA"):
                assert await asyncio.to_thread(handshake, cp, cbc) is None, cbc
            for aead in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                         "ECDHE-ECDSA-CHACHA20-POLY1305"):
                assert await asyncio.to_thread(handshake, cp, aead) == aead
            cert = await asyncio.to_thread(served_certificate, cp)
            san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            ips = {str(i) for i in san.get_values_for_type(x509.IPAddress)}
            assert ips == {"127.0.0.1", "203.0.113.5"}
            assert set(san.get_values_for_type(x509.DNSName)) == {
                "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local", "api.example"}
            async with aiohttp.ClientSession() as s, s.get(f"{cp.local_url}/healthz",
                                                           ssl=False) as r:
                assert r.status == 200
                assert "Server" not in r.headers
            reader, writer = await tls_connection(cp)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n")
            answer = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            assert b"\r\nServer:" not in answer.partition(b"\r\n\r\n")[0]

    asyncio.run(main())
