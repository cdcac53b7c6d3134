"""The API server's connection to nodes' servers (kubelet's port 10250): container logs,
and the exec/attach/port-forward streams. The node's address comes from its status
(InternalIP first, as ``--kubelet-preferred-address-types``), the port from
``status.daemonEndpoints.kubeletEndpoint.Port``. The API server shows its client
certificate (``apiserver-kubelet-client``) and checks the node's against the cluster CA
and the node's name on every connection (TLS server name = the node's name, which its
serving certificate holds and no other node's does), so one node's certificate never
passes for another's."""

from __future__ import annotations

import contextlib
import ssl
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.resources import NODES
from pykubelet.controlplane.registry.store import Registry
from pykubelet.streaming.proxy import proxy_upgrade

ADDRESS_PREFERENCE = ("InternalIP", "ExternalIP", "Hostname")
DEFAULT_KUBELET_PORT = 10250


class NodeProxy:
    def __init__(self, registry: Registry, ssl_context: ssl.SSLContext) -> None:
        self.registry = registry
        self.ssl_context = ssl_context
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self.ssl_context, limit=0),
                timeout=aiohttp.ClientTimeout(total=None, connect=5, sock_connect=5))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def endpoint(self, node_name: str) -> str:
        entry = self.registry.store(NODES).lookup("", node_name)
        if entry is None:
            raise errors.not_found("nodes", "", node_name)
        status = entry.obj().get("status") or {}
        addrs = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
        host = next((addrs[t] for t in ADDRESS_PREFERENCE if addrs.get(t)), None)
        if host is None:
            raise errors.service_unavailable(f"node {node_name} has no address")
        port = (((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {})
                .get("Port") or DEFAULT_KUBELET_PORT)
        return f"https://{host}:{port}"

    async def resource_metrics(self, node: str) -> str:
        """The node's ``/metrics/resource`` text (what metrics-server scrapes)."""
        url = f"{self.endpoint(node)}/metrics/resource"
        async with self.session().get(url, server_hostname=node) as resp:
            body = await resp.text()
            if resp.status != 200:
                raise errors.service_unavailable(
                    f"request failed, status: {resp.status}: {body.strip()[:200]}")
            return body

    async def container_logs(self, request: web.Request, node: str, namespace: str, pod: str,
                             container: str) -> web.StreamResponse:
        url = f"{self.endpoint(node)}/containerLogs/{namespace}/{pod}/{container}"
        params = {k: v for k, v in request.query.items() if k != "container"}
        return await self.stream(request, node, url, params)

    async def stream(self, request: web.Request, node: str, url: str, params: dict[str, Any]
                     ) -> web.StreamResponse:
        """Relay a node's response, chunk by chunk (``logs -f`` reads as it comes); the
        node's certificate must be ``node``'s (checked by its name, not the address)."""
        try:
            upstream = await self.session().get(url, params=params, server_hostname=node)
        except (aiohttp.ClientError, OSError) as exc:
            raise errors.service_unavailable(
                f"unable to reach node {node} at {url}: {exc}") from None
        async with upstream:
            if upstream.status != 200:
                body = await upstream.read()
                ctype = upstream.headers.get("Content-Type", "")
                if ctype.startswith("application/json"):
                    return web.Response(body=body, status=upstream.status,
                                        content_type="application/json")
                message = body.decode(errors="replace").strip() or upstream.reason or "error"
                code = upstream.status if upstream.status in (400, 404) else 500
                raise errors.StatusError(code, errors.BAD_REQUEST if code == 400 else (
                    errors.NOT_FOUND if code == 404 else errors.INTERNAL_ERROR), message)
            resp = web.StreamResponse(headers={"Content-Type": upstream.headers.get(
                "Content-Type", "text/plain")})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            with contextlib.suppress(ConnectionResetError, aiohttp.ClientPayloadError):
                async for chunk in upstream.content.iter_any():
                    await resp.write(chunk)
            with contextlib.suppress(ConnectionResetError, RuntimeError):
                await resp.write_eof()
            return resp

    async def upgrade(self, request: web.Request, node: str, path: str,
                      params: list[tuple[str, str]]) -> web.StreamResponse:
        """exec/attach/port-forward: the client's upgrade request, with the node's query,
        spliced to the node's server byte for byte (``UpgradeAwareHandler``); a refusal
        comes back as a Status with the node's words."""
        url = URL(self.endpoint(node) + path).with_query(params)
        resp = await proxy_upgrade(request, url, ssl=self.ssl_context, server_hostname=node)
        if resp.status == 101:
            return resp
        body = resp.body if isinstance(resp, web.Response) and isinstance(resp.body, bytes) \
            else b""
        message = body.decode(errors="replace").strip() or resp.reason or "error"
        if resp.status == 502:
            raise errors.service_unavailable(f"unable to reach node {node}: {message}")
        code = resp.status if resp.status in (400, 403, 404) else 500
        raise errors.StatusError(code, {400: errors.BAD_REQUEST, 404: errors.NOT_FOUND,
                                     403: errors.FORBIDDEN}.get(code, errors.INTERNAL_ERROR),
                              message)
