"""Kubernetes v1 Pod (and what a node needs around it) as dataclasses.

Attributes are snake_case; on the wire every field has its Kubernetes camelCase name,
derived from the attribute (`restart_policy` -> `restartPolicy`) unless the field's
metadata says otherwise (`pod_ip` -> `podIP`). `decode.py` walks these classes by
their type hints, so adding a field here is all it takes to accept it.

Encoding follows Go's `omitempty`: an Optional field is left out when None (so an
explicit 0 or false survives, as a Go pointer would); a plain field is left out when
it holds its zero value, unless marked `keep` (fields Kubernetes always prints, such as
`ready` and `restartCount`).

Timestamps are RFC 3339 strings ("2026-11-30T09:52:36Z"), as on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.machinery.codec import UNMODELLED
from pykubelet.api.machinery.meta import ObjectAccessors
from pykubelet.api.machinery.quantity import Quantity

# IntOrString (probe ports, ...): Python's union says it exactly.
IntOrString = int | str
ResourceList = dict[str, Quantity]


KEEP: dict[str, Any] = {"keep": True}


def wire(name: str, *, keep: bool = False) -> dict[str, Any]:
    """Field metadata naming the wire field when it is not plain camelCase."""
    return {"json": name, "keep": keep}


# Restart policies, pull policies, phases, ... spelled as on the wire.
RESTART_ALWAYS = "Always"
RESTART_ON_FAILURE = "OnFailure"
RESTART_NEVER = "Never"
RESTART_POLICIES = (RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER)
# Container.restartPolicy: only "Always", only on init containers (sidecars, KEP-753).
CONTAINER_RESTART_ALWAYS = "Always"
CONTAINER_RESTART_POLICIES = (CONTAINER_RESTART_ALWAYS,)

PULL_ALWAYS = "Always"
PULL_IF_NOT_PRESENT = "IfNotPresent"
PULL_NEVER = "Never"
PULL_POLICIES = (PULL_ALWAYS, PULL_IF_NOT_PRESENT, PULL_NEVER)

PHASE_PENDING = "Pending"
PHASE_RUNNING = "Running"
PHASE_SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"
PHASE_UNKNOWN = "Unknown"

CONDITION_TRUE = "True"
CONDITION_FALSE = "False"
CONDITION_UNKNOWN = "Unknown"

POD_SCHEDULED = "PodScheduled"
POD_INITIALIZED = "Initialized"
CONTAINERS_READY = "ContainersReady"
POD_READY = "Ready"
POD_READY_TO_START_CONTAINERS = "PodReadyToStartContainers"

STORAGE_MEDIUM_DEFAULT = ""
STORAGE_MEDIUM_MEMORY = "Memory"

DNS_CLUSTER_FIRST = "ClusterFirst"
DNS_CLUSTER_FIRST_WITH_HOST_NET = "ClusterFirstWithHostNet"
DNS_DEFAULT = "Default"
DNS_NONE = "None"
DNS_POLICIES = (DNS_CLUSTER_FIRST, DNS_CLUSTER_FIRST_WITH_HOST_NET, DNS_DEFAULT, DNS_NONE)


# --------------------------------------------------------------------------- models


@dataclass(kw_only=True)
class Model:
    """Base of every model: `unmodelled` keeps, verbatim and checked against upstream's
    schema, the fields upstream has and a class does not type (see codec.py), so an object
    goes back out with everything it came in with."""

    unmodelled: dict[str, Any] = field(default_factory=dict, repr=False, metadata=UNMODELLED)


# --------------------------------------------------------------------------- metadata


@dataclass(kw_only=True)
class OwnerReference(Model):
    __k8s__ = "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"

    api_version: str = field(default="", metadata=KEEP)
    kind: str = field(default="", metadata=KEEP)
    name: str = field(default="", metadata=KEEP)
    uid: str = field(default="", metadata=KEEP)
    controller: bool | None = None
    block_owner_deletion: bool | None = None


@dataclass(kw_only=True)
class ObjectMeta(Model):
    __k8s__ = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner_references: list[OwnerReference] = field(default_factory=list)
    finalizers: list[str] = field(default_factory=list)
    # Carried by `kubectl get -o yaml` output; kept opaque so such output re-applies.
    managed_fields: list[Any] = field(default_factory=list)
    self_link: str = ""


# --------------------------------------------------------------------------- containers


@dataclass(kw_only=True)
class ObjectFieldSelector(Model):
    __k8s__ = "io.k8s.api.core.v1.ObjectFieldSelector"

    api_version: str = ""
    field_path: str = ""


@dataclass(kw_only=True)
class ResourceFieldSelector(Model):
    __k8s__ = "io.k8s.api.core.v1.ResourceFieldSelector"

    container_name: str = ""
    resource: str = ""
    divisor: Quantity | None = None


@dataclass(kw_only=True)
class KeySelector(Model):
    """ConfigMapKeySelector / SecretKeySelector (same fields): a node in a cluster resolves
    them from the API; a standalone node has no configmaps or secrets to read."""

    __k8s__ = "io.k8s.api.core.v1.ConfigMapKeySelector"

    name: str = ""
    key: str = ""
    optional: bool | None = None


@dataclass(kw_only=True)
class EnvVarSource(Model):
    __k8s__ = "io.k8s.api.core.v1.EnvVarSource"

    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    config_map_key_ref: KeySelector | None = None
    secret_key_ref: KeySelector | None = None


@dataclass(kw_only=True)
class ConfigMapEnvSource(Model):
    __k8s__ = "io.k8s.api.core.v1.ConfigMapEnvSource"

    name: str = ""
    optional: bool | None = None


@dataclass(kw_only=True)
class SecretEnvSource(Model):
    __k8s__ = "io.k8s.api.core.v1.SecretEnvSource"

    name: str = ""
    optional: bool | None = None


@dataclass(kw_only=True)
class EnvFromSource(Model):
    __k8s__ = "io.k8s.api.core.v1.EnvFromSource"

    prefix: str = ""
    config_map_ref: ConfigMapEnvSource | None = None
    secret_ref: SecretEnvSource | None = None


@dataclass(kw_only=True)
class EnvVar(Model):
    __k8s__ = "io.k8s.api.core.v1.EnvVar"

    name: str = field(default="", metadata=KEEP)
    value: str = ""
    value_from: EnvVarSource | None = None


@dataclass(kw_only=True)
class ContainerPort(Model):
    __k8s__ = "io.k8s.api.core.v1.ContainerPort"

    name: str = ""
    host_port: int = 0
    container_port: int = 0
    protocol: str = ""
    host_ip: str = field(default="", metadata=wire("hostIP"))


@dataclass(kw_only=True)
class ResourceRequirements(Model):
    __k8s__ = "io.k8s.api.core.v1.ResourceRequirements"

    limits: ResourceList = field(default_factory=dict)
    requests: ResourceList = field(default_factory=dict)


@dataclass(kw_only=True)
class VolumeMount(Model):
    __k8s__ = "io.k8s.api.core.v1.VolumeMount"

    name: str = field(default="", metadata=KEEP)
    read_only: bool = False
    mount_path: str = field(default="", metadata=KEEP)
    sub_path: str = ""
    mount_propagation: str | None = None


@dataclass(kw_only=True)
class ExecAction(Model):
    __k8s__ = "io.k8s.api.core.v1.ExecAction"

    command: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class HTTPHeader(Model):
    __k8s__ = "io.k8s.api.core.v1.HTTPHeader"

    name: str = field(default="", metadata=KEEP)
    value: str = field(default="", metadata=KEEP)


@dataclass(kw_only=True)
class HTTPGetAction(Model):
    __k8s__ = "io.k8s.api.core.v1.HTTPGetAction"

    path: str = ""
    port: IntOrString = field(default=0, metadata=KEEP)
    host: str = ""
    scheme: str = ""
    http_headers: list[HTTPHeader] = field(default_factory=list)


@dataclass(kw_only=True)
class TCPSocketAction(Model):
    __k8s__ = "io.k8s.api.core.v1.TCPSocketAction"

    port: IntOrString = field(default=0, metadata=KEEP)
    host: str = ""


@dataclass(kw_only=True)
class GRPCAction(Model):
    __k8s__ = "io.k8s.api.core.v1.GRPCAction"

    port: int = field(default=0, metadata=KEEP)
    service: str | None = None


@dataclass(kw_only=True)
class Probe(Model):
    __k8s__ = "io.k8s.api.core.v1.Probe"

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = field(default=None, metadata=wire("grpc"))
    initial_delay_seconds: int = 0
    timeout_seconds: int = 0
    period_seconds: int = 0
    success_threshold: int = 0
    failure_threshold: int = 0
    termination_grace_period_seconds: int | None = None


@dataclass(kw_only=True)
class SleepAction(Model):
    __k8s__ = "io.k8s.api.core.v1.SleepAction"

    seconds: int = field(default=0, metadata=KEEP)


@dataclass(kw_only=True)
class LifecycleHandler(Model):
    __k8s__ = "io.k8s.api.core.v1.LifecycleHandler"

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None


@dataclass(kw_only=True)
class Lifecycle(Model):
    __k8s__ = "io.k8s.api.core.v1.Lifecycle"

    post_start: LifecycleHandler | None = None
    pre_stop: LifecycleHandler | None = None


@dataclass(kw_only=True)
class Capabilities(Model):
    __k8s__ = "io.k8s.api.core.v1.Capabilities"

    add: list[str] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class SeccompProfile(Model):
    """A pod's or container's seccomp profile; kubelet turns it into CRI's SecurityProfile."""

    __k8s__ = "io.k8s.api.core.v1.SeccompProfile"

    type: str = field(default="", metadata=KEEP)
    localhost_profile: str | None = None


