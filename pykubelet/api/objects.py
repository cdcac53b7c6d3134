"""The other kinds the API server serves, beside the Pod (types.py): core/v1 Node, Namespace,
Event, ConfigMap, Secret, ServiceAccount, Binding; coordination.k8s.io/v1 Lease;
scheduling.k8s.io/v1 PriorityClass; policy/v1 PodDisruptionBudget and Eviction; meta/v1
DeleteOptions and Status.

Same rules as types.py: snake_case attributes, camelCase on the wire, Go's omitempty on the
way out, and each class naming the upstream type it models (`__k8s__`) so the walker checks,
and keeps in `unmodelled`, whatever upstream field a class does not type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykubelet.api.machinery.codec import BASE64_VALUES
from pykubelet.api.machinery.meta import ObjectAccessors
from pykubelet.api.types import (
    KEEP,
    IntOrString,
    LabelSelector,
    LocalObjectReference,
    Model,
    ObjectMeta,
    ResourceList,
    Taint,
    wire,
)

_CORE = "io.k8s.api.core.v1."
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."

NODE_READY = "Ready"
NAMESPACE_ACTIVE = "Active"
NAMESPACE_TERMINATING = "Terminating"
FINALIZER_KUBERNETES = "kubernetes"
SECRET_TYPE_OPAQUE = "Opaque"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)
EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"


# --------------------------------------------------------------------------- shared


@dataclass(kw_only=True)
class ObjectReference(Model):
    __k8s__ = _CORE + "ObjectReference"

    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""
    field_path: str = ""


@dataclass(kw_only=True)
class Condition(Model):
    """metav1.Condition (PodDisruptionBudget's conditions)."""

    __k8s__ = _META + "Condition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    observed_generation: int = 0
    last_transition_time: str | None = field(default=None, metadata=KEEP)
    reason: str = field(default="", metadata=KEEP)
    message: str = field(default="", metadata=KEEP)


@dataclass(kw_only=True)
class ListMeta(Model):
    __k8s__ = _META + "ListMeta"

    self_link: str = ""
    resource_version: str = ""
    continue_: str = field(default="", metadata=wire("continue"))
    remaining_item_count: int | None = None


# --------------------------------------------------------------------------- Node


@dataclass(kw_only=True)
class NodeSpec(Model):
    __k8s__ = _CORE + "NodeSpec"

    pod_cidr: str = field(default="", metadata=wire("podCIDR"))
    pod_cidrs: list[str] = field(default_factory=list, metadata=wire("podCIDRs"))
    provider_id: str = field(default="", metadata=wire("providerID"))
    unschedulable: bool = False
    taints: list[Taint] = field(default_factory=list)


@dataclass(kw_only=True)
class NodeCondition(Model):
    __k8s__ = _CORE + "NodeCondition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    last_heartbeat_time: str | None = None
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class NodeAddress(Model):
    __k8s__ = _CORE + "NodeAddress"

    type: str = field(default="", metadata=KEEP)
    address: str = field(default="", metadata=KEEP)


@dataclass(kw_only=True)
class DaemonEndpoint(Model):
    __k8s__ = _CORE + "DaemonEndpoint"

    port: int = field(default=0, metadata=wire("Port", keep=True))


@dataclass(kw_only=True)
class NodeDaemonEndpoints(Model):
    __k8s__ = _CORE + "NodeDaemonEndpoints"

    kubelet_endpoint: DaemonEndpoint = field(default_factory=DaemonEndpoint)


@dataclass(kw_only=True)
class NodeSystemInfo(Model):
    __k8s__ = _CORE + "NodeSystemInfo"

    machine_id: str = field(default="", metadata=wire("machineID", keep=True))
    system_uuid: str = field(default="", metadata=wire("systemUUID", keep=True))
    boot_id: str = field(default="", metadata=wire("bootID", keep=True))
    kernel_version: str = field(default="", metadata=KEEP)
    os_image: str = field(default="", metadata=wire("osImage", keep=True))
    container_runtime_version: str = field(default="", metadata=KEEP)
    kubelet_version: str = field(default="", metadata=KEEP)
    kube_proxy_version: str = field(default="", metadata=KEEP)
    operating_system: str = field(default="", metadata=KEEP)
    architecture: str = field(default="", metadata=KEEP)


@dataclass(kw_only=True)
class ContainerImage(Model):
    __k8s__ = _CORE + "ContainerImage"

    names: list[str] = field(default_factory=list)
    size_bytes: int = 0


@dataclass(kw_only=True)
class NodeStatus(Model):
    __k8s__ = _CORE + "NodeStatus"

    capacity: ResourceList = field(default_factory=dict)
    allocatable: ResourceList = field(default_factory=dict)
    phase: str = ""
    conditions: list[NodeCondition] = field(default_factory=list)
    addresses: list[NodeAddress] = field(default_factory=list)
    daemon_endpoints: NodeDaemonEndpoints = field(default_factory=NodeDaemonEndpoints)
    node_info: NodeSystemInfo = field(default_factory=NodeSystemInfo)
    images: list[ContainerImage] = field(default_factory=list)


@dataclass(kw_only=True)
class Node(ObjectAccessors, Model):
    __k8s__ = _CORE + "Node"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Node", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: NodeSpec = field(default_factory=NodeSpec, metadata=KEEP)
    status: NodeStatus = field(default_factory=NodeStatus, metadata=KEEP)

    def condition(self, type_: str) -> NodeCondition | None:
        return next((c for c in self.status.conditions if c.type == type_), None)


# --------------------------------------------------------------------------- Namespace


@dataclass(kw_only=True)
class NamespaceSpec(Model):
    __k8s__ = _CORE + "NamespaceSpec"

    finalizers: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class NamespaceCondition(Model):
    __k8s__ = _CORE + "NamespaceCondition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class NamespaceStatus(Model):
    __k8s__ = _CORE + "NamespaceStatus"

    phase: str = ""
    conditions: list[NamespaceCondition] = field(default_factory=list)


@dataclass(kw_only=True)
class Namespace(Model):
    __k8s__ = _CORE + "Namespace"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Namespace", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: NamespaceSpec = field(default_factory=NamespaceSpec, metadata=KEEP)
    status: NamespaceStatus = field(default_factory=NamespaceStatus, metadata=KEEP)


# --------------------------------------------------------------------------- Event


@dataclass(kw_only=True)
class EventSource(Model):
    __k8s__ = _CORE + "EventSource"

    component: str = ""
    host: str = ""


@dataclass(kw_only=True)
class EventSeries(Model):
    __k8s__ = _CORE + "EventSeries"

    count: int = 0
    last_observed_time: str | None = None


@dataclass(kw_only=True)
class Event(Model):
    """core/v1 Event, as kubelet, the scheduler and `kubectl describe` use it."""

    __k8s__ = _CORE + "Event"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Event", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    involved_object: ObjectReference = field(default_factory=ObjectReference, metadata=KEEP)
    reason: str = ""
    message: str = ""
    source: EventSource = field(default_factory=EventSource)
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    count: int = 0
    type: str = ""
    event_time: str | None = None
    series: EventSeries | None = None
    action: str = ""
    related: ObjectReference | None = None
    reporting_component: str = field(default="", metadata=KEEP)
    reporting_instance: str = field(default="", metadata=KEEP)


# --------------------------------------------------------------------------- ConfigMap, Secret


@dataclass(kw_only=True)
class ConfigMap(Model):
    __k8s__ = _CORE + "ConfigMap"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="ConfigMap", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    immutable: bool | None = None
    data: dict[str, str] = field(default_factory=dict)
    # base64, as on the wire
    binary_data: dict[str, str] = field(default_factory=dict, metadata=BASE64_VALUES)


@dataclass(kw_only=True)
class Secret(Model):
    __k8s__ = _CORE + "Secret"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Secret", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    immutable: bool | None = None
    data: dict[str, str] = field(default_factory=dict, metadata=BASE64_VALUES)  # base64
    # write-only convenience: merged into data (base64-encoded) when the secret is stored
    string_data: dict[str, str] = field(default_factory=dict)
    type: str = ""


# --------------------------------------------------------------------------- ServiceAccount


@dataclass(kw_only=True)
class ServiceAccount(Model):
    """core/v1 ServiceAccount: a name pods run as; its tokens are TokenRequests' JWTs."""

    __k8s__ = _CORE + "ServiceAccount"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="ServiceAccount", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    secrets: list[ObjectReference] = field(default_factory=list)
    image_pull_secrets: list[LocalObjectReference] = field(default_factory=list)
    automount_service_account_token: bool | None = None


# --------------------------------------------------------------------------- Binding


@dataclass(kw_only=True)
class Binding(Model):
    """pods/binding: the scheduler's decision, target a Node."""

    __k8s__ = _CORE + "Binding"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Binding", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    target: ObjectReference = field(default_factory=ObjectReference, metadata=KEEP)


# --------------------------------------------------------------------------- Lease


@dataclass(kw_only=True)
class LeaseSpec(Model):
    __k8s__ = "io.k8s.api.coordination.v1.LeaseSpec"

    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None  # MicroTime, RFC 3339 with microseconds
    renew_time: str | None = None
    lease_transitions: int | None = None
    strategy: str | None = None
    preferred_holder: str | None = None


@dataclass(kw_only=True)
class Lease(Model):
    __k8s__ = "io.k8s.api.coordination.v1.Lease"

    api_version: str = field(default="coordination.k8s.io/v1", metadata=KEEP)
    kind: str = field(default="Lease", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: LeaseSpec = field(default_factory=LeaseSpec, metadata=KEEP)


# --------------------------------------------------------------------------- PriorityClass


@dataclass(kw_only=True)
class PriorityClass(Model):
    __k8s__ = "io.k8s.api.scheduling.v1.PriorityClass"

    api_version: str = field(default="scheduling.k8s.io/v1", metadata=KEEP)
    kind: str = field(default="PriorityClass", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    value: int = field(default=0, metadata=KEEP)
    global_default: bool = False
    description: str = ""
    preemption_policy: str | None = None


# --------------------------------------------------------------------------- policy/v1


@dataclass(kw_only=True)
class PodDisruptionBudgetSpec(Model):
    __k8s__ = "io.k8s.api.policy.v1.PodDisruptionBudgetSpec"

    min_available: IntOrString | None = None
    selector: LabelSelector | None = None
    max_unavailable: IntOrString | None = None
    unhealthy_pod_eviction_policy: str | None = None


@dataclass(kw_only=True)
class PodDisruptionBudgetStatus(Model):
    __k8s__ = "io.k8s.api.policy.v1.PodDisruptionBudgetStatus"

    observed_generation: int = 0
    disrupted_pods: dict[str, str] = field(default_factory=dict)
    disruptions_allowed: int = field(default=0, metadata=KEEP)
    current_healthy: int = field(default=0, metadata=KEEP)
    desired_healthy: int = field(default=0, metadata=KEEP)
    expected_pods: int = field(default=0, metadata=KEEP)
    conditions: list[Condition] = field(default_factory=list)


@dataclass(kw_only=True)
class PodDisruptionBudget(Model):
    __k8s__ = "io.k8s.api.policy.v1.PodDisruptionBudget"

    api_version: str = field(default="policy/v1", metadata=KEEP)
    kind: str = field(default="PodDisruptionBudget", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: PodDisruptionBudgetSpec = field(default_factory=PodDisruptionBudgetSpec, metadata=KEEP)
    status: PodDisruptionBudgetStatus = field(
        default_factory=PodDisruptionBudgetStatus, metadata=KEEP
    )


@dataclass(kw_only=True)
class Preconditions(Model):
    __k8s__ = _META + "Preconditions"

    uid: str | None = None
    resource_version: str | None = None


@dataclass(kw_only=True)
class DeleteOptions(Model):
    """meta/v1 DeleteOptions: the body of a DELETE, and of an Eviction."""

    __k8s__ = _META + "DeleteOptions"

    api_version: str = ""
    kind: str = ""
    grace_period_seconds: int | None = None
    preconditions: Preconditions | None = None
    orphan_dependents: bool | None = None
    propagation_policy: str | None = None
    dry_run: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Eviction(Model):
    """pods/eviction: delete a pod unless a PodDisruptionBudget forbids it."""

    __k8s__ = "io.k8s.api.policy.v1.Eviction"

    api_version: str = field(default="policy/v1", metadata=KEEP)
    kind: str = field(default="Eviction", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    delete_options: DeleteOptions | None = None


# --------------------------------------------------------------------------- Status


@dataclass(kw_only=True)
class StatusCause(Model):
    __k8s__ = _META + "StatusCause"

    reason: str = ""
    message: str = ""
    field_: str = field(default="", metadata=wire("field"))


@dataclass(kw_only=True)
class StatusDetails(Model):
    __k8s__ = _META + "StatusDetails"

    name: str = ""
    group: str = ""
    kind: str = ""
    uid: str = ""
    causes: list[StatusCause] = field(default_factory=list)
    retry_after_seconds: int = 0


@dataclass(kw_only=True)
class Status(Model):
    """meta/v1 Status: what every failed (and some successful) call answers."""

    __k8s__ = _META + "Status"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Status", metadata=KEEP)
    metadata: ListMeta = field(default_factory=ListMeta, metadata=KEEP)
    status: str = ""
    message: str = ""
    reason: str = ""
    details: StatusDetails | None = None
    code: int = 0
