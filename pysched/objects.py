"""pysched's typed view of the Kubernetes v1 objects the scheduler reads.

The classes are declared for the ground floor's walker (pykubelet.api.machinery.codec), the one
pykubelet.api's complete model uses too: each names the upstream type it views (`__k8s__`), so
`from_dict()` reads Kubernetes JSON/YAML strictly by upstream's schema. A key that is no field
of the upstream type is an error naming it (``spec.containers[0].foo``), as is a value of the
wrong type, anywhere in the document. Fields upstream has but the scheduler never reads
(probes, env, volumes' sources ...) are checked, then not kept.

Resource lists (`requests`, `limits`, `overhead`, `allocatable`) are
``dict[str, int]`` in canonical integer units: ``cpu`` in millicores
(Quantity.MilliValue()), every other resource in whole units
(Quantity.Value(), bytes for memory). Both round up as apimachinery does.

Beyond types, decoding applies what the scheduler relies on: the API server's defaults it
reads (namespace `default`, requests from limits, allocatable from capacity, enum defaults)
and the few checks whose failure would make a pod meaningless to schedule (a pod without a
name, a topology spread constraint without a key), each an error naming its field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from pykubelet.api.machinery import codec
from pykubelet.api.machinery.codec import choice, describe
from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.machinery.meta import ObjectAccessors
from pykubelet.api.machinery.quantity import (
    QuantityError,
    int_value,
    invalid_quantity,
    milli_value,
)

__all__ = ["DecodeError"]

ResourceList = dict[str, int]

# Taint effects, toleration operators, selector operators (v1 constants).
TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_PREFER_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)
TOLERATION_OP_EXISTS = "Exists"
TOLERATION_OP_EQUAL = "Equal"
TOLERATION_OPS = (TOLERATION_OP_EQUAL, TOLERATION_OP_EXISTS, "Lt", "Gt")
DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_NAMESPACE = "default"

_CORE = "io.k8s.api.core.v1."
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."


class _Decodable:
    """`from_dict(d, path)`: the walker's strict decode of one part of an object."""

    __slots__ = ()

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Self:
        return codec.decode(cls, d, path)


def _json(name: str, **meta: Any) -> dict[str, Any]:
    return {"json": name, **meta}


# ---------------------------------------------------------------- resource lists


