"""The agent's client-side load balancer over several API servers (k3s's
``pkg/agent/loadbalancer``, our own code): a local TCP proxy the agent's clients talk to.

It proxies bytes, no TLS termination, so TLS stays end to end between the client and the
API server and the server's certificate is still checked (its SANs include 127.0.0.1).

- New connections go to the *current* server: the first healthy one in preference order.
  A dial that fails or times out marks that server unhealthy and the next one is tried, so
  a client sees no error while any server works.
- Every ``health_interval`` each server is checked: a TLS handshake (unverified: this is
  liveness, not trust) and ``GET health_path`` expecting 200. Our API server's /readyz
  also reads the store, so a server whose etcd lost quorum fails it.
- A server that turns unhealthy has every connection proxied to it closed, so long watches
  reconnect through the next server. When a more preferred server is healthy again new
  connections go back to it (k3s prefers the default server); existing ones stay.
- The state (servers, current, health) is kept in a JSON file, written atomically on every
  change, as k3s keeps ``k3s-agent-load-balancer.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pycni.atomic_files import write_atomic

log = logging.getLogger(__name__)

BUFFER = 64 * 1024
# where an agent keeps its balancer's state, under its rootDir (k3s's
# k3s-agent-load-balancer.json): the agent writes it, `lab status` reads it
AGENT_STATE_FILE = "agent-load-balancer.json"


class LoadBalancerError(ValueError):
    """Bad input (a server URL, the listen address); the message says which, in one line."""


def parse_server(url: str) -> tuple[str, int]:
    """``https://HOST:PORT`` -> (host, port); anything else is a LoadBalancerError."""
    bad = LoadBalancerError(f"{url!r}: expected https://HOST:PORT")
    if not isinstance(url, str):
        raise bad
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise bad from None
    if (parts.scheme != "https" or not parts.hostname or port is None or port == 0
            or parts.path not in ("", "/") or parts.query or parts.fragment
            or parts.username or parts.password):
        raise bad
    return parts.hostname, port


def parse_listen(listen: str) -> tuple[str, int]:
    """``ADDR:PORT`` (``[::1]:PORT`` for IPv6) -> (addr, port)."""
    host, sep, port = listen.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise LoadBalancerError(f"listen {listen!r}: expected ADDR:PORT")
    return host, int(port)


def normalise(servers: Iterable[str]) -> list[str]:
    """Validated server URLs, without a trailing slash and without duplicates, in order."""
    out: list[str] = []
    for url in servers:
        parse_server(url)
        url = url.rstrip("/")
        if url not in out:
            out.append(url)
    return out


@dataclass(eq=False)
class _Conn:
    """One proxied connection: the client's side and the server's side."""

    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter

    def abort(self) -> None:
        for w in (self.client, self.upstream):
            w.transport.abort()


@dataclass
class _State:
    servers: list[str]
    healthy: dict[str, bool] = field(default_factory=dict)
    current: str = ""


