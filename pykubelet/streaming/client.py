"""The client side of exec, attach and port-forward, over WebSocket or SPDY/3.1.

What crictl and kubectl do with a streaming URL, for tests, benchmarks and later the agent
and pykubectl:

    cmd = await open_remote_command(url, StreamOptions(stdin=True, tty=True), transport="spdy")
    await cmd.write_stdin(b"echo hi\\n"); await cmd.resize(120, 40); await cmd.close_stdin()
    async for name, data in cmd.output(): ...          # ("stdout" | "stderr", bytes)
    code = await cmd.wait()                            # exit code, or RemoteCommandError

    result = await run_remote_command(url, opts, stdin=b"...")   # all at once

    pf = await PortForwardClient.connect(url, transport="spdy")
    conn = await pf.dial(8080); await conn.write(b"GET / ..."); await conn.read() ...
    server = await forward_local(pf, local_port=0, remote_port=8080)   # kubectl port-forward

``url`` is http(s)://... (SPDY: an HTTP/1.1 Upgrade on a plain socket; WebSocket: aiohttp).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl as ssl_mod
import struct
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Literal

import aiohttp
from yarl import URL

from pykubelet.streaming import protocols as p
from pykubelet.streaming.session import SpdySession, SpdyStream
from pykubelet.streaming.tasks import cancelled

Transport = Literal["websocket", "spdy", "websocket-spdy"]  # the last: port-forward only


@dataclass(frozen=True)
class CommandResult:
    stdout: bytes
    stderr: bytes
    exit_code: int


class UpgradeRefused(Exception):
    """The server answered the upgrade with something other than 101."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"upgrade refused: HTTP {status}: {body.strip()[:300]}")
        self.status = status


# ---------------------------------------------------------------------- SPDY dialing
class _StreamWriterAdapter:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._w = writer

    def write(self, data: bytes) -> None:
        if not self._w.is_closing():
            self._w.write(data)

    async def drain(self) -> None:
        await self._w.drain()

    def close(self) -> None:
        self._w.close()


async def spdy_connect(url: str | URL, protocols: tuple[str, ...], *,
                       headers: Mapping[str, str] | None = None,
                       ssl: ssl_mod.SSLContext | None = None,
                       method: str = "POST") -> tuple[SpdySession, str, asyncio.Task[None]]:
    """Upgrade ``url`` to SPDY/3.1; returns the client session, the negotiated protocol and
    the task feeding it (cancel it, or close the session, when done)."""
    u = URL(url)
    secure = u.scheme in ("https", "wss")
    port = u.port or (443 if secure else 80)
    reader, writer = await asyncio.open_connection(
        u.host, port, ssl=(ssl or ssl_mod.create_default_context()) if secure else None)
    lines = [f"{method} {u.raw_path_qs} HTTP/1.1", f"Host: {u.raw_authority}",
             "Connection: Upgrade", f"Upgrade: {p.SPDY_UPGRADE}", "Content-Length: 0"]
    lines += [f"{p.HEADER_PROTOCOL_VERSION}: {proto}" for proto in protocols]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        writer.close()
        raise UpgradeRefused(0, "connection closed before a response") from exc
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split()[1])
    resp_headers: dict[str, str] = {}
    for line in header_lines:
        if ":" in line:
            k, v = line.split(":", 1)
            resp_headers[k.strip().lower()] = v.strip()
    if status != 101:
        body = b""
        with contextlib.suppress(Exception):
            n = int(resp_headers.get("content-length", "0"))
            body = await asyncio.wait_for(reader.readexactly(n), 5) if n else b""
        writer.close()
        raise UpgradeRefused(status, body.decode(errors="replace"))
    session = SpdySession(_StreamWriterAdapter(writer), server=False)

    async def feed() -> None:
        try:
            while chunk := await reader.read(256 * 1024):
                session.data_received(chunk)
        except (ConnectionError, OSError):
            pass
        finally:
            session.connection_lost(None)

    task = asyncio.create_task(feed())
    return session, resp_headers.get(p.HEADER_PROTOCOL_VERSION.lower(), ""), task


# ---------------------------------------------------------------------- remote command
async def _ws_connect(
    url: URL, protocols: tuple[str, ...], headers: Mapping[str, str] | None,
    ssl: ssl_mod.SSLContext | None,
) -> tuple[aiohttp.ClientSession, aiohttp.ClientWebSocketResponse]:
    """A WebSocket of the channel protocols (remote commands, port forwarding) in a session
    of its own, which is closed again when the upgrade fails."""
    http = aiohttp.ClientSession()
    try:
        ws = await http.ws_connect(url, protocols=protocols, headers=headers,
                                   ssl=ssl if ssl is not None else True, max_msg_size=0)
    except BaseException:
        await http.close()
        raise
    return http, ws


