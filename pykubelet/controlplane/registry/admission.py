"""Admission: what the API server does to a write after decoding and before validation,
as kube-apiserver's default plugins do.

- NamespaceLifecycle: namespaced objects only go into namespaces that exist and are not
  terminating; the four system namespaces cannot be deleted.
- DefaultTolerationSeconds: a pod tolerates ``not-ready``/``unreachable`` NoExecute taints
  for 300 s unless it says otherwise (so the node lifecycle controller evicts after 5 min).
- Priority: ``spec.priority`` (and ``preemptionPolicy``) from ``priorityClassName``, or the
  global default class, or 0.
- NodeRestriction: a node may only write its own Node (labels a kubelet may set, taints
  only when it registers) and Lease, the status of pods bound to it (not their labels),
  mirror pods of its own naming no other object, and delete or evict pods bound to it.
"""

from __future__ import annotations

from typing import Any

from pykubelet.api import node_labels
from pykubelet.api.types import Toleration
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry import podrefs
from pykubelet.controlplane.registry.namespaces import SYSTEM_NAMESPACES
from pykubelet.controlplane.registry.resources import (
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
)
from pykubelet.controlplane.registry.store import (
    Context,
    GenericStore,
    MutatingAdmission,
    Obj,
)

DEFAULT_TOLERATION_SECONDS = 300
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
NODE_LEASE_NAMESPACE = "kube-node-lease"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


async def namespace_lifecycle(
    op: str, store: GenericStore, obj: Obj, old: Obj | None, ctx: Context
) -> None:
    info = store.info
    if op == "DELETE" and info is NAMESPACES:
        name = _meta(obj).get("name", "")
        if name in SYSTEM_NAMESPACES:
            raise errors.StatusError(403, errors.FORBIDDEN,
                                  f'namespaces "{name}" is forbidden: this namespace may not be '
                                  "deleted", {"name": name, "kind": "namespaces"})
        return
    if op == "CREATE":
        meta = _meta(obj)
        _check_creatable(store, meta.get("namespace", ""), meta.get("name", ""))


async def _namespace_lifecycle_create(store: GenericStore, new: Any, ctx: Context) -> None:
    """A create judged from its attributes, as upstream's Admit reads them (the request's
    namespace and name): the decoded view has both, so no encoding of the object."""
    _check_creatable(store, new.metadata.namespace, new.metadata.name)


def _check_creatable(store: GenericStore, ns_name: str, name: str) -> None:
    info = store.info
    if not info.namespaced:
        return
    ns_store = store.registry.store(NAMESPACES)
    ns = ns_store.lookup("", ns_name)
    if ns is None:
        raise errors.not_found("namespaces", "", ns_name)
    if ns.attrs.fields.get("status.phase") == "Terminating" and info is not EVENTS:
        raise errors.StatusError(
            403, errors.FORBIDDEN,
            f'{info.resource} "{name}" is forbidden: unable to create new '
            f"content in namespace {ns_name} because it is being terminated",
            {"name": name, "kind": info.resource,
             "causes": [{"reason": "NamespaceTerminating",
                         "message": f"namespace {ns_name} is being terminated",
                         "field": "metadata.namespace"}]})


# NamespaceLifecycle: on CREATE over the decoded view, on DELETE over the object
NAMESPACE_LIFECYCLE = MutatingAdmission(_namespace_lifecycle_create,
                                        other_ops=namespace_lifecycle)


async def default_toleration_seconds(store: GenericStore, pod: Any, ctx: Context) -> None:
    if store.info is not PODS:
        return
    tolerations: list[Toleration] = pod.spec.tolerations

    def tolerated(key: str) -> bool:
        return any(
            (t.key == key or (not t.key and t.operator == "Exists"))
            and t.effect in ("", "NoExecute")
            for t in tolerations
        )

    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if not tolerated(key):
            tolerations.append(Toleration(key=key, operator="Exists", effect="NoExecute",
                                          toleration_seconds=DEFAULT_TOLERATION_SECONDS))


async def priority(store: GenericStore, pod: Any, ctx: Context) -> None:
    if store.info is not PODS:
        return
    spec = pod.spec
    name = spec.priority_class_name
    pcs = store.registry.store(PRIORITY_CLASSES)
    value, policy = 0, "PreemptLowerPriority"
    pod_name = pod.metadata.name
    if name:
        entry = pcs.lookup("", name)
        if entry is None:
            raise errors.StatusError(403, errors.FORBIDDEN,
                                  f'pods "{pod_name}" is forbidden: no PriorityClass with name '
                                  f"{name} was found", {"name": pod_name, "kind": "pods"})
        pc = entry.obj()
        value, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy", policy)
    else:
        for entry in pcs.cache.select(None, None):
            pc = entry.obj()
            if pc.get("globalDefault"):
                name = entry.attrs.name
                value, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy", policy)
                spec.priority_class_name = name
                break
    given = spec.priority
    if given is not None and given != value:
        raise errors.StatusError(
            403, errors.FORBIDDEN,
            f'pods "{pod_name}" is forbidden: the integer value of priority ({given}) must not be '
            f"provided in pod spec; priority admission controller computed {value} from the "
            "given PriorityClass name", {"name": pod_name, "kind": "pods"})
    spec.priority = value
    spec.preemption_policy = spec.preemption_policy or policy


