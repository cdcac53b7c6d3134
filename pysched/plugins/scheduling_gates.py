"""SchedulingGates: a pod with spec.schedulingGates waits outside the active queue."""

from __future__ import annotations

from typing import Any

from pykubelet.api.types import Pod
from pysched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from pysched.framework.status import Code, Status

NAME = "SchedulingGates"


class SchedulingGates:
    def name(self) -> str:
        return NAME

    def pre_enqueue(self, pod: Pod) -> Status | None:
        gates = pod.spec.scheduling_gates
        if not gates:
            return None
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            [f"waiting for scheduling gates: [{' '.join(g.name for g in gates)}]"],
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                _gates_removed,
            )
        ]


def _gates_removed(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Requeue only when the event is for this very pod and its gates are gone."""
    if new is None or new.metadata.uid != pod.metadata.uid:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if not new.spec.scheduling_gates else QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Any) -> SchedulingGates:
    return SchedulingGates()