@dataclass(kw_only=True)
class SecurityContext(Model):
    __k8s__ = "io.k8s.api.core.v1.SecurityContext"

    capabilities: Capabilities | None = None
    privileged: bool | None = None
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    read_only_root_filesystem: bool | None = None
    allow_privilege_escalation: bool | None = None
    seccomp_profile: SeccompProfile | None = None


@dataclass(kw_only=True)
class Container(Model):
    __k8s__ = "io.k8s.api.core.v1.Container"

    name: str = field(default="", metadata=KEEP)
    image: str = ""
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    working_dir: str = ""
    ports: list[ContainerPort] = field(default_factory=list)
    env_from: list[EnvFromSource] = field(default_factory=list)
    env: list[EnvVar] = field(default_factory=list)
    resources: ResourceRequirements = field(default_factory=ResourceRequirements)
    volume_mounts: list[VolumeMount] = field(default_factory=list)
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    lifecycle: Lifecycle | None = None
    termination_message_path: str = ""
    termination_message_policy: str = ""
    image_pull_policy: str = ""
    security_context: SecurityContext | None = None
    stdin: bool = False
    stdin_once: bool = False
    tty: bool = False
    # "Always" makes an init container a sidecar (a restartable init container).
    restart_policy: str | None = None

    @property
    def is_sidecar(self) -> bool:
        """An init container with restartPolicy Always (podutil.IsRestartableInitContainer)."""
        return self.restart_policy == CONTAINER_RESTART_ALWAYS


