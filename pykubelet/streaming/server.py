"""Serving exec, attach and port-forward over WebSocket or SPDY from an aiohttp handler.

The same code serves the runtime's streaming server (the URLs Exec/Attach/PortForward
return), and can serve the node's port 10250 and an API server proxy: a handler decides
what runs, these functions speak the protocols.

- ``serve_remote_command(request, opts, run)``: upgrades the request (WebSocket when it asks
  for one, else SPDY/3.1), waits for the client's streams, calls ``run(io)`` with a
  ``CommandIO`` (stdin, stdout, stderr, terminal resizes), then writes the Status of the exit
  code ``run`` returns (or of the ``CommandFailed`` it raises) and closes.
- ``serve_port_forward(request, ports, dial)``: every data/error stream pair (SPDY) or
  channel pair (WebSocket) is connected to ``await dial(port)``, bytes copied both ways
  with half-closes passed on.

SPDY is served by taking the connection over from aiohttp after the 101 response
(``transport.set_protocol``): aiohttp itself only upgrades to WebSocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSMsgType, web

from pykubelet.streaming import protocols as p
from pykubelet.streaming.session import SpdySession, SpdyStream
from pykubelet.streaming.tasks import cancelled

log = logging.getLogger(__name__)

STREAM_CREATION_TIMEOUT = 30.0

Dialer = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class CommandFailed(Exception):
    """The command could not run (not: it ran and exited non-zero). Sent as an
    InternalError Status."""


class UpgradeFailed(Exception):
    """The request cannot be upgraded; ``response`` says why to the client."""

    def __init__(self, response: web.StreamResponse) -> None:
        super().__init__(getattr(response, "text", "") or "upgrade failed")
        self.response = response


# ---------------------------------------------------------------------- SPDY hijack
class _TransportWriter:
    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self._resumed = asyncio.Event()
        self._resumed.set()

    def write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    async def drain(self) -> None:
        if self.transport.is_closing():
            raise ConnectionResetError("connection closed")
        await self._resumed.wait()

    def close(self) -> None:
        self.transport.close()


class _SpdyTap(asyncio.Protocol):
    """Takes the connection's bytes from aiohttp to the session; keeps aiohttp's own
    protocol told of flow control and of the end, so its bookkeeping stays right."""

    def __init__(self, orig: Any, session: SpdySession, writer: _TransportWriter) -> None:
        self.orig = orig
        self.session = session
        self.writer = writer

    def data_received(self, data: bytes) -> None:
        self.session.data_received(data)

    def eof_received(self) -> bool:
        self.session.connection_lost(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.session.connection_lost(exc)
        self.writer._resumed.set()
        with contextlib.suppress(Exception):
            self.orig.connection_lost(exc)

    def pause_writing(self) -> None:
        self.writer._resumed.clear()
        with contextlib.suppress(Exception):
            self.orig.pause_writing()

    def resume_writing(self) -> None:
        self.writer._resumed.set()
        with contextlib.suppress(Exception):
            self.orig.resume_writing()


def is_websocket(request: web.Request) -> bool:
    return (request.headers.get("Upgrade", "").lower() == "websocket"
            and "upgrade" in request.headers.get("Connection", "").lower())


async def upgrade_spdy(request: web.Request,
                       supported: tuple[str, ...]) -> tuple[SpdySession, str]:
    """Answer 101 Switching Protocols and return the server side session and the
    negotiated protocol ("" when the client named none). UpgradeFailed otherwise."""
    if ("upgrade" not in request.headers.get("Connection", "").lower()
            or request.headers.get("Upgrade", "").lower() != p.SPDY_UPGRADE.lower()):
        raise UpgradeFailed(web.Response(
            status=400, text="unable to upgrade: missing upgrade headers in request: "
                             f"{dict(request.headers)!r}"))
    wanted = p.client_protocols(request.headers.getall(p.HEADER_PROTOCOL_VERSION, []))
    chosen = p.negotiate(wanted, supported) if wanted else ""
    if chosen is None:
        raise UpgradeFailed(web.Response(
            status=403, headers={p.HEADER_ACCEPTED_PROTOCOL_VERSIONS: ", ".join(supported)},
            text=f"unable to upgrade: unable to negotiate protocol: client supports "
                 f"{wanted}, server accepts {list(supported)}"))
    headers = {"Connection": "Upgrade", "Upgrade": p.SPDY_UPGRADE}
    if chosen:
        headers[p.HEADER_PROTOCOL_VERSION] = chosen
    resp = web.StreamResponse(status=101, headers=headers)
    await resp.prepare(request)
    transport = request.transport
    if transport is None:
        raise ConnectionResetError("client went away during the upgrade")
    request.protocol.keep_alive(False)
    writer = _TransportWriter(transport)  # type: ignore[arg-type, unused-ignore]
    session = SpdySession(writer, server=True)
    transport.set_protocol(_SpdyTap(request.protocol, session, writer))
    return session, chosen


# ---------------------------------------------------------------------- remote command
class CommandIO:
    """The client's side of a remote command, whatever the protocol.

    ``read_stdin()`` gives b"" at end of input; ``resizes`` yields TerminalSize values and
    None when the client can send no more; ``gone`` is set once the client disconnected.
    """

    def __init__(self, opts: p.StreamOptions) -> None:
        self.opts = opts
        self.gone = asyncio.Event()
        self.resizes: asyncio.Queue[p.TerminalSize | None] = asyncio.Queue()
        self._stdin: asyncio.Queue[bytes] = asyncio.Queue()

    async def read_stdin(self) -> bytes:
        return await self._stdin.get() if self.opts.stdin else b""

    async def write_stdout(self, data: bytes) -> None:
        raise NotImplementedError

    async def write_stderr(self, data: bytes) -> None:
        raise NotImplementedError


class _WsCommandIO(CommandIO):
    def __init__(self, opts: p.StreamOptions, ws: web.WebSocketResponse) -> None:
        super().__init__(opts)
        self.ws = ws
        self.stdin_closed = False

    async def _send(self, channel: int, data: bytes) -> None:
        if not self.ws.closed:
            await self.ws.send_bytes(bytes([channel]) + data)

    async def write_stdout(self, data: bytes) -> None:
        if self.opts.stdout:
            await self._send(p.CH_STDOUT, data)

    async def write_stderr(self, data: bytes) -> None:
        if self.opts.stderr:
            await self._send(p.CH_STDERR, data)

    def _end_stdin(self) -> None:
        if not self.stdin_closed:
            self.stdin_closed = True
            self._stdin.put_nowait(b"")

    async def pump(self, v5: bool) -> None:
        """Client messages: stdin, resizes, v5 closes; at the end, stdin and resizes end."""
        decoder = p.ResizeDecoder()
        try:
            async for msg in self.ws:
                if msg.type != WSMsgType.BINARY or not msg.data:
                    continue
                channel, data = msg.data[0], msg.data[1:]
                if channel == p.CH_STDIN and self.opts.stdin and not self.stdin_closed:
                    if data:
                        self._stdin.put_nowait(bytes(data))
                elif channel == p.CH_RESIZE:
                    for size in decoder.feed(bytes(data)):
                        self.resizes.put_nowait(size)
                elif channel == p.CH_CLOSE and v5 and data and data[0] == p.CH_STDIN:
                    self._end_stdin()
        finally:
            self._end_stdin()
            self.resizes.put_nowait(None)
            self.gone.set()


class _SpdyCommandIO(CommandIO):
    def __init__(self, opts: p.StreamOptions, streams: dict[str, SpdyStream]) -> None:
        super().__init__(opts)
        self.streams = streams

    async def write_stdout(self, data: bytes) -> None:
        s = self.streams.get(p.STREAM_STDOUT)
        if s is not None and not s.local_closed:
            await s.write(data)

    async def write_stderr(self, data: bytes) -> None:
        s = self.streams.get(p.STREAM_STDERR)
        if s is not None and not s.local_closed:
            await s.write(data)

    async def pump_stdin(self) -> None:
        s = self.streams.get(p.STREAM_STDIN)
        try:
            while s is not None and (chunk := await s.read()):
                self._stdin.put_nowait(chunk)
        finally:
            self._stdin.put_nowait(b"")

    async def pump_resize(self) -> None:
        s = self.streams.get(p.STREAM_RESIZE)
        decoder = p.ResizeDecoder()
        try:
            while s is not None and (chunk := await s.read()):
                for size in decoder.feed(chunk):
                    self.resizes.put_nowait(size)
        finally:
            self.resizes.put_nowait(None)


async def _run_to_status(run: Callable[[CommandIO], Awaitable[int]],
                         io: CommandIO) -> dict[str, Any]:
    try:
        code = await run(io)
    except CommandFailed as exc:
        return p.status_internal_error(str(exc))
    except Exception as exc:  # the client gets the error, the log the trace
        log.exception("remote command failed")
        return p.status_internal_error(f"error executing command in container: {exc}")
    return p.status_success() if code == 0 else p.status_exit_code(code)


async def serve_remote_command(request: web.Request, opts: p.StreamOptions,
                               run: Callable[[CommandIO], Awaitable[int]], *,
                               creation_timeout: float = STREAM_CREATION_TIMEOUT
                               ) -> web.StreamResponse:
    """Exec or attach: the whole life of one client connection."""
    return await _serve_upgraded(
        request, lambda: _serve_ws_command(request, opts, run), p.SPDY_REMOTECOMMAND_PROTOCOLS,
        lambda session, proto: _serve_spdy_command(session, proto, opts, run, creation_timeout))


async def _serve_upgraded(
    request: web.Request, serve_ws: Callable[[], Awaitable[web.StreamResponse]],
    spdy_protocols: tuple[str, ...],
    serve_spdy: Callable[[SpdySession, str], Awaitable[None]],
) -> web.StreamResponse:
    """One streaming connection, websocket or SPDY (as kubelet's server accepts both): a
    websocket serves itself; SPDY is upgraded, served to its end and closed."""
    if is_websocket(request):
        return await serve_ws()
    try:
        session, proto = await upgrade_spdy(request, spdy_protocols)
    except UpgradeFailed as exc:
        return exc.response
    try:
        await serve_spdy(session, proto)
    finally:
        await session.close()
    return web.StreamResponse(status=101)  # already sent; aiohttp needs a return value


async def _serve_ws_command(request: web.Request, opts: p.StreamOptions,
                            run: Callable[[CommandIO], Awaitable[int]]) -> web.StreamResponse:
    ws = web.WebSocketResponse(protocols=p.WS_REMOTECOMMAND_PROTOCOLS, max_msg_size=0,
                               autoping=True)
    await ws.prepare(request)
    proto = ws.ws_protocol or ""
    io = _WsCommandIO(opts, ws)
    # an empty message on the lowest writable channel says "ready" (kubelet's websocket.go)
    first = p.CH_STDOUT if opts.stdout else p.CH_STDERR if opts.stderr else p.CH_ERROR
    await ws.send_bytes(bytes([first]))
    pump = asyncio.create_task(io.pump(v5=proto == p.STREAM_PROTOCOL_V5))
    try:
        status = await _run_to_status(run, io)
        if proto in (p.STREAM_PROTOCOL_V4, p.STREAM_PROTOCOL_V5):
            await io._send(p.CH_ERROR, json.dumps(status).encode())
        elif status["status"] != "Success":
            await io._send(p.CH_ERROR, status["message"].encode())
        await ws.close()
    finally:
        await cancelled(pump)
    return ws


async def _serve_spdy_command(session: SpdySession, proto: str, opts: p.StreamOptions,
                              run: Callable[[CommandIO], Awaitable[int]],
                              creation_timeout: float) -> None:
    expected = {p.STREAM_ERROR}
    if opts.stdin:
        expected.add(p.STREAM_STDIN)
    if opts.stdout:
        expected.add(p.STREAM_STDOUT)
    if opts.stderr:
        expected.add(p.STREAM_STDERR)
    if opts.tty and proto in (p.STREAM_PROTOCOL_V4, p.STREAM_PROTOCOL_V3):
        expected.add(p.STREAM_RESIZE)
    streams: dict[str, SpdyStream] = {}

    async def collect() -> None:
        while not expected <= set(streams):
            stream = await session.accept()
            if stream is None:
                raise ConnectionResetError("client closed before opening its streams")
            kind = stream.header(p.STREAM_TYPE)
            if kind in (p.STREAM_ERROR, p.STREAM_STDIN, p.STREAM_STDOUT, p.STREAM_STDERR,
                        p.STREAM_RESIZE):
                streams[kind] = stream
            else:
                log.warning("unexpected stream type %r", kind)
                stream.reset()

    try:
        await asyncio.wait_for(collect(), creation_timeout)
    except (TimeoutError, ConnectionResetError) as exc:
        log.warning("remote command: %s", exc or "timed out waiting for client streams")
        return
    io = _SpdyCommandIO(opts, streams)

    async def watch_session() -> None:
        await session.done.wait()
        io.gone.set()

    pumps = [asyncio.create_task(io.pump_stdin()), asyncio.create_task(io.pump_resize()),
             asyncio.create_task(watch_session())]
    try:
        status = await _run_to_status(run, io)
        for kind in (p.STREAM_STDOUT, p.STREAM_STDERR):
            if kind in streams:
                await streams[kind].close()
        err = streams[p.STREAM_ERROR]
        with contextlib.suppress(ConnectionError):
            if proto == p.STREAM_PROTOCOL_V4:
                await err.write(json.dumps(status).encode())
            elif status["status"] != "Success":
                await err.write(status["message"].encode())
            await err.close()
    finally:
        for t in pumps:
            t.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)


# ---------------------------------------------------------------------- port forward
async def _copy(read: Callable[[], Awaitable[bytes]],
                write: Callable[[bytes], Awaitable[None]]) -> None:
    while chunk := await read():
        await write(chunk)


def _text_to(
    send: Callable[[int, bytes], Awaitable[None]], channel: int
) -> Callable[[str], Awaitable[None]]:
    """A writer of text messages to one channel (as UTF-8)."""
    return lambda message: send(channel, message.encode())


async def _forward(port: int, dial: Dialer, read: Callable[[], Awaitable[bytes]],
                   write: Callable[[bytes], Awaitable[None]],
                   close_out: Callable[[], Awaitable[None]],
                   report: Callable[[str], Awaitable[None]]) -> None:
    """Connect ``port`` and copy both ways: client EOF half-closes the TCP connection, the
    pod's EOF ends the forward. A failure is reported on the error stream."""
    try:
        reader, writer = await dial(port)
    except Exception as exc:
        await report(f"error forwarding port {port} to pod: {exc}")
        await close_out()
        return

    async def client_to_pod() -> None:
        try:
            while chunk := await read():
                writer.write(chunk)
                await writer.drain()
        finally:
            if writer.can_write_eof() and not writer.is_closing():
                with contextlib.suppress(OSError):
                    writer.write_eof()

    up = asyncio.create_task(client_to_pod())
    try:
        while chunk := await reader.read(64 * 1024):
            await write(chunk)
    except (ConnectionError, OSError) as exc:
        await report(f"error forwarding port {port} to pod: {exc}")
    finally:
        await cancelled(up)
        writer.close()
        with contextlib.suppress(Exception):
            await close_out()


def query_ports(request: web.Request) -> list[int]:
    """The ``port`` query parameters (each 1..65535); ValueError naming a bad one."""
    ports = []
    for raw in request.query.getall(p.PORT_HEADER, []):
        for part in raw.split(","):
            try:
                port = int(part)
            except ValueError:
                raise ValueError(f"port: {part!r} is not a number") from None
            if not 0 < port < 65536:
                raise ValueError(f"port: {port} is out of range 1-65535")
            ports.append(port)
    return ports


async def serve_port_forward(request: web.Request, ports: list[int], dial: Dialer, *,
                             creation_timeout: float = STREAM_CREATION_TIMEOUT
                             ) -> web.StreamResponse:
    return await _serve_upgraded(
        request, lambda: _serve_ws_port_forward(request, ports, dial),
        p.SPDY_PORT_FORWARD_PROTOCOLS,
        lambda session, _proto: _serve_spdy_port_forward(session, dial, creation_timeout))


async def _serve_spdy_port_forward(session: SpdySession, dial: Dialer,
                                   creation_timeout: float) -> None:
    pending: dict[str, dict[str, SpdyStream]] = {}
    tasks: set[asyncio.Task[None]] = set()

    async def forward_pair(pair: dict[str, SpdyStream]) -> None:
        data, err = pair[p.STREAM_DATA], pair[p.STREAM_ERROR]
        try:
            port = int(data.header(p.PORT_HEADER))
        except ValueError:
            await err.write(f"invalid port {data.header(p.PORT_HEADER)!r}".encode())
            await err.close()
            await data.close()
            return

        async def report(msg: str) -> None:
            with contextlib.suppress(ConnectionError):
                await err.write(msg.encode())

        await _forward(port, dial, data.read, data.write, data.close, report)
        with contextlib.suppress(ConnectionError):
            await err.close()

    async def expire(request_id: str) -> None:
        await asyncio.sleep(creation_timeout)
        pair = pending.pop(request_id, None)
        for s in (pair or {}).values():
            s.reset()

    while (stream := await session.accept()) is not None:
        kind = stream.header(p.STREAM_TYPE)
        rid = stream.header(p.REQUEST_ID_HEADER)
        if kind not in (p.STREAM_DATA, p.STREAM_ERROR):
            stream.reset()
            continue
        pair = pending.setdefault(rid, {})
        if not pair:
            t = asyncio.create_task(expire(rid))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        pair[kind] = stream
        if len(pair) == 2:
            del pending[rid]
            t = asyncio.create_task(forward_pair(pair))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
    for t in list(tasks):
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class WebSocketByteWriter:
    """A ``ByteWriter`` over a WebSocket: each write one binary message, in order."""

    def __init__(self, ws: web.WebSocketResponse | Any) -> None:
        self.ws = ws
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._sender = asyncio.create_task(self._send())

    async def _send(self) -> None:
        while True:
            data = await self._queue.get()
            try:
                await self.ws.send_bytes(data)
            except ConnectionError:
                pass
            finally:
                self._queue.task_done()

    def write(self, data: bytes) -> None:
        self._queue.put_nowait(data)

    async def drain(self) -> None:
        await self._queue.join()

    def close(self) -> None:
        self._sender.cancel()
        self._closing = asyncio.ensure_future(self.ws.close())


async def spdy_over_websocket(ws: Any, *, server: bool) -> tuple[SpdySession, asyncio.Task[None]]:
    """A SPDY session whose bytes travel in the binary messages of ``ws`` (kubectl's
    port-forward tunnel); returns it and the task feeding it."""
    session = SpdySession(WebSocketByteWriter(ws), server=server)

    async def feed() -> None:
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY:
                    session.data_received(bytes(msg.data))
        finally:
            session.connection_lost(None)

    return session, asyncio.create_task(feed())


async def _serve_ws_port_forward(request: web.Request, ports: list[int],
                                 dial: Dialer) -> web.StreamResponse:
    ws = web.WebSocketResponse(protocols=p.WS_PORT_FORWARD_PROTOCOLS, max_msg_size=0)
    offered = [x.strip() for x in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
    if offered != [""] and not set(offered) & set(p.WS_PORT_FORWARD_PROTOCOLS):
        # refuse before upgrading, so a client falls back to another protocol (SPDY)
        return web.Response(status=400, text=f"unsupported websocket protocols {offered}")
    await ws.prepare(request)
    if ws.ws_protocol == p.WS_SPDY_TUNNEL_PORT_FORWARD:
        session, feeder = await spdy_over_websocket(ws, server=True)
        try:
            await _serve_spdy_port_forward(session, dial, STREAM_CREATION_TIMEOUT)
        finally:
            await session.close()
            await cancelled(feeder)
        return ws
    if not ports:
        await ws.close(message=b'query parameter "port" is required')
        return ws
    inbound = [asyncio.Queue[bytes]() for _ in ports]

    async def send(channel: int, data: bytes) -> None:
        if not ws.closed:
            await ws.send_bytes(bytes([channel]) + data)

    for i, port in enumerate(ports):
        prefix = struct.pack("<H", port)
        await send(2 * i, prefix)
        await send(2 * i + 1, prefix)

    async def pump() -> None:
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY and msg.data:
                    ch = msg.data[0]
                    if ch % 2 == 0 and ch // 2 < len(ports) and len(msg.data) > 1:
                        inbound[ch // 2].put_nowait(bytes(msg.data[1:]))
        finally:
            for q in inbound:
                q.put_nowait(b"")

    async def no_close() -> None:
        return None

    reader = asyncio.create_task(pump())
    try:
        await asyncio.gather(*(
            _forward(port, dial, inbound[i].get, functools.partial(send, 2 * i), no_close,
                     _text_to(send, 2 * i + 1))
            for i, port in enumerate(ports)))
        await ws.close()
    finally:
        await cancelled(reader)
    return ws
