"""Pod subresources: ``binding`` (the scheduler's write), ``eviction`` (a delete that
respects PodDisruptionBudgets) and ``log`` (proxied to the node's server), as
pkg/registry/core/pod/storage does them."""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo, parse_bool
from pykubelet.controlplane.apiserver.selectors import LabelSelector, Requirement
from pykubelet.controlplane.registry.resources import PDBS
from pykubelet.controlplane.registry.store import Context, DeleteOptions, GenericStore, Obj
from pykubelet.controlplane.registry.strategy import StatusStrategy, now, rfc3339

if TYPE_CHECKING:
    from pykubelet.controlplane.apiserver.app import APIServer

log = logging.getLogger(__name__)


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def set_condition(status: Obj, cond: Obj) -> None:
    """podutil.UpdatePodCondition: replace the condition of that type, keeping its
    lastTransitionTime when the status did not change."""
    conds = status.setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            if c.get("status") == cond.get("status"):
                cond["lastTransitionTime"] = c.get("lastTransitionTime",
                                                   cond.get("lastTransitionTime"))
            conds[i] = cond
            return
    conds.append(cond)


async def binding(server: APIServer, request: web.Request, info: RequestInfo,
                  store: GenericStore, ctx: Context) -> web.StreamResponse:
    """POST pods/NAME/binding: set spec.nodeName once, with PodScheduled=True."""
    body = await server._body(request)
    if not isinstance(body, dict):
        raise errors.bad_request("expected a Binding object")
    target = body.get("target") or {}
    node = target.get("name") or ""
    name = info.name
    if (body.get("metadata") or {}).get("name", name) != name:
        raise errors.bad_request("the name of the object does not match the name on the URL")
    if not node:
        raise errors.invalid("Binding", "", name, [{"reason": "FieldValueRequired",
                                                    "message": "Required value",
                                                    "field": "target.name"}])
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    if ctx.dry_run:
        store.get(info.namespace, name)
    else:
        await bind_pod(store, info.namespace, name, node, annotations, ctx)
    return _json(errors.success("pods", name), 201)


async def bind_pod(store: GenericStore, namespace: str, name: str, node: str,
                   annotations: dict[str, str], ctx: Context) -> Any:
    """Set ``spec.nodeName`` once, with PodScheduled=True (BindingREST.assignPod)."""

    def assign(pod: Obj) -> Obj:
        meta = pod.setdefault("metadata", {})
        if meta.get("deletionTimestamp"):
            raise errors.conflict("pods/binding", "", name,
                                  f"pod {name} is being deleted, cannot be assigned to a host")
        spec = pod.setdefault("spec", {})
        if spec.get("nodeName"):
            raise errors.conflict("pods/binding", "", name,
                                  f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        spec["nodeName"] = node
        if annotations:
            meta.setdefault("annotations", {}).update(annotations)
        set_condition(pod.setdefault("status", {}), {
            "type": "PodScheduled", "status": "True", "lastProbeTime": None,
            "lastTransitionTime": rfc3339(now())})
        return pod

    return await store.guaranteed_update(namespace, name, assign, _BindingStrategy(store), ctx)


class _BindingStrategy(StatusStrategy):
    """Binding writes spec.nodeName and the PodScheduled condition, nothing else."""

    def __init__(self, store: GenericStore) -> None:
        super().__init__(store.strategy)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        pass

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        return []


def _pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def selector_of(pdb: Obj) -> LabelSelector | None:
    """A PDB's metav1.LabelSelector as a selector (None matches nothing, as upstream)."""
    sel = (pdb.get("spec") or {}).get("selector")
    if sel is None:
        return None
    reqs = [Requirement(k, "=", (v,)) for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin", "Exists": "exists",
              "DoesNotExist": "!"}.get(e.get("operator", ""), "")
        reqs.append(Requirement(e.get("key", ""), op, tuple(e.get("values") or ())))
    return LabelSelector(tuple(reqs))


async def eviction(server: APIServer, request: web.Request, info: RequestInfo,
                   store: GenericStore, ctx: Context) -> web.StreamResponse:
    """POST pods/NAME/eviction: delete unless a PodDisruptionBudget forbids it (429)."""
    body = await server._body(request)
    if not isinstance(body, dict):
        raise errors.bad_request("expected an Eviction object")
    name, ns = info.name, info.namespace
    if (body.get("metadata") or {}).get("name", name) != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = DeleteOptions.from_dict(body.get("deleteOptions"))
    pod = store.get(ns, name).obj()
    phase = (pod.get("status") or {}).get("phase")
    ignore_pdb = phase in ("Succeeded", "Failed", "Pending") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp"))
    if not ignore_pdb:
        pdb_store = server.registry.store(PDBS)
        labels = (pod.get("metadata") or {}).get("labels") or {}
        matching = []
        for entry in pdb_store.cache.select(ns, None):
            sel = selector_of(entry.obj())
            if sel is not None and not sel.empty and sel.matches(labels):
                matching.append(entry)
        if len(matching) > 1:
            raise errors.internal("This pod has more than one PodDisruptionBudget, which the "
                                  "eviction subresource does not support.")
        if matching:
            await _take_budget(pdb_store, matching[0].attrs.name, ns, name, pod, ctx)
    _obj, _ = await store.delete(ctx, ns, name, options)
    return _json(errors.success("pods", name), 201)


async def _take_budget(pdb_store: GenericStore, pdb_name: str, ns: str, pod_name: str,
                       pod: Obj, ctx: Context) -> None:
    def take(pdb: Obj) -> Obj:
        status = pdb.setdefault("status", {})
        gen = (pdb.get("metadata") or {}).get("generation", 0)
        if status.get("observedGeneration", 0) < gen:
            raise errors.APIError(
                429, errors.TOO_MANY_REQUESTS,
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget "
                             f"{pdb_name} is still being processed by the server."}]})
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed <= 0 and not (not _pod_ready(pod) and (pdb.get("spec") or {}).get(
                "unhealthyPodEvictionPolicy") == "AlwaysAllow"):
            healthy = status.get("currentHealthy", 0)
            desired = status.get("desiredHealthy", 0)
            raise errors.APIError(
                429, errors.TOO_MANY_REQUESTS,
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {"causes": [{"reason": "DisruptionBudget", "message": f"The disruption budget "
                             f"{pdb_name} needs {desired} healthy pods and has {healthy} "
                             "currently"}]})
        status["disruptionsAllowed"] = allowed - 1 if allowed > 0 else 0
        status.setdefault("disruptedPods", {})[pod_name] = rfc3339(now())
        return pdb

    if not ctx.dry_run:
        await pdb_store.guaranteed_update(ns, pdb_name, take, StatusStrategy(pdb_store.strategy))