@dataclass(kw_only=True)
class EphemeralContainer(Container):
    """A debugging container added to a running pod through ``pods/ephemeralcontainers``
    (``kubectl debug``): a Container's fields (those an ephemeral one may set are checked
    by validation) plus the container whose namespaces it targets. Never restarted."""

    __k8s__ = "io.k8s.api.core.v1.EphemeralContainer"

    target_container_name: str = ""


# --------------------------------------------------------------------------- pod spec


@dataclass(kw_only=True)
class EmptyDirVolumeSource(Model):
    __k8s__ = "io.k8s.api.core.v1.EmptyDirVolumeSource"

    medium: str = ""
    size_limit: Quantity | None = None


@dataclass(kw_only=True)
class HostPathVolumeSource(Model):
    __k8s__ = "io.k8s.api.core.v1.HostPathVolumeSource"

    path: str = field(default="", metadata=KEEP)
    type: str | None = None


@dataclass(kw_only=True)
class KeyToPath(Model):
    __k8s__ = "io.k8s.api.core.v1.KeyToPath"

    key: str = field(default="", metadata=KEEP)
    path: str = field(default="", metadata=KEEP)
    mode: int | None = None


@dataclass(kw_only=True)
class ConfigMapVolumeSource(Model):
    __k8s__ = "io.k8s.api.core.v1.ConfigMapVolumeSource"

    name: str = ""
    items: list[KeyToPath] = field(default_factory=list)
    default_mode: int | None = None
    optional: bool | None = None