async def _ws_close(http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse,
                    reader: asyncio.Task[None]) -> None:
    """Close a _ws_connect WebSocket: the socket, then its reader task, then the session."""
    await ws.close()
    await cancelled(reader)
    await http.close()


class RemoteCommand:
    """A running exec or attach, seen from the client."""

    def __init__(self, opts: p.StreamOptions) -> None:
        self.opts = opts
        self._output: asyncio.Queue[tuple[str, bytes] | None] = asyncio.Queue()
        self._status = asyncio.get_running_loop().create_future()
        self._json_status = True

    async def write_stdin(self, data: bytes) -> None:
        raise NotImplementedError

    async def close_stdin(self) -> None:
        raise NotImplementedError

    async def resize(self, width: int, height: int) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def output(self) -> AsyncIterator[tuple[str, bytes]]:
        """("stdout" | "stderr", bytes) until the command's output ended."""
        while (item := await self._output.get()) is not None:
            yield item
        self._output.put_nowait(None)

    async def wait(self) -> int:
        """The exit code (after the output ended); RemoteCommandError for other failures."""
        raw = await self._status
        return p.exit_code_from_status(raw, json_status=self._json_status)


class _WsRemoteCommand(RemoteCommand):
    async def start(self, url: str | URL, headers: Mapping[str, str] | None,
                    ssl: ssl_mod.SSLContext | None) -> None:
        self._http, self._ws = await _ws_connect(URL(url), p.WS_REMOTECOMMAND_PROTOCOLS,
                                                 headers, ssl)
        self.protocol = self._ws.protocol or ""
        self._json_status = self.protocol in (p.STREAM_PROTOCOL_V4, p.STREAM_PROTOCOL_V5)
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        error = b""
        try:
            async for msg in self._ws:
                if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
                    continue
                ch, data = msg.data[0], bytes(msg.data[1:])
                if ch == p.CH_STDOUT and data:
                    self._output.put_nowait(("stdout", data))
                elif ch == p.CH_STDERR and data:
                    self._output.put_nowait(("stderr", data))
                elif ch == p.CH_ERROR:
                    error += data
        finally:
            self._output.put_nowait(None)
            if not self._status.done():
                self._status.set_result(error)

    async def _send(self, channel: int, data: bytes) -> None:
        await self._ws.send_bytes(bytes([channel]) + data)

    async def write_stdin(self, data: bytes) -> None:
        await self._send(p.CH_STDIN, data)

    async def close_stdin(self) -> None:
        if self.protocol == p.STREAM_PROTOCOL_V5:
            await self._ws.send_bytes(bytes([p.CH_CLOSE, p.CH_STDIN]))

    async def resize(self, width: int, height: int) -> None:
        await self._send(p.CH_RESIZE, p.TerminalSize(width, height).to_json())

    async def close(self) -> None:
        await _ws_close(self._http, self._ws, self._reader)


