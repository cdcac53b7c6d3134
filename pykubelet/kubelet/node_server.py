"""The node's own server (kubelet's port 10250): container logs for ``kubectl logs``, over
TLS, to the control plane only.

It presents the node's serving certificate (signed by the cluster CA at join) and asks for
a client certificate from that CA whose subject is the API server's kubelet client
(``kube-apiserver-kubelet-client``): anything else is refused, so only the control plane
(which checked the user's token and authorization) reaches a node's logs.

``GET /containerLogs/<namespace>/<pod>/<container>`` reads the container's CRI log file
(``<time> <stream> <P|F> <message>`` lines, partial lines joined) with kubectl's options:
``follow`` (until the container exits), ``previous`` (the instance before the current
one), ``tailLines``, ``timestamps``, ``sinceSeconds``/``sinceTime`` and ``limitBytes``; its
errors are kubelet's (``container "c" in pod "p" is waiting to start: ContainerCreating``,
``previous terminated container "c" in pod "p" not found``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

API_SERVER_CLIENT_CN = "kube-apiserver-kubelet-client"
FOLLOW_POLL_S = 0.1


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
# ns, pod, container -> the running container's id (raises LogError when there is none)
ExecLookup = Callable[[str, str, str], str]
# container id, command -> (stdout, stderr, exit code)
ExecRunner = Callable[[str, list[str]], tuple[bytes, bytes, int]]

# the channel protocols of remotecommand (k8s.io/apimachinery/pkg/util/remotecommand)
STREAM_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDOUT, STDERR, ERROR, CLOSE = 1, 2, 3, 255


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
            since = dt.datetime.fromisoformat(q["sinceTime"].replace("Z", "+00:00"))
        return cls(follow=flag("follow"),
                   tail_lines=int(q["tailLines"]) if q.get("tailLines") else None,
                   timestamps=flag("timestamps"), since=since,
                   limit_bytes=int(q["limitBytes"]) if q.get("limitBytes") else None)


def _parse_time(text: str) -> dt.datetime | None:
    # RFC3339Nano: trim the fraction to microseconds for fromisoformat
    try:
        if "." in text:
            head, rest = text.split(".", 1)
            frac = "".join(ch for ch in rest if ch.isdigit())
            tz = rest[len(frac):]
            text = f"{head}.{frac[:6].ljust(6, '0')}{tz}"
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


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
                 lookup: LogLookup, exec_lookup: ExecLookup | None = None,
                 exec_runner: ExecRunner | None = None) -> None:
        self.address = address
        self.port = port
        self.lookup = lookup
        self.exec_lookup = exec_lookup
        self.exec_runner = exec_runner
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

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/containerLogs/{ns}/{pod}/{container}", self._logs)
        app.router.add_route("*", "/exec/{ns}/{pod}/{container}", self._exec)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
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
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        budget = opts.limit_bytes
        lines, offset = await asyncio.to_thread(read_log, target.path, opts)
        sent = await self._send(resp, lines, budget)
        if budget is not None:
            budget -= sent
        if opts.follow and (budget is None or budget > 0):
            await self._follow(resp, target, offset, opts, budget)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await resp.write_eof()
        return resp

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        """``/exec``: run a command in a container and stream its output over the channel
        protocol (WebSocket ``v5``/``v4.channel.k8s.io``): stdout on channel 1, stderr on 2,
        then one Status on channel 3 (``NonZeroExitCode`` with the exit code as cause).
        Commands with stdin or a TTY are interactive: this node runs them through the
        runtime's streaming server once it has one; without one it says so."""
        ns, pod, container = (request.match_info[k] for k in ("ns", "pod", "container"))
        q = request.query
        command = q.getall("command", [])
        if self.exec_lookup is None or self.exec_runner is None:
            return web.Response(status=501, text="exec is not supported by this node")
        if not command:
            return web.Response(status=400, text="you must specify at least one command "
                                "for the container")
        interactive = any(str(q.get(k, "")).lower() in ("1", "t", "true")
                          for k in ("input", "stdin", "tty"))
        ws = web.WebSocketResponse(protocols=STREAM_PROTOCOLS, autoping=True, heartbeat=None)
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text="Upgrade request required (WebSocket "
                                "v5.channel.k8s.io or v4.channel.k8s.io)")
        await ws.prepare(request)
        try:
            if interactive:
                status = _failure("interactive exec (stdin or tty) is not supported by this "
                                  "node yet")
            else:
                try:
                    cid = await asyncio.to_thread(self.exec_lookup, ns, pod, container)
                    out, err, code = await asyncio.to_thread(self.exec_runner, cid, command)
                except LogError as exc:
                    out, err, code = b"", b"", -1
                    status = _failure(str(exc))
                else:
                    if out:
                        await ws.send_bytes(bytes([STDOUT]) + out)
                    if err:
                        await ws.send_bytes(bytes([STDERR]) + err)
                    status = _exit_status(code)
            await ws.send_bytes(bytes([ERROR]) + json.dumps(status).encode())
        except (ConnectionResetError, RuntimeError):
            pass
        finally:
            await ws.close()
        return ws

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


def _exit_status(code: int) -> dict[str, Any]:
    """The channel-3 Status of a finished command (remotecommand's error stream)."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[...], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def _failure(message: str) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message}