class LoadBalancer:
    """A TCP load balancer on asyncio in front of ``servers`` (``https://HOST:PORT``, in
    preference order). Run it from its own thread (``start``/``stop``) or in the
    foreground of a loop (``serve``)."""

    def __init__(self, servers: list[str], listen: str = "127.0.0.1:0", *,
                 state_file: Path | None = None, health_interval: float = 2.0,
                 dial_timeout: float = 2.0, health_path: str = "/readyz") -> None:
        urls = normalise(servers)
        if not urls:
            raise LoadBalancerError("servers: at least one API server is needed")
        self._listen = parse_listen(listen)
        self.state_file = state_file
        self.health_interval = health_interval
        self.dial_timeout = dial_timeout
        self.health_path = health_path
        self._lock = threading.Lock()  # guards _state (read from any thread)
        self._state = _State(urls, {u: True for u in urls}, urls[0])  # optimistic at first
        self._conns: dict[str, set[_Conn]] = {}
        self._handlers: set[asyncio.Task[Any]] = set()
        self._port = 0
        self._server: asyncio.Server | None = None
        self._health_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed: asyncio.Event | None = None
        self._written: str = ""

    # ------------------------------------------------------------------ public view
    @property
    def url(self) -> str:
        host = self._listen[0]
        host = f"[{host}]" if ":" in host else host
        return f"https://{host}:{self._port}"

    @property
    def current(self) -> str:
        with self._lock:
            return self._state.current

    def servers(self) -> list[str]:
        with self._lock:
            return list(self._state.servers)

    def healthy(self) -> dict[str, bool]:
        with self._lock:
            return dict(self._state.healthy)

    def set_servers(self, servers: list[str]) -> None:
        """Replace the server list (validated first: bad input changes nothing). Known
        servers keep their health, new ones are tried optimistically, and connections to
        servers no longer listed are closed."""
        urls = normalise(servers)
        if not urls:
            raise LoadBalancerError("servers: at least one API server is needed")
        with self._lock:
            removed = [u for u in self._state.servers if u not in urls]
            self._state.servers = urls
            self._state.healthy = {u: self._state.healthy.get(u, True) for u in urls}
            old = self._state.current
            new = self._choose()
        self._on_loop(self._changed, old, new, "servers changed", removed)

    # ------------------------------------------------------------------ thread mode
    def start(self) -> None:
        """Serve from a thread of its own; returns once listening (or raises OSError)."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            try:
                try:
                    loop.run_until_complete(self.open())
                except BaseException as exc:  # handed to the caller of start()
                    failure.append(exc)
                    return
                finally:
                    ready.set()
                loop.run_until_complete(self._wait_closed())
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="api-load-balancer", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]

    def stop(self) -> None:
        """Close the listener and every proxied connection; wait for the thread."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop already ended
                asyncio.run_coroutine_threadsafe(self.close(), loop).result(10)
            thread.join(10)
        self._thread = None

    # ------------------------------------------------------------------ loop mode
    async def serve(self) -> None:
        """Listen and serve until cancelled or ``close()``d (a foreground process)."""
        await self.open()
        try:
            await self._wait_closed()
        finally:
            await self.close()

    async def open(self) -> None:
        """Start listening and health checking on the running loop."""
        self._loop = asyncio.get_running_loop()
        self._closed = asyncio.Event()
        host, port = self._listen
        self._server = await asyncio.start_server(self._handle, host, port,
                                                  reuse_address=True, backlog=512)
        self._port = int(self._server.sockets[0].getsockname()[1])
        self._write_state()
        self._health_task = asyncio.create_task(self._health_loop(), name="lb-health")
        log.info("api server load balancer: listening addr=%s servers=%s", self.url,
                 ",".join(self.servers()))

    async def close(self) -> None:
        if self._health_task is not None:
            self._health_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._health_task
            self._health_task = None
        if self._server is not None:
            self._server.close()
            self._server = None
        for conns in self._conns.values():
            for c in list(conns):
                c.abort()
        self._conns.clear()
        handlers = [t for t in self._handlers if t is not asyncio.current_task()]
        for t in handlers:  # still dialling, or copying what was left
            t.cancel()
        if handlers:
            await asyncio.wait(handlers, timeout=5)
        await asyncio.sleep(0)  # let the aborted transports finish closing
        if self._closed is not None:
            self._closed.set()

    async def _wait_closed(self) -> None:
        assert self._closed is not None
        await self._closed.wait()

    # ------------------------------------------------------------------ choosing
    def _on_loop(self, fn: Callable[..., None], *args: object) -> None:
        """Run ``fn(*args)`` on the balancer's loop (now, when called from it or when it
        does not run)."""
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or loop.is_closed() or running is loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def _choose(self) -> str:
        """Make the first healthy server in preference order current (under the lock)."""
        st = self._state
        st.current = next((u for u in st.servers if st.healthy.get(u)), "")
        return st.current

    def _changed(self, old: str, new: str, reason: str, removed: Iterable[str] = ()) -> None:
        """On the loop, after a change: close the connections that must go (to removed or
        unhealthy servers), log a switch, persist the state."""
        with self._lock:
            unhealthy = [u for u in self._state.servers if not self._state.healthy.get(u)]
        for url in [*removed, *unhealthy]:
            self._close_connections(url)
        if new != old:
            log.info("api server load balancer: switched from=%s to=%s reason=%s",
                     old or "none", new or "none", _quote(reason))
        self._write_state()

    def _set_health(self, url: str, ok: bool, reason: str) -> None:
        with self._lock:
            if url not in self._state.healthy or self._state.healthy[url] == ok:
                return
            self._state.healthy[url] = ok
            old = self._state.current
            new = self._choose()
        if not ok:
            log.warning("api server load balancer: server unhealthy server=%s reason=%s",
                        url, _quote(reason))
        else:
            log.info("api server load balancer: server healthy server=%s", url)
        self._changed(old, new, f"{url} {'healthy again' if ok else 'unhealthy: ' + reason}")

    def _close_connections(self, url: str) -> None:
        conns = self._conns.pop(url, set())
        if conns:
            log.info("api server load balancer: closing connections server=%s count=%d",
                     url, len(conns))
        for c in conns:
            c.abort()

    def _dial_order(self) -> list[str]:
        """The current server, then the other healthy ones in preference order, then the
        unhealthy ones as a last resort (their check may just not have run yet)."""
        with self._lock:
            st = self._state
            healthy = [u for u in st.servers if st.healthy.get(u)]
            return healthy + [u for u in st.servers if u not in healthy]

    async def _dial(self) -> tuple[str, asyncio.StreamReader, asyncio.StreamWriter] | None:
        for url in self._dial_order():
            host, port = parse_server(url)
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port), self.dial_timeout)
            except (OSError, TimeoutError) as exc:
                why = "dial timeout" if isinstance(exc, TimeoutError) else (
                    f"dial failed: {_why(exc)}")
                self._set_health(url, False, why)
                continue
            return url, reader, writer
        return None

    # ------------------------------------------------------------------ proxying
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._proxy(reader, writer)
        except asyncio.CancelledError:  # close(): the task must not end cancelled, as
            writer.transport.abort()    # asyncio's stream callback asks its exception()
        finally:
            self._handlers.discard(task)

    async def _proxy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        dialed = await self._dial()
        if dialed is None:
            log.warning("api server load balancer: no server reachable; connection refused")
            writer.transport.abort()
            return
        url, up_reader, up_writer = dialed
        conn = _Conn(writer, up_writer)
        self._conns.setdefault(url, set()).add(conn)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            self._conns.get(url, set()).discard(conn)
            for w in (writer, up_writer):
                w.close()

    # ------------------------------------------------------------------ health
    async def _health_loop(self) -> None:
        while True:
            started = asyncio.get_running_loop().time()
            urls = self.servers()
            results = await asyncio.gather(*(self._check(u) for u in urls))
            for url, why in zip(urls, results, strict=True):
                self._set_health(url, why == "", why or "ok")
            spent = asyncio.get_running_loop().time() - started
            await asyncio.sleep(max(0.0, self.health_interval - spent))

    async def _check(self, url: str) -> str:
        """"" when ``url`` answers ``GET health_path`` with 200, else why not."""
        host, port = parse_server(url)
        # liveness, not trust (clients check the server): a bare context, without
        # create_default_context's load of the system's CA store (46 ms of CPU per check)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        writer = None
        try:
            async with asyncio.timeout(self.dial_timeout + self.health_interval):
                reader, writer = await asyncio.open_connection(host, port, ssl=ctx,
                                                               server_hostname=host)
                writer.write(f"GET {self.health_path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                             "User-Agent: pykubelet-load-balancer\r\nConnection: close\r\n"
                             "\r\n".encode())
                await writer.drain()
                status = (await reader.readline()).split()
        except TimeoutError:
            return "health check timeout"
        except (OSError, ValueError) as exc:  # refused, reset, TLS, a garbled answer
            return f"health check failed: {_why(exc)}"
        finally:
            if writer is not None:
                writer.transport.abort()
        if len(status) < 2 or status[1] != b"200":
            return f"health check answered {b' '.join(status[1:2]).decode() or 'nothing'}"
        return ""

    # ------------------------------------------------------------------ state file
    def state(self) -> dict[str, object]:
        with self._lock:
            st = self._state
            return {"serverURL": st.servers[0], "serverAddresses": list(st.servers),
                    "currentServer": st.current, "healthy": dict(st.healthy)}

    def _write_state(self) -> None:
        if self.state_file is None:
            return
        text = json.dumps(self.state(), indent=2, sort_keys=True) + "\n"
        if text == self._written:
            return
        path = self.state_file
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        except OSError as exc:
            log.warning("api server load balancer: cannot write state file=%s error=%s",
                        path, exc.strerror or exc)
            return
        self._written = text


def _why(exc: BaseException) -> str:
    """An OS error in words ("Connection refused"), else the exception's own text."""
    if isinstance(exc, OSError) and exc.errno and not isinstance(exc, ssl.SSLError):
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def _quote(value: str) -> str:
    """A logfmt value: quoted when it has spaces."""
    return json.dumps(value) if any(c in value for c in ' "=') else value


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF, then half-close; an error on either side closes both (the other
    pipe then ends too)."""
    try:
        while data := await reader.read(BUFFER):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.transport.abort()
