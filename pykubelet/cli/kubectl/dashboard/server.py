"""The dashboard's HTTP side (aiohttp): the page and its static files, one event stream
(Server-Sent Events: a snapshot, then each change the watches bring), the decision table
of a pod, and the read-only proxy of ``rules`` carrying the kubeconfig's credentials.

One process holds one set of watches (nodes, pods, events) however many tabs are open;
every tab gets the snapshot when it connects (again after a reconnect: EventSource
reconnects by itself) and the deltas after it, so nothing polls.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import aiohttp
from aiohttp import web

from pykubelet.cli.kubectl.dashboard.reflector import reflect
from pykubelet.cli.kubectl.dashboard.rules import (
    FORWARDED_HEADERS,
    Refused,
    check_origin,
    check_proxy_request,
)
from pykubelet.cli.kubectl.dashboard.view import ClusterView, Delta, decision_table

Obj = dict[str, Any]
STATIC = {"app.js": "text/javascript", "app.css": "text/css"}
SECURITY_HEADERS = {
    # everything the page loads is served here: no CDN, no inline script
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
WATCHED = (("/api/v1/nodes", "Node"), ("/api/v1/pods", "Pod"), ("/api/v1/events", "Event"))


@dataclass
class Upstream:
    """The API server and the kubeconfig's identity."""

    server: str
    token: str = ""
    ssl_context: ssl.SSLContext | None = None

    def headers(self) -> dict[str, str]:
        h = {"User-Agent": "pykubectl-dashboard", "Accept": "application/json"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        return h


@dataclass
class Dashboard:
    upstream: Upstream
    accept_hosts: tuple[str, ...]
    view: ClusterView = field(default_factory=ClusterView)
    clients: set[asyncio.Queue[str]] = field(default_factory=set)
    session: aiohttp.ClientSession | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    ready: dict[str, asyncio.Event] = field(default_factory=dict)
    troubles: dict[str, str] = field(default_factory=dict)

    # ---------------------------------------------------------------- watches -> tabs
    def _send(self, event: str, data: Obj) -> None:
        text = f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
        for q in self.clients:
            q.put_nowait(text)

    async def on_list(self, kind: str, items: list[Obj]) -> None:
        self.view.replace(kind, items)
        self._send("snapshot", self.view.snapshot())

    async def on_event(self, kind: str, type_: str, obj: Obj) -> None:
        d: Delta = self.view.apply(kind, type_, obj)
        if not d.empty():
            self._send("delta", d.as_json())

    async def on_trouble(self, kind: str, text: str) -> None:
        """The page says when the API cannot be read (and when it can again)."""
        if text:
            self.troubles[kind] = text
        else:
            self.troubles.pop(kind, None)
        self._send("trouble", {"troubles": sorted(self.troubles.values())})

    async def start(self) -> None:
        """Open the upstream session and the watches (once the port is bound, so a
        busy port costs no request)."""
        connector = aiohttp.TCPConnector(ssl=self.upstream.ssl_context or False, limit=32)
        self.session = aiohttp.ClientSession(self.upstream.server, connector=connector,
                                             headers=self.upstream.headers())
        for path, kind in WATCHED:
            self.ready[kind] = asyncio.Event()
            self.tasks.append(asyncio.create_task(reflect(
                self.session, "", path, kind, self.on_list, self.on_event, self.ready[kind],
                self.on_trouble)))

    async def stop(self, app: web.Application) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for q in self.clients:
            q.put_nowait("")
        if self.session is not None:
            await self.session.close()

    # ---------------------------------------------------------------- handlers
    async def stream(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "X-Accel-Buffering": "no"})
        await resp.prepare(request)
        q: asyncio.Queue[str] = asyncio.Queue()
        q.put_nowait(f"event: snapshot\ndata: {json.dumps(self.view.snapshot())}\n\n")
        if self.troubles:
            q.put_nowait("event: trouble\ndata: "
                         f"{json.dumps({'troubles': sorted(self.troubles.values())})}\n\n")
        self.clients.add(q)
        try:
            while True:
                try:
                    text = await asyncio.wait_for(q.get(), 20)
                except TimeoutError:
                    text = ": keep-alive\n\n"
                if not text:
                    break
                await resp.write(text.encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.clients.discard(q)
        return resp

    async def _get(self, path: str, **params: str) -> tuple[int, Any]:
        assert self.session is not None
        async with self.session.get(path, params=params) as resp:
            return resp.status, await resp.json(content_type=None)

    async def decision(self, request: web.Request) -> web.Response:
        ns, name = request.match_info["namespace"], request.match_info["name"]
        base = f"/api/v1/namespaces/{ns}/pods/{name}"
        check_proxy_request("GET", base + "/scheduling", ())
        code, pod = await self._get(base)
        if code != 200:
            return web.json_response(pod, status=code)
        code, doc = await self._get(base + "/scheduling")
        if code == 404:
            doc = None
        elif code != 200:
            return web.json_response(doc, status=code)
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        table = decision_table(doc, sorted(self.view.nodes), nominated)
        table["podNode"] = (pod.get("spec") or {}).get("nodeName") or ""
        cond: Obj = next((c for c in (pod.get("status") or {}).get("conditions") or []
                     if c.get("type") == "PodScheduled"), {})
        table["condition"] = cond
        return web.json_response(table)

    async def proxy(self, request: web.Request) -> web.StreamResponse:
        """A read the page needs, sent upstream with the kubeconfig's credentials."""
        check_proxy_request(request.method, request.path, request.query.keys())
        assert self.session is not None
        headers = {h: request.headers[h] for h in FORWARDED_HEADERS if h in request.headers}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self.session.request(request.method, request.path, params=request.query,
                                        headers=headers, timeout=timeout) as up:
            resp = web.StreamResponse(status=up.status, headers={
                "Content-Type": up.headers.get("Content-Type", "application/json")})
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp

    async def page(self, request: web.Request) -> web.Response:
        name = request.match_info.get("file", "index.html")
        if name != "index.html" and name not in STATIC:
            raise web.HTTPNotFound()
        body = resources.files("pykubelet.cli.kubectl.dashboard").joinpath(
            "static", name).read_bytes()
        ctype = STATIC.get(name, "text/html")
        return web.Response(body=body, content_type=ctype, charset="utf-8")


@web.middleware
async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
    """Host and Origin first (kubectl proxy's --accept-hosts), refusals as a Status."""
    dash: Dashboard = request.app["dashboard"]
    try:
        check_origin(request.headers, dash.accept_hosts)
        resp: web.StreamResponse = await handler(request)
    except Refused as exc:
        resp = web.json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                  "status": "Failure", "message": str(exc),
                                  "reason": _REASONS.get(exc.code, ""), "code": exc.code},
                                 status=exc.code)
    if not resp.prepared:
        resp.headers.update(SECURITY_HEADERS)
    return resp


