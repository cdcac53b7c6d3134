"""The scheduler's inputs, read into the one model (pykubelet.api) strictly and slimly.

`pysched simulate` and the scheduler's tests read manifests the API server never saw, so the
few defaults and checks the scheduler relies on are applied here, once per object, after the
walker's decode (pykubelet.api.machinery.codec): a key that is no field of the upstream type
is an error naming it (``spec.containers[0].foo``), as is a value of the wrong type. The
decode is slim (``keep_unmodelled=False``): upstream fields the model does not type are
checked, then dropped, since the scheduler never writes an object back; so are the fields
of pods and nodes it never reads (SCHEDULER_VIEW).

An option, off by default: ``check_unread=False`` drops the fields the scheduler never reads
(probes, env, volumes, addresses, condition times ...) unchecked, a key that is no field of
the upstream type still named. For input an API server already checked (the control plane's
scheduler informer) and for pysched simulate's bulk input, where checking them was a fifth to
a quarter of the decode; the default gives the API's decode's errors (test_one_walker.py).

Defaults, as the API server applies them: namespace ``default``, a pod's uid
``namespace/name`` when it has none, schedulerName ``default-scheduler``, a container
port's protocol TCP, a toleration's operator Equal, a PriorityClass's preemptionPolicy
PreemptLowerPriority, a node's allocatable from its capacity. Checks: the few whose failure
would make an object meaningless to schedule (a pod without a name, a taint with an unknown
effect, a topology spread constraint without a key ...), each a DecodeError naming its field.
Requests defaulted from limits are the integer views' job (pysched.views).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pykubelet.api.apps import ReplicaSet
from pykubelet.api.defaults import DEFAULT_SCHEDULER_NAME
from pykubelet.api.machinery import codec
from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.objects import (
    PREEMPT_LOWER_PRIORITY,
    PREEMPTION_POLICIES,
    Namespace,
    Node,
    NodeCondition,
    NodeSpec,
    NodeStatus,
    PodDisruptionBudget,
    PriorityClass,
)
from pykubelet.api.types import (
    NODE_INCLUSION_POLICY_HONOR,
    NODE_INCLUSION_POLICY_IGNORE,
    TAINT_EFFECTS,
    TOLERATION_OP_EQUAL,
    TOLERATION_OPS,
    TOPOLOGY_DO_NOT_SCHEDULE,
    TOPOLOGY_SCHEDULE_ANYWAY,
    Affinity,
    Container,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodAffinityTerm,
    PodCondition,
    PodSpec,
    PodStatus,
    PreferredSchedulingTerm,
    ResourceRequirements,
    Taint,
    TopologySpreadConstraint,
)

__all__ = ["KINDS", "DecodeError", "from_dict", "node", "pod"]

DEFAULT_NAMESPACE = "default"
LABEL_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
PROTOCOLS = ("TCP", "UDP", "SCTP")
_INCLUSION_POLICIES = (NODE_INCLUSION_POLICY_HONOR, NODE_INCLUSION_POLICY_IGNORE)
_WHEN_UNSATISFIABLE = (TOPOLOGY_DO_NOT_SCHEDULE, TOPOLOGY_SCHEDULE_ANYWAY)
_CONTAINER_RESTART = ("Always", "OnFailure", "Never")

T = TypeVar("T")


def _choice(value: str, allowed: tuple[str, ...], path: str, default: str = "") -> str:
    """An enumerated string: "" takes `default`, anything else must be allowed."""
    value = value or default
    if value not in allowed:
        raise DecodeError(path, f"unsupported value {value!r}: expected one of {list(allowed)}")
    return value


def _required(value: object, path: str, problem: str = "required") -> None:
    if not value:
        raise DecodeError(path, problem)


def _check_kind(d: Any, kind: str, api_versions: tuple[str, ...] | None) -> None:
    if not isinstance(d, dict):
        raise DecodeError("<root>", f"expected an object, got {type(d).__name__}")
    if d.get("kind") is not None and d.get("kind") != kind:
        raise DecodeError("kind", f"expected {kind!r}, got {d.get('kind')!r}")
    got = d.get("apiVersion")
    if api_versions is not None and got is not None and got not in api_versions:
        raise DecodeError("apiVersion", f"expected one of {list(api_versions)}, got {got!r}")


# What the scheduler reads of the classes whose other fields it never looks at (probes, env,
# volumes, container statuses, node addresses and info ...): decoding fills these, checks the
# rest by upstream's schema and drops it, as kube-scheduler pays for what it reads.
SCHEDULER_VIEW = codec.View({
    ObjectMeta: ("name", "namespace", "uid", "labels", "annotations", "resource_version",
                 "creation_timestamp", "deletion_timestamp", "owner_references",
                 "generate_name"),
    OwnerReference: ("api_version", "kind", "name", "uid", "controller"),
    PodSpec: ("containers", "init_containers", "node_name", "node_selector", "affinity",
              "tolerations", "scheduler_name", "priority", "priority_class_name",
              "preemption_policy", "overhead", "topology_spread_constraints",
              "scheduling_gates", "resources", "host_network"),
    Container: ("name", "image", "ports", "resources", "restart_policy"),
    ResourceRequirements: ("requests", "limits"),
    PodStatus: ("phase", "nominated_node_name", "start_time", "conditions"),
    PodCondition: ("type", "status", "reason", "message"),
    NodeSpec: ("unschedulable", "taints", "pod_cidr"),
    NodeStatus: ("capacity", "allocatable", "images", "conditions"),
    NodeCondition: ("type", "status", "reason", "message"),
})
# The same reads, with what the scheduler never reads taken unchecked (check_unread=False).
_SCHEDULER_VIEW_UNCHECKED = codec.View(SCHEDULER_VIEW.fields, check_unread=False)


def _slim(cls: type[T], d: Any, path: str = "", check_unread: bool = True) -> T:
    view = SCHEDULER_VIEW if check_unread else _SCHEDULER_VIEW_UNCHECKED
    return codec.decode(cls, d, path, view=view)


def _namespaced(obj: Any) -> None:
    """An object read from a manifest lands in `default` unless it says otherwise."""
    if not obj.metadata.namespace:
        obj.metadata.namespace = DEFAULT_NAMESPACE


def _named(obj: Any) -> None:
    _required(obj.metadata.name, "metadata.name")


# ---------------------------------------------------------------- selectors, affinity


def _label_selector(sel: LabelSelector | None, path: str) -> None:
    if sel is None:
        return
    for i, r in enumerate(sel.match_expressions):
        p = f"{path}.matchExpressions[{i}]"
        _required(r.key, f"{p}.key")
        _choice(r.operator, LABEL_SELECTOR_OPS, f"{p}.operator")


def _node_selector_terms(terms: Iterable[NodeSelectorTerm], path: str) -> None:
    for i, t in enumerate(terms):
        for part, reqs in (("matchExpressions", t.match_expressions),
                           ("matchFields", t.match_fields)):
            for j, r in enumerate(reqs):
                _choice(r.operator, NODE_SELECTOR_OPS, f"{path}[{i}].{part}[{j}].operator")


def _pod_affinity_term(t: PodAffinityTerm, path: str) -> None:
    _label_selector(t.label_selector, f"{path}.labelSelector")
    _label_selector(t.namespace_selector, f"{path}.namespaceSelector")
    _required(t.topology_key, f"{path}.topologyKey", "required: can not be empty")


def _affinity(a: Affinity | None, path: str) -> None:
    if a is None:
        return
    na = a.node_affinity
    if na is not None:
        p = f"{path}.nodeAffinity"
        if na.required is not None:
            _node_selector_terms(
                na.required.node_selector_terms,
                f"{p}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
            )
        _node_selector_terms(
            (t.preference for t in na.preferred),
            f"{p}.preferredDuringSchedulingIgnoredDuringExecution",
        )
    for name, terms in (("podAffinity", a.pod_affinity), ("podAntiAffinity", a.pod_anti_affinity)):
        if terms is None:
            continue
        p = f"{path}.{name}"
        for i, t in enumerate(terms.required):
            _pod_affinity_term(t, f"{p}.requiredDuringSchedulingIgnoredDuringExecution[{i}]")
        for i, w in enumerate(terms.preferred):
            _pod_affinity_term(
                w.pod_affinity_term,
                f"{p}.preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm",
            )


def taint(t: Taint, path: str) -> None:
    """A taint's key is required and its effect one of v1's three."""
    _required(t.key, f"{path}.key")
    _choice(t.effect, TAINT_EFFECTS, f"{path}.effect")


# ---------------------------------------------------------------- pod


def _containers(pod: Pod) -> None:
    spec = pod.spec
    for field_name, containers in (("containers", spec.containers),
                                   ("initContainers", spec.init_containers)):
        for i, c in enumerate(containers):
            p = f"spec.{field_name}[{i}]"
            _required(c.name, f"{p}.name")
            if c.restart_policy:
                _choice(c.restart_policy, _CONTAINER_RESTART, f"{p}.restartPolicy")
            for j, port in enumerate(c.ports):
                port.protocol = _choice(port.protocol, PROTOCOLS, f"{p}.ports[{j}].protocol",
                                        "TCP")


def _scheduling(pod: Pod) -> None:
    spec = pod.spec
    if not spec.scheduler_name:
        spec.scheduler_name = DEFAULT_SCHEDULER_NAME
    if spec.preemption_policy is not None:
        _choice(spec.preemption_policy, PREEMPTION_POLICIES, "spec.preemptionPolicy")
    for i, tol in enumerate(spec.tolerations):
        p = f"spec.tolerations[{i}]"
        tol.operator = _choice(tol.operator, TOLERATION_OPS, f"{p}.operator", TOLERATION_OP_EQUAL)
        if tol.effect:
            _choice(tol.effect, TAINT_EFFECTS, f"{p}.effect")
    _affinity(spec.affinity, "spec.affinity")
    for i, c in enumerate(spec.topology_spread_constraints):
        _spread_constraint(c, f"spec.topologySpreadConstraints[{i}]")


def _spread_constraint(c: TopologySpreadConstraint, p: str) -> None:
    if c.max_skew <= 0:
        raise DecodeError(f"{p}.maxSkew", f"must be greater than zero, got {c.max_skew}")
    _required(c.topology_key, f"{p}.topologyKey", "required: can not be empty")
    if c.min_domains is not None and c.min_domains <= 0:
        raise DecodeError(f"{p}.minDomains", f"must be greater than zero, got {c.min_domains}")
    _choice(c.when_unsatisfiable, _WHEN_UNSATISFIABLE, f"{p}.whenUnsatisfiable")
    for attr, wire in (("node_affinity_policy", "nodeAffinityPolicy"),
                       ("node_taints_policy", "nodeTaintsPolicy")):
        value = getattr(c, attr)
        if value is not None:
            _choice(value, _INCLUSION_POLICIES, f"{p}.{wire}")
    _label_selector(c.label_selector, f"{p}.labelSelector")


def pod(d: Any, *, check_unread: bool = True) -> Pod:
    """A v1 Pod as the scheduler reads one (defaults, checks and the option: the module's
    docstring)."""
    _check_kind(d, "Pod", ("v1",))
    obj = _slim(Pod, d, check_unread=check_unread)
    _namespaced(obj)
    _named(obj)
    meta = obj.metadata
    if not meta.uid:
        meta.uid = f"{meta.namespace}/{meta.name}"
    _containers(obj)
    _scheduling(obj)
    return obj


# ---------------------------------------------------------------- parts (scheduler config)


def topology_spread_constraint(d: Any, path: str = "") -> TopologySpreadConstraint:
    """A v1.TopologySpreadConstraint (PodTopologySpreadArgs.defaultConstraints)."""
    obj = _slim(TopologySpreadConstraint, d, path)
    _spread_constraint(obj, path)
    return obj


def node_selector(d: Any, path: str = "") -> NodeSelector:
    """A v1.NodeSelector (NodeAffinityArgs.addedAffinity's required terms)."""
    obj = _slim(NodeSelector, d, path)
    _node_selector_terms(obj.node_selector_terms, f"{path}.nodeSelectorTerms")
    return obj


def preferred_scheduling_term(d: Any, path: str = "") -> PreferredSchedulingTerm:
    """A v1.PreferredSchedulingTerm (NodeAffinityArgs.addedAffinity's preferred terms)."""
    obj = _slim(PreferredSchedulingTerm, d, path)
    _node_selector_terms([obj.preference], f"{path}.preference")
    return obj


# ---------------------------------------------------------------- node and the rest


def node(d: Any, *, check_unread: bool = True) -> Node:
    """A v1 Node: named, cluster-scoped, its taints checked, allocatable from capacity."""
    _check_kind(d, "Node", ("v1",))
    obj = _slim(Node, d, check_unread=check_unread)
    _named(obj)
    if obj.metadata.namespace:
        raise DecodeError(
            "metadata.namespace", "a Node is cluster-scoped: namespace must be empty"
        )
    for i, t in enumerate(obj.spec.taints):
        taint(t, f"spec.taints[{i}]")
    status = obj.status
    if not status.allocatable and status.capacity:
        status.allocatable = dict(status.capacity)  # the API server defaults it to capacity
    return obj


def pdb(d: Any, *, check_unread: bool = True) -> PodDisruptionBudget:
    _check_kind(d, "PodDisruptionBudget", ("policy/v1",))
    obj = _slim(PodDisruptionBudget, d, check_unread=check_unread)
    _namespaced(obj)
    _label_selector(obj.spec.selector, "spec.selector")
    return obj


def priority_class(d: Any, *, check_unread: bool = True) -> PriorityClass:
    _check_kind(d, "PriorityClass", None)
    if isinstance(d, dict) and d.get("value") is None:
        raise DecodeError("value", "required")
    obj = _slim(PriorityClass, d, check_unread=check_unread)
    obj.preemption_policy = _choice(
        obj.preemption_policy or "", PREEMPTION_POLICIES, "preemptionPolicy",
        PREEMPT_LOWER_PRIORITY,
    )
    return obj


def namespace(d: Any, *, check_unread: bool = True) -> Namespace:
    _check_kind(d, "Namespace", ("v1",))
    return _slim(Namespace, d, check_unread=check_unread)


KINDS: dict[str, Callable[..., Any]] = {
    "Pod": pod,
    "Node": node,
    "PodDisruptionBudget": pdb,
    "PriorityClass": priority_class,
    "Namespace": namespace,
}


@contextmanager
def collector_paused() -> Iterator[None]:
    """For reading a whole cluster: the cyclic garbage collector waits until it is read.

    Decoding a List allocates hundreds of thousands of containers, none of them garbage (a
    decoded object holds no reference cycle), and the collector's repeated passes over the
    growing young generations were a third of the time (bench/decode_bench.py).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def from_dict(d: Any, *, check_unread: bool = True
              ) -> Pod | Node | PodDisruptionBudget | PriorityClass | Namespace:
    """Decode one object by its `kind` (``check_unread``: the module's docstring)."""
    if not isinstance(d, dict):
        raise DecodeError("<root>", f"expected an object, got {type(d).__name__}")
    kind = d.get("kind")
    decode = KINDS.get(kind) if isinstance(kind, str) else None
    if decode is None:
        raise DecodeError("kind", f"unsupported kind {kind!r}: expected one of {sorted(KINDS)}")
    return decode(d, check_unread=check_unread)  # type: ignore[no-any-return]


def slim_namespaced(cls: type[T], d: Any) -> T:
    """A namespaced object of `cls`, slim, in `default` unless it says otherwise."""
    obj = _slim(cls, d)
    _namespaced(obj)
    return obj


def replica_set(d: Any) -> ReplicaSet:
    """An apps/v1 ReplicaSet (its selector is what PodTopologySpread's defaults read)."""
    return slim_namespaced(ReplicaSet, d)
