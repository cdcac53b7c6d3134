"""InterPodAffinity: required pod (anti-)affinity, existing pods' anti-affinity (symmetry),
and preferred terms of both the incoming and the existing pods in scoring.

Filter order and codes as upstream: affinity (UnschedulableAndUnresolvable), then the
pod's anti-affinity, then existing pods' anti-affinity (both Unschedulable, so
preemption may help). Counts are kept per topologyKey and value and updated through
AddPod/RemovePod for preemption and nominated pods.

PreFilter and PreScore get their counts from the snapshot's AffinityIndex
(inter_pod_affinity_index.py: pods and existing terms grouped, counts per topology
domain) rather than walking every pod on every node as upstream does; the walk remains
for listers without the index, and tests compare the two.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from pysched.framework.labels import NOTHING
from pysched.framework.node_table import Ints, Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import (
    MAX_NODE_SCORE,
    AffinityTerm,
    NodeInfo,
    NodeScore,
    PodInfo,
    PreFilterResult,
    WeightedAffinityTerm,
)
from pysched.plugins.args import InterPodAffinityArgs
from pysched.plugins.helper import PodCountingExtensions
from pysched.plugins.inter_pod_affinity_index import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI,
    REQUIRED_AFFINITY,
    REQUIRED_ANTI,
    AffinityIndex,
)

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
INDEX_NAME = NAME  # the snapshot's AffinityIndex
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"

# Upstream's topologyToMatchedTermCount keyed by topologyPair{key, value}, kept as
# {key: {value: count}}: the index hands over one dict per key, and the vectorised path reads
# a key's values without scanning every pair. Zero counts and empty keys are removed, so
# "any count" stays ``bool(counts)``.
TopologyCounts = dict[str, dict[str, int]]


def _update(m: TopologyCounts, node: Node, tk: str, value: int) -> None:
    tv = node.metadata.labels.get(tk)
    if tv is None:
        return
    d = m.get(tk)
    if d is None:
        d = m[tk] = {}
    n = d.get(tv, 0) + value
    if n == 0:
        d.pop(tv, None)
        if not d:
            del m[tk]
    else:
        d[tv] = n


def topology_count(m: TopologyCounts, tk: str, tv: str) -> int:
    d = m.get(tk)
    return d.get(tv, 0) if d is not None else 0


def _copy_counts(m: TopologyCounts) -> TopologyCounts:
    return {tk: dict(d) for tk, d in m.items()}


def pod_matches_all_affinity_terms(terms: list[AffinityTerm], pod: Pod) -> bool:
    """The incoming pod's terms have their namespaceSelector merged, hence no ns labels."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


def _update_with_affinity_terms(
    m: TopologyCounts, terms: list[AffinityTerm], pod: Pod, node: Node, value: int
) -> None:
    if pod_matches_all_affinity_terms(terms, pod):
        for t in terms:
            _update(m, node, t.topology_key, value)


def _update_with_anti_affinity_terms(
    m: TopologyCounts,
    terms: list[AffinityTerm],
    pod: Pod,
    ns_labels: dict[str, str] | None,
    node: Node,
    value: int,
) -> None:
    for t in terms:
        if t.matches(pod, ns_labels):
            _update(m, node, t.topology_key, value)


class _PreFilterState:
    __slots__ = (
        "affinity_counts",
        "anti_affinity_counts",
        "existing_anti_affinity_counts",
        "namespace_labels",
        "pod_info",
    )

    def __init__(self, pod_info: PodInfo, ns_labels: dict[str, str] | None) -> None:
        self.pod_info = pod_info
        self.namespace_labels = ns_labels
        self.existing_anti_affinity_counts: TopologyCounts = {}
        self.affinity_counts: TopologyCounts = {}
        self.anti_affinity_counts: TopologyCounts = {}

    def clone(self) -> _PreFilterState:
        c = _PreFilterState(self.pod_info, self.namespace_labels)
        c.existing_anti_affinity_counts = _copy_counts(self.existing_anti_affinity_counts)
        c.affinity_counts = _copy_counts(self.affinity_counts)
        c.anti_affinity_counts = _copy_counts(self.anti_affinity_counts)
        return c

    def update_with_pod(self, pi: PodInfo, node: Node | None, multiplier: int) -> None:
        if node is None:
            return
        me = self.pod_info
        _update_with_anti_affinity_terms(
            self.existing_anti_affinity_counts,
            pi.required_anti_affinity_terms,
            me.pod,
            self.namespace_labels,
            node,
            multiplier,
        )
        _update_with_affinity_terms(
            self.affinity_counts, me.required_affinity_terms, pi.pod, node, multiplier
        )
        _update_with_anti_affinity_terms(
            self.anti_affinity_counts,
            me.required_anti_affinity_terms,
            pi.pod,
            None,
            node,
            multiplier,
        )


