"""POST of a new object (kube-apiserver's handlers/create.go): the body read once in its
media type, then the registry's create; 201 with the object as stored."""

from __future__ import annotations

from aiohttp import web

from pykubelet.controlplane.apiserver.handlers.rest import read_body, written
from pykubelet.controlplane.registry.store import Context, GenericStore


async def create_resource(request: web.Request, store: GenericStore, ctx: Context,
                          namespace: str) -> web.Response:
    body = await read_body(request, ctx=ctx)
    result = await store.create(ctx, namespace, body)
    return written(request, store, result, 201, ctx)
