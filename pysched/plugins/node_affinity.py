"""NodeAffinity: spec.nodeSelector + required node affinity filter; preferred terms score."""

from __future__ import annotations

from typing import Any

import numpy as np

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from pysched.framework.labels import (
    CompiledNodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
)
from pysched.framework.node_table import Ints, Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import MAX_NODE_SCORE, NodeInfo, NodeScore, PreFilterResult
from pysched.plugins import node_fits
from pysched.plugins.args import NodeAffinityArgs
from pysched.plugins.helper import (
    default_normalize_batch,
    default_normalize_score,
    node_stopped_rejecting,
)

NAME = node_fits.NODE_AFFINITY
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_POD = node_fits.NODE_AFFINITY_ERR_REASON_POD
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
OBJECT_NAME_FIELD = "metadata.name"


def preferred_terms(pod: Pod) -> PreferredSchedulingTerms | None:
    aff = pod.spec.affinity
    na = aff.node_affinity if aff is not None else None
    if na is None or not na.preferred:
        return None
    return PreferredSchedulingTerms(na.preferred)


class NodeAffinity:
    def __init__(self, args: NodeAffinityArgs) -> None:
        self.added_node_selector = (
            CompiledNodeSelector(args.added_required) if args.added_required is not None else None
        )
        self.added_pref_terms = (
            PreferredSchedulingTerms(args.added_preferred) if args.added_preferred else None
        )

    def name(self) -> str:
        return NAME

    # -------------------------------------------------------------- filter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        aff = pod.spec.affinity
        na = aff.node_affinity if aff is not None else None
        no_node_affinity = na is None or na.required is None
        if no_node_affinity and self.added_node_selector is None and not pod.spec.node_selector:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, RequiredNodeAffinity(pod))
        if no_node_affinity or self.added_node_selector is not None:
            return None, None
        assert na is not None
        assert na.required is not None
        # Affinity to specific nodes by metadata.name In [...] narrows the candidate list.
        node_names: set[str] | None = None
        for term in na.required.node_selector_terms:
            term_names: set[str] | None = None
            for r in term.match_fields:
                if r.key == OBJECT_NAME_FIELD and r.operator == "In":
                    s = set(r.values)
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                return None, None  # this term allows every node; terms are ORed
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_CONFLICT])
        if node_names:
            return PreFilterResult(node_names), None
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status(Code.ERROR, ["node not found"])
        if self.added_node_selector is not None and not self.added_node_selector.match(node):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_ENFORCED])
        req = state.get(PRE_FILTER_STATE_KEY)
        if req is None:
            req = RequiredNodeAffinity(pod)
        if not req.match(node):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_POD])
        return None

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask | None:
        if self.added_node_selector is not None:
            return None  # scheduler-enforced affinity: the per-node method
        return table.node_selector_mask(pod)

    def resource_monotone(self) -> bool:
        return True  # other pods play no part

    # -------------------------------------------------------------- score
    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        terms = preferred_terms(pod)
        if terms is None and self.added_pref_terms is None:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, terms)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        assert node is not None
        count = 0
        if self.added_pref_terms is not None:
            count += self.added_pref_terms.score(node)
        terms = state.get(PRE_SCORE_STATE_KEY, _MISSING)
        if terms is _MISSING:
            terms = preferred_terms(pod)
        if terms is not None:
            count += terms.score(node)
        return count, None

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints | None:
        if self.added_pref_terms is not None:
            return None  # scheduler-enforced preferences: the per-node method
        aff = pod.spec.affinity
        na = aff.node_affinity if aff is not None else None
        counts = np.zeros(len(rows), np.int64)
        for term in na.preferred if na is not None else ():
            pref = term.preference
            if term.weight == 0 or not (pref.match_expressions or pref.match_fields):
                continue
            m = table.term_mask(pref)
            if m is None:
                return None
            counts += np.where(m[rows], term.weight, 0)
        return default_normalize_batch(counts, reverse=False)

    def score_extensions(self) -> NodeAffinity:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self._after_node_change,
            )
        ]

    def _rejects(self, pod: Pod, node: Any) -> bool:
        if self.added_node_selector is not None and not self.added_node_selector.match(node):
            return True
        return not RequiredNodeAffinity(pod).match(node)

    def _after_node_change(self, pod: Any, old: Any, new: Any) -> QueueingHint:
        """isSchedulableAfterNodeChange: a node that now matches and did not before."""
        return node_stopped_rejecting(self._rejects, pod, old, new)


_MISSING = object()


def new(args: Any, handle: Any) -> NodeAffinity:
    return NodeAffinity(args if isinstance(args, NodeAffinityArgs) else NodeAffinityArgs())
