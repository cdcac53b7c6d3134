"""Authorization: the admin may do anything; a node may do what kubelet needs, as the
node authorizer and the ``system:node`` role allow it (read nodes, pods, namespaces,
events; write its own Node and Lease, pod status, mirror pods, events; read the secrets
and configmaps its own pods use, by name). NodeRestriction (admission) then checks that
the objects it writes are its own."""

from __future__ import annotations

from collections.abc import Callable

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.registry.store import User

READ = frozenset({"get", "list", "watch"})

# (group, resource, subresource) -> verbs a node may use
NODE_RULES: dict[tuple[str, str, str], frozenset[str]] = {
    ("", "nodes", ""): READ | {"create", "update", "patch"},
    ("", "nodes", "status"): frozenset({"get", "update", "patch"}),
    ("", "pods", ""): READ | {"create", "delete"},
    ("", "pods", "status"): frozenset({"get", "update", "patch"}),
    ("", "pods", "eviction"): frozenset({"create"}),
    ("", "namespaces", ""): READ,
    ("", "events", ""): READ | {"create", "update", "patch"},
    ("coordination.k8s.io", "leases", ""): READ | {"create", "update", "patch", "delete"},
    ("scheduling.k8s.io", "priorityclasses", ""): READ,
}
# read only by name, and only what a pod bound to the node references
NODE_REFERENCED = frozenset({"configmaps", "secrets"})

ReferencedFn = Callable[[str, str, str, str], bool]  # (node, resource, namespace, name)


def authorize(
    user: User, info: RequestInfo, single_name: str, referenced: ReferencedFn
) -> None:
    """Raise 403 unless ``user`` may do ``info``; ``single_name`` is the object a list or
    watch is pinned to by a ``metadata.name`` field selector ("" if none)."""
    if user.is_admin:
        return
    node = user.node
    why = ""
    if node is not None:
        if info.group == "" and info.resource in NODE_REFERENCED and not info.subresource:
            name = info.name or single_name
            if info.verb in READ and name and referenced(node, info.resource,
                                                        info.namespace, name):
                return
            why = (f"no relationship found between node '{node}' and this object")
        else:
            verbs = NODE_RULES.get((info.group, info.resource, info.subresource))
            if verbs is not None and info.verb in verbs:
                return
    raise errors.forbidden(user.name, info.verb, info.resource, info.group, info.namespace,
                           info.name, info.subresource, why)
