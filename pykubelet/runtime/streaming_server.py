"""The runtime's streaming server: what the URLs of Exec, Attach and PortForward serve.

As containerd's CRI plugin (and kubelet's ``cri/streaming`` package it uses): the RPC checks
the request, caches it under a single-use token that expires in a minute, and answers
``http://<address>:<port>/{exec,attach,portforward}/<token>``; kubelet (or crictl) then
connects there and speaks WebSocket or SPDY (``pykubelet.streaming``). The HTTP server is
aiohttp on its own event loop in one thread, started with the runtime; it listens on
127.0.0.1 and a free port by default, as containerd's ``stream_server_address`` and
``stream_server_port: "0"``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime import stream_io
from pykubelet.runtime.errors import InvalidArgument, Unavailable
from pykubelet.streaming import protocols as p
from pykubelet.streaming.server import (
    CommandIO,
    query_ports,
    serve_port_forward,
    serve_remote_command,
)
from pykubelet.streaming.tokens import RequestCache, TooManyInFlight

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExecRequest:
    container_id: str
    cmd: list[str]
    opts: p.StreamOptions


@dataclass(frozen=True)
class AttachRequest:
    container_id: str
    opts: p.StreamOptions


@dataclass(frozen=True)
class PortForwardRequest:
    sandbox_id: str
    ports: list[int]


def _options(stdin: bool, stdout: bool, stderr: bool, tty: bool) -> p.StreamOptions:
    """containerd's validateExecRequest: a TTY has no separate stderr; something to stream."""
    if tty and stderr:
        raise InvalidArgument("tty and stderr cannot both be true")
    if not (stdin or stdout or stderr):
        raise InvalidArgument("one of stdin, stdout, or stderr must be set")
    return p.StreamOptions(stdin=stdin, stdout=stdout, stderr=stderr, tty=tty)


class StreamingServer:
    """The HTTP side: one thread, one loop, one aiohttp app; requests by token."""

    def __init__(self, containers: Any, sandbox_lookup: Callable[[str], Any],
                 address: str = "127.0.0.1", port: int = 0) -> None:
        self.containers = containers
        self.sandbox_lookup = sandbox_lookup
        self.address = address
        self.port = port
        self.cache = RequestCache()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}"

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve())
            except BaseException as exc:
                failure.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="cri-streaming", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise failure[0]
        log.info("streaming server on %s", self.base_url)

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/exec/{token}", self._exec)
        app.router.add_route("*", "/attach/{token}", self._attach)
        app.router.add_route("*", "/portforward/{token}", self._port_forward)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _cleanup(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        loop = self._loop
        if loop is None or self._thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=10)
        self._loop = None

    # ------------------------------------------------------------------ the RPCs
    def _url(self, verb: str, request: Any) -> str:
        try:
            token = self.cache.insert(request)
        except TooManyInFlight as exc:
            raise Unavailable(str(exc)) from exc
        return f"{self.base_url}/{verb}/{token}"

    def Exec(self, req: pb.ExecRequest) -> pb.ExecResponse:
        if not req.container_id:
            raise InvalidArgument("container_id: required")
        if not req.cmd:
            raise InvalidArgument("cmd: must not be empty")
        opts = _options(req.stdin, req.stdout, req.stderr, req.tty)
        rec = self.containers.running(req.container_id)
        return pb.ExecResponse(url=self._url("exec", ExecRequest(rec.id, list(req.cmd), opts)))

    def Attach(self, req: pb.AttachRequest) -> pb.AttachResponse:
        if not req.container_id:
            raise InvalidArgument("container_id: required")
        opts = _options(req.stdin, req.stdout, req.stderr, req.tty)
        rec = self.containers.running(req.container_id)
        if req.tty != rec.tty:
            raise InvalidArgument(f"tty: container {rec.id[:12]} was created with "
                                  f"tty={str(rec.tty).lower()}")
        if req.stdin and not rec.stdin:
            raise InvalidArgument(f"stdin: container {rec.id[:12]} was created without stdin")
        return pb.AttachResponse(url=self._url("attach", AttachRequest(rec.id, opts)))

    def PortForward(self, req: pb.PortForwardRequest) -> pb.PortForwardResponse:
        if not req.pod_sandbox_id:
            raise InvalidArgument("pod_sandbox_id: required")
        for port in req.port:
            if not 0 < port < 65536:
                raise InvalidArgument(f"port: {port} is out of range 1-65535")
        info = self.sandbox_lookup(req.pod_sandbox_id)
        return pb.PortForwardResponse(url=self._url(
            "portforward", PortForwardRequest(info.id, list(req.port))))

    # ------------------------------------------------------------------ HTTP handlers
    def _take(self, request: web.Request, kind: type) -> Any:
        found = self.cache.consume(request.match_info["token"])
        if not isinstance(found, kind):
            raise web.HTTPNotFound(text="streaming request not found (unknown, used or "
                                        "expired token)")
        return found

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        ex: ExecRequest = self._take(request, ExecRequest)
        runc = self.containers.runc

        async def run(io: CommandIO) -> int:
            return await stream_io.exec_in_container(
                runc, ex.container_id, ex.cmd, io,
                config_json=self.containers.bundle_dir(ex.container_id) / "config.json")

        return await serve_remote_command(request, ex.opts, run)

    async def _attach(self, request: web.Request) -> web.StreamResponse:
        at: AttachRequest = self._take(request, AttachRequest)
        try:
            rec = self.containers.running(at.container_id)
        except Exception as exc:  # gone since the RPC: nothing to attach to
            raise web.HTTPNotFound(text=str(exc)) from exc
        sock, _ = self.containers.attach_paths(rec)
        paths = self.containers._paths(rec.id)

        async def run(io: CommandIO) -> int:
            return await stream_io.attach_container(sock, paths, io, rec.pid)

        return await serve_remote_command(request, at.opts, run)

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        pf: PortForwardRequest = self._take(request, PortForwardRequest)
        try:
            ports = query_ports(request) or pf.ports
        except ValueError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from exc
        info = self.sandbox_lookup(pf.sandbox_id)
        netns_path = info.netns_path

        async def dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await stream_io.dial_in_netns(netns_path, port)

        return await serve_port_forward(request, ports, dial)
