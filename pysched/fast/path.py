"""The vectorised hot path: the default profile's filters and scores over a NodeTable.

Every function here computes exactly what the plugin of the same name computes, for all nodes
at once, with the plugin's integer (and float) arithmetic. The scheduler asks for a feasibility
mask after PreFilter and for weighted totals after PreScore; whenever a plugin is active that
has no vectorised twin here (or is configured beyond what is mirrored), the answer is ``None``
and the scheduler runs the plugins one node at a time instead. Plugins that PreFilter/PreScore
marked Skip take no part, as in the framework.

The scheduler takes the rotated prefix holding the first N feasible rows (kube-scheduler's
cut-off). The Status of each infeasible node in it comes from the plugin the masks say rejects
it first (the whole chain for nodes with nominated pods); when the pod fits elsewhere these
statuses are only computed on demand (Diagnosis.resolve). A plugin that disagrees with its mask
is counted in ``stats["mismatch"]`` (tests assert it stays 0); any unexpected exception falls
back to the plugins (``stats["errors"]``).

Nominated pods (priority >= the pod's) are added to their nodes' columns when every active
filter only gets stricter with more requested resources (NOMINATION_SAFE_FILTERS); otherwise
those nodes go through the plugins' two passes.

Anyone changing a mirrored plugin's arithmetic must change its twin here:
tests/unit/pysched/test_fast_path.py compares both on randomised clusters.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from pysched.fast.table import NodeTable
from pysched.framework.labels import SelectorError, _compile_term, tolerations_tolerate_taint
from pysched.framework.types import MAX_NODE_SCORE, Resource, host_ports, normalized_image_name
from pysched.objects import (
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Taint,
)
from pysched.resources import is_extended_resource_name, is_scalar_resource_name

_PASS_FILTERS = frozenset(
    {
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "DynamicResources",
    }
)
_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", TAINT_EFFECT_NO_SCHEDULE)
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


class _NotVectorisable(Exception):
    pass


# Filters whose verdict pods added to a node can only make worse, and only through the
# resources they request: with nominated pods the plugins' second pass never changes a verdict.
NOMINATION_SAFE_FILTERS = frozenset(
    {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit"}
)


class NominatedLoad:
    """The requests of the nominated pods (priority >= the pod's) per table row."""

    def __init__(self, per_row: dict[int, list[Any]]) -> None:
        self.rows = np.fromiter(per_row, np.int64, len(per_row))
        k = len(per_row)
        self.count = np.zeros(k, np.int64)
        self.cpu = np.zeros(k, np.int64)
        self.mem = np.zeros(k, np.int64)
        self.eph = np.zeros(k, np.int64)
        self.scalar: dict[str, np.ndarray] = {}
        for j, pis in enumerate(per_row.values()):
            for pi in pis:
                res = pi.calculate_resource()[0]
                self.count[j] += 1
                self.cpu[j] += res.milli_cpu
                self.mem[j] += res.memory
                self.eph[j] += res.ephemeral_storage
                for name, q in res.scalar.items():
                    self.scalar.setdefault(name, np.zeros(k, np.int64))[j] += q


# ---------------------------------------------------------------- label selectors over columns
def _isin(t: NodeTable, key: str, col: np.ndarray, ids: list[int]) -> np.ndarray:
    """col ∈ ids through a lookup table over the key's value ids (absent: -1, never in)."""
    if not ids:
        return np.zeros(len(col), bool)
    lut = np.zeros(len(t.label_values[key]) + 1, bool)
    lut[ids] = True
    return lut[col]


def _requirement_mask(t: NodeTable, r: NodeSelectorRequirement) -> np.ndarray:
    col = t.label_column(r.key)
    op = r.operator
    if op in ("In", "NotIn"):
        ids = t.value_ids(r.key, r.values)
        hit = _isin(t, r.key, col, ids)
        return hit if op == "In" else ~hit
    if op == "Exists":
        return col >= 0
    if op == "DoesNotExist":
        return col < 0
    # Gt / Lt: labels that parse as integers, compared with the bound
    bound = int(r.values[0])
    vals = t.label_values.get(r.key, {})
    ok = np.zeros(len(vals) + 1, bool)  # index -1 (absent) -> last slot, False
    for v, vid in vals.items():
        try:
            n = int(v)
        except ValueError:
            continue
        ok[vid] = n > bound if op == "Gt" else n < bound
    return ok[col]


def _term_mask(t: NodeTable, term: NodeSelectorTerm) -> np.ndarray:
    if term.match_fields:
        raise _NotVectorisable("matchFields")
    compiled = _compile_term(term)
    if compiled.error is not None:
        return np.zeros(t.n, bool)  # an invalid term never matches
    m = np.ones(t.n, bool)
    for r in term.match_expressions:
        m &= _requirement_mask(t, r)
    return m


def _node_selector_mask(t: NodeTable, pod: Pod) -> np.ndarray:
    m = np.ones(t.n, bool)
    for k, v in pod.spec.node_selector.items():
        col = t.label_column(k)
        ids = t.value_ids(k, [v])
        m &= (col == ids[0]) if ids else False
    aff = pod.spec.affinity
    na = aff.node_affinity if aff is not None else None
    if na is not None and na.required is not None:
        terms = [
            x for x in na.required.node_selector_terms if x.match_expressions or x.match_fields
        ]
        any_term = np.zeros(t.n, bool)
        for term in terms:
            any_term |= _term_mask(t, term)
        m &= any_term
    return m


# ---------------------------------------------------------------- filters
def _f_node_unschedulable(
    t: NodeTable, pl: Any, state: Any, pod: Pod, load: NominatedLoad | None = None
) -> np.ndarray:
    if tolerations_tolerate_taint(pod.spec.tolerations, _UNSCHEDULABLE_TAINT):
        return np.ones(t.n, bool)
    return ~t.unschedulable


def _f_node_name(
    t: NodeTable, pl: Any, state: Any, pod: Pod, load: NominatedLoad | None = None
) -> np.ndarray:
    if pod.spec.node_name:
        raise _NotVectorisable("spec.nodeName")
    return np.ones(t.n, bool)


def _untolerated_bits(
    t: NodeTable, pod: Pod, effects: tuple[str, ...], tolerations: Any
) -> np.ndarray:
    ids = [
        tid
        for tid, taint in enumerate(t.taints)
        if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint)
    ]
    return t.taint_bits(ids)


