"""The node's own server (kubelet's port 10250): container logs for ``kubectl logs`` and
the streams of ``kubectl exec``, ``attach`` and ``port-forward``, over TLS, to the control
plane only.

It presents the node's serving certificate (signed by the cluster CA at join) and asks for
a client certificate from that CA whose subject is the API server's kubelet client
(``kube-apiserver-kubelet-client``): anything else is refused, so only the control plane
(which checked the user's token and authorization) reaches a node's logs.

``GET /metrics/resource`` is kubelet's resource metrics (what metrics-server scrapes).

``GET /containerLogs/<namespace>/<pod>/<container>`` reads the container's CRI log file
(``<time> <stream> <P|F> <message>`` lines, partial lines joined) with kubectl's options:
``follow`` (until the container exits), ``previous`` (the instance before the current
one), ``tailLines``, ``timestamps``, ``sinceSeconds``/``sinceTime`` and ``limitBytes``; its
errors are kubelet's (``container "c" in pod "p" is waiting to start: ContainerCreating``,
``previous terminated container "c" in pod "p" not found``).

``/exec/<namespace>/<pod>/<container>?command=..&input=1&output=1&error=1&tty=1``,
``/attach/<namespace>/<pod>/<container>`` and ``/portForward/<namespace>/<pod>?port=..``
(each also with the pod's uid before the container, as kubelet routes them) ask the runtime
for a streaming session (CRI Exec, Attach, PortForward) and proxy the client's upgrade to
the URL it answers, byte for byte: WebSocket (``v5.channel.k8s.io`` ...), SPDY/3.1, or SPDY
tunnelled in a WebSocket, whatever the client and the runtime agree on (kubelet's
``proxyStream``). A refusal before the upgrade is a plain-text error with its HTTP status,
which kubectl prints after "unable to upgrade connection".
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from pykubelet.api.machinery.timeutil import parse_time, parse_time_or_none
from pykubelet.kubelet.cri.runtime_service import StreamFlags
from pykubelet.streaming.proxy import proxy_upgrade

log = logging.getLogger(__name__)

API_SERVER_CLIENT_CN = "kube-apiserver-kubelet-client"
FOLLOW_POLL_S = 0.1
RESOURCE_METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class LogError(Exception):
    """A logs request that cannot be served; ``code`` is the HTTP status."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class LogTarget:
    """Where a container's log is, and how to ask whether it still runs."""

    path: str
    running: Callable[[], bool]


LogLookup = Callable[[str, str, str, bool], LogTarget]  # ns, pod, container, previous


class StreamHost(Protocol):
    """Where a session's streaming URL comes from (the kubelet asks its runtime); each
    raises LogError (with an HTTP status) when the pod or container cannot be reached."""

    def exec_url(self, namespace: str, pod: str, uid: str, container: str, cmd: list[str],
                 streams: StreamFlags) -> str: ...

    def attach_url(self, namespace: str, pod: str, uid: str, container: str,
                   streams: StreamFlags) -> str: ...

    def port_forward_url(self, namespace: str, pod: str, uid: str, ports: list[int]) -> str: ...


def _flag(query: Any, name: str) -> bool:
    return str(query.get(name, "")).lower() in ("1", "t", "true")


def stream_flags(query: Any) -> StreamFlags:
    """kubelet's remotecommand options from the query (``input``, ``output``, ``error``,
    ``tty``; with a TTY stderr is merged into stdout)."""
    tty = _flag(query, "tty")
    flags = StreamFlags(stdin=_flag(query, "input"), stdout=_flag(query, "output"),
                        stderr=_flag(query, "error") and not tty, tty=tty)
    if not (flags.stdin or flags.stdout or flags.stderr):
        raise LogError("you must specify at least 1 of stdin, stdout, stderr")
    return flags


def forward_ports(query: Any) -> list[int]:
    """The ``port`` parameters (each 1-65535; SPDY clients may name ports per stream
    instead, so none is fine)."""
    ports = []
    for raw in query.getall("port", []):
        for part in str(raw).split(","):
            if not part.isdigit() or not 0 < int(part) < 65536:
                raise LogError(f"invalid port {part!r}: must be a number in 1-65535")
            ports.append(int(part))
    return ports


