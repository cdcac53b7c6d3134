"""DELETE of one object and of a collection (kube-apiserver's handlers/delete.go): a
delete that is done answers a Status Success (or the object, for resources that return
it); one that only started (grace period, finalizers) answers the object as it now is."""

from __future__ import annotations

from collections.abc import Callable

import orjson
from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.handlers.rest import delete_options, list_bytes, written
from pykubelet.controlplane.apiserver.responses import json_response
from pykubelet.controlplane.registry.store import Attrs, Context, Entry, GenericStore


async def delete_resource(request: web.Request, store: GenericStore, ctx: Context,
                          namespace: str, name: str) -> web.Response:
    options = await delete_options(request)
    ctx.dry_run = ctx.dry_run or options.dry_run
    obj, gone = await store.delete(ctx, namespace, name, options)
    if store.strategy.return_deleted_object or not gone:
        return written(request, store, obj, 200, ctx)
    meta = (obj.obj() if isinstance(obj, Entry) else obj).get("metadata") or {}
    return json_response(errors.success(store.info.resource, name, meta.get("uid", ""),
                                        store.info.group))


async def delete_collection(request: web.Request, store: GenericStore, ctx: Context,
                            namespace: str | None, predicate: Callable[[Attrs], bool]
                            ) -> web.Response:
    options = await delete_options(request)
    ctx.dry_run = ctx.dry_run or options.dry_run
    deleted = await store.delete_collection(ctx, namespace, predicate, options)
    items = [d.data if isinstance(d, Entry) else orjson.dumps(d) for d in deleted]
    return json_response(list_bytes(store, items, store.revision))