def _f_taint_toleration(
    t: NodeTable, pl: Any, state: Any, pod: Pod, load: NominatedLoad | None = None
) -> np.ndarray:
    bits = _untolerated_bits(
        t, pod, (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE), pod.spec.tolerations
    )
    if not bits.any():
        return np.ones(t.n, bool)
    return ~((t.hard_taints & bits) != 0).any(axis=1)


def _f_node_affinity(
    t: NodeTable, pl: Any, state: Any, pod: Pod, load: NominatedLoad | None = None
) -> np.ndarray:
    if getattr(pl, "added_node_selector", None) is not None:
        raise _NotVectorisable("addedAffinity")
    return _node_selector_mask(t, pod)


def _f_node_ports(
    t: NodeTable, pl: Any, state: Any, pod: Pod, load: NominatedLoad | None = None
) -> np.ndarray:
    if host_ports(pod):
        raise _NotVectorisable("hostPorts")
    return np.ones(t.n, bool)


def _f_node_resources_fit(
    t: NodeTable, pl: Any, state: Any, pod: Pod, load: NominatedLoad | None = None
) -> np.ndarray:
    req: Resource | None = state.get("PreFilterNodeResourcesFit")
    if req is None:
        raise _NotVectorisable("no PreFilter state")
    num_pods, used_cpu, used_mem, used_eph = t.num_pods, t.req_cpu, t.req_mem, t.req_eph
    if load is not None:  # nominated pods counted on their nodes (the first of two passes)
        num_pods = num_pods.copy()
        num_pods[load.rows] += load.count
        used_cpu = used_cpu.copy()
        used_cpu[load.rows] += load.cpu
        used_mem = used_mem.copy()
        used_mem[load.rows] += load.mem
        used_eph = used_eph.copy()
        used_eph[load.rows] += load.eph
    bad = num_pods + 1 > t.alloc_pods
    if req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar:
        return ~bad
    if req.milli_cpu > 0:
        bad |= req.milli_cpu > t.alloc_cpu - used_cpu
    if req.memory > 0:
        bad |= req.memory > t.alloc_mem - used_mem
    if req.ephemeral_storage > 0:
        bad |= req.ephemeral_storage > t.alloc_eph - used_eph
    ignored = getattr(pl, "ignored", frozenset())
    groups = getattr(pl, "ignored_groups", frozenset())
    for name, q in req.scalar.items():
        if q == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored or (groups and name.split("/")[0] in groups)
        ):
            continue
        a, u = t.scalar(name)
        if load is not None and name in load.scalar:
            u = u.copy()
            u[load.rows] += load.scalar[name]
        bad |= q > a - u
    return ~bad