class InterPodAffinity(PodCountingExtensions):
    state_key = PRE_FILTER_STATE_KEY
    state_error = f"error reading {PRE_FILTER_STATE_KEY!r} from cycleState"

    def __init__(self, args: InterPodAffinityArgs, handle: Any) -> None:
        self.args = args
        self.handle = handle
        # Count through the snapshot's AffinityIndex instead of walking every pod (same
        # counts; tests turn it off to compare both).
        self.use_index = True

    def name(self) -> str:
        return NAME

    # -------------------------------------------------------------- helpers
    def _lister(self) -> Any:
        return self.handle.snapshot_shared_lister().node_infos()

    def _merge_namespaces(self, t: AffinityTerm) -> AffinityTerm:
        """mergeAffinityTermNamespacesIfNotEmpty, on a copy (PodInfo terms stay untouched)."""
        if t.namespace_selector.empty or t.namespace_selector is NOTHING:
            return t
        names = set(t.namespaces)
        for ns in self.handle.list_namespaces():
            if t.namespace_selector.matches(ns.metadata.labels):
                names.add(ns.metadata.name)
        return t.with_namespaces(frozenset(names))

    def _incoming(self, pod: Pod) -> PodInfo:
        pi = PodInfo(pod)
        pi.required_affinity_terms = [self._merge_namespaces(t) for t in pi.required_affinity_terms]
        pi.required_anti_affinity_terms = [
            self._merge_namespaces(t) for t in pi.required_anti_affinity_terms
        ]
        pi.preferred_affinity_terms = [
            WeightedAffinityTerm(self._merge_namespaces(w.term), w.weight)
            for w in pi.preferred_affinity_terms
        ]
        pi.preferred_anti_affinity_terms = [
            WeightedAffinityTerm(self._merge_namespaces(w.term), w.weight)
            for w in pi.preferred_anti_affinity_terms
        ]
        return pi

    def _index(self, lister: Any, nodes: list[NodeInfo]) -> AffinityIndex | None:
        """The snapshot's AffinityIndex when it describes exactly ``nodes`` (else None: walk).

        Listers other than the cache's Snapshot (tests' fakes) have none; a node list that is
        not the snapshot's own (a caller's selection) is walked as given."""
        if not self.use_index:
            return None
        make = getattr(lister, "index", None)
        if make is None or nodes is not lister.list():
            return None
        ix: AffinityIndex = make(INDEX_NAME, AffinityIndex.build)
        return ix if ix.node_count() == len(nodes) else None

    def _ns_labels(self, namespace: str) -> dict[str, str]:
        """GetNamespaceLabelsSnapshot: unknown namespaces have no labels."""
        labels = self.handle.namespace_labels(namespace)
        return dict(labels) if labels else {}

    # -------------------------------------------------------------- PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        lister = self._lister()
        with_anti = lister.have_pods_with_required_anti_affinity_list()
        aff = pod.spec.affinity
        has_required = aff is not None and (
            (aff.pod_affinity is not None and bool(aff.pod_affinity.required))
            or (aff.pod_anti_affinity is not None and bool(aff.pod_anti_affinity.required))
        )
        if not with_anti and not has_required:
            return None, Status(Code.SKIP)  # the common case, decided without any parsing
        pi = self._incoming(pod)
        s = _PreFilterState(pi, self._ns_labels(pod.metadata.namespace))
        ix = self._index(lister, nodes)
        if ix is not None:
            _pre_filter_counts_indexed(s, ix)
        else:
            _pre_filter_counts_walk(s, with_anti, nodes)
        if (
            not s.existing_anti_affinity_counts
            and not pi.required_affinity_terms
            and not pi.required_anti_affinity_terms
        ):
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def count_pod(self, s: _PreFilterState, pod_to_schedule: Pod, pod_info: PodInfo,
                  node_info: NodeInfo, delta: int) -> None:
        s.update_with_pod(pod_info, node_info.node, delta)

    # -------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status(Code.ERROR, [f"error reading {PRE_FILTER_STATE_KEY!r} from cycleState"])
        node = node_info.node
        assert node is not None
        labels = node.metadata.labels
        if not _satisfy_pod_affinity(s, labels):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_AFFINITY])
        if s.anti_affinity_counts:
            for t in s.pod_info.required_anti_affinity_terms:
                tv = labels.get(t.topology_key)
                if (
                    tv is not None
                    and topology_count(s.anti_affinity_counts, t.topology_key, tv) > 0
                ):
                    return Status(Code.UNSCHEDULABLE, [ERR_REASON_ANTI_AFFINITY])
        if s.existing_anti_affinity_counts:
            counts = s.existing_anti_affinity_counts
            for k, v in labels.items():
                d = counts.get(k)
                if d is not None and d.get(v, 0) > 0:
                    return Status(Code.UNSCHEDULABLE, [ERR_REASON_EXISTING_ANTI_AFFINITY])
        return None

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask | None:
        """Filter from the PreFilter counts ({key: {value: count}}), per label column."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return None
        ok = np.ones(table.n, bool)
        terms = s.pod_info.required_affinity_terms
        if terms:
            labelled = np.ones(table.n, bool)
            exist = np.ones(table.n, bool)
            for term in terms:
                tk = term.topology_key
                labelled &= table.label_column(tk) >= 0
                exist &= table.domain_values(tk, s.affinity_counts.get(tk, {})) > 0
            first_of_group = not s.affinity_counts and pod_matches_all_affinity_terms(terms, pod)
            ok &= labelled & (exist | first_of_group)
        if s.anti_affinity_counts:
            for term in s.pod_info.required_anti_affinity_terms:
                counts = s.anti_affinity_counts.get(term.topology_key)
                if counts:
                    ok &= table.domain_values(term.topology_key, counts) <= 0
        for k, counts in s.existing_anti_affinity_counts.items():
            ok &= table.domain_values(k, counts) <= 0
        return ok

    def resource_monotone(self) -> bool:
        return False  # other pods' labels and terms matter

    # -------------------------------------------------------------- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        aff = pod.spec.affinity
        has_pref_aff = (
            aff is not None and aff.pod_affinity is not None and bool(aff.pod_affinity.preferred)
        )
        has_pref_anti = (
            aff is not None
            and aff.pod_anti_affinity is not None
            and bool(aff.pod_anti_affinity.preferred)
        )
        has_constraints = has_pref_aff or has_pref_anti
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status(Code.SKIP)
        lister = self._lister()
        all_nodes = lister.list() if has_constraints else lister.have_pods_with_affinity_list()
        if not all_nodes:
            return Status(Code.SKIP)  # nothing can contribute a score
        pi = self._incoming(pod)
        ns_labels = self._ns_labels(pod.metadata.namespace)
        topology_score: dict[str, dict[str, int]] = {}
        hard_weight = self.args.hard_pod_affinity_weight
        ix = self._index(lister, lister.list())
        if ix is not None:
            _pre_score_indexed(topology_score, ix, pi, pod, ns_labels, hard_weight)
        else:
            for ni in all_nodes:
                node = ni.node
                if node is None or not node.metadata.labels:
                    continue
                pods: Iterable[PodInfo] = ni.pods if has_constraints else ni.pods_with_affinity
                for epi in pods:
                    _process_existing_pod(
                        topology_score, pi, epi, node, pod, ns_labels, hard_weight
                    )
        if not topology_score:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, topology_score)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        ts = state.get(PRE_SCORE_STATE_KEY)
        if ts is None:
            return 0, Status(Code.ERROR, [f"error reading {PRE_SCORE_STATE_KEY!r} from cycleState"])
        node = node_info.node
        assert node is not None
        labels = node.metadata.labels
        score = 0
        for tk, values in ts.items():
            v = labels.get(tk)
            if v is not None:
                score += values.get(v, 0)
        return score, None

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints | None:
        """Score + NormalizeScore from the PreScore topology scores."""
        ts = state.get(PRE_SCORE_STATE_KEY)
        if ts is None:
            return None
        score = np.zeros(len(rows), np.int64)
        for tk, values in ts.items():
            score += table.domain_values(tk, values)[rows]
        if not ts:
            return score
        mn, mx = int(score.min()), int(score.max())
        diff = mx - mn
        if diff <= 0:
            return np.zeros(len(rows), np.int64)
        f = float(MAX_NODE_SCORE) * ((score - mn).astype(np.float64) / float(diff))
        out: Ints = np.trunc(f).astype(np.int64)
        return out

    def score_extensions(self) -> InterPodAffinity:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        ts = state.get(PRE_SCORE_STATE_KEY)
        if not ts:
            return None
        min_count = math.inf
        max_count = -math.inf
        for s in scores:
            if s.score > max_count:
                max_count = s.score
            if s.score < min_count:
                min_count = s.score
        diff = max_count - min_count
        for s in scores:
            f = 0.0
            if diff > 0:
                f = float(MAX_NODE_SCORE) * (float(s.score - min_count) / float(diff))
            s.score = int(f)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
        ]


def _pre_filter_counts_walk(
    s: _PreFilterState, with_anti: list[NodeInfo], nodes: list[NodeInfo]
) -> None:
    """Upstream's way: every existing anti-affinity term, then every pod on every node."""
    pi = s.pod_info
    pod = pi.pod
    # Existing pods whose required anti-affinity matches the incoming pod (symmetry).
    existing = s.existing_anti_affinity_counts
    for ni in with_anti:
        node = ni.node
        if node is None:
            continue
        for epi in ni.pods_with_required_anti_affinity:
            _update_with_anti_affinity_terms(
                existing, epi.required_anti_affinity_terms, pod, s.namespace_labels, node, 1
            )
    if pi.required_affinity_terms or pi.required_anti_affinity_terms:
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            for epi in ni.pods:
                _update_with_affinity_terms(
                    s.affinity_counts, pi.required_affinity_terms, epi.pod, node, 1
                )
                _update_with_anti_affinity_terms(
                    s.anti_affinity_counts,
                    pi.required_anti_affinity_terms,
                    epi.pod,
                    None,
                    node,
                    1,
                )


