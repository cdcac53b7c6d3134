"""TaintToleration: NoSchedule/NoExecute taints filter; PreferNoSchedule taints score (reversed)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pykubelet.api.types import (
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
    Pod,
    Taint,
    Toleration,
)
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import ClusterEventWithHint, QueueingHint
from pysched.framework.labels import find_matching_untolerated_taint, tolerations_tolerate_taint
from pysched.framework.node_table import Ints, Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import MAX_NODE_SCORE, NodeInfo, NodeScore
from pysched.plugins import node_fits
from pysched.plugins.helper import (
    default_normalize_batch,
    default_normalize_score,
    node_stopped_rejecting,
    taint_events,
)

NAME = node_fits.TAINT_TOLERATION
PRE_SCORE_STATE_KEY = "PreScore" + NAME


_DO_NOT_SCHEDULE_EFFECTS = (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)


def do_not_schedule_taints_filter(t: Taint) -> bool:
    """helper.DoNotScheduleTaintsFilterFunc: NoSchedule and NoExecute taints."""
    return t.effect in _DO_NOT_SCHEDULE_EFFECTS


# Since v1.35 (kubernetes#134740) the reason no longer names the taint's key and value, which
# may be sensitive; it was "node(s) had untolerated taint {key: value}" before.
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
ERR_REASON_NOT_MATCH = node_fits.TAINT_TOLERATION_ERR_REASON_NOT_MATCH


def untolerated_taint_reason(taint: Taint) -> str:
    return ERR_REASON_UNTOLERATED


def prefer_no_schedule_tolerations(tolerations: list[Toleration]) -> list[Toleration]:
    """Tolerations with effect PreferNoSchedule or empty (all effects)."""
    return [t for t in tolerations if not t.effect or t.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE]


def count_intolerable_prefer_no_schedule(taints: list[Taint], tolerations: list[Toleration]) -> int:
    n = 0
    for taint in taints:
        if taint.effect != TAINT_EFFECT_PREFER_NO_SCHEDULE:
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            n += 1
    return n


class TaintToleration:
    def name(self) -> str:
        return NAME

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status(Code.ERROR, ["invalid nodeInfo"])
        taints = node.spec.taints
        if not taints:
            return None
        taint = find_matching_untolerated_taint(
            taints, pod.spec.tolerations, do_not_schedule_taints_filter
        )
        if taint is None:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [untolerated_taint_reason(taint)])

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask:
        ids = table.untolerated_taints(pod.spec.tolerations, _DO_NOT_SCHEDULE_EFFECTS)
        if not ids:
            return table.every_row
        return ~table.has_hard_taint(ids)

    def resource_monotone(self) -> bool:
        return True  # other pods play no part

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, prefer_no_schedule_tolerations(pod.spec.tolerations))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        assert node is not None
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            return 0, Status(
                Code.ERROR, [f"failed to read {PRE_SCORE_STATE_KEY!r} from cycleState"]
            )
        return count_intolerable_prefer_no_schedule(node.spec.taints, tolerations), None

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints | None:
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            return None
        ids = table.untolerated_taints(tolerations, (TAINT_EFFECT_PREFER_NO_SCHEDULE,))
        if not ids:  # every count 0: the reversed normalisation gives every row the maximum
            return np.full(len(rows), MAX_NODE_SCORE, np.int64)
        return default_normalize_batch(table.count_prefer_taints(ids, rows), reverse=True)

    def score_extensions(self) -> TaintToleration:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return taint_events(_after_node_change, _after_pod_toleration_change)


def _untolerated(pod: Pod, node: Any) -> bool:
    return (
        find_matching_untolerated_taint(
            node.spec.taints, pod.spec.tolerations, do_not_schedule_taints_filter
        )
        is not None
    )


def _after_node_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterNodeChange: only a node whose taints stopped rejecting the pod."""
    return node_stopped_rejecting(_untolerated, pod, old, new)


def _after_pod_toleration_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Only the rejected pod's own new tolerations can help it."""
    if new is not None and new.metadata.uid == pod.metadata.uid:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def new(args: Any, handle: Any) -> TaintToleration:
    return TaintToleration()
