"""GET of one object and LIST (kube-apiserver's handlers/get.go): answered from the watch
cache, as objects or as Tables; a list pages with ``limit`` and ``continue``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver import tables
from pykubelet.controlplane.apiserver.handlers.rest import list_bytes, object_response
from pykubelet.controlplane.apiserver.negotiation import wants_table
from pykubelet.controlplane.apiserver.responses import json_response
from pykubelet.controlplane.registry.store import Attrs, GenericStore, ListResult


def get_resource(request: web.Request, store: GenericStore, namespace: str,
                 name: str) -> web.Response:
    return object_response(request, store, store.get(namespace, name))


def list_resource(request: web.Request, store: GenericStore, namespace: str | None,
                  predicate: Callable[[Attrs], bool], field_sel: Any) -> web.Response:
    """ListResource: the matching objects (through an index when the field selector names
    an indexed field exactly), paged when asked, as a list or a Table."""
    q = request.query
    try:
        limit = int(q.get("limit") or 0)
    except ValueError:
        raise errors.bad_request(f"invalid limit {q.get('limit')!r}") from None
    rv = q.get("resourceVersion", "")
    if rv and rv != "0":
        try:
            want = int(rv)
        except ValueError:
            raise errors.bad_request(f"invalid resource version {rv!r}") from None
        if want > store.revision:
            raise errors.too_large_resource_version(want, store.revision)
    index = None
    for fld in store.strategy.indexed_fields:
        value = field_sel.exact(fld)
        if value is not None:
            index = (fld, value)
    result: ListResult = store.list_objects(namespace, predicate, index, limit,
                                            q.get("continue", ""))
    table_version = wants_table(request.headers.get("Accept", ""))
    if table_version is not None:
        t = tables.table(store.info.kind, result.entries, result.revision,
                         q.get("includeObject", "Metadata"),
                         continue_token=result.continue_token, remaining=result.remaining,
                         printer=getattr(store.strategy, "printer", None))
        t["apiVersion"] = table_version
        return json_response(t)
    return json_response(list_bytes(store, [e.data for e in result.entries],
                                    result.revision, result.continue_token,
                                    result.remaining))