@dataclass(frozen=True)
class LogOptions:
    follow: bool = False
    tail_lines: int | None = None
    timestamps: bool = False
    since: dt.datetime | None = None
    limit_bytes: int | None = None

    @classmethod
    def from_query(cls, q: Any) -> LogOptions:
        def flag(name: str) -> bool:
            return str(q.get(name, "")).lower() in ("1", "t", "true")

        since = None
        if q.get("sinceSeconds"):
            since = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=int(q["sinceSeconds"]))
        elif q.get("sinceTime"):
            since = parse_time(q["sinceTime"])
        return cls(follow=flag("follow"),
                   tail_lines=int(q["tailLines"]) if q.get("tailLines") else None,
                   timestamps=flag("timestamps"), since=since,
                   limit_bytes=int(q["limitBytes"]) if q.get("limitBytes") else None)


def _parse_time(text: str) -> dt.datetime | None:
    """A CRI log line's RFC3339Nano time (``...:05.123456789Z`` as containerd writes it,
    ``...:05.123456789+00:00`` as conmon does), with its offset. A time without an offset
    is taken as UTC."""
    return parse_time_or_none(text) or parse_time_or_none(text + "Z")


def render(lines: list[bytes], opts: LogOptions) -> list[bytes]:
    """CRI log lines -> what ``kubectl logs`` prints (messages, joined partials)."""
    out: list[bytes] = []
    partial = b""
    first_ts = b""
    for line in lines:
        parts = line.split(b" ", 3)
        if len(parts) < 3:
            continue
        ts, _stream, tag = parts[0], parts[1], parts[2]
        msg = parts[3] if len(parts) > 3 else b""
        if not partial:
            first_ts = ts
        partial += msg
        if tag == b"P":
            continue
        if opts.since is not None:
            t = _parse_time(first_ts.decode(errors="replace"))
            if t is not None and t < opts.since:
                partial = b""
                continue
        text = partial + b"\n"
        partial = b""
        out.append(first_ts + b" " + text if opts.timestamps else text)
    return out