async def node_restriction(
    op: str, store: GenericStore, obj: Obj, old: Obj | None, ctx: Context
) -> None:
    """Upstream's NodeRestriction: what a node writes must be its own."""
    node = ctx.user.node
    if node is None:
        return
    info = store.info
    name = _meta(obj).get("name", "")

    def deny(why: str) -> errors.StatusError:
        return errors.StatusError(403, errors.FORBIDDEN,
                               f'{info.resource} "{name}" is forbidden: {why}',
                               {"name": name, "kind": info.resource})

    if info is NODES:
        if name != node:
            raise deny(f"node \"{node}\" is not allowed to modify node \"{name}\"")
        why = _node_refusal(op, node, obj, old)
        if why:
            raise deny(why)
    elif info is LEASES:
        if _meta(obj).get("namespace") != NODE_LEASE_NAMESPACE or name != node:
            raise deny("can only access node lease with the same name as the requesting node")
    elif info is PODS:
        bound = (obj.get("spec") or {}).get("nodeName", "")
        if op == "CREATE":
            why = _mirror_pod_refusal(store, node, obj)
            if why:
                raise deny(why)
        elif op == "UPDATE" and ctx.subresource == "status":
            if old is None or (old.get("spec") or {}).get("nodeName") != node:
                raise deny(f'node "{node}" can only update pod status for pods with '
                           "spec.nodeName set to itself")
            if _labels(obj) != _labels(old):
                raise deny(f'node "{node}" cannot update labels through pod status')
        elif bound != node or (old is not None and (old.get("spec") or {}).get("nodeName") != node):
            raise deny(f"node \"{node}\" can only {'delete' if op == 'DELETE' else 'update'} "
                       "pods with spec.nodeName set to itself")
    elif info is EVENTS:
        return


def _labels(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("labels") or {})


def _node_refusal(op: str, node: str, new: Obj, old: Obj | None) -> str:
    """Why a node may not write its own Node so ("" if it may), as upstream's admitNode:
    no labels outside a kubelet's own (they steer workloads), no configSource, and after
    registration no change to its taints (an admin's taint keeps workloads off it)."""
    spec = new.get("spec") or {}
    if op == "CREATE":
        if spec.get("configSource") is not None:
            return f'node "{node}" is not allowed to create pods with a non-nil configSource'
        bad = node_labels.forbidden(node_labels.modified(_labels(new), {}))
        if bad:
            return f'node "{node}" is not allowed to set the following labels: {", ".join(bad)}'
    elif op == "UPDATE" and old is not None:
        old_spec = old.get("spec") or {}
        if spec.get("configSource") is not None and spec.get("configSource") != old_spec.get(
                "configSource"):
            return (f'node "{node}" is not allowed to update configSource to a new non-nil '
                    "configSource")
        if (spec.get("taints") or []) != (old_spec.get("taints") or []):
            return f'node "{node}" is not allowed to modify taints'
        bad = node_labels.forbidden(node_labels.modified(_labels(new), _labels(old)))
        if bad:
            return f"is not allowed to modify labels: {', '.join(bad)}"
    return ""


def _mirror_pod_refusal(store: GenericStore, node: str, pod: Obj) -> str:
    """Why a node may not create this pod ("" if it may): only mirror pods of its own,
    owned by its own Node (one controller reference, UID checked), naming no other API
    object (admitPodCreate), so a node credential reads nothing through them."""
    meta, spec = _meta(pod), pod.get("spec") or {}
    if MIRROR_POD_ANNOTATION not in (meta.get("annotations") or {}):
        return (f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" can '
                "only create mirror pods")
    if spec.get("nodeName", "") != node:
        return f'node "{node}" can only create pods with spec.nodeName set to itself'
    owners = meta.get("ownerReferences") or []
    if len(owners) > 1:
        return f'node "{node}" can only create pods with a single owner reference set to itself'
    owner = owners[0] if owners and isinstance(owners[0], dict) else None
    if owner is None or (owner.get("apiVersion"), owner.get("kind"), owner.get("name")) != (
            "v1", "Node", node):
        return f'node "{node}" can only create pods with an owner reference set to itself'
    if owner.get("controller") is not True:
        return (f'node "{node}" can only create pods with a controller owner reference set to '
                "itself")
    if owner.get("blockOwnerDeletion") is True:
        return f'node "{node}" must not set blockOwnerDeletion on an owner reference'
    own = store.registry.store(NODES).lookup("", node)
    if own is None:
        raise errors.not_found("nodes", "", node)
    uid = _meta(own.obj()).get("uid", "")
    if owner.get("uid") != uid:
        return f"node {node} UID mismatch: expected {owner.get('uid')} got {uid}"
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        return f'node "{node}" can not create pods that reference a service account'
    if podrefs.secret_names(pod):
        return f'node "{node}" can not create pods that reference secrets'
    if podrefs.configmap_names(pod):
        return f'node "{node}" can not create pods that reference configmaps'
    if podrefs.uses_cluster_trust_bundles(pod):
        return f'node "{node}" can not create pods that reference clustertrustbundles'
    if podrefs.uses_claims(pod):
        return f'node "{node}" can not create pods that reference persistentvolumeclaims'
    return ""


DEFAULT_PLUGINS = (NAMESPACE_LIFECYCLE, MutatingAdmission(default_toleration_seconds),
                   MutatingAdmission(priority), node_restriction)