async def pod_log(server: APIServer, request: web.Request, info: RequestInfo,
              store: GenericStore, ctx: Context) -> web.StreamResponse:
    """GET pods/NAME/log: checked here, then streamed from the node's server."""
    pod = store.get(info.namespace, info.name).obj()
    spec = pod.get("spec") or {}
    q = request.query
    names = [c.get("name") for c in spec.get("containers") or []]
    all_names = names + [c.get("name") for c in spec.get("initContainers") or []] + [
        c.get("name") for c in spec.get("ephemeralContainers") or []]
    container = q.get("container", "")
    if not container:
        if len(names) != 1:
            raise errors.bad_request(
                f"a container name must be specified for pod {info.name}, choose one of: "
                f"[{' '.join(n for n in names if n)}]")
        container = names[0] or ""
    elif container not in all_names:
        raise errors.bad_request(f"container {container} is not valid for pod {info.name}")
    for key in ("follow", "previous", "timestamps"):
        try:
            parse_bool(q.get(key))
        except ValueError:
            raise errors.bad_request(f"{key}: invalid boolean {q.get(key)!r}") from None
    for key in ("tailLines", "limitBytes", "sinceSeconds"):
        if key in q:
            try:
                if int(q[key]) < (1 if key != "tailLines" else 0):
                    raise ValueError
            except ValueError:
                raise errors.bad_request(f"{key}: Invalid value: {q[key]!r}") from None
    if "sinceTime" in q:
        try:
            dt.datetime.fromisoformat(q["sinceTime"].replace("Z", "+00:00"))
        except ValueError:
            raise errors.bad_request("sinceTime: invalid RFC3339 time") from None
    node = spec.get("nodeName")
    if not node:
        return web.Response(body=b"", content_type="text/plain")
    if server.node_proxy is None:
        raise errors.service_unavailable(f"no connection to node {node} is configured")
    resp: web.StreamResponse = await server.node_proxy.container_logs(
        request, node, info.namespace, info.name, container)
    return resp


async def scheduling(server: APIServer, request: web.Request, info: RequestInfo,
                     store: GenericStore, ctx: Context) -> web.StreamResponse:
    """GET pods/NAME/scheduling: the scheduler's last decision for the pod."""
    store.get(info.namespace, info.name)
    decision = server.decisions(info.namespace, info.name) if server.decisions else None
    if decision is None:
        raise errors.APIError(
            404, errors.NOT_FOUND,
            f'no scheduling decision is recorded for pod "{info.name}" (not tried yet, or '
            "bound long ago)", {"name": info.name, "kind": "pods"})
    return _json({"kind": "PodSchedulingDecision", "apiVersion": "scheduling.pykube.io/v1alpha1",
                  "metadata": {"name": info.name, "namespace": info.namespace},
                  "decision": decision})


async def pod_exec(server: APIServer, request: web.Request, info: RequestInfo,
                   store: GenericStore, ctx: Context) -> web.StreamResponse:
    """pods/exec: checked here (the pod, its node, its phase, the container, a command),
    then proxied to the node's server, which runs it in the container."""
    pod = store.get(info.namespace, info.name).obj()
    spec = pod.get("spec") or {}
    q = request.query
    names = [c.get("name") for c in spec.get("containers") or []]
    all_names = names + [c.get("name") for c in spec.get("initContainers") or []]
    container = q.get("container", "")
    if not container:
        if len(names) != 1:
            raise errors.bad_request(
                f"a container name must be specified for pod {info.name}, choose one of: "
                f"[{' '.join(n for n in names if n)}]")
        container = names[0] or ""
    elif container not in all_names:
        raise errors.bad_request(f"container {container} is not valid for pod {info.name}")
    if not q.getall("command", []):
        raise errors.bad_request("you must specify at least one command for the container")
    node = spec.get("nodeName")
    if not node:
        raise errors.bad_request(f"pod {info.name} does not have a host assigned")
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise errors.bad_request(f"cannot exec into a container in a completed pod; current "
                                 f"phase is {phase}")
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise errors.bad_request("Upgrade request required: use the WebSocket "
                                 "v5.channel.k8s.io protocol")
    if server.node_proxy is None:
        raise errors.service_unavailable(f"no connection to node {node} is configured")
    resp: web.StreamResponse = await server.node_proxy.exec_stream(
        request, node, info.namespace, info.name, container)
    return resp


SUBRESOURCES = {
    ("pods", "exec"): pod_exec,
    ("pods", "scheduling"): scheduling,
    ("pods", "binding"): binding,
    ("pods", "eviction"): eviction,
    ("pods", "log"): pod_log,
}
