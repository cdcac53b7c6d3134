"""Authorization (kube-apiserver's ``Node,RBAC`` modes): the admin (system:masters) may do
anything; a node may do what kubelet needs, as the node authorizer and the ``system:node``
role allow it (read its own Node, the pods bound to it (listed or watched with
``fieldSelector=spec.nodeName=<itself>``), namespaces, events, Services and, for the
service proxy the agent runs, EndpointSlices; write its own Node and Lease, pod status,
mirror pods, events; read the secrets and configmaps its own pods use, by name).
NodeRestriction (admission) then checks that the objects it writes are its own. What
neither allows, RBAC (:mod:`.rbac`) decides.
"""

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
# the next authorizer (RBAC): (user, request) -> (allowed, reason)
NextFn = Callable[[User, RequestInfo], tuple[bool, str]]


def _no_opinion(user: User, info: RequestInfo) -> tuple[bool, str]:
    return False, ""


def authorize(
    user: User, info: RequestInfo, single_name: str, referenced: ReferencedFn,
    field_exact: Callable[[str], str | None] = lambda _f: None,
    pod_node: PodNodeFn = lambda _ns, _n: None,
    rbac: NextFn = _no_opinion,
) -> None:
    """Raise 403 unless ``user`` may do ``info``, as kube-apiserver's union of authorizers
    with ``--authorization-mode=Node,RBAC``: system:masters first (the privileged group
    authorizer), then the node rules, then ``rbac``; the reasons of those with no opinion
    are joined with newlines after the message. ``single_name`` is the object a list or
    watch is pinned to by a ``metadata.name`` field selector ("" if none),
    ``field_exact(f)`` the value a ``f=value`` field selector term pins."""
    allowed, why = decide(user, info, single_name, referenced, field_exact, pod_node, rbac)
    if not allowed:
        raise errors.forbidden(user.name, info.verb, info.resource, info.group,
                               info.namespace, info.name, info.subresource, why)


def decide(
    user: User, info: RequestInfo, single_name: str, referenced: ReferencedFn,
    field_exact: Callable[[str], str | None] = lambda _f: None,
    pod_node: PodNodeFn = lambda _ns, _n: None,
    rbac: NextFn = _no_opinion,
) -> tuple[bool, str]:
    """The union's decision and reason (what access reviews answer)."""
    if user.is_admin:
        return True, ""
    why = _node_why(user, info, single_name, referenced, field_exact, pod_node)
    if why is None:
        return True, ""
    allowed, reason = rbac(user, info)
    if allowed:
        return True, reason
    return False, "\n".join(r for r in (why, reason) if r)


def _node_why(
    user: User, info: RequestInfo, single_name: str, referenced: ReferencedFn,
    field_exact: Callable[[str], str | None], pod_node: PodNodeFn,
) -> str | None:
    """None when the node authorizer allows the request, else its reason ("" for anyone
    who is not a node)."""
    node = user.node
    why = ""
    if node is not None:
        name = info.name or single_name
        if info.group == "" and info.resource in NODE_REFERENCED and not info.subresource:
            if info.verb in READ and name and referenced(node, info.resource,
                                                        info.namespace, name):
                return None
            why = f"no relationship found between node '{node}' and this object"
        elif (info.resource, info.subresource) == ("serviceaccounts", "token"):
            # authorizeCreateToken: the account of a pod bound to the node
            if info.verb == "create" and referenced(node, info.resource, info.namespace,
                                                    info.name):
                return None
            why = f"no relationship found between node '{node}' and this object"
        elif info.group == "" and not info.subresource and info.verb in READ and (
                info.resource in ("pods", "nodes")):
            why = _selector_rule(node, info, name, field_exact, pod_node)
            if not why:
                return None
        else:
            verbs = NODE_RULES.get((info.group, info.resource, info.subresource))
            if verbs is not None and info.verb in verbs:
                return None
    return why


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
