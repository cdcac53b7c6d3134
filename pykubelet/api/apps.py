"""apps/v1 workloads (ReplicaSet) and autoscaling/v1 Scale, the view of a workload's
replicas that ``kubectl scale`` reads and writes through the ``scale`` subresource.

Same rules as types.py: snake_case attributes, camelCase on the wire, Go's omitempty on the
way out (``keep`` where upstream's JSON tag has none), each class naming its upstream type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykubelet.api.types import KEEP, LabelSelector, Model, ObjectMeta

# core/v1's, declared once in types.py; re-exported for the workloads that name it from here
from pykubelet.api.types import PodTemplateSpec as PodTemplateSpec

_APPS = "io.k8s.api.apps.v1."

# pkg/controller/replicaset: the ReplicaFailure condition type
REPLICA_SET_REPLICA_FAILURE = "ReplicaFailure"


@dataclass(kw_only=True)
class ReplicaSetSpec(Model):
    __k8s__ = _APPS + "ReplicaSetSpec"

    replicas: int | None = None
    min_ready_seconds: int = 0
    selector: LabelSelector | None = None
    template: PodTemplateSpec = field(default_factory=PodTemplateSpec, metadata=KEEP)


@dataclass(kw_only=True)
class ReplicaSetCondition(Model):
    __k8s__ = _APPS + "ReplicaSetCondition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class ReplicaSetStatus(Model):
    __k8s__ = _APPS + "ReplicaSetStatus"

    replicas: int = field(default=0, metadata=KEEP)
    fully_labeled_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    terminating_replicas: int | None = None
    observed_generation: int = 0
    conditions: list[ReplicaSetCondition] = field(default_factory=list)


@dataclass(kw_only=True)
class ReplicaSet(Model):
    __k8s__ = _APPS + "ReplicaSet"

    api_version: str = field(default="apps/v1", metadata=KEEP)
    kind: str = field(default="ReplicaSet", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: ReplicaSetSpec = field(default_factory=ReplicaSetSpec, metadata=KEEP)
    status: ReplicaSetStatus = field(default_factory=ReplicaSetStatus, metadata=KEEP)


@dataclass(kw_only=True)
class ScaleSpec(Model):
    __k8s__ = "io.k8s.api.autoscaling.v1.ScaleSpec"

    replicas: int = 0


@dataclass(kw_only=True)
class ScaleStatus(Model):
    __k8s__ = "io.k8s.api.autoscaling.v1.ScaleStatus"

    replicas: int = field(default=0, metadata=KEEP)
    selector: str = ""


@dataclass(kw_only=True)
class Scale(Model):
    __k8s__ = "io.k8s.api.autoscaling.v1.Scale"

    api_version: str = field(default="autoscaling/v1", metadata=KEEP)
    kind: str = field(default="Scale", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: ScaleSpec = field(default_factory=ScaleSpec, metadata=KEEP)
    status: ScaleStatus = field(default_factory=ScaleStatus, metadata=KEEP)


# --------------------------------------------------------------------------- Deployment

DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
ROLLING_UPDATE = "RollingUpdate"
RECREATE = "Recreate"


@dataclass(kw_only=True)
class RollingUpdateDeployment(Model):
    __k8s__ = _APPS + "RollingUpdateDeployment"

    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


@dataclass(kw_only=True)
class DeploymentStrategy(Model):
    __k8s__ = _APPS + "DeploymentStrategy"

    type: str = ""
    rolling_update: RollingUpdateDeployment | None = None


@dataclass(kw_only=True)
class DeploymentSpec(Model):
    __k8s__ = _APPS + "DeploymentSpec"

    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = field(default_factory=PodTemplateSpec, metadata=KEEP)
    strategy: DeploymentStrategy = field(default_factory=DeploymentStrategy, metadata=KEEP)
    min_ready_seconds: int = 0
    revision_history_limit: int | None = None
    paused: bool = False
    progress_deadline_seconds: int | None = None


@dataclass(kw_only=True)
class DeploymentCondition(Model):
    __k8s__ = _APPS + "DeploymentCondition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    last_update_time: str | None = None
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class DeploymentStatus(Model):
    __k8s__ = _APPS + "DeploymentStatus"

    observed_generation: int = 0
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0
    terminating_replicas: int | None = None
    conditions: list[DeploymentCondition] = field(default_factory=list)
    collision_count: int | None = None


@dataclass(kw_only=True)
class Deployment(Model):
    __k8s__ = _APPS + "Deployment"

    api_version: str = field(default="apps/v1", metadata=KEEP)
    kind: str = field(default="Deployment", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: DeploymentSpec = field(default_factory=DeploymentSpec, metadata=KEEP)
    status: DeploymentStatus = field(default_factory=DeploymentStatus, metadata=KEEP)
