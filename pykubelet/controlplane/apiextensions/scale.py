"""The ``scale`` subresource of custom resources (pkg/registry/customresource's
ScaleREST): an autoscaling/v1 Scale read from the paths the CRD names
(specReplicasPath, statusReplicasPath, labelSelectorPath); writing it sets only the value
at specReplicasPath."""

from __future__ import annotations

import copy
from typing import Any

from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiextensions.customresources import CustomResourceStrategy
from pykubelet.controlplane.apiserver.handlers.rest import read_body
from pykubelet.controlplane.apiserver.responses import json_response
from pykubelet.controlplane.apiserver.subresources import typed_body
from pykubelet.controlplane.registry.patch import (
    APPLY_PATCH,
    PATCH_TYPES,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    apply_patch,
)
from pykubelet.controlplane.registry.scale import scale_errors
from pykubelet.controlplane.registry.store import Context, Entry, GenericStore

Obj = dict[str, Any]


def _steps(path: str) -> list[str]:
    return [p for p in path.strip().lstrip(".").split(".") if p]


def read_path(obj: Obj, path: str) -> Any:
    value: Any = obj
    for step in _steps(path):
        if not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value


def write_path(obj: Obj, path: str, value: Any) -> None:
    steps = _steps(path)
    node = obj
    for step in steps[:-1]:
        nxt = node.get(step)
        if not isinstance(nxt, dict):
            nxt = node[step] = {}
        node = nxt
    node[steps[-1]] = value


def scale_of(obj: Obj, spec: Obj) -> Obj:
    """The Scale a custom resource shows (scaleFromCustomResource)."""
    meta = obj.get("metadata") or {}
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                       "creationTimestamp") if k in meta}
    replicas = read_path(obj, spec["specReplicasPath"])
    status_replicas = read_path(obj, spec["statusReplicasPath"])
    selector = read_path(obj, spec["labelSelectorPath"]) if spec.get("labelSelectorPath") \
        else None
    status: Obj = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    if isinstance(selector, str) and selector:
        status["selector"] = selector
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            "spec": {"replicas": replicas if isinstance(replicas, int) else 0},
            "status": status}


async def scale(server: Any, request: web.Request, info: Any, store: GenericStore,
                ctx: Context) -> web.StreamResponse:
    """GET/PUT/PATCH <plural>/NAME/scale."""
    strategy = store.strategy
    assert isinstance(strategy, CustomResourceStrategy)
    spec = strategy.scale
    assert spec is not None
    current = scale_of(store.get(info.namespace, info.name).obj(), spec)
    if info.verb == "get":
        return json_response(current)
    if info.verb == "patch":
        ctype = request.content_type
        if ctype in (APPLY_PATCH, STRATEGIC_MERGE_PATCH) or ctype not in PATCH_TYPES:
            raise errors.unsupported_media_type(ctype)
        patch = await read_body(request, patch=True)
        try:
            body = apply_patch(ctype, copy.deepcopy(current), patch)
        except PatchError as exc:
            raise errors.unprocessable(str(exc)) from None
    else:
        body = await read_body(request, ctx=ctx)
    body = typed_body(body, "Scale", "io.k8s.api.autoscaling.v1.Scale", "autoscaling/v1")
    errs = scale_errors(body)
    if errs:
        raise errors.invalid("Scale", "autoscaling", info.name, errs)
    replicas = (body.get("spec") or {}).get("replicas", 0)
    rv = (body.get("metadata") or {}).get("resourceVersion") or ""
    if ctx.dry_run:
        return json_response({**current, "spec": {"replicas": replicas}})

    def mutate(obj: Obj) -> Obj:
        if rv and rv != (obj.get("metadata") or {}).get("resourceVersion"):
            raise errors.conflict(store.info.resource, store.info.group, info.name)
        write_path(obj, spec["specReplicasPath"], replicas)
        return obj

    result = await store.guaranteed_update(info.namespace, info.name, mutate, ctx=ctx)
    return json_response(scale_of(result.obj() if isinstance(result, Entry) else result, spec))


__all__ = ["read_path", "scale", "scale_of", "write_path"]
