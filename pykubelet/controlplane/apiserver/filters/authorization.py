"""Authorization: the admin may do anything; a node may do what kubelet needs, as the
node authorizer and the ``system:node`` role allow it (read its own Node, the pods bound
to it (listed or watched with ``fieldSelector=spec.nodeName=<itself>``), namespaces,
events, Services and, for the service proxy the agent runs, EndpointSlices; write its own
Node and Lease, pod status, mirror pods, events; read the secrets and configmaps its own
pods use, by name). NodeRestriction (admission) then checks that the objects it writes
are its own."""

from __future__ import annotations

from collections.abc import Callable

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.registry.store import User

READ = frozenset({"get", "list", "watch"})

# (group, resource, subresource) -> verbs a node may use; pods and nodes are read only
# as the selector rules below allow
NODE_RULES: dict[tuple[str, str, str], frozenset[str]] = {
    ("", "nodes", ""): READ | {"create", "update", "patch"},
    ("", "nodes", "status"): frozenset({"update", "patch"}),
    ("", "pods", ""): READ | {"create", "delete"},
    ("", "pods", "status"): frozenset({"update", "patch"}),
    ("", "pods", "eviction"): frozenset({"create"}),
    ("", "namespaces", ""): READ,
    ("", "events", ""): READ | {"create", "update", "patch"},
    ("coordination.k8s.io", "leases", ""): READ | {"create", "update", "patch", "delete"},
    ("scheduling.k8s.io", "priorityclasses", ""): READ,
    # system:node reads Services (the service environment variables of pods); the node's
    # agent runs the service proxy, which system:node-proxier lets read EndpointSlices
    ("", "services", ""): READ,
    ("discovery.k8s.io", "endpointslices", ""): READ,
}
# read only by name, and only what a pod bound to the node references
NODE_REFERENCED = frozenset({"configmaps", "secrets"})

ReferencedFn = Callable[[str, str, str, str], bool]  # (node, resource, namespace, name)
PodNodeFn = Callable[[str, str], str | None]  # (namespace, name) -> its spec.nodeName


def authorize(
    user: User, info: RequestInfo, single_name: str, referenced: ReferencedFn,
    field_exact: Callable[[str], str | None] = lambda _f: None,
    pod_node: PodNodeFn = lambda _ns, _n: None,
) -> None:
    """Raise 403 unless ``user`` may do ``info``; ``single_name`` is the object a list or
    watch is pinned to by a ``metadata.name`` field selector ("" if none),
    ``field_exact(f)`` the value a ``f=value`` field selector term pins."""
    if user.is_admin:
        return
    node = user.node
    why = ""
    if node is not None:
        name = info.name or single_name
        if info.group == "" and info.resource in NODE_REFERENCED and not info.subresource:
            if info.verb in READ and name and referenced(node, info.resource,
                                                        info.namespace, name):
                return
            why = f"no relationship found between node '{node}' and this object"
        elif info.group == "" and not info.subresource and info.verb in READ and (
                info.resource in ("pods", "nodes")):
            why = _selector_rule(node, info, name, field_exact, pod_node)
            if not why:
                return
        else:
            verbs = NODE_RULES.get((info.group, info.resource, info.subresource))
            if verbs is not None and info.verb in verbs:
                return
    raise errors.forbidden(user.name, info.verb, info.resource, info.group, info.namespace,
                           info.name, info.subresource, why)


def _selector_rule(node: str, info: RequestInfo, name: str,
                   field_exact: Callable[[str], str | None], pod_node: PodNodeFn) -> str:
    """Why a node may not read these pods or nodes ("" if it may): the Node authorizer's
    rules with AuthorizeNodeWithSelectors (on by default in 1.32)."""
    if info.resource == "nodes":
        if name == node:
            return ""
        if not name:
            return f"node '{node}' cannot read all nodes, only its own Node object"
        return f"node '{node}' cannot read '{name}', only its own Node object"
    if info.verb in ("list", "watch") and field_exact("spec.nodeName") == node:
        return ""
    if name and info.namespace and pod_node(info.namespace, name) == node:
        return ""
    if info.verb in ("list", "watch") and not name:
        return "can only list/watch pods with spec.nodeName field selector"
    return f"no relationship found between node '{node}' and this object"