@dataclass(kw_only=True)
class SecretVolumeSource(Model):
    __k8s__ = "io.k8s.api.core.v1.SecretVolumeSource"

    secret_name: str = ""
    items: list[KeyToPath] = field(default_factory=list)
    default_mode: int | None = None
    optional: bool | None = None


@dataclass(kw_only=True)
class DownwardAPIVolumeFile(Model):
    __k8s__ = "io.k8s.api.core.v1.DownwardAPIVolumeFile"

    path: str = field(default="", metadata=KEEP)
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    mode: int | None = None


@dataclass(kw_only=True)
class DownwardAPIVolumeSource(Model):
    __k8s__ = "io.k8s.api.core.v1.DownwardAPIVolumeSource"

    items: list[DownwardAPIVolumeFile] = field(default_factory=list)
    default_mode: int | None = None


@dataclass(kw_only=True)
class DownwardAPIProjection(Model):
    __k8s__ = "io.k8s.api.core.v1.DownwardAPIProjection"

    items: list[DownwardAPIVolumeFile] = field(default_factory=list)


@dataclass(kw_only=True)
class ConfigMapProjection(Model):
    __k8s__ = "io.k8s.api.core.v1.ConfigMapProjection"

    name: str = ""
    items: list[KeyToPath] = field(default_factory=list)
    optional: bool | None = None


@dataclass(kw_only=True)
class SecretProjection(Model):
    __k8s__ = "io.k8s.api.core.v1.SecretProjection"

    name: str = ""
    items: list[KeyToPath] = field(default_factory=list)
    optional: bool | None = None


@dataclass(kw_only=True)
class ServiceAccountTokenProjection(Model):
    __k8s__ = "io.k8s.api.core.v1.ServiceAccountTokenProjection"

    audience: str = ""
    expiration_seconds: int | None = None
    path: str = field(default="", metadata=KEEP)


@dataclass(kw_only=True)
class VolumeProjection(Model):
    """One source of a projected volume (clusterTrustBundle and podCertificate stay
    unmodelled)."""

    __k8s__ = "io.k8s.api.core.v1.VolumeProjection"

    config_map: ConfigMapProjection | None = None
    secret: SecretProjection | None = None
    downward_api: DownwardAPIProjection | None = field(default=None,
                                                       metadata=wire("downwardAPI"))
    service_account_token: ServiceAccountTokenProjection | None = None


@dataclass(kw_only=True)
class ProjectedVolumeSource(Model):
    __k8s__ = "io.k8s.api.core.v1.ProjectedVolumeSource"

    sources: list[VolumeProjection] = field(default_factory=list)
    default_mode: int | None = None


@dataclass(kw_only=True)
class Volume(Model):
    __k8s__ = "io.k8s.api.core.v1.Volume"

    name: str = field(default="", metadata=KEEP)
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None
    config_map: ConfigMapVolumeSource | None = None
    secret: SecretVolumeSource | None = None
    downward_api: DownwardAPIVolumeSource | None = field(default=None,
                                                         metadata=wire("downwardAPI"))
    projected: ProjectedVolumeSource | None = None


# --------------------------------------------------------------------------- scheduling


@dataclass(kw_only=True)
class LabelSelectorRequirement(Model):
    __k8s__ = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement"

    key: str = field(default="", metadata=KEEP)
    operator: str = field(default="", metadata=KEEP)
    values: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class LabelSelector(Model):
    __k8s__ = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"

    match_labels: dict[str, str] = field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = field(default_factory=list)


@dataclass(kw_only=True)
class NodeSelectorRequirement(Model):
    __k8s__ = "io.k8s.api.core.v1.NodeSelectorRequirement"

    key: str = field(default="", metadata=KEEP)
    operator: str = field(default="", metadata=KEEP)
    values: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class NodeSelectorTerm(Model):
    __k8s__ = "io.k8s.api.core.v1.NodeSelectorTerm"

    match_expressions: list[NodeSelectorRequirement] = field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = field(default_factory=list)