def _add_counts(per_key: TopologyCounts, tk: str, counts: dict[str, int]) -> None:
    """per_key[tk] += counts (value by value; none is 0); the first contribution is a copy."""
    d = per_key.get(tk)
    if d is None:
        per_key[tk] = dict(counts)
        return
    for v, c in counts.items():
        d[v] = d.get(v, 0) + c


def _label_keys(terms: list[AffinityTerm]) -> frozenset[str] | None:
    """The label keys ``terms`` read between them (None when some term's are unknown):
    pod groups projected onto them match each of these terms as their every pod would."""
    out: frozenset[str] = frozenset()
    for t in terms:
        k = t.label_keys()
        if k is None:
            return None
        out |= k
    return out


def _pre_filter_counts_indexed(s: _PreFilterState, ix: AffinityIndex) -> None:
    """The walk's counts from the index: each group matched once, its domain counts added.

    Equal to ``_pre_filter_counts_walk``: every pod adds 1 per matching term to (tk, the
    value of its node), and the pods of a group all match or all don't."""
    pi = s.pod_info
    pod = pi.pod
    existing = s.existing_anti_affinity_counts
    for g in ix.term_groups(REQUIRED_ANTI):
        if g.counts and g.term.matches(pod, s.namespace_labels):
            _add_counts(existing, g.term.topology_key, g.counts)
    aff_terms = pi.required_affinity_terms
    anti_terms = pi.required_anti_affinity_terms
    if not aff_terms and not anti_terms:
        return
    keys = {t.topology_key for t in aff_terms} | {t.topology_key for t in anti_terms}
    affinity = s.affinity_counts
    anti = s.anti_affinity_counts
    for pg in ix.pod_groups(keys, _label_keys([*aff_terms, *anti_terms])):
        by_key = pg.by_key
        if aff_terms and all(t.matches(pg.pod, None) for t in aff_terms):
            for t in aff_terms:
                counts = by_key.get(t.topology_key)
                if counts:
                    _add_counts(affinity, t.topology_key, counts)
        for t in anti_terms:
            counts = by_key.get(t.topology_key)
            if counts and t.matches(pg.pod, None):
                _add_counts(anti, t.topology_key, counts)