def _domains_mask(t: NodeTable, tk: str, counts: dict[str, int]) -> np.ndarray:
    """Rows whose value of label ``tk`` has a positive count in ``counts`` ({value: count}).

    Value ids come from one C-level map over the dict (no per-value Python code): with one
    domain per node (hostname) there are as many values as pods' nodes."""
    col = t.label_column(tk)  # before reading label_values: it interns the values
    vals = t.label_values[tk]
    k = len(counts)
    ids = np.fromiter(map(vals.get, counts, itertools.repeat(-1)), np.int64, k)
    cnt = np.fromiter(counts.values(), np.int64, k)
    lut = np.zeros(len(vals) + 1, bool)  # the last slot serves absent labels (-1)
    lut[ids[(ids >= 0) & (cnt > 0)]] = True
    return lut[col]


def _f_inter_pod_affinity(
    t: NodeTable, pl: Any, state: Any, pod: Pod, load: NominatedLoad | None = None
) -> np.ndarray:
    """InterPodAffinity.Filter from its PreFilter state ({key: {value: count}}), per column."""
    from pysched.plugins.inter_pod_affinity import pod_matches_all_affinity_terms

    s = state.get("PreFilterInterPodAffinity")
    if s is None:
        raise _NotVectorisable("no PreFilter state")
    ok = np.ones(t.n, bool)
    terms = s.pod_info.required_affinity_terms
    if terms:
        labelled = np.ones(t.n, bool)
        exist = np.ones(t.n, bool)
        for term in terms:
            tk = term.topology_key
            labelled &= t.label_column(tk) >= 0
            exist &= _domains_mask(t, tk, s.affinity_counts.get(tk, {}))
        first_of_group = not s.affinity_counts and pod_matches_all_affinity_terms(terms, pod)
        ok &= labelled & (exist | first_of_group)
    if s.anti_affinity_counts:
        for term in s.pod_info.required_anti_affinity_terms:
            counts = s.anti_affinity_counts.get(term.topology_key)
            if counts:
                ok &= ~_domains_mask(t, term.topology_key, counts)
    for k, counts in s.existing_anti_affinity_counts.items():
        ok &= ~_domains_mask(t, k, counts)
    return ok


def _f_pod_topology_spread(
    t: NodeTable, pl: Any, state: Any, pod: Pod, load: NominatedLoad | None = None
) -> np.ndarray:
    """PodTopologySpread.Filter from its PreFilter state (matching pods per domain)."""
    s = state.get("PreFilterPodTopologySpread")
    if s is None:
        raise _NotVectorisable("no PreFilter state")
    ok = np.ones(t.n, bool)
    for i, c in enumerate(s.constraints):
        col = t.label_column(c.topology_key)
        ids = t.label_values[c.topology_key]
        lut = np.zeros(len(ids) + 1, np.int64)  # the last slot serves absent labels (-1)
        for v, cnt in s.tp_value_to_match_num[i].items():
            vid = ids.get(v)
            if vid is not None:
                lut[vid] = cnt
        min_match = s.global_min(i, c.min_domains)
        self_match = 1 if c.selector.matches(pod.metadata.labels) else 0
        ok &= (col >= 0) & (lut[col] + self_match - min_match <= c.max_skew)
    return ok


