"""Pod subresources: ``binding`` (the scheduler's write), ``eviction`` (a delete that
respects PodDisruptionBudgets), ``log`` (proxied to the node's server), ``exec``,
``attach`` and ``portforward`` (the client's upgrade spliced to the node's server), as
pkg/registry/core/pod/storage does them; and ``scheduling``, the scheduler's last
decision for the pod (ours)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from pykubelet.api.errors import DecodeError
from pykubelet.api.machinery.codec import check_definition
from pykubelet.api.machinery.timeutil import parse_time
from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.handlers.rest import read_body
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo, parse_bool
from pykubelet.controlplane.registry.binding import bind_pod
from pykubelet.controlplane.registry.eviction import evict
from pykubelet.controlplane.registry.patch import (
    APPLY_PATCH,
    PATCH_TYPES,
    PatchError,
    apply_patch,
)
from pykubelet.controlplane.registry.scale import scale_of, update_scale
from pykubelet.controlplane.registry.store import Context, DeleteOptions, GenericStore

if TYPE_CHECKING:
    from pykubelet.controlplane.apiserver.app import APIServer

log = logging.getLogger(__name__)


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def typed_body(body: Any, kind: str, definition: str, version: str = "v1") -> dict[str, Any]:
    """A subresource's body as typed decoding reads it: an object whose fields have their
    types (``target: "node-a"`` or ``target.name: 5`` is 400, never stored)."""
    try:
        checked = check_definition(definition, body)
    except DecodeError as exc:
        raise errors.bad_request(f'{kind} in version "{version}" cannot be handled as a '
                                 f"{kind}: {exc}") from None
    if not isinstance(checked, dict):
        raise errors.bad_request(f"expected a {kind} object")
    return checked


async def binding(server: APIServer, request: web.Request, info: RequestInfo,
                  store: GenericStore, ctx: Context) -> web.StreamResponse:
    """POST pods/NAME/binding: set spec.nodeName once, with PodScheduled=True."""
    body = typed_body(await read_body(request), "Binding", "io.k8s.api.core.v1.Binding")
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


async def eviction(server: APIServer, request: web.Request, info: RequestInfo,
                   store: GenericStore, ctx: Context) -> web.StreamResponse:
    """POST pods/NAME/eviction: delete unless a PodDisruptionBudget forbids it (429)."""
    body = typed_body(await read_body(request), "Eviction",
                      "io.k8s.api.policy.v1.Eviction", "policy/v1")
    name, ns = info.name, info.namespace
    if (body.get("metadata") or {}).get("name", name) != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = DeleteOptions.from_dict(body.get("deleteOptions"))
    await evict(store, ctx, ns, name, options)
    return _json(errors.success("pods", name), 201)


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
            parse_time(q["sinceTime"])
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
        raise errors.StatusError(
            404, errors.NOT_FOUND,
            f'no scheduling decision is recorded for pod "{info.name}" (not tried yet, or '
            "bound long ago)", {"name": info.name, "kind": "pods"})
    return _json({"kind": "PodSchedulingDecision", "apiVersion": "scheduling.pykube.io/v1alpha1",
                  "metadata": {"name": info.name, "namespace": info.namespace},
                  "decision": decision})


def _query_bool(request: web.Request, name: str) -> bool:
    try:
        return bool(parse_bool(request.query.get(name)))
    except ValueError:
        raise errors.bad_request(f"{name}: invalid boolean {request.query.get(name)!r}") from None


def _stream_target(info: RequestInfo, store: GenericStore, request: web.Request
                   ) -> tuple[dict[str, Any], str, str]:
    """streamLocation: the pod, its container (named, or its only one) and its node."""
    pod = store.get(info.namespace, info.name).obj()
    spec = pod.get("spec") or {}
    names = [c.get("name") or "" for c in spec.get("containers") or []]
    init_names = [c.get("name") or "" for c in spec.get("initContainers") or []]
    ephemeral = [c.get("name") or "" for c in spec.get("ephemeralContainers") or []]
    container = request.query.get("container", "")
    if not container:
        if len(names) == 1:
            container = names[0]
        elif not names:
            raise errors.bad_request(f"a container name must be specified for pod {info.name}")
        else:
            msg = (f"a container name must be specified for pod {info.name}, choose one of: "
                   f"[{' '.join(names)}]")
            if init_names:
                msg += f" or one of the init containers: [{' '.join(init_names)}]"
            raise errors.bad_request(msg)
    elif container not in (*names, *init_names, *ephemeral):
        raise errors.bad_request(f"container {container} is not valid for pod {info.name}")
    node = spec.get("nodeName") or ""
    if not node:
        raise errors.bad_request(f"pod {info.name} does not have a host assigned")
    return pod, container, node


def _stream_params(request: web.Request, *, command: bool) -> list[tuple[str, str]]:
    """streamParams: PodExecOptions/PodAttachOptions as the node's query (``input``,
    ``output``, ``error``, ``tty``, each ``1``; ``command`` repeated)."""
    params = [(node_name, "1") for name, node_name in
              (("stdin", "input"), ("stdout", "output"), ("stderr", "error"), ("tty", "tty"))
              if _query_bool(request, name)]
    if not params or params == [("tty", "1")]:
        raise errors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
    if command:
        commands = request.query.getall("command", [])
        if not commands:
            raise errors.bad_request("you must specify at least one command for the container")
        params += [("command", c) for c in commands]
    return params


async def _proxy_to_node(server: APIServer, request: web.Request, node: str, path: str,
                         params: list[tuple[str, str]]) -> web.StreamResponse:
    if server.node_proxy is None:
        raise errors.service_unavailable(f"no connection to node {node} is configured")
    resp: web.StreamResponse = await server.node_proxy.upgrade(request, node, path, params)
    return resp


async def pod_exec(server: APIServer, request: web.Request, info: RequestInfo,
                   store: GenericStore, ctx: Context) -> web.StreamResponse:
    """pods/exec: the pod, container and options checked here (ExecLocation), then the
    client's upgrade (WebSocket or SPDY) proxied to the node, which has the runtime run
    the command."""
    return await _proxy_stream(server, request, info, store, "exec", command=True)


async def pod_attach(server: APIServer, request: web.Request, info: RequestInfo,
                     store: GenericStore, ctx: Context) -> web.StreamResponse:
    """pods/attach: as exec, to the container's own process (AttachLocation)."""
    return await _proxy_stream(server, request, info, store, "attach", command=False)


