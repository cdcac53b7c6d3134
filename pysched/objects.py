"""pysched's typed view of the Kubernetes v1 objects the scheduler reads.

`from_dict()` decodes Kubernetes JSON/YAML dicts strictly: a key that is no
field of the upstream type is an error naming it (``spec.containers[0].foo``),
as is a value of the wrong type. Fields upstream has but the scheduler never
reads (probes, env, volumes' sources ...) are accepted and not kept.

Resource lists (`requests`, `limits`, `overhead`, `allocatable`) are
``dict[str, int]`` in canonical integer units: ``cpu`` in millicores
(Quantity.MilliValue()), every other resource in whole units
(Quantity.Value(), bytes for memory). Both round up as apimachinery does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from pysched.apimachinery.errors import DecodeError
from pysched.quantity import QuantityError, int_value, milli_value

T = TypeVar("T")

ResourceList = dict[str, int]

# Taint effects, toleration operators, selector operators (v1 constants).
TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_PREFER_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)
TOLERATION_OP_EXISTS = "Exists"
TOLERATION_OP_EQUAL = "Equal"
DEFAULT_SCHEDULER_NAME = "default-scheduler"


# ---------------------------------------------------------------- decoding helpers


def _check_keys(
    d: Any, path: str, known: frozenset[str], ignored: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise DecodeError(path or "<root>", f"expected an object, got {type(d).__name__}")
    for key in d:
        if key not in known and key not in ignored:
            raise DecodeError(_join(path, str(key)), "unknown field")
    return d


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _str(d: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    v = d.get(key)
    if v is None:
        return default
    if not isinstance(v, str):
        raise DecodeError(_join(path, key), f"expected a string, got {type(v).__name__}")
    return v


def _opt_str(d: Mapping[str, Any], key: str, path: str) -> str | None:
    if d.get(key) is None:
        return None
    return _str(d, key, path)


def _int(d: Mapping[str, Any], key: str, path: str, default: int = 0) -> int:
    v = d.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise DecodeError(_join(path, key), f"expected an integer, got {type(v).__name__}")
    return v


def _opt_int(d: Mapping[str, Any], key: str, path: str) -> int | None:
    if d.get(key) is None:
        return None
    return _int(d, key, path)


def _bool(d: Mapping[str, Any], key: str, path: str, default: bool = False) -> bool:
    v = d.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise DecodeError(_join(path, key), f"expected a boolean, got {type(v).__name__}")
    return v


def _str_map(d: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    v = d.get(key)
    if v is None:
        return {}
    p = _join(path, key)
    if not isinstance(v, dict):
        raise DecodeError(p, f"expected an object, got {type(v).__name__}")
    for k, val in v.items():
        if not isinstance(val, str):
            raise DecodeError(f"{p}.{k}", f"expected a string, got {type(val).__name__}")
    return dict(v)


def _str_list(d: Mapping[str, Any], key: str, path: str) -> list[str]:
    v = d.get(key)
    if v is None:
        return []
    p = _join(path, key)
    if not isinstance(v, list):
        raise DecodeError(p, f"expected a list, got {type(v).__name__}")
    for i, item in enumerate(v):
        if not isinstance(item, str):
            raise DecodeError(f"{p}[{i}]", f"expected a string, got {type(item).__name__}")
    return list(v)


def _list(d: Mapping[str, Any], key: str, path: str, decode: Callable[[Any, str], T]) -> list[T]:
    v = d.get(key)
    if v is None:
        return []
    p = _join(path, key)
    if not isinstance(v, list):
        raise DecodeError(p, f"expected a list, got {type(v).__name__}")
    return [decode(item, f"{p}[{i}]") for i, item in enumerate(v)]


def _opt(d: Mapping[str, Any], key: str, path: str, decode: Callable[[Any, str], T]) -> T | None:
    v = d.get(key)
    if v is None:
        return None
    return decode(v, _join(path, key))


def _enum(d: Mapping[str, Any], key: str, path: str, allowed: tuple[str, ...], default: str) -> str:
    """An enumerated string; an empty value takes the API default, as defaulting does."""
    v = _str(d, key, path, default) or default
    if v not in allowed:
        raise DecodeError(
            _join(path, key), f"unsupported value {v!r}: expected one of {list(allowed)}"
        )
    return v


def decode_resource_list(v: Any, path: str) -> ResourceList:
    """A v1.ResourceList into canonical ints (cpu: millicores; others: units, rounded up)."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise DecodeError(path, f"expected an object, got {type(v).__name__}")
    out: ResourceList = {}
    for name, q in v.items():
        try:
            out[str(name)] = milli_value(q) if name == "cpu" else int_value(q)
        except QuantityError as exc:
            raise DecodeError(f"{path}.{name}", str(exc)) from None
    return out


