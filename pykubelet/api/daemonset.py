"""apps/v1 DaemonSet: one pod of a template on every eligible node. Same rules as
types.py and apps.py: snake_case attributes, camelCase on the wire, Go's omitempty on the
way out (``keep`` where upstream's JSON tag has none)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykubelet.api.apps import PodTemplateSpec
from pykubelet.api.types import KEEP, LabelSelector, Model, ObjectMeta

_APPS = "io.k8s.api.apps.v1."

ON_DELETE = "OnDelete"
ROLLING_UPDATE = "RollingUpdate"
DEFAULT_MAX_UNAVAILABLE = 1
DEFAULT_MAX_SURGE = 0
DEFAULT_REVISION_HISTORY_LIMIT = 10
# the v1 DaemonSet's spec.templateGeneration (internal), kept as this annotation
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


@dataclass(kw_only=True)
class RollingUpdateDaemonSet(Model):
    __k8s__ = _APPS + "RollingUpdateDaemonSet"

    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


@dataclass(kw_only=True)
class DaemonSetUpdateStrategy(Model):
    __k8s__ = _APPS + "DaemonSetUpdateStrategy"

    type: str = ""
    rolling_update: RollingUpdateDaemonSet | None = None


@dataclass(kw_only=True)
class DaemonSetSpec(Model):
    __k8s__ = _APPS + "DaemonSetSpec"

    selector: LabelSelector | None = None
    template: PodTemplateSpec = field(default_factory=PodTemplateSpec, metadata=KEEP)
    update_strategy: DaemonSetUpdateStrategy = field(
        default_factory=DaemonSetUpdateStrategy, metadata=KEEP)
    min_ready_seconds: int = 0
    revision_history_limit: int | None = None


@dataclass(kw_only=True)
class DaemonSetCondition(Model):
    __k8s__ = _APPS + "DaemonSetCondition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class DaemonSetStatus(Model):
    __k8s__ = _APPS + "DaemonSetStatus"

    current_number_scheduled: int = field(default=0, metadata=KEEP)
    number_misscheduled: int = field(default=0, metadata=KEEP)
    desired_number_scheduled: int = field(default=0, metadata=KEEP)
    number_ready: int = field(default=0, metadata=KEEP)
    observed_generation: int = 0
    updated_number_scheduled: int = 0
    number_available: int = 0
    number_unavailable: int = 0
    collision_count: int | None = None
    conditions: list[DaemonSetCondition] = field(default_factory=list)


@dataclass(kw_only=True)
class DaemonSet(Model):
    __k8s__ = _APPS + "DaemonSet"

    api_version: str = field(default="apps/v1", metadata=KEEP)
    kind: str = field(default="DaemonSet", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: DaemonSetSpec = field(default_factory=DaemonSetSpec, metadata=KEEP)
    status: DaemonSetStatus = field(default_factory=DaemonSetStatus, metadata=KEEP)
