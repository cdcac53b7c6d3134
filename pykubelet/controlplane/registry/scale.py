"""The ``scale`` subresource of workloads (pkg/registry/apps/replicaset/storage's
ScaleREST): an autoscaling/v1 Scale whose spec.replicas is the workload's, whose status
has the observed replicas and the selector as a string; writing it changes only
spec.replicas (a resourceVersion given must be the workload's, else 409)."""

from __future__ import annotations

from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.store import Context, Entry, GenericStore

Obj = dict[str, Any]


def selector_string(selector: Obj | None) -> str:
    """metav1.LabelSelectorAsSelector(selector).String(): requirements sorted by key."""
    if not selector:
        return ""
    reqs: list[tuple[str, str]] = []
    for k, v in (selector.get("matchLabels") or {}).items():
        reqs.append((k, f"{k}={v}"))
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), sorted(e.get("values") or [])
        if op == "In":
            reqs.append((key, f"{key} in ({','.join(values)})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({','.join(values)})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def scale_of(obj: Obj) -> Obj:
    """The Scale a workload shows (scaleFromReplicaSet)."""
    meta = obj.get("metadata") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                       "creationTimestamp") if k in meta}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            "spec": {"replicas": spec.get("replicas", 0)},
            "status": {"replicas": status.get("replicas", 0),
                       "selector": selector_string(spec.get("selector"))}}


def scale_errors(scale: Obj) -> list[dict[str, str]]:
    """ValidateScale: spec.replicas non-negative."""
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or replicas < 0:
        return [{"reason": "FieldValueInvalid", "field": "spec.replicas",
                 "message": f"Invalid value: {replicas}: must be greater than or equal to 0"}]
    return []


async def update_scale(store: GenericStore, ctx: Context, namespace: str, name: str,
                       scale: Obj) -> Obj:
    """Write a Scale's spec.replicas into the workload; the new Scale."""
    meta = scale.get("metadata") or {}
    if meta.get("name", name) != name:
        raise errors.bad_request("the name of the object does not match the name on the URL")
    errs = scale_errors(scale)
    if errs:
        raise errors.invalid("Scale", "autoscaling", name, errs)
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    rv = meta.get("resourceVersion") or ""

    def mutate(obj: Obj) -> Obj:
        if rv and rv != (obj.get("metadata") or {}).get("resourceVersion"):
            raise errors.conflict(store.info.resource, store.info.group, name)
        obj.setdefault("spec", {})["replicas"] = replicas
        return obj

    store.get(namespace, name)  # 404 names the workload
    result = await store.guaranteed_update(namespace, name, mutate, ctx=ctx)
    return scale_of(result.obj() if isinstance(result, Entry) else result)