_REASONS = {400: "BadRequest", 403: "Forbidden", 405: "MethodNotAllowed"}


def make_app(dash: Dashboard) -> web.Application:
    app = web.Application(middlewares=[guard])
    app["dashboard"] = dash
    app.router.add_get("/", dash.page)
    app.router.add_get("/static/{file}", dash.page)
    app.router.add_get("/dashboard/v1/stream", dash.stream)
    app.router.add_get("/dashboard/v1/decision/{namespace}/{name}", dash.decision)
    app.router.add_route("*", "/api/{tail:.*}", dash.proxy)
    app.router.add_route("*", "/apis/{tail:.*}", dash.proxy)
    app.on_cleanup.append(dash.stop)
    return app


def serve(upstream: Upstream, address: str, port: int, accept_hosts: tuple[str, ...],
          on_ready: Any = None) -> None:
    """Serve until interrupted; ``on_ready(url)`` once listening."""

    async def main() -> None:
        dash = Dashboard(upstream, accept_hosts)
        runner = web.AppRunner(make_app(dash), access_log=None, handle_signals=True)
        await runner.setup()
        try:
            await web.TCPSite(runner, address, port).start()
        except OSError:
            await runner.cleanup()
            raise
        await dash.start()
        bound = port
        for addr in runner.addresses:  # the bound port, for --port 0
            bound = int(addr[1])
        host = f"[{address}]" if ":" in address else address
        if on_ready is not None:
            on_ready(f"http://{host}:{bound}/")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