def _satisfy_pod_affinity(s: _PreFilterState, labels: dict[str, str]) -> bool:
    pods_exist = True
    terms = s.pod_info.required_affinity_terms
    for t in terms:
        tv = labels.get(t.topology_key)
        if tv is None:
            return False  # every topology label must exist on the node
        if topology_count(s.affinity_counts, t.topology_key, tv) <= 0:
            pods_exist = False
    if not pods_exist:
        # The first pod of a group with affinity to itself: allowed when no pod matches yet.
        return not s.affinity_counts and pod_matches_all_affinity_terms(terms, s.pod_info.pod)
    return True


def _process_term(
    ts: dict[str, dict[str, int]],
    term: AffinityTerm,
    weight: int,
    pod: Pod,
    ns_labels: dict[str, str] | None,
    node: Node,
    multiplier: int,
) -> None:
    if term.matches(pod, ns_labels):
        tv = node.metadata.labels.get(term.topology_key)
        if tv is not None:
            d = ts.setdefault(term.topology_key, {})
            d[tv] = d.get(tv, 0) + weight * multiplier


def _process_existing_pod(
    ts: dict[str, dict[str, int]],
    incoming: PodInfo,
    existing: PodInfo,
    node: Node,
    pod: Pod,
    ns_labels: dict[str, str],
    hard_weight: int,
) -> None:
    for w in incoming.preferred_affinity_terms:
        _process_term(ts, w.term, w.weight, existing.pod, None, node, 1)
    for w in incoming.preferred_anti_affinity_terms:
        _process_term(ts, w.term, w.weight, existing.pod, None, node, -1)
    if hard_weight > 0:
        for t in existing.required_affinity_terms:
            _process_term(ts, t, hard_weight, pod, ns_labels, node, 1)
    for w in existing.preferred_affinity_terms:
        _process_term(ts, w.term, w.weight, pod, ns_labels, node, 1)
    for w in existing.preferred_anti_affinity_terms:
        _process_term(ts, w.term, w.weight, pod, ns_labels, node, -1)