def read_log(path: str, opts: LogOptions) -> tuple[list[bytes], int]:
    """The rendered lines of a log file (honouring tail and limit) and the offset read to."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return [], 0
    complete = data[: data.rfind(b"\n") + 1]
    out = render(complete.split(b"\n")[:-1] if complete else [], opts)
    if opts.tail_lines is not None:
        out = out[-opts.tail_lines:] if opts.tail_lines else []
    return out, len(complete)


class NodeServer:
    """aiohttp on its own loop thread, TLS with client certificates."""

    def __init__(self, address: str, port: int, cert: Path, key: Path, ca_pem: bytes,
                 lookup: LogLookup, streams: StreamHost | None = None,
                 resource_metrics: Callable[[], bytes] | None = None) -> None:
        self.address = address
        self.resource_metrics = resource_metrics
        self.port = port
        self.lookup = lookup
        self.streams = streams
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=ca_pem.decode())
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_cert_chain(str(cert), str(key))
        self.ssl = ctx
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="node-server",
                                        daemon=True)
        self._runner: web.AppRunner | None = None

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        log.info("node server listening on %s:%d (TLS, control plane client only)",
                 self.address, self.port)

    def app(self) -> web.Application:
        """The routes, behind the error and authentication middlewares."""
        app = web.Application(middlewares=[self._errors, self._auth])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics/resource", self._resource_metrics)
        app.router.add_get("/containerLogs/{ns}/{pod}/{container}", self._logs)
        for prefix, handler in (("/exec", self._exec), ("/attach", self._attach)):
            app.router.add_route("GET", prefix + "/{ns}/{pod}/{container}", handler)
            app.router.add_route("POST", prefix + "/{ns}/{pod}/{container}", handler)
            app.router.add_route("GET", prefix + "/{ns}/{pod}/{uid}/{container}", handler)
            app.router.add_route("POST", prefix + "/{ns}/{pod}/{uid}/{container}", handler)
        for path in ("/portForward/{ns}/{pod}", "/portForward/{ns}/{pod}/{uid}"):
            app.router.add_route("GET", path, self._port_forward)
            app.router.add_route("POST", path, self._port_forward)
        return app

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, self.port, ssl_context=self.ssl,
                           reuse_address=True)
        await site.start()

    def stop(self) -> None:
        if self._runner is not None:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()

    @web.middleware
    async def _errors(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """An exception in a handler is a 500 with its message, and logged: a client
        never gets an empty 200 (kubelet's server answers errors it did not expect with
        InternalServerError and the error's text)."""
        try:
            resp: web.StreamResponse = await handler(request)
        except (web.HTTPException, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("node server: %s %s failed", request.method, request.path)
            return web.Response(status=500, text=f"{str(exc) or type(exc).__name__}\n")
        return resp

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        cn = ""
        for rdn in (peer or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    cn = value
        if cn != API_SERVER_CLIENT_CN:
            return web.Response(status=403, text="Forbidden: only the control plane may call "
                                "this node's server\n")
        resp: web.StreamResponse = await handler(request)
        return resp

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _resource_metrics(self, request: web.Request) -> web.Response:
        """What metrics-server scrapes (read off the loop: CRI calls and cgroup files)."""
        if self.resource_metrics is None:
            return web.Response(status=404, text="404 page not found\n")
        body = await asyncio.to_thread(self.resource_metrics)
        return web.Response(body=body, headers={"Content-Type": RESOURCE_METRICS_TYPE})

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("ns", "pod", "container"))
        try:
            opts = LogOptions.from_query(request.query)
            previous = str(request.query.get("previous", "")).lower() in ("1", "t", "true")
            target = await asyncio.to_thread(self.lookup, ns, pod, container, previous)
        except LogError as exc:
            return web.Response(status=exc.code, text=str(exc))
        except ValueError as exc:
            return web.Response(status=400, text=f"invalid log options: {exc}")
        # read before the status is sent: a failure here is still a 500 (_errors)
        lines, offset = await asyncio.to_thread(read_log, target.path, opts)
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        budget = opts.limit_bytes
        sent = await self._send(resp, lines, budget)
        if budget is not None:
            budget -= sent
        if opts.follow and (budget is None or budget > 0):
            try:
                await self._follow(resp, target, offset, opts, budget)
            except Exception:  # the status is sent: log it and end the stream
                log.exception("node server: following %s/%s/%s failed", ns, pod, container)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await resp.write_eof()
        return resp

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("ns", "pod", "container"))
        uid = request.match_info.get("uid", "")

        def url(host: StreamHost) -> str:
            command = request.query.getall("command", [])
            if not command:
                raise LogError("you must specify at least one command for the container")
            return host.exec_url(ns, pod, uid, container, command, stream_flags(request.query))

        return await self._proxy(request, url)

    async def _attach(self, request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("ns", "pod", "container"))
        uid = request.match_info.get("uid", "")
        return await self._proxy(request, lambda host: host.attach_url(
            ns, pod, uid, container, stream_flags(request.query)))

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        ns, pod = request.match_info["ns"], request.match_info["pod"]
        uid = request.match_info.get("uid", "")
        return await self._proxy(request, lambda host: host.port_forward_url(
            ns, pod, uid, forward_ports(request.query)))

    async def _proxy(self, request: web.Request,
                     url_of: Callable[[StreamHost], str]) -> web.StreamResponse:
        """Ask for the session's URL (off the loop: it is a CRI call), then splice."""
        host = self.streams
        if host is None:
            return web.Response(status=501, text="streaming is not supported by this node")
        try:
            url = await asyncio.to_thread(url_of, host)
        except LogError as exc:
            return web.Response(status=exc.code, text=str(exc))
        return await proxy_upgrade(request, url)

    @staticmethod
    async def _send(resp: web.StreamResponse, lines: list[bytes], budget: int | None) -> int:
        data = b"".join(lines)
        if budget is not None:
            data = data[:budget]
        if data:
            await resp.write(data)
        return len(data)

    async def _follow(self, resp: web.StreamResponse, target: LogTarget, offset: int,
                      opts: LogOptions, budget: int | None) -> None:
        path = target.path
        ino = _inode(path)
        follow_opts = LogOptions(timestamps=opts.timestamps, since=opts.since)
        idle_checks = 0
        while True:
            await asyncio.sleep(FOLLOW_POLL_S)
            now_ino = _inode(path)
            if now_ino != ino:  # rotated: the new file starts from the beginning
                ino, offset = now_ino, 0
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
            except FileNotFoundError:
                chunk = b""
            complete = chunk[: chunk.rfind(b"\n") + 1]
            if complete:
                offset += len(complete)
                out = render(complete.split(b"\n")[:-1], follow_opts)
                try:
                    sent = await self._send(resp, out, budget)
                except (ConnectionResetError, RuntimeError):
                    return
                if budget is not None:
                    budget -= sent
                    if budget <= 0:
                        return
                idle_checks = 0
                continue
            idle_checks += 1
            if idle_checks % 10 == 0 and not await asyncio.to_thread(target.running):
                return


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return -1
