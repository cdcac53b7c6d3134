"""NodeName: a pod with spec.nodeName fits only that node."""

from __future__ import annotations

from typing import Any

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from pysched.framework.node_table import Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import NodeInfo
from pysched.plugins import node_fits

NAME = node_fits.NODE_NAME
ERR_REASON = node_fits.NODE_NAME_ERR_REASON
fits = node_fits.node_name_fits


class NodeName:
    def name(self) -> str:
        return NAME

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None:
            return Status(Code.ERROR, ["node not found"])
        if not fits(pod, node_info):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON])
        return None

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask | None:
        if pod.spec.node_name:
            return None  # a pod naming its node: the per-node method (one node fits)
        return table.every_row

    def resource_monotone(self) -> bool:
        return True  # other pods play no part

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD), _node_added)]


def _node_added(pod: Any, old: Any, new: Any) -> QueueingHint:
    if new is None or not pod.spec.node_name or pod.spec.node_name == new.metadata.name:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Any) -> NodeName:
    return NodeName()