class _SpdyRemoteCommand(RemoteCommand):
    async def start(self, url: str | URL, headers: Mapping[str, str] | None,
                    ssl: ssl_mod.SSLContext | None) -> None:
        self._session, self.protocol, self._feed = await spdy_connect(
            url, p.SPDY_REMOTECOMMAND_PROTOCOLS, headers=headers, ssl=ssl)
        self._json_status = self.protocol == p.STREAM_PROTOCOL_V4
        # client-go's order: error first, then stdin, stdout, stderr, resize
        self._streams: dict[str, SpdyStream] = {}
        kinds = [p.STREAM_ERROR]
        kinds += [p.STREAM_STDIN] if self.opts.stdin else []
        kinds += [p.STREAM_STDOUT] if self.opts.stdout else []
        kinds += [p.STREAM_STDERR] if self.opts.stderr else []
        if self.opts.tty and self.protocol in (p.STREAM_PROTOCOL_V4, p.STREAM_PROTOCOL_V3):
            kinds.append(p.STREAM_RESIZE)
        for kind in kinds:
            self._streams[kind] = await self._session.open_stream({p.STREAM_TYPE: kind})
        self._tasks = [asyncio.create_task(self._read_outputs()),
                       asyncio.create_task(self._read_error())]

    async def _read_outputs(self) -> None:
        async def one(kind: str) -> None:
            stream = self._streams[kind]
            while data := await stream.read():
                self._output.put_nowait((kind, data))

        try:
            await asyncio.gather(*(one(k) for k in (p.STREAM_STDOUT, p.STREAM_STDERR)
                                   if k in self._streams))
        finally:
            self._output.put_nowait(None)

    async def _read_error(self) -> None:
        try:
            raw = await self._streams[p.STREAM_ERROR].read_all()
        finally:
            if not self._status.done():
                self._status.set_result(raw if "raw" in locals() else b"")

    async def write_stdin(self, data: bytes) -> None:
        await self._streams[p.STREAM_STDIN].write(data)

    async def close_stdin(self) -> None:
        if p.STREAM_STDIN in self._streams:
            await self._streams[p.STREAM_STDIN].close()

    async def resize(self, width: int, height: int) -> None:
        if p.STREAM_RESIZE in self._streams:
            await self._streams[p.STREAM_RESIZE].write(p.TerminalSize(width, height).to_json())

    async def wait(self) -> int:
        code = await super().wait()
        await self._tasks[0]
        return code

    async def close(self) -> None:
        await self._session.close()
        for t in (*self._tasks, self._feed):
            t.cancel()
        await asyncio.gather(*self._tasks, self._feed, return_exceptions=True)


async def open_remote_command(url: str | URL, opts: p.StreamOptions, *,
                              transport: Transport = "websocket",
                              headers: Mapping[str, str] | None = None,
                              ssl: ssl_mod.SSLContext | None = None) -> RemoteCommand:
    cmd: _WsRemoteCommand | _SpdyRemoteCommand
    if transport == "websocket":
        cmd = _WsRemoteCommand(opts)
        await cmd.start(URL(url).with_scheme("wss" if URL(url).scheme == "https" else "ws"),
                        headers, ssl)
    else:
        cmd = _SpdyRemoteCommand(opts)
        await cmd.start(url, headers, ssl)
    return cmd


async def run_remote_command(url: str | URL, opts: p.StreamOptions, *, stdin: bytes = b"",
                             transport: Transport = "websocket",
                             headers: Mapping[str, str] | None = None,
                             ssl: ssl_mod.SSLContext | None = None,
                             timeout: float = 60.0) -> CommandResult:
    """Run to the end: send ``stdin`` (then close it), collect the output and exit code."""
    cmd = await open_remote_command(url, opts, transport=transport, headers=headers, ssl=ssl)
    try:
        async def go() -> CommandResult:
            if opts.stdin:
                if stdin:
                    await cmd.write_stdin(stdin)
                await cmd.close_stdin()
            out: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
            async for name, data in cmd.output():
                out[name].append(data)
            code = await cmd.wait()
            return CommandResult(b"".join(out["stdout"]), b"".join(out["stderr"]), code)

        return await asyncio.wait_for(go(), timeout)
    finally:
        await cmd.close()