async def _proxy_stream(server: APIServer, request: web.Request, info: RequestInfo,
                        store: GenericStore, verb: str, *, command: bool
                        ) -> web.StreamResponse:
    """streamLocation, which exec and attach share: the pod's container on its node, the
    stream options (and for exec the command) passed on to the node's ``/VERB/``."""
    _, container, node = _stream_target(info, store, request)
    params = _stream_params(request, command=command)
    return await _proxy_to_node(server, request, node,
                                f"/{verb}/{info.namespace}/{info.name}/{container}", params)


async def pod_port_forward(server: APIServer, request: web.Request, info: RequestInfo,
                           store: GenericStore, ctx: Context) -> web.StreamResponse:
    """pods/portforward: PortForwardLocation (the ports, if the query names them, passed on
    as ``port``; SPDY clients name them per stream)."""
    pod = store.get(info.namespace, info.name).obj()
    node = (pod.get("spec") or {}).get("nodeName") or ""
    if not node:
        raise errors.bad_request(f"pod {info.name} does not have a host assigned")
    params = []
    for raw in request.query.getall("ports", []):
        for part in raw.split(","):
            if not part.strip().isdigit() or not 0 < int(part) < 65536:
                raise errors.bad_request(f"ports: invalid port {part!r}: must be 1-65535")
            params.append(("port", str(int(part))))
    return await _proxy_to_node(server, request, node,
                                f"/portForward/{info.namespace}/{info.name}", params)


async def scale(server: APIServer, request: web.Request, info: RequestInfo,
                store: GenericStore, ctx: Context) -> web.StreamResponse:
    """GET/PUT/PATCH <workload>/NAME/scale: an autoscaling/v1 Scale over spec.replicas."""
    current = scale_of(store.get(info.namespace, info.name).obj())
    if info.verb == "get":
        return _json(current)
    if info.verb == "patch":
        ctype = request.content_type
        if ctype == APPLY_PATCH:
            return _json(await _apply_scale(store, ctx, info, await read_body(request,
                                                                               patch=True)))
        if ctype not in PATCH_TYPES:
            raise errors.unsupported_media_type(ctype)
        patch = await read_body(request, patch=True)
        try:
            body = apply_patch(ctype, current, patch)
        except PatchError as exc:
            raise errors.unprocessable(str(exc)) from None
    else:
        body = await read_body(request, ctx=ctx)
    body = typed_body(body, "Scale", "io.k8s.api.autoscaling.v1.Scale", "autoscaling/v1")
    if ctx.dry_run:
        return _json({**current, "spec": body.get("spec") or {}})
    return _json(await update_scale(store, ctx, info.namespace, info.name, body))


async def _apply_scale(store: GenericStore, ctx: Context, info: RequestInfo,
                       config: Any) -> dict[str, Any]:
    """An apply to <workload>/scale: the Scale's spec.replicas applied to the workload
    itself under the subresource "scale" (upstream's scale handler maps the Scale's
    managed fields onto the parent's spec.replicas)."""
    if not isinstance(config, dict) or config.get("kind") != "Scale" or (
            config.get("apiVersion") != "autoscaling/v1"):
        kind = config.get("kind", "") if isinstance(config, dict) else ""
        version = config.get("apiVersion", "") if isinstance(config, dict) else ""
        group, _, ver = str(version).rpartition("/")
        raise errors.bad_request(f"invalid object type: {group}/{ver}, Kind={kind}")
    meta = config.get("metadata") or {}
    parent: dict[str, Any] = {"apiVersion": store.info.group_version,
                              "kind": store.info.kind,
                              "metadata": {"name": meta.get("name", info.name)}}
    spec = config.get("spec") or {}
    if "replicas" in spec:
        parent["spec"] = {"replicas": spec["replicas"]}
    if meta.get("resourceVersion"):
        parent["metadata"]["resourceVersion"] = meta["resourceVersion"]
    store.get(info.namespace, info.name)  # 404 before anything: apply to scale never creates
    result = await store.patch(ctx, info.namespace, info.name, APPLY_PATCH, parent)
    return scale_of(result.obj() if not isinstance(result, dict) else result)


SUBRESOURCES = {
    ("replicasets", "scale"): scale,
    ("deployments", "scale"): scale,
    ("statefulsets", "scale"): scale,
    ("pods", "exec"): pod_exec,
    ("pods", "attach"): pod_attach,
    ("pods", "portforward"): pod_port_forward,
    ("pods", "scheduling"): scheduling,
    ("pods", "binding"): binding,
    ("pods", "eviction"): eviction,
    ("pods", "log"): pod_log,
}
