"""A SPDY/3.1 session: many byte streams over one connection, for either side.

Transport-agnostic, so one session serves a hijacked aiohttp connection (the runtime's and
the node's streaming servers), a client socket, or SPDY tunnelled in WebSocket messages
(kubectl's port-forward through an API server): feed it with ``data_received(bytes)`` and
``connection_lost()``, and give it a ``ByteWriter`` to write to.

Semantics follow moby/spdystream, the implementation every Kubernetes peer uses: the side
that receives a SYN_STREAM replies at once (SYN_REPLY) and hands the stream to
``accept()``; ``open_stream()`` sends a SYN_STREAM and waits for its reply; a DATA or
SYN_REPLY frame with FIN half-closes, RST_STREAM ends both halves; PINGs are answered;
GOAWAY ends the session. Client stream ids are odd, server ids even. No flow control
(spdystream has none: windows are neither enforced nor updated).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Protocol

from pykubelet.streaming import spdy

DATA_CHUNK = 32 * 1024  # bytes per DATA frame we send


class ByteWriter(Protocol):
    """Where a session writes its frames (a transport, a stream writer, a WebSocket)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class StreamReset(Exception):
    """The peer reset the stream (RST_STREAM) or the session ended before a reply."""


class SpdyStream:
    """One stream: headers from its SYN_STREAM, bytes in, bytes out, half-close."""

    def __init__(self, session: SpdySession, stream_id: int, headers: spdy.Headers) -> None:
        self.session = session
        self.id = stream_id
        self.headers = headers
        self.reply_headers: spdy.Headers = {}
        self.replied = asyncio.Event()
        self._chunks: deque[bytes] = deque()
        self._readable = asyncio.Event()
        self.remote_closed = False  # FIN or RST from the peer: no more data will come
        self.local_closed = False  # we sent FIN (or RST)
        self.reset_status = 0

    def header(self, name: str, default: str = "") -> str:
        values = self.headers.get(name.lower())
        return values[0] if values else default

    # ------------------------------------------------------------------ reading
    def _push(self, data: bytes, fin: bool) -> None:
        if data:
            self._chunks.append(data)
        if fin:
            self.remote_closed = True
        self._readable.set()

    async def read(self) -> bytes:
        """The next bytes the peer sent; b"" once it half-closed (or reset) the stream."""
        while not self._chunks:
            if self.remote_closed:
                return b""
            self._readable.clear()
            await self._readable.wait()
        return self._chunks.popleft()

    async def read_all(self) -> bytes:
        parts = []
        while chunk := await self.read():
            parts.append(chunk)
        return b"".join(parts)

    # ------------------------------------------------------------------ writing
    async def write(self, data: bytes) -> None:
        if self.local_closed or self.session.closed:
            raise ConnectionResetError(f"SPDY stream {self.id} is closed for writing")
        view = memoryview(data)
        for i in range(0, len(view), DATA_CHUNK):
            self.session._send(spdy.DataFrame(self.id, bytes(view[i:i + DATA_CHUNK])))
        await self.session._drain()

    async def close(self) -> None:
        """Half-close: FIN, no more data from us (the peer may still send)."""
        if self.local_closed or self.session.closed:
            self.local_closed = True
            return
        self.local_closed = True
        self.session._send(spdy.DataFrame(self.id, b"", fin=True))
        self.session._maybe_forget(self)
        with contextlib.suppress(ConnectionError):
            await self.session._drain()

    def reset(self, status: int = spdy.CANCEL) -> None:
        if not self.session.closed and not (self.local_closed and self.remote_closed):
            self.session._send(spdy.RstStream(self.id, status))
        self.local_closed = True
        self._push(b"", fin=True)
        self.session._streams.pop(self.id, None)