# ---------------------------------------------------------------------- port forward
class ForwardedConnection:
    """One forwarded TCP connection: bytes both ways, and the server's error text."""

    async def read(self) -> bytes:
        raise NotImplementedError

    async def write(self, data: bytes) -> None:
        raise NotImplementedError

    async def close_write(self) -> None:
        raise NotImplementedError

    async def error(self) -> str:
        """What the server reported (after the connection ended); "" when nothing."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class _SpdyForwarded(ForwardedConnection):
    def __init__(self, data: SpdyStream, err: SpdyStream) -> None:
        self._data, self._err = data, err

    async def read(self) -> bytes:
        return await self._data.read()

    async def write(self, data: bytes) -> None:
        await self._data.write(data)

    async def close_write(self) -> None:
        await self._data.close()

    async def error(self) -> str:
        return (await self._err.read_all()).decode(errors="replace")

    async def close(self) -> None:
        if not self._data.local_closed:
            await self._data.close()
        if not self._err.local_closed:
            await self._err.close()


class _WsForwarded(ForwardedConnection):
    async def start(self, url: URL, port: int, ssl: ssl_mod.SSLContext | None,
                    headers: Mapping[str, str] | None) -> None:
        self._http, self._ws = await _ws_connect(
            url.update_query(port=str(port)), (p.STREAM_PROTOCOL_V4, p.STREAM_PROTOCOL_V1),
            headers, ssl)
        self._data: asyncio.Queue[bytes] = asyncio.Queue()
        self._err = b""
        self._done = asyncio.Event()
        self._seen_prefix = [False, False]
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for msg in self._ws:
                if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
                    continue
                ch, data = msg.data[0], bytes(msg.data[1:])
                if ch > 1:
                    continue
                if not self._seen_prefix[ch]:  # the port, two bytes, first on each channel
                    self._seen_prefix[ch] = True
                    data = data[2:]
                if ch == 0 and data:
                    self._data.put_nowait(data)
                elif ch == 1:
                    self._err += data
        finally:
            self._data.put_nowait(b"")
            self._done.set()

    async def read(self) -> bytes:
        return await self._data.get()

    async def write(self, data: bytes) -> None:
        await self._ws.send_bytes(b"\x00" + data)

    async def close_write(self) -> None:
        return None  # the channel protocol has no half-close

    async def error(self) -> str:
        await self._done.wait()
        return self._err.decode(errors="replace")

    async def close(self) -> None:
        await _ws_close(self._http, self._ws, self._reader)


class PortForwardClient:
    """Dials ports of a pod through a port-forward URL (one SPDY session for all dials,
    or one WebSocket per dial)."""

    def __init__(self, url: URL, transport: Transport, ssl: ssl_mod.SSLContext | None,
                 headers: Mapping[str, str] | None) -> None:
        self.url = url
        self.transport = transport
        self._ssl = ssl
        self._headers = headers
        self._ids = itertools.count()
        self._session: SpdySession | None = None
        self._feed: asyncio.Task[None] | None = None
        self._http: aiohttp.ClientSession | None = None

    @classmethod
    async def connect(cls, url: str | URL, *, transport: Transport = "spdy",
                      ssl: ssl_mod.SSLContext | None = None,
                      headers: Mapping[str, str] | None = None) -> PortForwardClient:
        client = cls(URL(url), transport, ssl, headers)
        if transport == "spdy":
            client._session, _, client._feed = await spdy_connect(
                url, p.SPDY_PORT_FORWARD_PROTOCOLS, headers=headers, ssl=ssl)
        elif transport == "websocket-spdy":  # kubectl >= 1.31: SPDY inside a WebSocket
            from pykubelet.streaming.server import spdy_over_websocket

            u = URL(url)
            client._http = aiohttp.ClientSession()
            ws = await client._http.ws_connect(
                u.with_scheme("wss" if u.scheme == "https" else "ws"),
                protocols=(p.WS_SPDY_TUNNEL_PORT_FORWARD,), headers=headers,
                ssl=ssl if ssl is not None else True, max_msg_size=0)
            if ws.protocol != p.WS_SPDY_TUNNEL_PORT_FORWARD:
                await ws.close()
                await client._http.close()
                raise UpgradeRefused(101, f"server chose protocol {ws.protocol!r}")
            client._session, client._feed = await spdy_over_websocket(ws, server=False)
        return client

    async def dial(self, port: int) -> ForwardedConnection:
        if self._session is None:
            conn = _WsForwarded()
            u = self.url.with_scheme("wss" if self.url.scheme == "https" else "ws")
            await conn.start(u, port, self._ssl, self._headers)
            return conn
        rid = str(next(self._ids))
        base = {p.PORT_HEADER: str(port), p.REQUEST_ID_HEADER: rid}
        err = await self._session.open_stream({**base, p.STREAM_TYPE: p.STREAM_ERROR})
        await err.close()  # the client never writes on the error stream
        data = await self._session.open_stream({**base, p.STREAM_TYPE: p.STREAM_DATA})
        return _SpdyForwarded(data, err)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._feed is not None:
            await cancelled(self._feed)
        if self._http is not None:
            await self._http.close()


async def forward_local(client: PortForwardClient, remote_port: int, *, local_port: int = 0,
                        host: str = "127.0.0.1") -> asyncio.Server:
    """``kubectl port-forward``: accept on host:local_port, forward each connection."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            conn = await client.dial(remote_port)
        except Exception:
            writer.close()
            return

        async def up() -> None:
            try:
                while chunk := await reader.read(64 * 1024):
                    await conn.write(chunk)
            finally:
                with contextlib.suppress(Exception):
                    await conn.close_write()

        task = asyncio.create_task(up())
        try:
            while chunk := await conn.read():
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            await cancelled(task)
            writer.close()
            with contextlib.suppress(Exception):
                await conn.close()

    return await asyncio.start_server(handle, host, local_port)


def ws_port_prefix(port: int) -> bytes:
    return struct.pack("<H", port)
