"""PATCH (kube-apiserver's handlers/patch.go): the three patch types the registry applies
(JSON, merge, strategic merge) and server-side apply (``application/apply-patch+yaml``,
201 when it created the object); any other Content-Type is 415 before the body is read."""

from __future__ import annotations

from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiextensions.customresources import unsupported_media_type
from pykubelet.controlplane.apiserver.handlers.rest import read_body, written
from pykubelet.controlplane.registry.patch import APPLY_PATCH, PATCH_TYPES, STRATEGIC_MERGE_PATCH
from pykubelet.controlplane.registry.store import Context, GenericStore
from pykubelet.controlplane.registry.strategy import Strategy


async def patch_resource(request: web.Request, store: GenericStore, ctx: Context,
                         namespace: str, name: str, strategy: Strategy | None = None
                         ) -> web.Response:
    ctype = request.content_type
    if ctype != APPLY_PATCH and ctype not in PATCH_TYPES:
        raise errors.unsupported_media_type(ctype)
    if ctype == STRATEGIC_MERGE_PATCH and getattr(store.strategy, "refuses_strategic_merge",
                                                  False):
        raise unsupported_media_type(ctype)  # custom resources have no patch strategy
    body = await read_body(request, patch=True)
    existed = strategy is not None or store.lookup(namespace, name) is not None
    result = await store.patch(ctx, namespace, name, ctype, body, strategy)
    return written(request, store, result, 200 if existed else 201, ctx)