def _resource_list(d: Mapping[str, Any], key: str, path: str) -> ResourceList:
    return decode_resource_list(d.get(key), _join(path, key))


# ---------------------------------------------------------------- metadata


@dataclass(slots=True)
class OwnerReference:
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> OwnerReference:
        _check_keys(
            d,
            path,
            frozenset({"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}),
        )
        return cls(
            api_version=_str(d, "apiVersion", path),
            kind=_str(d, "kind", path),
            name=_str(d, "name", path),
            uid=_str(d, "uid", path),
            controller=_bool(d, "controller", path),
        )


_META_KNOWN = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "labels",
        "annotations",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "ownerReferences",
        "generateName",
    }
)
_META_IGNORED = frozenset(
    {"selfLink", "generation", "deletionGracePeriodSeconds", "finalizers", "managedFields"}
)


@dataclass(slots=True)
class ObjectMeta:
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

    @classmethod
    def from_dict(cls, d: Any, path: str = "metadata", default_namespace: str = "") -> ObjectMeta:
        _check_keys(d, path, _META_KNOWN, _META_IGNORED)
        return cls(
            name=_str(d, "name", path),
            namespace=_str(d, "namespace", path) or default_namespace,
            uid=_str(d, "uid", path),
            labels=_str_map(d, "labels", path),
            annotations=_str_map(d, "annotations", path),
            resource_version=_str(d, "resourceVersion", path),
            creation_timestamp=_str(d, "creationTimestamp", path),
            deletion_timestamp=_opt_str(d, "deletionTimestamp", path),
            owner_references=_list(d, "ownerReferences", path, OwnerReference.from_dict),
            generate_name=_str(d, "generateName", path),
        )


# ---------------------------------------------------------------- selectors

LABEL_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(slots=True)
class LabelSelectorRequirement:
    key: str
    operator: str
    values: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> LabelSelectorRequirement:
        _check_keys(d, path, frozenset({"key", "operator", "values"}))
        if not _str(d, "key", path):
            raise DecodeError(_join(path, "key"), "required")
        return cls(
            key=_str(d, "key", path),
            operator=_enum(d, "operator", path, LABEL_SELECTOR_OPS, ""),
            values=_str_list(d, "values", path),
        )


@dataclass(slots=True)
class LabelSelector:
    """metav1.LabelSelector. A nil selector (None) matches nothing; an empty one everything."""

    match_labels: dict[str, str] = field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> LabelSelector:
        _check_keys(d, path, frozenset({"matchLabels", "matchExpressions"}))
        return cls(
            match_labels=_str_map(d, "matchLabels", path),
            match_expressions=_list(
                d, "matchExpressions", path, LabelSelectorRequirement.from_dict
            ),
        )