@dataclass(kw_only=True)
class NodeSelector(Model):
    __k8s__ = "io.k8s.api.core.v1.NodeSelector"

    node_selector_terms: list[NodeSelectorTerm] = field(default_factory=list, metadata=KEEP)


@dataclass(kw_only=True)
class PreferredSchedulingTerm(Model):
    __k8s__ = "io.k8s.api.core.v1.PreferredSchedulingTerm"

    weight: int = field(default=0, metadata=KEEP)
    preference: NodeSelectorTerm = field(default_factory=NodeSelectorTerm, metadata=KEEP)


REQUIRED_TERMS = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_TERMS = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(kw_only=True)
class NodeAffinity(Model):
    __k8s__ = "io.k8s.api.core.v1.NodeAffinity"

    required: NodeSelector | None = field(default=None, metadata=wire(REQUIRED_TERMS))
    preferred: list[PreferredSchedulingTerm] = field(
        default_factory=list, metadata=wire(PREFERRED_TERMS)
    )


@dataclass(kw_only=True)
class PodAffinityTerm(Model):
    __k8s__ = "io.k8s.api.core.v1.PodAffinityTerm"

    label_selector: LabelSelector | None = None
    namespaces: list[str] = field(default_factory=list)
    topology_key: str = field(default="", metadata=KEEP)
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = field(default_factory=list)
    mismatch_label_keys: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class WeightedPodAffinityTerm(Model):
    __k8s__ = "io.k8s.api.core.v1.WeightedPodAffinityTerm"

    weight: int = field(default=0, metadata=KEEP)
    pod_affinity_term: PodAffinityTerm = field(default_factory=PodAffinityTerm, metadata=KEEP)


@dataclass(kw_only=True)
class PodAffinity(Model):
    __k8s__ = "io.k8s.api.core.v1.PodAffinity"

    required: list[PodAffinityTerm] = field(default_factory=list, metadata=wire(REQUIRED_TERMS))
    preferred: list[WeightedPodAffinityTerm] = field(
        default_factory=list, metadata=wire(PREFERRED_TERMS)
    )


@dataclass(kw_only=True)
class PodAntiAffinity(PodAffinity):
    __k8s__ = "io.k8s.api.core.v1.PodAntiAffinity"


@dataclass(kw_only=True)
class Affinity(Model):
    __k8s__ = "io.k8s.api.core.v1.Affinity"

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


TOPOLOGY_DO_NOT_SCHEDULE = "DoNotSchedule"
TOPOLOGY_SCHEDULE_ANYWAY = "ScheduleAnyway"
NODE_INCLUSION_POLICY_HONOR = "Honor"
NODE_INCLUSION_POLICY_IGNORE = "Ignore"


@dataclass(kw_only=True)
class TopologySpreadConstraint(Model):
    __k8s__ = "io.k8s.api.core.v1.TopologySpreadConstraint"

    max_skew: int = field(default=0, metadata=KEEP)
    topology_key: str = field(default="", metadata=KEEP)
    when_unsatisfiable: str = field(default="", metadata=KEEP)
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = field(default_factory=list)


TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_PREFER_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)
TOLERATION_OP_EXISTS = "Exists"
TOLERATION_OP_EQUAL = "Equal"
# Lt and Gt: the alpha numeric comparisons (TaintTolerationComparisonOperators)
TOLERATION_OPS = (TOLERATION_OP_EQUAL, TOLERATION_OP_EXISTS, "Lt", "Gt")