FILTERS = {
    "PodTopologySpread": _f_pod_topology_spread,
    "InterPodAffinity": _f_inter_pod_affinity,
    "NodeUnschedulable": _f_node_unschedulable,
    "NodeName": _f_node_name,
    "TaintToleration": _f_taint_toleration,
    "NodeAffinity": _f_node_affinity,
    "NodePorts": _f_node_ports,
    "NodeResourcesFit": _f_node_resources_fit,
}


# ---------------------------------------------------------------- scores
def _resource_columns(
    t: NodeTable, idx: np.ndarray, name: str, pod_req: int, use_requested: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(allocatable, requested incl. pod, requested) per node (allocatable 0: left out)."""
    if pod_req == 0 and is_scalar_resource_name(name):
        z = np.zeros(len(idx), np.int64)
        return z, z, z
    if name == "cpu":
        r = (t.req_cpu if use_requested else t.nz_cpu)[idx]
        return t.alloc_cpu[idx], r + pod_req, r
    if name == "memory":
        r = (t.req_mem if use_requested else t.nz_mem)[idx]
        return t.alloc_mem[idx], r + pod_req, r
    if name == "ephemeral-storage":
        r = t.req_eph[idx]
        return t.alloc_eph[idx], r + pod_req, r
    if name in t.scalar_alloc:
        a, u = t.scalar(name)
        r = u[idx]
        return a[idx], r + pod_req, r
    z = np.zeros(len(idx), np.int64)
    return z, z, z


def _s_node_resources_fit(
    t: NodeTable, pl: Any, state: Any, pod: Pod, idx: np.ndarray
) -> np.ndarray:
    from pysched.plugins.args import LEAST_ALLOCATED, MOST_ALLOCATED

    strategy = getattr(pl, "strategy", None)
    if strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED):
        raise _NotVectorisable(f"scoring strategy {strategy}")
    reqs = state.get("PreScoreNodeResourcesFit")
    if reqs is None:
        raise _NotVectorisable("no PreScore state")
    score = np.zeros(len(idx), np.int64)
    wsum = np.zeros(len(idx), np.int64)
    uniform = True  # every node has every resource: one weight sum for all
    wtotal = 0
    for i, res in enumerate(pl.resources):
        a, rq, _ = _resource_columns(t, idx, res.name, reqs[i], False)
        valid = a != 0
        if valid.all():
            if strategy == LEAST_ALLOCATED:
                s = np.where(rq > a, 0, ((a - rq) * MAX_NODE_SCORE) // a)
            else:
                s = (np.minimum(rq, a) * MAX_NODE_SCORE) // a
            wsum += res.weight
            wtotal += res.weight
        else:
            uniform = uniform and not valid.any()
            safe_a = np.where(valid, a, 1)
            if strategy == LEAST_ALLOCATED:
                s = np.where(rq > a, 0, ((safe_a - rq) * MAX_NODE_SCORE) // safe_a)
            else:
                s = (np.minimum(rq, a) * MAX_NODE_SCORE) // safe_a
            s = np.where(valid, s, 0)
            wsum += np.where(valid, res.weight, 0)
        score += s * res.weight
    if uniform:
        return score // wtotal if wtotal else np.zeros(len(idx), np.int64)
    return np.where(wsum > 0, score // np.where(wsum > 0, wsum, 1), 0)


def _balanced_score(rq: list[np.ndarray], a: list[np.ndarray]) -> np.ndarray:
    """balanced_resource_score for nodes where every resource has allocatable > 0."""
    fr = [
        np.minimum(r.astype(np.float64) / x.astype(np.float64), 1.0)
        for r, x in zip(rq, a, strict=True)
    ]
    k = len(fr)
    if k == 2:
        std = np.abs((fr[0] - fr[1]) / 2)
    elif k == 1:
        std = np.zeros_like(fr[0])
    else:
        total = fr[0].copy()
        for f in fr[1:]:
            total = total + f
        mean = total / k
        s = np.zeros_like(mean)
        for f in fr:
            s = s + (f - mean) * (f - mean)
        std = np.sqrt(s / k)
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def _s_balanced(t: NodeTable, pl: Any, state: Any, pod: Pod, idx: np.ndarray) -> np.ndarray:
    from pysched.plugins.balanced_allocation import balanced_resource_scorer
    from pysched.plugins.node_resources_fit import resource_allocation_score

    reqs = state.get("PreScoreNodeResourcesBalancedAllocation")
    if reqs is None:
        raise _NotVectorisable("no PreScore state")
    cols = [_resource_columns(t, idx, r.name, reqs[i], True) for i, r in enumerate(pl.resources)]
    alloc = [c[0] for c in cols]
    all_valid = np.ones(len(idx), bool)
    for a in alloc:
        all_valid &= a != 0
    with_pod = _balanced_score([c[1] for c in cols], alloc) if all_valid.any() else None
    without = _balanced_score([c[2] for c in cols], alloc) if all_valid.any() else None
    out = np.zeros(len(idx), np.int64)
    if with_pod is not None and without is not None:
        half = MAX_NODE_SCORE // 2
        out = half + (half + with_pod - without) // 2
    if not all_valid.all():  # some node lacks a resource: the plugin's own arithmetic
        for j in np.flatnonzero(~all_valid):
            ni = t.infos[idx[j]]
            out[j] = resource_allocation_score(
                ni, pl.resources, reqs, True, balanced_resource_scorer
            )
    return out


def _s_image_locality(t: NodeTable, pl: Any, state: Any, pod: Pod, idx: np.ndarray) -> np.ndarray:
    total_nodes = t.n
    sums = np.zeros(len(idx), np.int64)
    for c in [*pod.spec.init_containers, *pod.spec.containers]:
        name = normalized_image_name(c.image)
        col = t.image_column(name)
        rows = np.flatnonzero(col)
        if len(rows) == 0:
            continue
        st = t.infos[rows[0]].image_states[name]
        scaled = int(st.size * (st.num_nodes / total_nodes))
        sums += np.where(col[idx], scaled, 0)
    n = len(pod.spec.init_containers) + len(pod.spec.containers)
    max_threshold = MAX_CONTAINER_THRESHOLD * n
    s = np.clip(sums, MIN_THRESHOLD, max_threshold)
    return (MAX_NODE_SCORE * (s - MIN_THRESHOLD)) // (max_threshold - MIN_THRESHOLD)


def _s_taint_toleration(t: NodeTable, pl: Any, state: Any, pod: Pod, idx: np.ndarray) -> np.ndarray:
    tolerations = state.get("PreScoreTaintToleration")
    if tolerations is None:
        raise _NotVectorisable("no PreScore state")
    counts = np.zeros(len(idx), np.int64)
    for tid, taint in enumerate(t.taints):
        if taint.effect != TAINT_EFFECT_PREFER_NO_SCHEDULE:
            continue
        if tolerations_tolerate_taint(tolerations, taint):
            continue
        w, b = divmod(tid, 64)
        counts += ((t.prefer_taints[idx, w] >> np.uint64(b)) & np.uint64(1)).astype(np.int64)
    return _normalize(counts, reverse=True)


def _s_node_affinity(t: NodeTable, pl: Any, state: Any, pod: Pod, idx: np.ndarray) -> np.ndarray:
    if getattr(pl, "added_pref_terms", None) is not None:
        raise _NotVectorisable("addedAffinity")
    aff = pod.spec.affinity
    na = aff.node_affinity if aff is not None else None
    counts = np.zeros(len(idx), np.int64)
    for term in na.preferred if na is not None else ():
        pref = term.preference
        if term.weight == 0 or not (pref.match_expressions or pref.match_fields):
            continue
        counts += np.where(_term_mask(t, pref)[idx], term.weight, 0)
    return _normalize(counts, reverse=False)


def _normalize(counts: np.ndarray, reverse: bool) -> np.ndarray:
    """helper.DefaultNormalizeScore over the scored nodes."""
    mx = int(counts.max()) if len(counts) else 0
    if mx == 0:
        return np.full(len(counts), MAX_NODE_SCORE if reverse else 0, np.int64)
    s = (MAX_NODE_SCORE * counts) // mx
    return MAX_NODE_SCORE - s if reverse else s


def _s_inter_pod_affinity(
    t: NodeTable, pl: Any, state: Any, pod: Pod, idx: np.ndarray
) -> np.ndarray:
    """InterPodAffinity.Score + NormalizeScore from its PreScore topology scores."""
    ts = state.get("PreScoreInterPodAffinity")
    if ts is None:
        raise _NotVectorisable("no PreScore state")
    score = np.zeros(len(idx), np.int64)
    for tk, values in ts.items():
        col = t.label_column(tk)
        ids = t.label_values[tk]
        lut = np.zeros(len(ids) + 1, np.int64)  # the last slot serves absent labels (-1)
        k = len(values)  # one C-level map over the domains (as many as nodes for hostname)
        vids = np.fromiter(map(ids.get, values, itertools.repeat(-1)), np.int64, k)
        scores = np.fromiter(values.values(), np.int64, k)
        known = vids >= 0
        lut[vids[known]] = scores[known]
        score += lut[col[idx]]
    if not ts:
        return score
    mn, mx = int(score.min()), int(score.max())
    diff = mx - mn
    if diff <= 0:
        return np.zeros(len(idx), np.int64)
    f = float(MAX_NODE_SCORE) * ((score - mn).astype(np.float64) / float(diff))
    return np.trunc(f).astype(np.int64)


def _s_pod_topology_spread(
    t: NodeTable, pl: Any, state: Any, pod: Pod, idx: np.ndarray
) -> np.ndarray:
    """PodTopologySpread.Score + NormalizeScore from its PreScore state."""
    from pysched.plugins.pod_topology_spread import LABEL_HOSTNAME, count_pods_match_selector

    st = state.get("PreScorePodTopologySpread")
    if st is None:
        raise _NotVectorisable("no PreScore state")
    constraints, ignored, counts, weights = st
    n = len(idx)
    rows = idx.tolist()
    score = np.zeros(n, np.float64)
    ns = pod.metadata.namespace
    for i, c in enumerate(constraints):
        col = t.label_column(c.topology_key)[idx]
        present = col >= 0
        if c.topology_key == LABEL_HOSTNAME:
            cnt = np.fromiter(
                (count_pods_match_selector(t.infos[r].pods, c.selector, ns) for r in rows),
                np.int64,
                n,
            )
        else:
            ids = t.label_values[c.topology_key]
            lut = np.zeros(len(ids) + 1, np.int64)
            for v, k in counts[i].items():
                vid = ids.get(v)
                if vid is not None:
                    lut[vid] = k
            cnt = lut[col]
        score = np.where(
            present, score + (cnt.astype(np.float64) * weights[i] + float(c.max_skew - 1)), score
        )
    r = np.floor(score)
    raw = (r + (score - r >= 0.5)).astype(np.int64)  # Go's math.Round (scores are >= 0)
    valid = np.ones(n, bool)
    if ignored:
        valid = np.fromiter((t.names[r_] not in ignored for r_ in rows), bool, n)
    if not valid.any():
        return np.zeros(n, np.int64)
    mx = max(0, int(raw[valid].max()))
    mn = int(raw[valid].min())
    if mx == 0:
        out = np.full(n, MAX_NODE_SCORE, np.int64)
    else:
        out = (MAX_NODE_SCORE * (mx + mn - raw)) // mx
    return np.where(valid, out, 0)


SCORES = {
    "PodTopologySpread": _s_pod_topology_spread,
    "InterPodAffinity": _s_inter_pod_affinity,
    "NodeResourcesFit": _s_node_resources_fit,
    "NodeResourcesBalancedAllocation": _s_balanced,
    "ImageLocality": _s_image_locality,
    "TaintToleration": _s_taint_toleration,
    "NodeAffinity": _s_node_affinity,
}


class FastPath:
    """Vectorised filters and scores for the scheduler (see module doc)."""

    def __init__(self) -> None:
        self.stats = {
            "fast_filter": 0,
            "plain_filter": 0,
            "fast_score": 0,
            "plain_score": 0,
            "mismatch": 0,
            "errors": 0,
            "nominated_load": 0,
        }

    def filter_mask(self, fwk: Any, state: Any, pod: Pod, table: NodeTable) -> np.ndarray | None:
        """Feasibility of every table row, or None when some active filter is not mirrored."""
        res = self.filter_analysis(fwk, state, pod, table)
        return None if res is None else res[0]

    def active_filters(self, fwk: Any, state: Any) -> set[str]:
        skip = state.skip_filter_plugins
        return {
            n
            for n in (pl.name() for pl in fwk.filter_plugins)
            if n not in skip and n not in _PASS_FILTERS
        }

    def filter_analysis(
        self,
        fwk: Any,
        state: Any,
        pod: Pod,
        table: NodeTable,
        load: NominatedLoad | None = None,
    ) -> tuple[np.ndarray, np.ndarray, list[Any]] | None:
        """(feasible mask, index of each row's first rejecting plugin or -1, those plugins),
        or None when some active filter is not mirrored. ``load``: nominated pods' requests
        (only valid when every active filter is in NOMINATION_SAFE_FILTERS)."""
        skip = state.skip_filter_plugins
        first_fail = np.full(table.n, -1, np.int32)
        plugins: list[Any] = []
        try:
            for pl in fwk.filter_plugins:
                name = pl.name()
                if name in skip or name in _PASS_FILTERS:
                    continue
                fn = FILTERS.get(name)
                if fn is None:
                    raise _NotVectorisable(name)
                ok = fn(table, pl, state, pod, load)
                if ok is True or (isinstance(ok, np.ndarray) and ok.all()):
                    continue
                first_fail[(first_fail < 0) & ~ok] = len(plugins)
                plugins.append(pl)
        except (_NotVectorisable, SelectorError, ValueError):
            self.stats["plain_filter"] += 1
            return None
        except Exception:  # a plugin changed under us: the plugins decide, never a crash
            self.stats["plain_filter"] += 1
            self.stats["errors"] += 1
            return None
        self.stats["fast_filter"] += 1
        return first_fail < 0, first_fail, plugins

    def weighted_totals(
        self, fwk: Any, state: Any, pod: Pod, table: NodeTable, idx: np.ndarray
    ) -> np.ndarray | None:
        """Σ weight × normalised score over rows ``idx``, or None when not mirrored."""
        skip = state.skip_score_plugins
        total = np.zeros(len(idx), np.int64)
        try:
            for pl in fwk.score_plugins:
                name = pl.name()
                if name in skip:
                    continue
                fn = SCORES.get(name)
                if fn is None:
                    raise _NotVectorisable(name)
                total += fn(table, pl, state, pod, idx) * fwk.score_plugin_weight[name]
        except (_NotVectorisable, SelectorError, ValueError):
            self.stats["plain_score"] += 1
            return None
        except Exception:  # a plugin changed under us: the plugins decide, never a crash
            self.stats["plain_score"] += 1
            self.stats["errors"] += 1
            return None
        self.stats["fast_score"] += 1
        return total

    def plugin_scores(
        self, fwk: Any, state: Any, pod: Pod, table: NodeTable, idx: np.ndarray
    ) -> dict[str, np.ndarray] | None:
        """Normalised score per mirrored plugin (tests compare these with the plugins')."""
        out = {}
        try:
            for pl in fwk.score_plugins:
                name = pl.name()
                if name in state.skip_score_plugins:
                    continue
                fn = SCORES.get(name)
                if fn is None:
                    continue  # not mirrored: the plugin scores
                out[name] = fn(table, pl, state, pod, idx)
        except (_NotVectorisable, SelectorError, ValueError):
            return None
        return out
