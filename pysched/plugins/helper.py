"""Shared plugin helpers: Go integer division and DefaultNormalizeScore (and its batch twin)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pysched.framework.cycle_state import CycleState
from pysched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    QueueingHintFn,
)
from pysched.framework.node_table import Ints
from pysched.framework.status import Code, Status
from pysched.framework.types import MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo


def go_div(a: int, b: int) -> int:
    """Go's int64 division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """helper.DefaultNormalizeScore: scale [0, max] to [0, max_priority]; reverse flips."""
    max_count = 0
    for s in scores:
        if s.score > max_count:
            max_count = s.score
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        score = go_div(max_priority * s.score, max_count)
        if reverse:
            score = max_priority - score
        s.score = score


def default_normalize_batch(counts: Ints, reverse: bool) -> Ints:
    """default_normalize_score over an array of non-negative raw scores (MAX_NODE_SCORE)."""
    mx = int(counts.max()) if len(counts) else 0
    if mx == 0:
        return np.full(len(counts), MAX_NODE_SCORE if reverse else 0, np.int64)
    s: Ints = (MAX_NODE_SCORE * counts) // mx
    return MAX_NODE_SCORE - s if reverse else s


def node_stopped_rejecting(
    rejects: Callable[[Any, Any], bool], pod: Any, old: Any, new: Any
) -> QueueingHint:
    """The queueing hint of a node added or changed: QUEUE only when the node (now) takes
    the pod and did not before (``rejects(pod, node)``: this plugin's verdict)."""
    if new is None or rejects(pod, new):
        return QueueingHint.QUEUE_SKIP
    if old is None or rejects(pod, old):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def broken_linear_function(shape: list[tuple[int, int]]) -> Callable[[int], int]:
    """helper.BuildBrokenLinearFunction over (utilization, score) points (sorted)."""

    def f(p: int) -> int:
        for i, (u, s) in enumerate(shape):
            if p <= u:
                if i == 0:
                    return shape[0][1]
                pu, ps = shape[i - 1]
                return ps + go_div((s - ps) * (p - pu), u - pu)
        return shape[-1][1]

    return f


__all__ = [
    "MAX_NODE_SCORE",
    "broken_linear_function",
    "default_normalize_batch",
    "default_normalize_score",
    "go_div",
    "go_round",
]


def go_round(x: float) -> int:
    """Go's math.Round: the nearest integer, halves away from zero (Python rounds to even)."""
    if x < 0:
        return -go_round(-x)
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def taint_events(after_node_change: QueueingHintFn,
                 after_pod_toleration_change: QueueingHintFn) -> list[ClusterEventWithHint]:
    """EventsToRegister of a plugin that rejects on taints (NodeUnschedulable's unschedulable
    taint, TaintToleration's): a node added or its taints changed, or the pod's own
    tolerations changed, each with the plugin's queueing hint."""
    return [
        ClusterEventWithHint(
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            after_node_change,
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS),
            after_pod_toleration_change,
        ),
    ]


class PodCountingExtensions:
    """PreFilterExtensions of a plugin whose PreFilter state counts pods on nodes
    (InterPodAffinity's term counts, PodTopologySpread's domain counts): AddPod and RemovePod
    read that state and count the pod in (+1) or out (-1); the plugin says how in
    ``count_pod``, and names a missing state in its own words (``state_error``), as each
    upstream plugin's getPreFilterState does."""

    state_key: str
    state_error: str

    def add_pod(
        self, state: CycleState, pod_to_schedule: Any, pod_info_to_add: PodInfo,
        node_info: NodeInfo,
    ) -> Status | None:
        return self._count(state, pod_to_schedule, pod_info_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Any, pod_info_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status | None:
        return self._count(state, pod_to_schedule, pod_info_to_remove, node_info, -1)

    def _count(self, state: CycleState, pod_to_schedule: Any, pod_info: PodInfo,
               node_info: NodeInfo, delta: int) -> Status | None:
        s = state.get(self.state_key)
        if s is None:
            return Status(Code.ERROR, [self.state_error])
        self.count_pod(s, pod_to_schedule, pod_info, node_info, delta)
        return None

    def count_pod(self, s: Any, pod_to_schedule: Any, pod_info: PodInfo, node_info: NodeInfo,
                  delta: int) -> None:
        raise NotImplementedError
