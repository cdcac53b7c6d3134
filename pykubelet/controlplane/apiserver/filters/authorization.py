"""Authorization (kube-apiserver's ``Node,RBAC`` modes): the admin (system:masters) may do
anything; a node (``system:node:<name>`` in ``system:nodes``) is judged by the Node
authorizer (plugin/pkg/auth/authorizer/node, with AuthorizeNodeWithSelectors as in 1.32):
secrets, configmaps, persistent volume claims and service account tokens only by name and
only those a pod bound to the node uses (the graph, read from the pods), leases only its
own in ``kube-node-lease``, nodes only its own to read, pods only its own (a get of one
bound to it, a list or watch with ``fieldSelector=spec.nodeName=<itself>``); the rest by
the static node rules (bootstrappolicy's NodeRules, the ``system:node`` role).
NodeRestriction (admission) then checks that the objects it writes are its own. What
neither allows, RBAC (:mod:`.rbac`) decides.
"""

from __future__ import annotations

from collections.abc import Callable

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.filters.rbac import allows
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.registry.bootstrappolicy import node_rules
from pykubelet.controlplane.registry.rbacrules import Rule
from pykubelet.controlplane.registry.store import User

READ = frozenset({"get", "list", "watch"})
NODE_LEASE_NAMESPACE = "kube-node-lease"
# the static rules (NodeRules) the Node authorizer allows what it does not subdivide by
NODE_RULES: tuple[Rule, ...] = tuple(Rule.of(r) for r in node_rules())
# core resources a node reads (get, list, watch) only by name and only for its pods
_READ_NAMESPACED = frozenset({"secrets", "configmaps"})

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
    """NodeAuthorizer.Authorize: None when it allows the request, else its reason ("" for
    anyone who is not a node, or no reason)."""
    node = user.node
    if node is None:
        return ""
    if info.is_resource_request:
        name = info.name or single_name
        gr = (info.group, info.resource)
        if gr[0] == "" and gr[1] in _READ_NAMESPACED:
            return _read_namespaced(node, info, name, referenced)
        if gr == ("", "persistentvolumeclaims"):
            if info.subresource == "status":
                if info.verb not in ("update", "patch"):
                    return "can only get/update/patch this type"
                return _related(node, info, name, referenced)
            return _get(node, info, name, referenced)
        if gr == ("", "persistentvolumes"):
            return _get(node, info, name, referenced)
        if gr == ("", "serviceaccounts"):
            if info.verb != "create" or not name:
                return "can only create tokens for individual service accounts"
            if info.subresource != "token":
                return "can only create token subresource of serviceaccount"
            return _related(node, info, name, referenced)
        if gr == ("coordination.k8s.io", "leases"):
            return _lease(node, info, name)
        if gr == ("", "nodes"):
            return _node(node, info, name)
        if gr == ("", "pods"):
            return _pod(node, info, name, field_exact, pod_node)
    if allows(info, NODE_RULES):
        return None
    return ""


def _read_namespaced(node: str, info: RequestInfo, name: str,
                     referenced: ReferencedFn) -> str | None:
    """authorizeReadNamespacedObject."""
    if info.verb not in READ:
        return "can only read resources of this type"
    if info.subresource:
        return "cannot read subresource"
    if not info.namespace:
        return "can only read namespaced object of this type"
    return _related(node, info, name, referenced)


def _get(node: str, info: RequestInfo, name: str, referenced: ReferencedFn) -> str | None:
    """authorizeGet."""
    if info.verb != "get":
        return "can only get individual resources of this type"
    if info.subresource:
        return "cannot get subresource"
    return _related(node, info, name, referenced)


def _related(node: str, info: RequestInfo, name: str, referenced: ReferencedFn
             ) -> str | None:
    """authorize: a path in the graph from the object to the node."""
    if not name:
        return "No Object name found"
    if referenced(node, info.resource, info.namespace, name):
        return None
    return f"no relationship found between node '{node}' and this object"


def _lease(node: str, info: RequestInfo, name: str) -> str | None:
    """authorizeLease: its own, in kube-node-lease (the name of a create is NodeRestriction's
    to check)."""
    if info.verb not in ("get", "create", "update", "patch", "delete"):
        return "can only get, create, update, patch, or delete a node lease"
    if info.namespace != NODE_LEASE_NAMESPACE:
        return f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
    if info.verb != "create" and name != node:
        return "can only access node lease with the same name as the requesting node"
    return None


def _node(node: str, info: RequestInfo, name: str) -> str | None:
    """authorizeNode: any node may create and update a Node (NodeRestriction says which),
    read only its own."""
    if not info.subresource:
        if info.verb in ("create", "update", "patch"):
            return None
        if info.verb in READ:
            if name == node:
                return None
            if not name:
                return f"node '{node}' cannot read all nodes, only its own Node object"
            return f"node '{node}' cannot read '{name}', only its own Node object"
    elif info.subresource == "status" and info.verb in ("update", "patch"):
        return None
    return ""


def _pod(node: str, info: RequestInfo, name: str, field_exact: Callable[[str], str | None],
         pod_node: PodNodeFn) -> str | None:
    """authorizePod: a get of a pod bound to it, a list or watch pinned to it by
    ``spec.nodeName``; create and delete (mirror pods), status updates and evictions as
    NodeRestriction narrows them."""
    verb, sub = info.verb, info.subresource
    if not sub:
        if verb == "get":
            return _bound(node, info, name, pod_node)
        if verb in ("list", "watch"):
            if field_exact("spec.nodeName") == node:
                return None
            if name:
                return _bound(node, info, name, pod_node)
            return "can only list/watch pods with spec.nodeName field selector"
        if verb in ("create", "delete"):
            return None
    elif (sub == "status" and verb in ("update", "patch")) or (
            sub == "eviction" and verb == "create"):
        return None
    return ""


def _bound(node: str, info: RequestInfo, name: str, pod_node: PodNodeFn) -> str | None:
    if not name:
        return "No Object name found"
    if info.namespace and pod_node(info.namespace, name) == node:
        return None
    return f"no relationship found between node '{node}' and this object"
