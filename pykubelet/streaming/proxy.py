"""Forwarding an upgrade (WebSocket or SPDY) to another server, byte for byte.

What kubelet does with the runtime's streaming URL and the API server with the node's
(``UpgradeAwareHandler``): the client's request goes to ``target`` with its method and
headers (Host rewritten), the target's answer comes back; after a 101 the two connections
are spliced, so whatever protocol the two ends negotiated flows through unchanged.

    async def exec_handler(request):
        url = await asyncio.to_thread(cri_exec, ...)     # the runtime's streaming URL
        return await proxy_upgrade(request, url)
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as ssl_mod
from typing import Any

from aiohttp import web
from yarl import URL

_HOP_BY_HOP = {"host", "keep-alive", "proxy-connection", "proxy-authorization",
               "proxy-authenticate", "te", "trailer", "transfer-encoding", "content-length"}
# the client's credentials were for this server; the target gets the proxy's own (its TLS
# client certificate, or ``headers``), as the API server drops Authorization once checked
_CREDENTIALS = {"authorization", "cookie"}


class _Splice(asyncio.Protocol):
    """Client bytes to the target; the end of either side ends both. On plain TCP the
    client's EOF keeps our writing half open until the target is done; TLS has no half
    close (asyncio closes the connection and warns "returning true from eof_received() has
    no effect when using ssl" if asked to keep it), so there it is not asked."""

    def __init__(self, orig: Any, target: asyncio.StreamWriter, done: asyncio.Event,
                 half_close: bool = True) -> None:
        self.orig = orig
        self.target = target
        self.done = done
        self.half_close = half_close

    def data_received(self, data: bytes) -> None:
        if not self.target.is_closing():
            self.target.write(data)

    def eof_received(self) -> bool:
        if self.target.can_write_eof() and not self.target.is_closing():
            with contextlib.suppress(OSError):
                self.target.write_eof()
        return self.half_close  # keep our writing half open until the target is done

    def connection_lost(self, exc: Exception | None) -> None:
        self.done.set()
        with contextlib.suppress(Exception):
            self.orig.connection_lost(exc)

    def pause_writing(self) -> None:
        with contextlib.suppress(Exception):
            self.orig.pause_writing()

    def resume_writing(self) -> None:
        with contextlib.suppress(Exception):
            self.orig.resume_writing()


async def proxy_upgrade(request: web.Request, target: str | URL, *,
                        ssl: ssl_mod.SSLContext | None = None,
                        headers: dict[str, str] | None = None,
                        server_hostname: str | None = None) -> web.StreamResponse:
    """Send ``request`` to ``target`` (its query, else the request's) and relay the reply;
    a 101 splices the connections until either side closes. ``server_hostname``: the
    name the backend's certificate must hold (default: the target's host)."""
    u = URL(target)
    secure = u.scheme in ("https", "wss")
    port = u.port or (443 if secure else 80)
    try:
        reader, writer = await asyncio.open_connection(
            u.host, port, ssl=(ssl or ssl_mod.create_default_context()) if secure else None,
            server_hostname=server_hostname if secure else None)
    except OSError as exc:
        return web.Response(status=502, text=f"error dialing backend: {exc}")
    raw_query = request.rel_url.raw_query_string  # as the client encoded it
    path = u.raw_path_qs if u.raw_query_string else (
        u.raw_path + ("?" + raw_query if raw_query else ""))
    lines = [f"{request.method} {path} HTTP/1.1", f"Host: {u.raw_authority}"]
    for name, value in request.headers.items():
        if name.lower() not in _HOP_BY_HOP and name.lower() not in _CREDENTIALS:
            lines.append(f"{name}: {value}")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, OSError) as exc:
        writer.close()
        return web.Response(status=502, text=f"backend closed the connection: {exc}")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split()[1])
    resp_headers: list[tuple[str, str]] = []
    for line in header_lines:
        if ":" in line:
            k, v = line.split(":", 1)
            resp_headers.append((k.strip(), v.strip()))
    if status != 101:
        length = next((int(v) for k, v in resp_headers if k.lower() == "content-length"), 0)
        body = await reader.readexactly(length) if length else b""
        writer.close()
        keep = [(k, v) for k, v in resp_headers if k.lower() not in _HOP_BY_HOP
                and k.lower() not in ("connection", "date", "server")]
        return web.Response(status=status, body=body, headers=keep)
    resp = web.StreamResponse(status=101)
    for k, v in resp_headers:
        if k.lower() not in ("date", "server", "content-length", "transfer-encoding"):
            resp.headers.add(k, v)
    await resp.prepare(request)
    client = request.transport
    if client is None:
        writer.close()
        return resp
    request.protocol.keep_alive(False)
    done = asyncio.Event()
    tls = client.get_extra_info("sslcontext") is not None
    client.set_protocol(_Splice(request.protocol, writer, done, half_close=not tls))

    async def target_to_client() -> None:
        try:
            while chunk := await reader.read(256 * 1024):
                if client.is_closing():
                    break
                client.write(chunk)
        except (ConnectionError, OSError):
            pass

    pump = asyncio.create_task(target_to_client())
    waiter = asyncio.create_task(done.wait())
    try:
        await asyncio.wait([pump, waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (pump, waiter):
            t.cancel()
        await asyncio.gather(pump, waiter, return_exceptions=True)
        writer.close()
        client.close()
    return resp
