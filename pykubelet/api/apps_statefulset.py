"""apps/v1 StatefulSet: pods with stable names ``NAME-0..N-1`` made from one template,
started, stopped and updated in ordinal order (k8s.io/api/apps/v1 types.go).

Same rules as types.py: snake_case attributes, camelCase on the wire, Go's omitempty on the
way out (``keep`` where upstream's JSON tag has none). ``spec.volumeClaimTemplates`` is not
modelled: it stays in the spec's unmodelled bucket, and validation refuses it while the
cluster has no storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykubelet.api.apps import PodTemplateSpec
from pykubelet.api.types import KEEP, LabelSelector, Model, ObjectMeta

_APPS = "io.k8s.api.apps.v1."

# PodManagementPolicyType
ORDERED_READY = "OrderedReady"
PARALLEL = "Parallel"
# StatefulSetUpdateStrategyType
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
# PersistentVolumeClaimRetentionPolicyType
RETAIN = "Retain"
DELETE = "Delete"

DEFAULT_REVISION_HISTORY_LIMIT = 10

# labels the controller puts on every pod (apps/v1 well-known labels)
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"


@dataclass(kw_only=True)
class RollingUpdateStatefulSetStrategy(Model):
    __k8s__ = _APPS + "RollingUpdateStatefulSetStrategy"

    partition: int | None = None
    max_unavailable: int | str | None = None


@dataclass(kw_only=True)
class StatefulSetUpdateStrategy(Model):
    __k8s__ = _APPS + "StatefulSetUpdateStrategy"

    type: str = ""
    rolling_update: RollingUpdateStatefulSetStrategy | None = None


@dataclass(kw_only=True)
class StatefulSetPersistentVolumeClaimRetentionPolicy(Model):
    __k8s__ = _APPS + "StatefulSetPersistentVolumeClaimRetentionPolicy"

    when_deleted: str = ""
    when_scaled: str = ""


@dataclass(kw_only=True)
class StatefulSetOrdinals(Model):
    __k8s__ = _APPS + "StatefulSetOrdinals"

    start: int = 0


@dataclass(kw_only=True)
class StatefulSetSpec(Model):
    __k8s__ = _APPS + "StatefulSetSpec"

    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = field(default_factory=PodTemplateSpec, metadata=KEEP)
    service_name: str = ""
    pod_management_policy: str = ""
    update_strategy: StatefulSetUpdateStrategy = field(
        default_factory=StatefulSetUpdateStrategy, metadata=KEEP)
    revision_history_limit: int | None = None
    min_ready_seconds: int = 0
    persistent_volume_claim_retention_policy: (
        StatefulSetPersistentVolumeClaimRetentionPolicy | None) = None
    ordinals: StatefulSetOrdinals | None = None


@dataclass(kw_only=True)
class StatefulSetCondition(Model):
    __k8s__ = _APPS + "StatefulSetCondition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class StatefulSetStatus(Model):
    __k8s__ = _APPS + "StatefulSetStatus"

    observed_generation: int = 0
    replicas: int = field(default=0, metadata=KEEP)
    ready_replicas: int = 0
    current_replicas: int = 0
    updated_replicas: int = 0
    current_revision: str = ""
    update_revision: str = ""
    collision_count: int | None = None
    conditions: list[StatefulSetCondition] = field(default_factory=list)
    available_replicas: int = field(default=0, metadata=KEEP)


@dataclass(kw_only=True)
class StatefulSet(Model):
    __k8s__ = _APPS + "StatefulSet"

    api_version: str = field(default="apps/v1", metadata=KEEP)
    kind: str = field(default="StatefulSet", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: StatefulSetSpec = field(default_factory=StatefulSetSpec, metadata=KEEP)
    status: StatefulSetStatus = field(default_factory=StatefulSetStatus, metadata=KEEP)
