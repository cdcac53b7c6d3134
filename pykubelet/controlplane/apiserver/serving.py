"""How the API server holds its connections: Go's http.Server as kube-apiserver sets it
(``ReadHeaderTimeout`` 32 s, ``IdleTimeout`` 90 s, ``MaxHeaderBytes`` 1 MiB), over aiohttp.

aiohttp has no header-read deadline and keeps an idle connection 3,630 s by default, so
a client sending half a header (or nothing) held a connection for an hour. Here a
connection that has not sent a whole request header within READ_HEADER_TIMEOUT_S of its
first byte (or of being opened) is closed, an idle one after IDLE_TIMEOUT_S, and a
header over MAX_HEADER_BYTES (one line or all of them) is 431. Errors aiohttp answers
before any handler runs (a malformed request line or header) are a ``Status`` as every
other error of the API, not aiohttp's plain text.
"""

from __future__ import annotations

import asyncio
import ssl
from http import HTTPStatus
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, LineTooLong
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from aiohttp.web_protocol import RequestHandler, _ErrInfo

from pykubelet.controlplane import errors

READ_HEADER_TIMEOUT_S = 32.0
IDLE_TIMEOUT_S = 90.0
MAX_HEADER_BYTES = 1 << 20
HEADER_SLACK = 4096  # Go's http.Server reads MaxHeaderBytes + 4096 before refusing
# Go's TLS 1.2 suites without CBC: ECDHE with AES-GCM or ChaCha20-Poly1305 (TLS 1.3 has
# only AEAD suites anyway)
TLS12_CIPHERS = ":".join((
    "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"))


def server_tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """The API server's TLS: 1.2 and up, the suites above."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.load_cert_chain(cert, key)
    return ctx


async def _no_server_header(request: web.Request, response: web.StreamResponse) -> None:
    """Go's net/http sends no Server header (aiohttp names itself and Python's version)."""
    response.headers.popall("Server", None)


class _Response(web.Response):
    """A response without aiohttp's Server header, for errors before any handler (no
    application's signals run for those)."""

    async def _prepare_headers(self) -> None:
        await super()._prepare_headers()
        self.headers.popall("Server", None)


class APIRequestHandler(RequestHandler):
    """aiohttp's per-connection protocol with Go's header deadline and size limit."""

    def __init__(self, manager: web.Server, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._last_payload: StreamReader | None = None

    # -- the header deadline -------------------------------------------------------
    def _arm(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self._loop.call_later(READ_HEADER_TIMEOUT_S,
                                                          self._header_timed_out)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _header_timed_out(self) -> None:
        self._header_deadline = None
        self.force_close()  # as Go: the connection is closed, nothing is answered
        if self.transport is not None:
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # a request's body, or a stream after an upgrade (exec, attach, port-forward)
        in_body = (self._upgraded or self._payload_parser is not None
                   or (self._last_payload is not None and not self._last_payload.is_eof()))
        before = self._request_count
        if not in_body:
            self._arm()  # the first bytes of a request: its header has its deadline
            end = data.find(b"\r\n\r\n")  # the header's end, when in this chunk
            self._header_bytes += len(data) if end < 0 else end + 4
            if self._header_bytes > MAX_HEADER_BYTES + HEADER_SLACK:
                self._refuse(431, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE.phrase)
                return
        super().data_received(data)
        if self._request_count > before:
            self._disarm()
            self._header_bytes = 0
            self._last_payload = self._messages[-1][1] if self._messages else None

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` through aiohttp's own path for unparsable requests, and read
        nothing more from this connection."""
        self._disarm()
        if self.transport is not None:
            self.transport.pause_reading()
        self._request_count += 1
        self._messages.append((_ErrInfo(status=status, exc=BadHttpMessage(message),
                                        message=message), EMPTY_PAYLOAD))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- errors before any handler ---------------------------------------------------
    def handle_error(self, request: web.BaseRequest, status: int = 500,
                     exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        """A Status body instead of aiohttp's plain text; a header line too long is 431."""
        if isinstance(exc, LineTooLong):
            status = 431
        if status == 431:
            err = errors.StatusError(431, "", HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE.phrase)
        elif status == 400:
            err = errors.bad_request(message or "bad request")
        else:
            err = errors.StatusError(status, errors.INTERNAL_ERROR if status == 500 else "",
                                  message or HTTPStatus(status).phrase)
        if status >= 500:
            self.log_exception("Error handling request", exc_info=exc)
        resp = _Response(status=status, body=orjson.dumps(err.status()),
                         content_type="application/json")
        resp.force_close()
        return resp


class APIServerRunner(web.AppRunner):
    """An AppRunner whose connections are :class:`APIRequestHandler` with Go's limits."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        app.on_response_prepare.append(_no_server_header)
        super().__init__(app, keepalive_timeout=IDLE_TIMEOUT_S, max_line_size=MAX_HEADER_BYTES,
                         max_field_size=MAX_HEADER_BYTES, **kwargs)

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _Server  # the same server, making our protocol per connection
        return server


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return APIRequestHandler(self, loop=self._loop, **self._kwargs)