def _add_weighted(
    ts: dict[str, dict[str, int]], tk: str, counts: dict[str, int], weight: int
) -> None:
    """ts[tk][tv] += weight × pods, for every domain with pods (as many single additions)."""
    d = ts.get(tk)
    if d is None:  # the first contribution to this key: built in one comprehension
        ts[tk] = dict(counts) if weight == 1 else {v: weight * c for v, c in counts.items()}
        return
    for v, c in counts.items():
        d[v] = d.get(v, 0) + weight * c


def _pre_score_indexed(
    ts: dict[str, dict[str, int]],
    ix: AffinityIndex,
    incoming: PodInfo,
    pod: Pod,
    ns_labels: dict[str, str],
    hard_weight: int,
) -> None:
    """The walk's topology scores from the index (the sums ``_process_existing_pod`` makes).

    Without preferred terms of its own the walk visits only pods with affinity; the others
    have no terms, so summing over every term group gives the same scores. A domain appears
    in ``ts`` exactly when some matching pod sits there, as with the walk (even if its sum is
    0)."""
    pref = incoming.preferred_affinity_terms
    pref_anti = incoming.preferred_anti_affinity_terms
    if pref or pref_anti:
        keys = {w.term.topology_key for w in pref} | {w.term.topology_key for w in pref_anti}
        label_keys = _label_keys([w.term for w in [*pref, *pref_anti]])
        for g in ix.pod_groups(keys, label_keys):
            for w in pref:
                counts = g.by_key.get(w.term.topology_key)
                if counts and w.term.matches(g.pod, None):
                    _add_weighted(ts, w.term.topology_key, counts, w.weight)
            for w in pref_anti:
                counts = g.by_key.get(w.term.topology_key)
                if counts and w.term.matches(g.pod, None):
                    _add_weighted(ts, w.term.topology_key, counts, -w.weight)
    kinds = [(PREFERRED_AFFINITY, 1), (PREFERRED_ANTI, -1)]
    if hard_weight > 0:
        kinds.insert(0, (REQUIRED_AFFINITY, 1))
    for kind, sign in kinds:
        for tg in ix.term_groups(kind):
            if tg.counts and tg.term.matches(pod, ns_labels):
                weight = hard_weight if kind == REQUIRED_AFFINITY else tg.weight
                _add_weighted(ts, tg.term.topology_key, tg.counts, sign * weight)


def new(args: Any, handle: Any) -> InterPodAffinity:
    return InterPodAffinity(
        args if isinstance(args, InterPodAffinityArgs) else InterPodAffinityArgs(), handle
    )