@dataclass(slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> NodeSelectorRequirement:
        _check_keys(d, path, frozenset({"key", "operator", "values"}))
        return cls(
            key=_str(d, "key", path),
            operator=_enum(d, "operator", path, NODE_SELECTOR_OPS, ""),
            values=_str_list(d, "values", path),
        )


@dataclass(slots=True)
class NodeSelectorTerm:
    match_expressions: list[NodeSelectorRequirement] = field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> NodeSelectorTerm:
        _check_keys(d, path, frozenset({"matchExpressions", "matchFields"}))
        return cls(
            match_expressions=_list(d, "matchExpressions", path, NodeSelectorRequirement.from_dict),
            match_fields=_list(d, "matchFields", path, NodeSelectorRequirement.from_dict),
        )


@dataclass(slots=True)
class NodeSelector:
    node_selector_terms: list[NodeSelectorTerm] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> NodeSelector:
        _check_keys(d, path, frozenset({"nodeSelectorTerms"}))
        return cls(
            node_selector_terms=_list(d, "nodeSelectorTerms", path, NodeSelectorTerm.from_dict)
        )


@dataclass(slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> PreferredSchedulingTerm:
        _check_keys(d, path, frozenset({"weight", "preference"}))
        return cls(
            weight=_int(d, "weight", path),
            preference=_opt(d, "preference", path, NodeSelectorTerm.from_dict)
            or NodeSelectorTerm(),
        )


# the two keys every kind of affinity (node, pod, pod anti-) has
_AFFINITY_KEYS = frozenset(
    {
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    }
)


@dataclass(slots=True)
class NodeAffinity:
    required: NodeSelector | None = None  # requiredDuringSchedulingIgnoredDuringExecution
    preferred: list[PreferredSchedulingTerm] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> NodeAffinity:
        _check_keys(d, path, _AFFINITY_KEYS)
        return cls(
            required=_opt(
                d, "requiredDuringSchedulingIgnoredDuringExecution", path, NodeSelector.from_dict
            ),
            preferred=_list(
                d,
                "preferredDuringSchedulingIgnoredDuringExecution",
                path,
                PreferredSchedulingTerm.from_dict,
            ),
        )


@dataclass(slots=True)
class PodAffinityTerm:
    label_selector: LabelSelector | None = None
    namespaces: list[str] = field(default_factory=list)
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = field(default_factory=list)
    mismatch_label_keys: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> PodAffinityTerm:
        _check_keys(
            d,
            path,
            frozenset(
                {
                    "labelSelector",
                    "namespaces",
                    "topologyKey",
                    "namespaceSelector",
                    "matchLabelKeys",
                    "mismatchLabelKeys",
                }
            ),
        )
        if not _str(d, "topologyKey", path):
            raise DecodeError(_join(path, "topologyKey"), "required: can not be empty")
        return cls(
            label_selector=_opt(d, "labelSelector", path, LabelSelector.from_dict),
            namespaces=_str_list(d, "namespaces", path),
            topology_key=_str(d, "topologyKey", path),
            namespace_selector=_opt(d, "namespaceSelector", path, LabelSelector.from_dict),
            match_label_keys=_str_list(d, "matchLabelKeys", path),
            mismatch_label_keys=_str_list(d, "mismatchLabelKeys", path),
        )


@dataclass(slots=True)
class WeightedPodAffinityTerm:
    weight: int
    pod_affinity_term: PodAffinityTerm

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> WeightedPodAffinityTerm:
        _check_keys(d, path, frozenset({"weight", "podAffinityTerm"}))
        term = _opt(d, "podAffinityTerm", path, PodAffinityTerm.from_dict)
        if term is None:
            raise DecodeError(_join(path, "podAffinityTerm"), "required")
        return cls(weight=_int(d, "weight", path), pod_affinity_term=term)




@dataclass(slots=True)
class _PodAffinityTerms:
    """The shape PodAffinity and PodAntiAffinity share: required and preferred terms."""

    required: list[PodAffinityTerm] = field(default_factory=list)
    preferred: list[WeightedPodAffinityTerm] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Self:
        _check_keys(d, path, _AFFINITY_KEYS)
        return cls(
            required=_list(
                d, "requiredDuringSchedulingIgnoredDuringExecution", path, PodAffinityTerm.from_dict
            ),
            preferred=_list(
                d,
                "preferredDuringSchedulingIgnoredDuringExecution",
                path,
                WeightedPodAffinityTerm.from_dict,
            ),
        )


@dataclass(slots=True)
class PodAffinity(_PodAffinityTerms):
    """Pods this pod wants to share a topology domain with."""


@dataclass(slots=True)
class PodAntiAffinity(_PodAffinityTerms):
    """Pods this pod must (or would rather) not share a topology domain with."""


@dataclass(slots=True)
class Affinity:
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Affinity:
        _check_keys(d, path, frozenset({"nodeAffinity", "podAffinity", "podAntiAffinity"}))
        return cls(
            node_affinity=_opt(d, "nodeAffinity", path, NodeAffinity.from_dict),
            pod_affinity=_opt(d, "podAffinity", path, PodAffinity.from_dict),
            pod_anti_affinity=_opt(d, "podAntiAffinity", path, PodAntiAffinity.from_dict),
        )


# ---------------------------------------------------------------- taints, tolerations


@dataclass(slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = TAINT_EFFECT_NO_SCHEDULE
    time_added: str | None = None

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Taint:
        _check_keys(d, path, frozenset({"key", "value", "effect", "timeAdded"}))
        if not _str(d, "key", path):
            raise DecodeError(_join(path, "key"), "required")
        if d.get("effect") is None:
            raise DecodeError(_join(path, "effect"), "required")
        return cls(
            key=_str(d, "key", path),
            value=_str(d, "value", path),
            effect=_enum(d, "effect", path, TAINT_EFFECTS, ""),
            time_added=_opt_str(d, "timeAdded", path),
        )

    def to_string(self) -> str:
        """v1.Taint.ToString(): key=value:effect, key:effect when value is empty."""
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(slots=True)
class Toleration:
    key: str = ""
    operator: str = TOLERATION_OP_EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Toleration:
        _check_keys(d, path, frozenset({"key", "operator", "value", "effect", "tolerationSeconds"}))
        return cls(
            key=_str(d, "key", path),
            operator=_enum(
                d,
                "operator",
                path,
                (TOLERATION_OP_EQUAL, TOLERATION_OP_EXISTS, "Lt", "Gt"),
                TOLERATION_OP_EQUAL,
            ),
            value=_str(d, "value", path),
            effect=_enum(d, "effect", path, ("", *TAINT_EFFECTS), ""),
            toleration_seconds=_opt_int(d, "tolerationSeconds", path),
        )

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


@dataclass(slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> TopologySpreadConstraint:
        _check_keys(
            d,
            path,
            frozenset(
                {
                    "maxSkew",
                    "topologyKey",
                    "whenUnsatisfiable",
                    "labelSelector",
                    "minDomains",
                    "nodeAffinityPolicy",
                    "nodeTaintsPolicy",
                    "matchLabelKeys",
                }
            ),
        )
        max_skew = _int(d, "maxSkew", path)
        if max_skew <= 0:
            raise DecodeError(_join(path, "maxSkew"), f"must be greater than zero, got {max_skew}")
        if not _str(d, "topologyKey", path):
            raise DecodeError(_join(path, "topologyKey"), "required: can not be empty")
        policies = (NODE_INCLUSION_POLICY_HONOR, NODE_INCLUSION_POLICY_IGNORE)
        min_domains = _opt_int(d, "minDomains", path)
        if min_domains is not None and min_domains <= 0:
            raise DecodeError(
                _join(path, "minDomains"), f"must be greater than zero, got {min_domains}"
            )
        return cls(
            max_skew=max_skew,
            topology_key=_str(d, "topologyKey", path),
            when_unsatisfiable=_enum(
                d,
                "whenUnsatisfiable",
                path,
                (TOPOLOGY_DO_NOT_SCHEDULE, TOPOLOGY_SCHEDULE_ANYWAY),
                "",
            ),
            label_selector=_opt(d, "labelSelector", path, LabelSelector.from_dict),
            min_domains=min_domains,
            node_affinity_policy=(
                _enum(d, "nodeAffinityPolicy", path, policies, "")
                if d.get("nodeAffinityPolicy") is not None
                else None
            ),
            node_taints_policy=(
                _enum(d, "nodeTaintsPolicy", path, policies, "")
                if d.get("nodeTaintsPolicy") is not None
                else None
            ),
            match_label_keys=_str_list(d, "matchLabelKeys", path),
        )


# ---------------------------------------------------------------- containers

PROTOCOLS = ("TCP", "UDP", "SCTP")


@dataclass(slots=True)
class ContainerPort:
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""
    name: str = ""

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> ContainerPort:
        _check_keys(d, path, frozenset({"containerPort", "hostPort", "protocol", "hostIP", "name"}))
        return cls(
            container_port=_int(d, "containerPort", path),
            host_port=_int(d, "hostPort", path),
            protocol=_enum(d, "protocol", path, PROTOCOLS, "TCP"),
            host_ip=_str(d, "hostIP", path),
            name=_str(d, "name", path),
        )


@dataclass(slots=True)
class ResourceRequirements:
    requests: ResourceList = field(default_factory=dict)
    limits: ResourceList = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> ResourceRequirements:
        _check_keys(d, path, frozenset({"requests", "limits"}), frozenset({"claims"}))
        limits = _resource_list(d, "limits", path)
        requests = _resource_list(d, "requests", path)
        # API defaulting: a resource with a limit and no request requests its limit.
        for name, value in limits.items():
            requests.setdefault(name, value)
        return cls(requests=requests, limits=limits)


_CONTAINER_KNOWN = frozenset({"name", "image", "ports", "resources", "restartPolicy"})
_CONTAINER_IGNORED = frozenset(
    {
        "command",
        "args",
        "workingDir",
        "envFrom",
        "env",
        "resizePolicy",
        "restartPolicyRules",
        "volumeMounts",
        "volumeDevices",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext",
        "stdin",
        "stdinOnce",
        "tty",
    }
)


@dataclass(slots=True)
class Container:
    name: str
    image: str = ""
    ports: list[ContainerPort] = field(default_factory=list)
    resources: ResourceRequirements = field(default_factory=ResourceRequirements)
    restart_policy: str | None = None  # "Always" on an init container makes it a sidecar

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> Container:
        _check_keys(d, path, _CONTAINER_KNOWN, _CONTAINER_IGNORED)
        if not _str(d, "name", path):
            raise DecodeError(_join(path, "name"), "required")
        return cls(
            name=_str(d, "name", path),
            image=_str(d, "image", path),
            ports=_list(d, "ports", path, ContainerPort.from_dict),
            resources=_opt(d, "resources", path, ResourceRequirements.from_dict)
            or ResourceRequirements(),
            restart_policy=(
                _enum(d, "restartPolicy", path, ("Always", "OnFailure", "Never"), "")
                if d.get("restartPolicy") is not None
                else None
            ),
        )

    @property
    def is_sidecar(self) -> bool:
        """An init container with restartPolicy Always (a restartable init container)."""
        return self.restart_policy == "Always"


# ---------------------------------------------------------------- pod

_POD_SPEC_KNOWN = frozenset(
    {
        "containers",
        "initContainers",
        "nodeName",
        "nodeSelector",
        "affinity",
        "tolerations",
        "schedulerName",
        "priority",
        "priorityClassName",
        "preemptionPolicy",
        "overhead",
        "topologySpreadConstraints",
        "schedulingGates",
        "resources",
        "hostNetwork",
    }
)
_POD_SPEC_IGNORED = frozenset(
    {
        "volumes",
        "ephemeralContainers",
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "dnsPolicy",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "hostPID",
        "hostIPC",
        "shareProcessNamespace",
        "securityContext",
        "imagePullSecrets",
        "hostname",
        "subdomain",
        "hostAliases",
        "dnsConfig",
        "readinessGates",
        "runtimeClassName",
        "enableServiceLinks",
        "os",
        "hostUsers",
        "resourceClaims",
        "setHostnameAsFQDN",
        "hostnameOverride",
        "workloadRef",
    }
)
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"


@dataclass(slots=True)
class PodSpec:
    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    node_name: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = field(default_factory=list)
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    overhead: ResourceList = field(default_factory=dict)
    topology_spread_constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    scheduling_gates: list[str] = field(default_factory=list)
    resources: ResourceRequirements | None = None  # pod-level resources
    host_network: bool = False

    @classmethod
    def from_dict(cls, d: Any, path: str = "spec") -> PodSpec:
        _check_keys(d, path, _POD_SPEC_KNOWN, _POD_SPEC_IGNORED)
        gates = []
        for i, g in enumerate(d.get("schedulingGates") or []):
            gp = f"{path}.schedulingGates[{i}]"
            _check_keys(g, gp, frozenset({"name"}))
            gates.append(_str(g, "name", gp))
        return cls(
            containers=_list(d, "containers", path, Container.from_dict),
            init_containers=_list(d, "initContainers", path, Container.from_dict),
            node_name=_str(d, "nodeName", path),
            node_selector=_str_map(d, "nodeSelector", path),
            affinity=_opt(d, "affinity", path, Affinity.from_dict),
            tolerations=_list(d, "tolerations", path, Toleration.from_dict),
            scheduler_name=_str(d, "schedulerName", path) or DEFAULT_SCHEDULER_NAME,
            priority=_opt_int(d, "priority", path),
            priority_class_name=_str(d, "priorityClassName", path),
            preemption_policy=(
                _enum(d, "preemptionPolicy", path, (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER), "")
                if d.get("preemptionPolicy") is not None
                else None
            ),
            overhead=_resource_list(d, "overhead", path),
            topology_spread_constraints=_list(
                d, "topologySpreadConstraints", path, TopologySpreadConstraint.from_dict
            ),
            scheduling_gates=gates,
            resources=_opt(d, "resources", path, ResourceRequirements.from_dict),
            host_network=_bool(d, "hostNetwork", path),
        )


_POD_STATUS_KNOWN = frozenset({"phase", "nominatedNodeName", "startTime", "conditions"})
_POD_STATUS_IGNORED = frozenset(
    {
        "message",
        "reason",
        "hostIP",
        "hostIPs",
        "podIP",
        "podIPs",
        "initContainerStatuses",
        "containerStatuses",
        "qosClass",
        "ephemeralContainerStatuses",
        "resize",
        "resourceClaimStatuses",
        "observedGeneration",
        "extendedResourceClaimStatus",
        "allocatedResources",
        "resources",
    }
)


@dataclass(slots=True)
class PodCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> PodCondition:
        _check_keys(
            d,
            path,
            frozenset({"type", "status", "reason", "message"}),
            frozenset({"lastProbeTime", "lastTransitionTime", "observedGeneration"}),
        )
        return cls(
            type=_str(d, "type", path),
            status=_str(d, "status", path),
            reason=_str(d, "reason", path),
            message=_str(d, "message", path),
        )


@dataclass(slots=True)
class PodStatus:
    phase: str = ""
    nominated_node_name: str = ""
    start_time: str | None = None
    conditions: list[PodCondition] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "status") -> PodStatus:
        _check_keys(d, path, _POD_STATUS_KNOWN, _POD_STATUS_IGNORED)
        return cls(
            phase=_str(d, "phase", path),
            nominated_node_name=_str(d, "nominatedNodeName", path),
            start_time=_opt_str(d, "startTime", path),
            conditions=_list(d, "conditions", path, PodCondition.from_dict),
        )


def _check_kind(d: Any, kind: str, api_versions: tuple[str, ...]) -> None:
    _check_keys(d, "", frozenset({"apiVersion", "kind", "metadata", "spec", "status"}))
    if d.get("kind") is not None and d.get("kind") != kind:
        raise DecodeError("kind", f"expected {kind!r}, got {d.get('kind')!r}")
    if d.get("apiVersion") is not None and d.get("apiVersion") not in api_versions:
        raise DecodeError(
            "apiVersion", f"expected one of {list(api_versions)}, got {d.get('apiVersion')!r}"
        )


@dataclass(slots=True, eq=False)
class Pod:
    """v1.Pod. Identity (eq/hash) is the object; compare `uid` for the same pod."""

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PodSpec = field(default_factory=PodSpec)
    status: PodStatus = field(default_factory=PodStatus)

    @classmethod
    def from_dict(cls, d: Any) -> Pod:
        _check_kind(d, "Pod", ("v1",))
        meta = ObjectMeta.from_dict(
            d.get("metadata") or {}, "metadata", default_namespace="default"
        )
        if not meta.name:
            raise DecodeError("metadata.name", "required")
        if not meta.uid:
            meta.uid = f"{meta.namespace}/{meta.name}"
        return cls(
            metadata=meta,
            spec=PodSpec.from_dict(d.get("spec") or {}),
            status=PodStatus.from_dict(d.get("status") or {}),
        )

    # conveniences mirroring upstream helpers
    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def uid(self) -> str:
        return self.metadata.uid

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels

    @property
    def key(self) -> str:
        """namespace/name, as klog.KObj prints it."""
        return f"{self.metadata.namespace}/{self.metadata.name}"


# ---------------------------------------------------------------- node


@dataclass(slots=True)
class ContainerImage:
    names: list[str] = field(default_factory=list)
    size_bytes: int = 0

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> ContainerImage:
        _check_keys(d, path, frozenset({"names", "sizeBytes"}))
        return cls(names=_str_list(d, "names", path), size_bytes=_int(d, "sizeBytes", path))


@dataclass(slots=True)
class NodeCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""

    @classmethod
    def from_dict(cls, d: Any, path: str = "") -> NodeCondition:
        _check_keys(
            d,
            path,
            frozenset({"type", "status", "reason", "message"}),
            frozenset({"lastHeartbeatTime", "lastTransitionTime"}),
        )
        return cls(
            type=_str(d, "type", path),
            status=_str(d, "status", path),
            reason=_str(d, "reason", path),
            message=_str(d, "message", path),
        )


@dataclass(slots=True)
class NodeSpec:
    unschedulable: bool = False
    taints: list[Taint] = field(default_factory=list)
    pod_cidr: str = ""

    @classmethod
    def from_dict(cls, d: Any, path: str = "spec") -> NodeSpec:
        _check_keys(
            d,
            path,
            frozenset({"unschedulable", "taints", "podCIDR"}),
            frozenset({"podCIDRs", "providerID", "configSource", "externalID"}),
        )
        return cls(
            unschedulable=_bool(d, "unschedulable", path),
            taints=_list(d, "taints", path, Taint.from_dict),
            pod_cidr=_str(d, "podCIDR", path),
        )


@dataclass(slots=True)
class NodeStatus:
    capacity: ResourceList = field(default_factory=dict)
    allocatable: ResourceList = field(default_factory=dict)
    images: list[ContainerImage] = field(default_factory=list)
    conditions: list[NodeCondition] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: Any, path: str = "status") -> NodeStatus:
        _check_keys(
            d,
            path,
            frozenset({"capacity", "allocatable", "images", "conditions"}),
            frozenset(
                {
                    "phase",
                    "addresses",
                    "daemonEndpoints",
                    "nodeInfo",
                    "volumesInUse",
                    "volumesAttached",
                    "config",
                    "runtimeHandlers",
                    "features",
                    "declaredFeatures",
                }
            ),
        )
        capacity = _resource_list(d, "capacity", path)
        allocatable = _resource_list(d, "allocatable", path)
        if not allocatable and capacity:
            allocatable = dict(capacity)  # the API server defaults allocatable to capacity
        return cls(
            capacity=capacity,
            allocatable=allocatable,
            images=_list(d, "images", path, ContainerImage.from_dict),
            conditions=_list(d, "conditions", path, NodeCondition.from_dict),
        )


@dataclass(slots=True, eq=False)
class Node:
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: NodeSpec = field(default_factory=NodeSpec)
    status: NodeStatus = field(default_factory=NodeStatus)

    @classmethod
    def from_dict(cls, d: Any) -> Node:
        _check_kind(d, "Node", ("v1",))
        meta = ObjectMeta.from_dict(d.get("metadata") or {}, "metadata")
        if not meta.name:
            raise DecodeError("metadata.name", "required")
        if meta.namespace:
            raise DecodeError(
                "metadata.namespace", "a Node is cluster-scoped: namespace must be empty"
            )
        return cls(
            metadata=meta,
            spec=NodeSpec.from_dict(d.get("spec") or {}),
            status=NodeStatus.from_dict(d.get("status") or {}),
        )

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels


# ---------------------------------------------------------------- policy, scheduling, namespaces


@dataclass(slots=True, eq=False)
class PodDisruptionBudget:
    """policy/v1 PodDisruptionBudget: min_available/max_unavailable kept as given (int or "N%")."""

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    disruptions_allowed: int = 0
    disrupted_pods: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Any) -> PodDisruptionBudget:
        _check_kind(d, "PodDisruptionBudget", ("policy/v1",))
        meta = ObjectMeta.from_dict(
            d.get("metadata") or {}, "metadata", default_namespace="default"
        )
        spec = d.get("spec") or {}
        _check_keys(
            spec,
            "spec",
            frozenset({"selector", "minAvailable", "maxUnavailable"}),
            frozenset({"unhealthyPodEvictionPolicy"}),
        )
        status = d.get("status") or {}
        _check_keys(
            status,
            "status",
            frozenset({"disruptionsAllowed", "disruptedPods"}),
            frozenset(
                {
                    "currentHealthy",
                    "desiredHealthy",
                    "expectedPods",
                    "observedGeneration",
                    "conditions",
                }
            ),
        )

        def int_or_str(key: str) -> int | str | None:
            v = spec.get(key)
            if v is None or isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
                return v
            raise DecodeError(
                f"spec.{key}", f"expected an integer or a percentage, got {type(v).__name__}"
            )

        return cls(
            metadata=meta,
            selector=_opt(spec, "selector", "spec", LabelSelector.from_dict),
            min_available=int_or_str("minAvailable"),
            max_unavailable=int_or_str("maxUnavailable"),
            disruptions_allowed=_int(status, "disruptionsAllowed", "status"),
            disrupted_pods=_str_map(status, "disruptedPods", "status"),
        )


@dataclass(slots=True, eq=False)
class PriorityClass:
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    description: str = ""

    @classmethod
    def from_dict(cls, d: Any) -> PriorityClass:
        _check_keys(
            d,
            "",
            frozenset(
                {
                    "apiVersion",
                    "kind",
                    "metadata",
                    "value",
                    "globalDefault",
                    "preemptionPolicy",
                    "description",
                }
            ),
        )
        if d.get("kind") is not None and d.get("kind") != "PriorityClass":
            raise DecodeError("kind", f"expected 'PriorityClass', got {d.get('kind')!r}")
        meta = ObjectMeta.from_dict(d.get("metadata") or {}, "metadata")
        if d.get("value") is None:
            raise DecodeError("value", "required")
        return cls(
            metadata=meta,
            value=_int(d, "value", ""),
            global_default=_bool(d, "globalDefault", ""),
            preemption_policy=_enum(
                d,
                "preemptionPolicy",
                "",
                (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER),
                PREEMPT_LOWER_PRIORITY,
            ),
            description=_str(d, "description", ""),
        )


@dataclass(slots=True, eq=False)
class Namespace:
    """v1.Namespace: only its labels matter (PodAffinityTerm.namespaceSelector)."""

    metadata: ObjectMeta = field(default_factory=ObjectMeta)

    @classmethod
    def from_dict(cls, d: Any) -> Namespace:
        _check_kind(d, "Namespace", ("v1",))
        return cls(metadata=ObjectMeta.from_dict(d.get("metadata") or {}, "metadata"))


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

_SERVICE_SPEC = frozenset(
    {
        "ports",
        "selector",
        "clusterIP",
        "clusterIPs",
        "type",
        "externalIPs",
        "sessionAffinity",
        "loadBalancerIP",
        "loadBalancerSourceRanges",
        "externalName",
        "externalTrafficPolicy",
        "healthCheckNodePort",
        "publishNotReadyAddresses",
        "sessionAffinityConfig",
        "ipFamilies",
        "ipFamilyPolicy",
        "allocateLoadBalancerNodePorts",
        "loadBalancerClass",
        "internalTrafficPolicy",
        "trafficDistribution",
    }
)
_CONTROLLER_SPEC = frozenset(
    {
        "replicas",
        "minReadySeconds",
        "selector",
        "template",
        "volumeClaimTemplates",
        "serviceName",
        "podManagementPolicy",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "ordinals",
    }
)


def _workload_top(d: Any) -> dict[str, Any]:
    _check_keys(d, "", frozenset({"apiVersion", "kind", "metadata", "spec", "status"}))
    if d.get("status") is not None and not isinstance(d["status"], dict):
        raise DecodeError("status", "expected an object")
    return d.get("spec") or {}


@dataclass(slots=True, eq=False)
class Service:
    """v1.Service: spec.selector (a map; None when unset, which selects nothing)."""

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    selector: dict[str, str] | None = None

    @classmethod
    def from_dict(cls, d: Any) -> Service:
        spec = _workload_top(d)
        _check_keys(spec, "spec", _SERVICE_SPEC)
        meta = ObjectMeta.from_dict(
            d.get("metadata") or {}, "metadata", default_namespace="default"
        )
        sel = _str_map(spec, "selector", "spec") if spec.get("selector") is not None else None
        return cls(meta, sel)


@dataclass(slots=True, eq=False)
class ReplicationController:
    """v1.ReplicationController: spec.selector is a map."""

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    selector: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Any) -> ReplicationController:
        spec = _workload_top(d)
        _check_keys(spec, "spec", _CONTROLLER_SPEC)
        meta = ObjectMeta.from_dict(
            d.get("metadata") or {}, "metadata", default_namespace="default"
        )
        return cls(meta, _str_map(spec, "selector", "spec"))


@dataclass(slots=True, eq=False)
class ReplicaSet:
    """apps/v1 ReplicaSet (StatefulSet shares the shape: a LabelSelector)."""

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    selector: LabelSelector | None = None
    kind: str = "ReplicaSet"

    @classmethod
    def from_dict(cls, d: Any) -> ReplicaSet:
        spec = _workload_top(d)
        _check_keys(spec, "spec", _CONTROLLER_SPEC)
        meta = ObjectMeta.from_dict(
            d.get("metadata") or {}, "metadata", default_namespace="default"
        )
        return cls(
            meta,
            _opt(spec, "selector", "spec", LabelSelector.from_dict),
            d.get("kind") or "ReplicaSet",
        )


WORKLOAD_KINDS: dict[str, Callable[[Any], Any]] = {
    "Service": Service.from_dict,
    "ReplicationController": ReplicationController.from_dict,
    "ReplicaSet": ReplicaSet.from_dict,
    "StatefulSet": ReplicaSet.from_dict,
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
