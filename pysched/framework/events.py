"""Cluster events and queueing hints (fwk.ClusterEvent, ClusterEventWithHint, QueueingHint).

The queue (pysched.queue, pysched-engine) matches an event against what each
plugin that rejected a pod registered, then asks the hint whether to requeue.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class ActionType(enum.IntFlag):
    """fwk.ActionType bits (names as upstream)."""

    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATIONS = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    UPDATE_NODE_DECLARED_FEATURE = 1 << 12

    @classmethod
    def update(cls) -> ActionType:
        """All update bits (fwk.Update)."""
        v = cls(0)
        for m in cls:
            if m not in (cls.ADD, cls.DELETE):
                v |= m
        return v

    @classmethod
    def all(cls) -> ActionType:
        """fwk.All."""
        return cls.ADD | cls.DELETE | cls.update()


class EventResource(enum.StrEnum):
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnscheduledPod"
    NODE = "Node"
    NAMESPACE = "Namespace"
    PRIORITY_CLASS = "PriorityClass"
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: EventResource
    action_type: ActionType
    label: str = ""

    def match(self, coming: ClusterEvent) -> bool:
        """This registered event covers the incoming one (resource and action overlap)."""
        if self.resource == EventResource.WILDCARD:
            return bool(self.action_type & coming.action_type)
        if self.resource == coming.resource:
            return bool(self.action_type & coming.action_type)
        if self.resource == EventResource.POD and coming.resource in (
            EventResource.ASSIGNED_POD,
            EventResource.UNSCHEDULED_POD,
        ):
            return bool(self.action_type & coming.action_type)
        return False


class QueueingHint(enum.IntEnum):
    QUEUE_SKIP = 0
    QUEUE = 1


# (pod being requeued, old object or None, new object or None) -> hint
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    queueing_hint_fn: QueueingHintFn | None = None  # None: always Queue


EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(
    EventResource.WILDCARD, ActionType.all(), "UnschedulableTimeout"
)
EVENT_FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.all(), "ForceActivate")
