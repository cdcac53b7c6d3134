"""One Protocol per extension point, plus the Handle plugins receive.

Mirrors staging/src/k8s.io/kube-scheduler/framework/interface.go. A plugin is
any object with `name()` and the methods of the points it implements; the
runtime discovers points with `isinstance(p, FilterPlugin)` etc.
(runtime_checkable), exactly as upstream type-asserts.

Beyond upstream: a Filter or Score plugin may also own a *batch twin*
(`BatchFilterPlugin.filter_batch`, `BatchScorePlugin.score_batch`) that decides for every
row of the snapshot's NodeTable at once, with the same arithmetic as its per-node method.
The scheduler's vectorised path (pysched.fast) finds twins through these Protocols and
falls back to the per-node methods whenever one is missing or declines (returns None).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from pykubelet.api.objects import Namespace
from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import ClusterEventWithHint
from pysched.framework.node_table import Ints, Mask, NodeTable, NominatedLoad
from pysched.framework.status import Status
from pysched.framework.types import (
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
)

NodeInfos = list[NodeInfo]  # spelled once: inside NodeInfoLister, ``list`` is a method


@runtime_checkable
class Plugin(Protocol):
    def name(self) -> str: ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    """less(a, b) on queued pod infos (objects with .pod and .timestamp)."""

    def less(self, a: Any, b: Any) -> bool: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]: ...


class PreFilterExtensions(Protocol):
    """Update PreFilter state for a pod added/removed on a node (preemption, nominated pods)."""

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: Pod,
        pod_info_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin with a vectorised twin over the NodeTable."""

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask | None:
        """Per table row, True where ``filter`` would pass; None when this pod (or this
        plugin's configuration) is beyond the twin, and the per-node method must decide.
        ``nominated`` is only given when every active filter is resource-monotone: count
        those requests as the first of the framework's two passes would."""
        ...

    def resource_monotone(self) -> bool:
        """True when other pods on a node change this filter's verdict only through their
        resource requests, and only for the worse as they grow (or not at all): then
        nominated pods are counted through ``nominated``, and preemption may walk victims on
        request sums."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """filtered_node_status_map: node name -> the Status that rejected it."""

    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status_map: Any
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Status | None: ...


class ScoreExtensions(Protocol):
    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> tuple[int, Status | None]: ...

    def score_extensions(self) -> ScoreExtensions | None: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    """A Score plugin with a vectorised twin over the NodeTable."""

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints | None:
        """Normalised scores (Score then NormalizeScore over exactly these nodes) for table
        rows ``rows``, or None when the per-node methods must decide."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Returns (status, timeout seconds); Wait parks the pod until allowed/rejected or timeout."""

    def permit(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> tuple[Status | None, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Skip means "not mine, ask the next binder"."""

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


# ---------------------------------------------------------------- what the Handle gives plugins


class NodeInfoLister(Protocol):
    """fwk.NodeInfoLister over the cycle's snapshot."""

    def list(self) -> NodeInfos: ...

    def have_pods_with_affinity_list(self) -> NodeInfos: ...

    def have_pods_with_required_anti_affinity_list(self) -> NodeInfos: ...

    def get(self, node_name: str) -> NodeInfo:
        """Raises KeyError when the node is not in the snapshot."""
        ...


class SharedLister(Protocol):
    def node_infos(self) -> NodeInfoLister: ...


class PodNominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...


class Binder(Protocol):
    """Writes the binding (pod.spec.nodeName) to wherever pods live; raises on failure."""

    def bind(self, pod: Pod, node_name: str) -> None: ...


NamespaceLister = Callable[[str], Namespace | None]


class Handle(Protocol):
    """What plugins may use of the scheduler (upstream frameworkImpl; here Framework)."""

    def snapshot_shared_lister(self) -> SharedLister: ...

    @property
    def nominator(self) -> PodNominator | None: ...

    @property
    def binder(self) -> Binder | None: ...

    def namespace_labels(self, namespace: str) -> dict[str, str] | None: ...

    def list_namespaces(self) -> Sequence[Namespace]:
        """All known namespaces (PodAffinityTerm.namespaceSelector resolution)."""
        ...

    def extra(self, key: str) -> Any:
        """Extra dependencies by name; None when absent. Read by the plugins here:
        "metrics" (observe_extension_point), "workload_objects" / "default_spread_selector"
        (PodTopologySpread system defaults); by preemption: "pdb_lister", "evict", ..."""
        ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: Pod,
        pod_info_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status: ...