def decode_resource_list(v: Any, path: str = "") -> ResourceList:
    """A v1.ResourceList into canonical ints (cpu: millicores; others: units, rounded up)."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise DecodeError(path, f"expected an object, got {describe(v)}")
    out: ResourceList = {}
    for name, q in v.items():
        try:
            out[str(name)] = milli_value(q) if name == "cpu" else int_value(q)
        except QuantityError as exc:
            where = f"{path}.{name}" if path else str(name)
            reason = str(exc) if isinstance(q, str) else ""
            raise DecodeError(where, invalid_quantity(q, reason)) from None
    return out


def _encode_resource_list(rl: ResourceList) -> dict[str, str]:
    return {name: (f"{v}m" if name == "cpu" else str(v)) for name, v in rl.items()}


_RESOURCES: dict[str, Any] = {"decode": decode_resource_list, "encode": _encode_resource_list}


# ---------------------------------------------------------------- metadata


@dataclass(slots=True)
class OwnerReference(_Decodable):
    __k8s__ = _META + "OwnerReference"

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


@dataclass(slots=True)
class ObjectMeta(_Decodable):
    __k8s__ = _META + "ObjectMeta"

    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    resource_version: str = ""
    creation_timestamp: str = ""
    deletion_timestamp: str | None = None
    owner_references: list[OwnerReference] = field(default_factory=list)
    generate_name: str = ""


def _namespaced(meta: ObjectMeta) -> None:
    """An object read from a manifest lands in `default` unless it says otherwise."""
    if not meta.namespace:
        meta.namespace = DEFAULT_NAMESPACE


def _named(meta: ObjectMeta) -> None:
    if not meta.name:
        raise DecodeError("metadata.name", "required")


# ---------------------------------------------------------------- selectors

LABEL_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(slots=True)
class LabelSelectorRequirement(_Decodable):
    __k8s__ = _META + "LabelSelectorRequirement"

    key: str = ""
    operator: str = field(default="", metadata=choice(LABEL_SELECTOR_OPS))
    values: list[str] = field(default_factory=list)

    def __post_decode__(self) -> None:
        if not self.key:
            raise DecodeError("key", "required")


@dataclass(slots=True)
class LabelSelector(_Decodable):
    """metav1.LabelSelector. A nil selector (None) matches nothing; an empty one everything."""

    __k8s__ = _META + "LabelSelector"

    match_labels: dict[str, str] = field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = field(default_factory=list)


@dataclass(slots=True)
class NodeSelectorRequirement(_Decodable):
    __k8s__ = _CORE + "NodeSelectorRequirement"

    key: str = ""
    operator: str = field(default="", metadata=choice(NODE_SELECTOR_OPS))
    values: list[str] = field(default_factory=list)


@dataclass(slots=True)
class NodeSelectorTerm(_Decodable):
    __k8s__ = _CORE + "NodeSelectorTerm"

    match_expressions: list[NodeSelectorRequirement] = field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = field(default_factory=list)


@dataclass(slots=True)
class NodeSelector(_Decodable):
    __k8s__ = _CORE + "NodeSelector"

    node_selector_terms: list[NodeSelectorTerm] = field(default_factory=list)


@dataclass(slots=True)
class PreferredSchedulingTerm(_Decodable):
    __k8s__ = _CORE + "PreferredSchedulingTerm"

    weight: int = 0
    preference: NodeSelectorTerm = field(default_factory=NodeSelectorTerm)


_REQUIRED_TERMS = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED_TERMS = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(slots=True)
class NodeAffinity(_Decodable):
    __k8s__ = _CORE + "NodeAffinity"

    required: NodeSelector | None = field(default=None, metadata=_json(_REQUIRED_TERMS))
    preferred: list[PreferredSchedulingTerm] = field(
        default_factory=list, metadata=_json(_PREFERRED_TERMS)
    )


@dataclass(slots=True)
class PodAffinityTerm(_Decodable):
    __k8s__ = _CORE + "PodAffinityTerm"

    label_selector: LabelSelector | None = None
    namespaces: list[str] = field(default_factory=list)
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = field(default_factory=list)
    mismatch_label_keys: list[str] = field(default_factory=list)

    def __post_decode__(self) -> None:
        if not self.topology_key:
            raise DecodeError("topologyKey", "required: can not be empty")


@dataclass(slots=True)
class WeightedPodAffinityTerm(_Decodable):
    __k8s__ = _CORE + "WeightedPodAffinityTerm"

    weight: int = 0
    pod_affinity_term: PodAffinityTerm = field(
        default_factory=PodAffinityTerm, metadata={"required": True}
    )


@dataclass(slots=True)
class _PodAffinityTerms(_Decodable):
    """The shape PodAffinity and PodAntiAffinity share: required and preferred terms."""

    required: list[PodAffinityTerm] = field(default_factory=list, metadata=_json(_REQUIRED_TERMS))
    preferred: list[WeightedPodAffinityTerm] = field(
        default_factory=list, metadata=_json(_PREFERRED_TERMS)
    )


@dataclass(slots=True)
class PodAffinity(_PodAffinityTerms):
    """Pods this pod wants to share a topology domain with."""

    __k8s__ = _CORE + "PodAffinity"


@dataclass(slots=True)
class PodAntiAffinity(_PodAffinityTerms):
    """Pods this pod must (or would rather) not share a topology domain with."""

    __k8s__ = _CORE + "PodAntiAffinity"


@dataclass(slots=True)
class Affinity(_Decodable):
    __k8s__ = _CORE + "Affinity"

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


# ---------------------------------------------------------------- taints, tolerations


@dataclass(slots=True)
class Taint(_Decodable):
    __k8s__ = _CORE + "Taint"

    key: str = ""
    value: str = ""
    effect: str = field(
        default=TAINT_EFFECT_NO_SCHEDULE, metadata=choice(TAINT_EFFECTS, required=True)
    )
    time_added: str | None = None

    def __post_decode__(self) -> None:
        if not self.key:
            raise DecodeError("key", "required")

    def to_string(self) -> str:
        """v1.Taint.ToString(): key=value:effect, key:effect when value is empty."""
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(slots=True)
class Toleration(_Decodable):
    __k8s__ = _CORE + "Toleration"

    key: str = ""
    operator: str = field(
        default=TOLERATION_OP_EQUAL, metadata=choice(TOLERATION_OPS, TOLERATION_OP_EQUAL)
    )
    value: str = ""
    effect: str = field(default="", metadata=choice(("", *TAINT_EFFECTS)))
    toleration_seconds: int | None = None

    def tolerates_taint(self, taint: Taint) -> bool:
        """v1.Toleration.ToleratesTaint (component-helpers semantics).

        An empty effect matches all effects; an empty key with Exists matches all
        keys and values; Exists ignores the value; Equal compares values. The
        alpha numeric operators Lt/Gt (TaintTolerationComparisonOperators) compare
        integer values: taint value < (Lt) or > (Gt) the toleration's.
        """
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        op = self.operator or TOLERATION_OP_EQUAL
        if op == TOLERATION_OP_EXISTS:
            return True
        if op == TOLERATION_OP_EQUAL:
            return self.value == taint.value
        try:
            tv, mine = int(taint.value), int(self.value)
        except ValueError:
            return False
        return tv < mine if op == "Lt" else tv > mine


# ---------------------------------------------------------------- topology spread

TOPOLOGY_DO_NOT_SCHEDULE = "DoNotSchedule"
TOPOLOGY_SCHEDULE_ANYWAY = "ScheduleAnyway"
NODE_INCLUSION_POLICY_HONOR = "Honor"
NODE_INCLUSION_POLICY_IGNORE = "Ignore"
_INCLUSION_POLICIES = (NODE_INCLUSION_POLICY_HONOR, NODE_INCLUSION_POLICY_IGNORE)


@dataclass(slots=True)
class TopologySpreadConstraint(_Decodable):
    __k8s__ = _CORE + "TopologySpreadConstraint"

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = field(
        default="", metadata=choice((TOPOLOGY_DO_NOT_SCHEDULE, TOPOLOGY_SCHEDULE_ANYWAY))
    )
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = field(default=None, metadata=choice(_INCLUSION_POLICIES))
    node_taints_policy: str | None = field(default=None, metadata=choice(_INCLUSION_POLICIES))
    match_label_keys: list[str] = field(default_factory=list)

    def __post_decode__(self) -> None:
        if self.max_skew <= 0:
            raise DecodeError("maxSkew", f"must be greater than zero, got {self.max_skew}")
        if not self.topology_key:
            raise DecodeError("topologyKey", "required: can not be empty")
        if self.min_domains is not None and self.min_domains <= 0:
            raise DecodeError(
                "minDomains", f"must be greater than zero, got {self.min_domains}"
            )


# ---------------------------------------------------------------- containers

PROTOCOLS = ("TCP", "UDP", "SCTP")


@dataclass(slots=True)
class ContainerPort(_Decodable):
    __k8s__ = _CORE + "ContainerPort"

    container_port: int = 0
    host_port: int = 0
    protocol: str = field(default="TCP", metadata=choice(PROTOCOLS, "TCP"))
    host_ip: str = field(default="", metadata=_json("hostIP"))
    name: str = ""


@dataclass(slots=True)
class ResourceRequirements(_Decodable):
    __k8s__ = _CORE + "ResourceRequirements"

    requests: ResourceList = field(default_factory=dict, metadata=_RESOURCES)
    limits: ResourceList = field(default_factory=dict, metadata=_RESOURCES)

    def __post_decode__(self) -> None:
        # API defaulting: a resource with a limit and no request requests its limit.
        for name, value in self.limits.items():
            self.requests.setdefault(name, value)


@dataclass(slots=True)
class Container(_Decodable):
    __k8s__ = _CORE + "Container"

    name: str = ""
    image: str = ""
    ports: list[ContainerPort] = field(default_factory=list)
    resources: ResourceRequirements = field(default_factory=ResourceRequirements)
    # "Always" on an init container makes it a sidecar
    restart_policy: str | None = field(
        default=None, metadata=choice(("Always", "OnFailure", "Never"))
    )

    def __post_decode__(self) -> None:
        if not self.name:
            raise DecodeError("name", "required")

    @property
    def is_sidecar(self) -> bool:
        """An init container with restartPolicy Always (a restartable init container)."""
        return self.restart_policy == "Always"


# ---------------------------------------------------------------- pod

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
_PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)


@dataclass(slots=True)
class PodSchedulingGate(_Decodable):
    __k8s__ = _CORE + "PodSchedulingGate"

    name: str = ""


def _gate_names(value: Any) -> list[str]:
    return [g.name for g in codec.decode_value(list[PodSchedulingGate], value)]


def _gates_out(names: list[str]) -> list[dict[str, str]]:
    return [{"name": n} for n in names]


@dataclass(slots=True)
class PodSpec(_Decodable):
    __k8s__ = _CORE + "PodSpec"

    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    node_name: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = field(default_factory=list)
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = field(default=None, metadata=choice(_PREEMPTION_POLICIES))
    overhead: ResourceList = field(default_factory=dict, metadata=_RESOURCES)
    topology_spread_constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    scheduling_gates: list[str] = field(
        default_factory=list, metadata={"decode": _gate_names, "encode": _gates_out}
    )
    resources: ResourceRequirements | None = None  # pod-level resources
    host_network: bool = False

    def __post_decode__(self) -> None:
        if not self.scheduler_name:
            self.scheduler_name = DEFAULT_SCHEDULER_NAME


@dataclass(slots=True)
class PodCondition(_Decodable):
    __k8s__ = _CORE + "PodCondition"

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class PodStatus(_Decodable):
    __k8s__ = _CORE + "PodStatus"

    phase: str = ""
    nominated_node_name: str = ""
    start_time: str | None = None
    conditions: list[PodCondition] = field(default_factory=list)


def _check_kind(d: Any, kind: str, api_versions: tuple[str, ...] | None) -> None:
    if not isinstance(d, dict):
        raise DecodeError("<root>", f"expected an object, got {type(d).__name__}")
    if d.get("kind") is not None and d.get("kind") != kind:
        raise DecodeError("kind", f"expected {kind!r}, got {d.get('kind')!r}")
    got = d.get("apiVersion")
    if api_versions is not None and got is not None and got not in api_versions:
        raise DecodeError("apiVersion", f"expected one of {list(api_versions)}, got {got!r}")


@dataclass(slots=True, eq=False)
class Pod(ObjectAccessors, _Decodable):
    """v1.Pod. Identity (eq/hash) is the object; compare `uid` for the same pod."""

    __k8s__ = _CORE + "Pod"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PodSpec = field(default_factory=PodSpec)
    status: PodStatus = field(default_factory=PodStatus)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Self:
        _check_kind(d, "Pod", ("v1",))
        return codec.decode(cls, d, path)

    def __post_decode__(self) -> None:
        meta = self.metadata
        _namespaced(meta)
        _named(meta)
        if not meta.uid:
            meta.uid = f"{meta.namespace}/{meta.name}"



# ---------------------------------------------------------------- node


@dataclass(slots=True)
class ContainerImage(_Decodable):
    __k8s__ = _CORE + "ContainerImage"

    names: list[str] = field(default_factory=list)
    size_bytes: int = 0


@dataclass(slots=True)
class NodeCondition(_Decodable):
    __k8s__ = _CORE + "NodeCondition"

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class NodeSpec(_Decodable):
    __k8s__ = _CORE + "NodeSpec"

    unschedulable: bool = False
    taints: list[Taint] = field(default_factory=list)
    pod_cidr: str = field(default="", metadata=_json("podCIDR"))


@dataclass(slots=True)
class NodeStatus(_Decodable):
    __k8s__ = _CORE + "NodeStatus"

    capacity: ResourceList = field(default_factory=dict, metadata=_RESOURCES)
    allocatable: ResourceList = field(default_factory=dict, metadata=_RESOURCES)
    images: list[ContainerImage] = field(default_factory=list)
    conditions: list[NodeCondition] = field(default_factory=list)

    def __post_decode__(self) -> None:
        if not self.allocatable and self.capacity:
            self.allocatable = dict(self.capacity)  # the API server defaults it to capacity


@dataclass(slots=True, eq=False)
class Node(ObjectAccessors, _Decodable):
    __k8s__ = _CORE + "Node"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: NodeSpec = field(default_factory=NodeSpec)
    status: NodeStatus = field(default_factory=NodeStatus)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Self:
        _check_kind(d, "Node", ("v1",))
        return codec.decode(cls, d, path)

    def __post_decode__(self) -> None:
        _named(self.metadata)
        if self.metadata.namespace:
            raise DecodeError(
                "metadata.namespace", "a Node is cluster-scoped: namespace must be empty"
            )


# ---------------------------------------------------------------- policy, scheduling, namespaces


@dataclass(slots=True)
class PodDisruptionBudgetSpec(_Decodable):
    __k8s__ = "io.k8s.api.policy.v1.PodDisruptionBudgetSpec"

    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


@dataclass(slots=True)
class PodDisruptionBudgetStatus(_Decodable):
    __k8s__ = "io.k8s.api.policy.v1.PodDisruptionBudgetStatus"

    disruptions_allowed: int = 0
    disrupted_pods: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class PodDisruptionBudget(_Decodable):
    """policy/v1 PodDisruptionBudget: min_available/max_unavailable kept as given (int or "N%")."""

    __k8s__ = "io.k8s.api.policy.v1.PodDisruptionBudget"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = field(default_factory=PodDisruptionBudgetStatus)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Self:
        _check_kind(d, "PodDisruptionBudget", ("policy/v1",))
        return codec.decode(cls, d, path)

    def __post_decode__(self) -> None:
        _namespaced(self.metadata)

    @property
    def selector(self) -> LabelSelector | None:
        return self.spec.selector

    @property
    def min_available(self) -> int | str | None:
        return self.spec.min_available

    @property
    def max_unavailable(self) -> int | str | None:
        return self.spec.max_unavailable

    @property
    def disruptions_allowed(self) -> int:
        return self.status.disruptions_allowed

    @property
    def disrupted_pods(self) -> dict[str, str]:
        return self.status.disrupted_pods


@dataclass(slots=True, eq=False)
class PriorityClass(_Decodable):
    __k8s__ = "io.k8s.api.scheduling.v1.PriorityClass"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    value: int = field(default=0, metadata={"required": True})
    global_default: bool = False
    preemption_policy: str = field(
        default=PREEMPT_LOWER_PRIORITY,
        metadata=choice(_PREEMPTION_POLICIES, PREEMPT_LOWER_PRIORITY),
    )
    description: str = ""

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Self:
        _check_kind(d, "PriorityClass", None)
        return codec.decode(cls, d, path)


@dataclass(slots=True, eq=False)
class Namespace(_Decodable):
    """v1.Namespace: only its labels matter (PodAffinityTerm.namespaceSelector)."""

    __k8s__ = _CORE + "Namespace"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Self:
        _check_kind(d, "Namespace", ("v1",))
        return codec.decode(cls, d, path)


KINDS: dict[str, Callable[[Any], Any]] = {
    "Pod": Pod.from_dict,
    "Node": Node.from_dict,
    "PodDisruptionBudget": PodDisruptionBudget.from_dict,
    "PriorityClass": PriorityClass.from_dict,
    "Namespace": Namespace.from_dict,
}


def from_dict(d: Any) -> Pod | Node | PodDisruptionBudget | PriorityClass | Namespace:
    """Decode one object by its `kind`."""
    if not isinstance(d, dict):
        raise DecodeError("<root>", f"expected an object, got {type(d).__name__}")
    kind = d.get("kind")
    decode = KINDS.get(kind) if isinstance(kind, str) else None
    if decode is None:
        raise DecodeError("kind", f"unsupported kind {kind!r}: expected one of {sorted(KINDS)}")
    return decode(d)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- workloads selecting pods
# Only their selectors matter: PodTopologySpread's system default constraints spread the pods
# selected by the Services, ReplicationControllers, ReplicaSets and StatefulSets that own or
# select a pod (helper.DefaultSelector). They are not in `KINDS` (simulate's input kinds);
# decode them with `workload_from_dict`.


@dataclass(slots=True)
class ServiceSpec(_Decodable):
    __k8s__ = _CORE + "ServiceSpec"

    selector: dict[str, str] | None = None


@dataclass(slots=True, eq=False)
class Service(_Decodable):
    """v1.Service: spec.selector (a map; None when unset, which selects nothing)."""

    __k8s__ = _CORE + "Service"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: ServiceSpec = field(default_factory=ServiceSpec)

    def __post_decode__(self) -> None:
        _namespaced(self.metadata)

    @property
    def selector(self) -> dict[str, str] | None:
        return self.spec.selector


@dataclass(slots=True)
class ReplicationControllerSpec(_Decodable):
    __k8s__ = _CORE + "ReplicationControllerSpec"

    selector: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class ReplicationController(_Decodable):
    """v1.ReplicationController: spec.selector is a map."""

    __k8s__ = _CORE + "ReplicationController"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: ReplicationControllerSpec = field(default_factory=ReplicationControllerSpec)

    def __post_decode__(self) -> None:
        _namespaced(self.metadata)

    @property
    def selector(self) -> dict[str, str]:
        return self.spec.selector


@dataclass(slots=True)
class ReplicaSetSpec(_Decodable):
    __k8s__ = "io.k8s.api.apps.v1.ReplicaSetSpec"

    selector: LabelSelector | None = None


@dataclass(slots=True)
class StatefulSetSpec(ReplicaSetSpec):
    __k8s__ = "io.k8s.api.apps.v1.StatefulSetSpec"


@dataclass(slots=True, eq=False)
class ReplicaSet(_Decodable):
    """apps/v1 ReplicaSet (StatefulSet shares the shape: a LabelSelector)."""

    __k8s__ = "io.k8s.api.apps.v1.ReplicaSet"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = field(default_factory=ReplicaSetSpec)
    kind: str = "ReplicaSet"

    def __post_decode__(self) -> None:
        _namespaced(self.metadata)
        self.kind = self.kind or type(self).__name__

    @property
    def selector(self) -> LabelSelector | None:
        return self.spec.selector


@dataclass(slots=True, eq=False)
class StatefulSet(ReplicaSet):
    __k8s__ = "io.k8s.api.apps.v1.StatefulSet"

    spec: StatefulSetSpec = field(default_factory=StatefulSetSpec)
    kind: str = "StatefulSet"


WORKLOAD_KINDS: dict[str, Callable[[Any], Any]] = {
    "Service": Service.from_dict,
    "ReplicationController": ReplicationController.from_dict,
    "ReplicaSet": ReplicaSet.from_dict,
    "StatefulSet": StatefulSet.from_dict,
}


def workload_from_dict(d: Any) -> Service | ReplicationController | ReplicaSet:
    """Decode a Service, ReplicationController, ReplicaSet or StatefulSet."""
    if not isinstance(d, dict):
        raise DecodeError("<root>", f"expected an object, got {type(d).__name__}")
    kind = d.get("kind")
    decode = WORKLOAD_KINDS.get(kind) if isinstance(kind, str) else None
    if decode is None:
        raise DecodeError(
            "kind", f"unsupported kind {kind!r}: expected one of {sorted(WORKLOAD_KINDS)}"
        )
    return decode(d)  # type: ignore[no-any-return]
