"""Typed plugin args (kubescheduler.config.k8s.io/v1 *Args), with upstream defaults.

pysched.config decodes `pluginConfig[].args` into these; a plugin factory gets
one of them (already defaulted and validated) or None for arg-less plugins.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykubelet.api.types import NodeSelector, PreferredSchedulingTerm, TopologySpreadConstraint

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


@dataclass(slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


def default_resource_spec() -> list[ResourceSpec]:
    return [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]


@dataclass(slots=True)
class UtilizationShapePoint:
    utilization: int
    score: int


@dataclass(slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: list[ResourceSpec] = field(default_factory=default_resource_spec)
    requested_to_capacity_ratio_shape: list[UtilizationShapePoint] = field(default_factory=list)


@dataclass(slots=True)
class NodeResourcesFitArgs:
    ignored_resources: list[str] = field(default_factory=list)
    ignored_resource_groups: list[str] = field(default_factory=list)
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)


@dataclass(slots=True)
class NodeResourcesBalancedAllocationArgs:
    resources: list[ResourceSpec] = field(default_factory=default_resource_spec)


@dataclass(slots=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(slots=True)
class NodeAffinityArgs:
    added_required: NodeSelector | None = None
    added_preferred: list[PreferredSchedulingTerm] = field(default_factory=list)


def system_default_constraints() -> list[TopologySpreadConstraint]:
    """PodTopologySpread's system defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)."""
    return [
        TopologySpreadConstraint(
            max_skew=3, topology_key="kubernetes.io/hostname", when_unsatisfiable="ScheduleAnyway"
        ),
        TopologySpreadConstraint(
            max_skew=5, topology_key="topology.kubernetes.io/zone",
            when_unsatisfiable="ScheduleAnyway",
        ),
    ]


@dataclass(slots=True)
class PodTopologySpreadArgs:
    default_constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    defaulting_type: str = SYSTEM_DEFAULTING


@dataclass(slots=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


@dataclass(slots=True)
class VolumeBindingArgs:
    """Accepted for config compatibility; nodes here have no volumes."""

    bind_timeout_seconds: int = 600


@dataclass(slots=True)
class DynamicResourcesArgs:
    """Accepted for config compatibility; no resource claims are modelled."""

    filter_timeout: str = "10s"
