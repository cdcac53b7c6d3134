"""The API server's connection to nodes' servers (kubelet's port 10250): container logs
now, exec/attach/port-forward streams later. The node's address comes from its status
(InternalIP first, as ``--kubelet-preferred-address-types``), the port from
``status.daemonEndpoints.kubeletEndpoint.Port``. The API server shows its client
certificate (``apiserver-kubelet-client``) and checks the node's against the cluster CA."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any

import aiohttp
from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.resources import NODES
from pykubelet.controlplane.registry.store import Registry

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

    async def container_logs(self, request: web.Request, node: str, namespace: str, pod: str,
                             container: str) -> web.StreamResponse:
        url = f"{self.endpoint(node)}/containerLogs/{namespace}/{pod}/{container}"
        params = {k: v for k, v in request.query.items() if k != "container"}
        return await self.stream(request, url, params)

    async def stream(self, request: web.Request, url: str, params: dict[str, Any]
                     ) -> web.StreamResponse:
        """Relay a node's response, chunk by chunk (``logs -f`` reads as it comes)."""
        try:
            upstream = await self.session().get(url, params=params)
        except (aiohttp.ClientError, OSError) as exc:
            raise errors.service_unavailable(f"unable to reach the node at {url}: {exc}") from None
        async with upstream:
            if upstream.status != 200:
                body = await upstream.read()
                ctype = upstream.headers.get("Content-Type", "")
                if ctype.startswith("application/json"):
                    return web.Response(body=body, status=upstream.status,
                                        content_type="application/json")
                message = body.decode(errors="replace").strip() or upstream.reason or "error"
                code = upstream.status if upstream.status in (400, 404) else 500
                raise errors.APIError(code, errors.BAD_REQUEST if code == 400 else (
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

    async def exec_stream(self, request: web.Request, node: str, namespace: str, pod: str,
                          container: str) -> web.StreamResponse:
        """pods/exec: join the client's WebSocket to the node's, frame for frame (the
        channel protocols need no translation; the node's answer picks the subprotocol)."""
        url = f"{self.endpoint(node)}/exec/{namespace}/{pod}/{container}"
        params = [(k, v) for k, v in request.query.items()]
        asked = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")
                 if p.strip()]
        try:
            upstream = await self.session().ws_connect(url, params=params, protocols=asked,
                                                       autoping=True, heartbeat=None,
                                                       max_msg_size=0)
        except aiohttp.WSServerHandshakeError as exc:
            raise errors.APIError(exc.status if exc.status in (400, 404) else 500,
                                  errors.BAD_REQUEST if exc.status == 400 else
                                  errors.INTERNAL_ERROR, exc.message or "exec refused") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise errors.service_unavailable(f"unable to reach the node at {url}: {exc}") from None
        client = web.WebSocketResponse(protocols=[upstream.protocol] if upstream.protocol
                                       else asked, autoping=True, max_msg_size=0)
        await client.prepare(request)

        async def pump(src: Any, dst: Any) -> None:
            async for msg in src:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    await dst.send_bytes(msg.data)
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    await dst.send_str(msg.data)
                else:
                    break
            await dst.close()

        try:
            await asyncio.gather(pump(upstream, client), pump(client, upstream))
        finally:
            await upstream.close()
            await client.close()
        return client
