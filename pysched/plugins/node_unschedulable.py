"""NodeUnschedulable: unschedulable nodes reject pods not tolerating the unschedulable taint."""

from __future__ import annotations

from typing import Any

from pykubelet.api.types import TAINT_EFFECT_NO_SCHEDULE, Pod, Taint
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import ClusterEventWithHint, QueueingHint
from pysched.framework.labels import tolerations_tolerate_taint
from pysched.framework.node_table import Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import NodeInfo
from pysched.plugins.helper import node_stopped_rejecting, taint_events

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=TAINT_EFFECT_NO_SCHEDULE)


class NodeUnschedulable:
    def name(self) -> str:
        return NAME

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status(Code.ERROR, ["node not found"])
        if not node.spec.unschedulable:
            return None
        if tolerations_tolerate_taint(pod.spec.tolerations, _UNSCHEDULABLE_TAINT):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNSCHEDULABLE])

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask:
        if tolerations_tolerate_taint(pod.spec.tolerations, _UNSCHEDULABLE_TAINT):
            return table.every_row
        return ~table.unschedulable

    def resource_monotone(self) -> bool:
        return True  # other pods play no part

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return taint_events(_after_node_change, _after_pod_toleration_change)


def _rejects(pod: Pod, node: Any) -> bool:
    return bool(node.spec.unschedulable) and not tolerations_tolerate_taint(
        pod.spec.tolerations, _UNSCHEDULABLE_TAINT
    )


def _after_node_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """A node added schedulable, or one that stopped being unschedulable for this pod."""
    return node_stopped_rejecting(_rejects, pod, old, new)


def _after_pod_toleration_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    if (
        new is not None
        and new.metadata.uid == pod.metadata.uid
        and tolerations_tolerate_taint(new.spec.tolerations, _UNSCHEDULABLE_TAINT)
    ):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Any) -> NodeUnschedulable:
    return NodeUnschedulable()