class SpdySession:
    """The streams of one SPDY connection. Created by the server after its 101 response,
    or by the client after reading it; feed it bytes, ``accept`` or ``open_stream``."""

    def __init__(self, writer: ByteWriter, *, server: bool) -> None:
        self._writer = writer
        self._framer = spdy.Framer()
        self._streams: dict[int, SpdyStream] = {}
        self._incoming: asyncio.Queue[SpdyStream | None] = asyncio.Queue()
        self._next_id = 2 if server else 1
        self._next_ping = 2 if server else 1
        self._pings: dict[int, asyncio.Future[None]] = {}
        self.server = server
        self.closed = False
        self.done = asyncio.Event()
        self.error: Exception | None = None

    # ------------------------------------------------------------------ input
    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            frames = self._framer.feed(data)
        except spdy.SpdyError as exc:
            self.error = exc
            self._send(spdy.GoAway(0, 1))  # PROTOCOL_ERROR
            self.connection_lost(exc)
            return
        for frame in frames:
            self._handle(frame)

    def connection_lost(self, exc: Exception | None = None) -> None:
        if self.closed:
            return
        self.closed = True
        for stream in list(self._streams.values()):
            stream._push(b"", fin=True)
            stream.replied.set()
        self._streams.clear()
        for fut in self._pings.values():
            if not fut.done():
                fut.set_exception(ConnectionResetError("SPDY session closed"))
        self._incoming.put_nowait(None)
        self.done.set()
        with contextlib.suppress(Exception):
            self._writer.close()

    def _handle(self, frame: spdy.Frame) -> None:
        match frame:
            case spdy.DataFrame(stream_id=sid, data=data, fin=fin):
                stream = self._streams.get(sid)
                if stream is not None:
                    stream._push(data, fin)
                    if fin:
                        self._maybe_forget(stream)
            case spdy.SynStream():
                if frame.stream_id in self._streams or (frame.stream_id % 2 == 0) != (
                        not self.server):
                    self._send(spdy.RstStream(frame.stream_id, spdy.PROTOCOL_ERROR))
                    return
                stream = SpdyStream(self, frame.stream_id, frame.headers)
                stream.remote_closed = frame.fin
                self._streams[frame.stream_id] = stream
                self._send(spdy.SynReply(frame.stream_id, {}))
                stream.replied.set()
                self._incoming.put_nowait(stream)
            case spdy.SynReply(stream_id=sid):
                stream = self._streams.get(sid)
                if stream is not None:
                    stream.reply_headers = frame.headers
                    stream.replied.set()
                    if frame.fin:
                        stream._push(b"", fin=True)
                        self._maybe_forget(stream)
            case spdy.HeadersFrame(stream_id=sid, fin=fin):
                stream = self._streams.get(sid)
                if stream is not None and fin:
                    stream._push(b"", fin=True)
                    self._maybe_forget(stream)
            case spdy.RstStream(stream_id=sid, status=status):
                stream = self._streams.pop(sid, None)
                if stream is not None:
                    stream.reset_status = status
                    stream.local_closed = True
                    stream._push(b"", fin=True)
                    stream.replied.set()
            case spdy.Ping(id=pid):
                if (pid % 2 == 0) == self.server:  # ours coming back
                    fut = self._pings.pop(pid, None)
                    if fut is not None and not fut.done():
                        fut.set_result(None)
                else:
                    self._send(spdy.Ping(pid))
            case spdy.GoAway():
                self.connection_lost(None)
            case _:
                pass  # SETTINGS, WINDOW_UPDATE: nothing to do without flow control

    def _maybe_forget(self, stream: SpdyStream) -> None:
        if stream.local_closed and stream.remote_closed:
            self._streams.pop(stream.id, None)

    # ------------------------------------------------------------------ output
    def _send(self, frame: spdy.Frame) -> None:
        if self.closed:
            return
        self._writer.write(self._framer.encode(frame))

    async def _drain(self) -> None:
        if self.closed:
            raise ConnectionResetError("SPDY session closed")
        await self._writer.drain()

    async def accept(self) -> SpdyStream | None:
        """The next stream the peer opened; None once the session ended."""
        stream = await self._incoming.get()
        if stream is None:
            self._incoming.put_nowait(None)  # every later accept sees the end too
        return stream

    async def open_stream(self, headers: Mapping[str, str | Iterable[str]], *,
                          timeout: float = 30.0) -> SpdyStream:
        """SYN_STREAM with ``headers``; returns once the peer replied."""
        if self.closed:
            raise ConnectionResetError("SPDY session closed")
        sid = self._next_id
        self._next_id += 2
        norm = spdy.normalize_headers(headers)
        stream = SpdyStream(self, sid, norm)
        self._streams[sid] = stream
        self._send(spdy.SynStream(sid, norm))
        await self._drain()
        await asyncio.wait_for(stream.replied.wait(), timeout)
        if self.closed or stream.reset_status:
            raise StreamReset(f"SPDY stream {sid} ({norm}) was refused")
        return stream

    async def ping(self, timeout: float = 10.0) -> None:
        pid = self._next_ping
        self._next_ping += 2
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pings[pid] = fut
        self._send(spdy.Ping(pid))
        await self._drain()
        await asyncio.wait_for(fut, timeout)

    async def close(self) -> None:
        """GOAWAY, then close the connection (open streams see their end)."""
        if self.closed:
            return
        self._send(spdy.GoAway(0, 0))
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()
        self.connection_lost(None)