@dataclass(kw_only=True)
class Taint(Model):
    __k8s__ = "io.k8s.api.core.v1.Taint"

    key: str = field(default="", metadata=KEEP)
    value: str = ""
    effect: str = field(default="", metadata=KEEP)
    time_added: str | None = None

    def to_string(self) -> str:
        """v1.Taint.ToString(): key=value:effect, key:effect when value is empty."""
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(kw_only=True)
class Toleration(Model):
    __k8s__ = "io.k8s.api.core.v1.Toleration"

    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates_taint(self, taint: Taint) -> bool:
        """v1.Toleration.ToleratesTaint (component-helpers semantics).

        An empty effect matches all effects; an empty key with Exists matches all keys and
        values; Exists ignores the value; Equal (or no operator) compares values. The alpha
        numeric operators Lt/Gt compare integer values: taint value < (Lt) or > (Gt) the
        toleration's.
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


@dataclass(kw_only=True)
class Sysctl(Model):
    __k8s__ = "io.k8s.api.core.v1.Sysctl"

    name: str = field(default="", metadata=KEEP)
    value: str = field(default="", metadata=KEEP)


@dataclass(kw_only=True)
class PodSecurityContext(Model):
    __k8s__ = "io.k8s.api.core.v1.PodSecurityContext"

    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    supplemental_groups: list[int] = field(default_factory=list)
    fs_group: int | None = None
    sysctls: list[Sysctl] = field(default_factory=list)
    seccomp_profile: SeccompProfile | None = None


@dataclass(kw_only=True)
class HostAlias(Model):
    __k8s__ = "io.k8s.api.core.v1.HostAlias"

    ip: str = field(default="", metadata=KEEP)
    hostnames: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class LocalObjectReference(Model):
    __k8s__ = "io.k8s.api.core.v1.LocalObjectReference"

    name: str = ""


@dataclass(kw_only=True)
class PodSchedulingGate(Model):
    """A gate that holds the pod out of scheduling until it is removed (KEP-3521)."""

    __k8s__ = "io.k8s.api.core.v1.PodSchedulingGate"

    name: str = field(default="", metadata=KEEP)


@dataclass(kw_only=True)
class PodDNSConfigOption(Model):
    __k8s__ = "io.k8s.api.core.v1.PodDNSConfigOption"

    name: str = ""
    value: str | None = None


@dataclass(kw_only=True)
class PodDNSConfig(Model):
    __k8s__ = "io.k8s.api.core.v1.PodDNSConfig"

    nameservers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[PodDNSConfigOption] = field(default_factory=list)


@dataclass(kw_only=True)
class PodSpec(Model):
    __k8s__ = "io.k8s.api.core.v1.PodSpec"

    volumes: list[Volume] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list, metadata=KEEP)
    ephemeral_containers: list[EphemeralContainer] = field(default_factory=list)
    restart_policy: str = ""
    termination_grace_period_seconds: int | None = None
    active_deadline_seconds: int | None = None
    dns_policy: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    service_account_name: str = ""
    automount_service_account_token: bool | None = None
    node_name: str = ""
    host_network: bool = False
    host_pid: bool = field(default=False, metadata=wire("hostPID"))
    host_ipc: bool = field(default=False, metadata=wire("hostIPC"))
    share_process_namespace: bool | None = None
    security_context: PodSecurityContext | None = None
    hostname: str = ""
    subdomain: str = ""
    # Scheduling fields the node does not act on but the API server checks (so every pod it
    # accepts is one the scheduler can read).
    affinity: Affinity | None = None
    scheduler_name: str = ""
    tolerations: list[Toleration] = field(default_factory=list)
    host_aliases: list[HostAlias] = field(default_factory=list)
    priority_class_name: str = ""
    priority: int | None = None
    dns_config: PodDNSConfig | None = field(default=None, metadata=wire("dnsConfig"))
    preemption_policy: str | None = None
    enable_service_links: bool | None = None
    overhead: ResourceList = field(default_factory=dict)
    topology_spread_constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    image_pull_secrets: list[LocalObjectReference] = field(default_factory=list)
    scheduling_gates: list[PodSchedulingGate] = field(default_factory=list)
    # pod-level resources (KEP-2837): when set, they bound the pod's total requests
    resources: ResourceRequirements | None = None


@dataclass(kw_only=True)
class PodTemplateSpec(Model):
    """What a workload's pods are made from (core/v1 PodTemplateSpec): Go prints both fields
    even when empty (structs are never omitted)."""

    __k8s__ = "io.k8s.api.core.v1.PodTemplateSpec"

    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: PodSpec = field(default_factory=PodSpec, metadata=KEEP)


# --------------------------------------------------------------------------- status


@dataclass(kw_only=True)
class ContainerStateWaiting(Model):
    __k8s__ = "io.k8s.api.core.v1.ContainerStateWaiting"

    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class ContainerStateRunning(Model):
    __k8s__ = "io.k8s.api.core.v1.ContainerStateRunning"

    started_at: str | None = None


@dataclass(kw_only=True)
class ContainerStateTerminated(Model):
    __k8s__ = "io.k8s.api.core.v1.ContainerStateTerminated"

    exit_code: int = field(default=0, metadata=KEEP)
    signal: int = 0
    reason: str = ""
    message: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    container_id: str = field(default="", metadata=wire("containerID"))


@dataclass(kw_only=True)
class ContainerState(Model):
    """At most one of the three is set; none set means Waiting with no reason."""

    __k8s__ = "io.k8s.api.core.v1.ContainerState"


    waiting: ContainerStateWaiting | None = None
    running: ContainerStateRunning | None = None
    terminated: ContainerStateTerminated | None = None


@dataclass(kw_only=True)
class ContainerStatus(Model):
    __k8s__ = "io.k8s.api.core.v1.ContainerStatus"

    name: str = field(default="", metadata=KEEP)
    state: ContainerState = field(default_factory=ContainerState, metadata=KEEP)
    last_state: ContainerState = field(default_factory=ContainerState, metadata=KEEP)
    ready: bool = field(default=False, metadata=KEEP)
    restart_count: int = field(default=0, metadata=KEEP)
    image: str = field(default="", metadata=KEEP)
    image_id: str = field(default="", metadata=wire("imageID", keep=True))
    container_id: str = field(default="", metadata=wire("containerID"))
    started: bool | None = None


@dataclass(kw_only=True)
class PodCondition(Model):
    __k8s__ = "io.k8s.api.core.v1.PodCondition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    observed_generation: int | None = None
    last_probe_time: str | None = field(default=None, metadata=KEEP)
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class PodIP(Model):
    __k8s__ = "io.k8s.api.core.v1.PodIP"

    ip: str = field(default="", metadata=wire("ip"))


@dataclass(kw_only=True)
class HostIP(Model):
    __k8s__ = "io.k8s.api.core.v1.HostIP"

    ip: str = field(default="", metadata=wire("ip"))


@dataclass(kw_only=True)
class PodStatus(Model):
    __k8s__ = "io.k8s.api.core.v1.PodStatus"

    phase: str = ""
    conditions: list[PodCondition] = field(default_factory=list)
    message: str = ""
    reason: str = ""
    nominated_node_name: str = ""
    host_ip: str = field(default="", metadata=wire("hostIP"))
    host_ips: list[HostIP] = field(default_factory=list, metadata=wire("hostIPs"))
    pod_ip: str = field(default="", metadata=wire("podIP"))
    pod_ips: list[PodIP] = field(default_factory=list, metadata=wire("podIPs"))
    start_time: str | None = None
    init_container_statuses: list[ContainerStatus] = field(default_factory=list)
    container_statuses: list[ContainerStatus] = field(default_factory=list)
    qos_class: str = field(default="", metadata=wire("qosClass"))
    ephemeral_container_statuses: list[ContainerStatus] = field(default_factory=list)


@dataclass(kw_only=True)
class Pod(ObjectAccessors, Model):
    __k8s__ = "io.k8s.api.core.v1.Pod"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Pod", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: PodSpec = field(default_factory=PodSpec, metadata=KEEP)
    status: PodStatus = field(default_factory=PodStatus)

    def format(self) -> str:
        """kubelet's format.Pod: `name_namespace(uid)`, used in its messages."""
        return f"{self.metadata.name}_{self.metadata.namespace}({self.metadata.uid})"

    def sidecar_names(self) -> set[str]:
        """Names of the restartable init containers (sidecars)."""
        return {c.name for c in self.spec.init_containers if is_restartable_init_container(c)}

    def all_containers(self) -> list[Container]:
        return [*self.spec.init_containers, *self.spec.containers]


def is_restartable_init_container(c: Container) -> bool:
    """podutil.IsRestartableInitContainer: an init container with restartPolicy Always."""
    return c.restart_policy == CONTAINER_RESTART_ALWAYS
