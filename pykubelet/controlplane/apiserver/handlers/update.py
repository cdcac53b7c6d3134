"""PUT of a whole object (kube-apiserver's handlers/update.go): 200 when it existed, 201
when the resource allows create-on-update and it did not; a subresource (status, ...)
writes through its wrapped strategy."""

from __future__ import annotations

from aiohttp import web

from pykubelet.controlplane.apiserver.handlers.rest import read_body, written
from pykubelet.controlplane.registry.store import Context, GenericStore
from pykubelet.controlplane.registry.strategy import Strategy


async def update_resource(request: web.Request, store: GenericStore, ctx: Context,
                          namespace: str, name: str, strategy: Strategy | None = None
                          ) -> web.Response:
    body = await read_body(request, ctx=ctx)
    existed = strategy is not None or store.lookup(namespace, name) is not None
    result = await store.update(ctx, namespace, name, body, strategy)
    return written(request, store, result, 200 if existed else 201, ctx)
