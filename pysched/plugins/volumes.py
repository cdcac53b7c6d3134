"""Volume and DRA plugins of the default profile, for nodes that have no volumes.

VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone and
DynamicResources are in kube-scheduler's default profile. Our nodes are VMs or
lab namespaces with no persistent volumes or resource claims, so, as upstream
does for a pod without PVCs/claims, their PreFilter returns Skip (their Filter
is then never run) and they never score. They exist so default and user
configs naming them load and so the profile's plugin list matches upstream's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.node_table import Ints, Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import NodeInfo, PreFilterResult

VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
DYNAMIC_RESOURCES = "DynamicResources"


class _NoVolumes:
    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        return self._name

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, Status(Code.SKIP)

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask:
        return table.every_row

    def resource_monotone(self) -> bool:
        return True  # no volumes: other pods play no part


class _NothingReserved(_NoVolumes):
    """Reserve, Unreserve and PreBind with nothing to reserve or bind."""

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None


class _NoVolumesBinding(_NothingReserved):
    """VolumeBinding also reserves, pre-binds and (with capacity scoring) scores."""

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        return Status(Code.SKIP)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return 0, None

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints:
        return np.zeros(len(rows), np.int64)

    def score_extensions(self) -> None:
        return None


class _NoClaims(_NothingReserved):
    """DynamicResources: for a pod without claims its PostFilter has nothing to deallocate,
    which upstream reports as "no new claims to deallocate" (it precedes DefaultPreemption,
    so that text leads the post-filter part of the FitError message)."""

    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status_map: Any
    ) -> tuple[Any, Status | None]:
        return None, Status(Code.UNSCHEDULABLE, [NO_NEW_CLAIMS])


NO_NEW_CLAIMS = "no new claims to deallocate"


def factory(name: str) -> Any:
    cls = {VOLUME_BINDING: _NoVolumesBinding, DYNAMIC_RESOURCES: _NoClaims}.get(name, _NoVolumes)

    def new(args: Any, handle: Any) -> _NoVolumes:
        return cls(name)

    return new
