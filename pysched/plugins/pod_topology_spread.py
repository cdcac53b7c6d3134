"""PodTopologySpread: DoNotSchedule constraints filter by skew; ScheduleAnyway ones score.

Semantics as upstream (v1.36):
- constraints come from the pod, else from the plugin's default constraints (System
  defaulting: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway) whose selector
  is built from the Services/ReplicaSets/... selecting the pod (`default_selector`); the
  handle provides them through the ``workload_objects`` extra (or a ready
  ``default_spread_selector``); without either, no default constraints apply;
- matchLabelKeys are merged into the selector; minDomains defaults to 1; nodeAffinityPolicy
  Honor and nodeTaintsPolicy Ignore by default;
- Filter: matchNum + selfMatch - globalMin > maxSkew -> Unschedulable; a node missing a
  topology key -> UnschedulableAndUnresolvable "(missing required label)";
- Score: per constraint cnt * log(domains + 2) + (maxSkew - 1), summed and rounded; then
  normalised as 100 * (max + min - score) / max, ignored nodes 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from pykubelet.api.objects import Node
from pykubelet.api.types import (
    NODE_INCLUSION_POLICY_HONOR,
    NODE_INCLUSION_POLICY_IGNORE,
    TOPOLOGY_DO_NOT_SCHEDULE,
    TOPOLOGY_SCHEDULE_ANYWAY,
    LabelSelector,
    LabelSelectorRequirement,
    Pod,
    TopologySpreadConstraint,
)
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from pysched.framework.labels import (
    EVERYTHING,
    RequiredNodeAffinity,
    Selector,
    find_matching_untolerated_taint,
    label_selector_as_selector,
)
from pysched.framework.node_table import Ints, Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreFilterResult
from pysched.plugins.args import (
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
    system_default_constraints,
)
from pysched.plugins.helper import PodCountingExtensions, go_round
from pysched.plugins.taint_toleration import do_not_schedule_taints_filter

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
LABEL_HOSTNAME = "kubernetes.io/hostname"
MAX_INT32 = 2**31 - 1


class Constraint:
    """topologySpreadConstraint: the v1 constraint with its selector parsed."""

    __slots__ = (
        "max_skew",
        "min_domains",
        "node_affinity_policy",
        "node_taints_policy",
        "selector",
        "topology_key",
    )

    def __init__(
        self,
        max_skew: int,
        topology_key: str,
        selector: Selector,
        min_domains: int,
        node_affinity_policy: str,
        node_taints_policy: str,
    ) -> None:
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.node_affinity_policy = node_affinity_policy
        self.node_taints_policy = node_taints_policy

    def match_node_inclusion_policies(
        self, pod: Pod, node: Node, required: RequiredNodeAffinity
    ) -> bool:
        if self.node_affinity_policy == NODE_INCLUSION_POLICY_HONOR and not required.match(node):
            return False
        return not (
            self.node_taints_policy == NODE_INCLUSION_POLICY_HONOR
            and find_matching_untolerated_taint(
                node.spec.taints, pod.spec.tolerations, do_not_schedule_taints_filter
            )
            is not None
        )


def filter_constraints(
    constraints: list[TopologySpreadConstraint], pod_labels: dict[str, str], action: str
) -> list[Constraint]:
    """filterTopologySpreadConstraints: those of `action`, matchLabelKeys merged, defaults set."""
    out: list[Constraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        sel = c.label_selector
        if c.match_label_keys and sel is not None:
            extra = [
                LabelSelectorRequirement(key=k, operator="In", values=[pod_labels[k]])
                for k in c.match_label_keys
                if k in pod_labels
            ]
            if extra:
                sel = LabelSelector(
                    match_labels=dict(sel.match_labels),
                    match_expressions=[*extra, *sel.match_expressions],
                )
        selector = label_selector_as_selector(sel)  # nil stays Nothing, as upstream
        out.append(
            Constraint(
                c.max_skew,
                c.topology_key,
                selector,
                c.min_domains if c.min_domains is not None else 1,
                c.node_affinity_policy or NODE_INCLUSION_POLICY_HONOR,
                c.node_taints_policy or NODE_INCLUSION_POLICY_IGNORE,
            )
        )
    return out


def node_labels_match_constraints(labels: dict[str, str], constraints: list[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def counted_nodes(
    pod: Pod, nodes: list[NodeInfo], constraints: list[Constraint], require_all: bool
) -> Iterator[tuple[NodeInfo, dict[str, str], int, Constraint]]:
    """(node, its labels, i, constraint i) for each constraint whose domains count the node's
    pods: PreFilter's and PreScore's walk (calPreFilterState, initPreScoreState). A node with
    no Node is passed over, so is one lacking a constraint's key when ``require_all``, and a
    constraint whose nodeAffinityPolicy/nodeTaintsPolicy leave the node out."""
    required = RequiredNodeAffinity(pod)
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.metadata.labels
        if require_all and not node_labels_match_constraints(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if c.match_node_inclusion_policies(pod, node, required):
                yield ni, labels, i, c


def count_pods_match_selector(pods: list[PodInfo], selector: Selector, ns: str) -> int:
    """Matching pods in the namespace, terminating ones excluded; an empty selector counts 0."""
    if selector.empty:
        return 0
    n = 0
    for pi in pods:
        p = pi.pod
        if p.metadata.deletion_timestamp is not None or p.metadata.namespace != ns:
            continue
        if selector.matches(p.metadata.labels):
            n += 1
    return n


class _PreFilterState:
    __slots__ = ("constraints", "domains_at_count", "min_match_num", "tp_value_to_match_num")

    def __init__(self, constraints: list[Constraint]) -> None:
        self.constraints = constraints
        self.min_match_num: list[int] = []
        self.domains_at_count: list[dict[int, int]] = []
        self.tp_value_to_match_num: list[dict[str, int]] = []

    def clone(self) -> _PreFilterState:
        c = _PreFilterState(self.constraints)
        c.min_match_num = list(self.min_match_num)
        c.domains_at_count = [dict(h) for h in self.domains_at_count]
        c.tp_value_to_match_num = [dict(m) for m in self.tp_value_to_match_num]
        return c

    def global_min(self, i: int, min_domains: int) -> int:
        """Fewer eligible domains than minDomains: the global minimum counts as 0."""
        if len(self.tp_value_to_match_num[i]) < min_domains:
            return 0
        return self.min_match_num[i]

    def update_min(self, i: int, old: int, cur: int) -> None:
        hist = self.domains_at_count[i]
        hist[old] = hist.get(old, 0) - 1
        if hist[old] <= 0:
            del hist[old]
        hist[cur] = hist.get(cur, 0) + 1
        if cur < self.min_match_num[i] or (old == self.min_match_num[i] and hist.get(old, 0) == 0):
            self.min_match_num[i] = cur


class PodTopologySpread(PodCountingExtensions):
    state_key = PRE_FILTER_STATE_KEY
    state_error = f"reading {PRE_FILTER_STATE_KEY!r} from cycleState"

    def __init__(self, args: PodTopologySpreadArgs, handle: Any) -> None:
        self.handle = handle
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = (
            system_default_constraints()
            if self.system_defaulted
            else list(args.default_constraints)
        )

    def name(self) -> str:
        return NAME

    def _default_selector(self, pod: Pod) -> Selector | None:
        """The handle's ``default_spread_selector`` extra ((pod) -> Selector), else the one built
        from its ``workload_objects`` extra (() -> Services/RCs/ReplicaSets/StatefulSets)."""
        if self.handle is None:
            return None
        fn = self.handle.extra("default_spread_selector")
        if fn is not None:
            return fn(pod)  # type: ignore[no-any-return]
        workloads = self.handle.extra("workload_objects")
        if workloads is not None:
            return default_selector(pod, list(workloads()))
        return None

    def build_default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        cs = filter_constraints(self.default_constraints, pod.metadata.labels, action)
        if not cs:
            return []
        sel = self._default_selector(pod)
        if sel is None or sel.empty or sel is EVERYTHING:
            return []
        for c in cs:
            c.selector = sel
        return cs

    def get_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        if pod.spec.topology_spread_constraints:
            return filter_constraints(
                pod.spec.topology_spread_constraints, pod.metadata.labels, action
            )
        return self.build_default_constraints(pod, action)

    # -------------------------------------------------------------- PreFilter / Filter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        constraints = self.get_constraints(pod, TOPOLOGY_DO_NOT_SCHEDULE)
        if not constraints:
            return None, Status(Code.SKIP)
        s = _PreFilterState(constraints)
        s.tp_value_to_match_num = [{} for _ in constraints]
        ns = pod.metadata.namespace
        for ni, labels, i, c in counted_nodes(pod, nodes, constraints, require_all=True):
            v = labels[c.topology_key]
            m = s.tp_value_to_match_num[i]
            m[v] = m.get(v, 0) + count_pods_match_selector(ni.pods, c.selector, ns)
        for i in range(len(constraints)):
            mn = MAX_INT32
            hist: dict[int, int] = {}
            for num in s.tp_value_to_match_num[i].values():
                hist[num] = hist.get(num, 0) + 1
                mn = min(mn, num)
            s.min_match_num.append(mn)
            s.domains_at_count.append(hist)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def _update_with_pod(
        self, s: _PreFilterState | None, updated: Pod, preemptor: Pod, node: Node | None, delta: int
    ) -> None:
        if s is None or node is None or updated.metadata.namespace != preemptor.metadata.namespace:
            return
        labels = node.metadata.labels
        if not node_labels_match_constraints(labels, s.constraints):
            return
        required = RequiredNodeAffinity(preemptor)
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(updated.metadata.labels):
                continue
            if not c.match_node_inclusion_policies(preemptor, node, required):
                continue
            v = labels[c.topology_key]
            m = s.tp_value_to_match_num[i]
            old = m.get(v, 0)
            cur = old + delta
            m[v] = cur
            s.update_min(i, old, cur)

    def count_pod(self, s: _PreFilterState, pod_to_schedule: Pod, pod_info: PodInfo,
                  node_info: NodeInfo, delta: int) -> None:
        self._update_with_pod(s, pod_info.pod, pod_to_schedule, node_info.node, delta)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status(Code.ERROR, [f"reading {PRE_FILTER_STATE_KEY!r} from cycleState"])
        if not s.constraints:
            return None
        node = node_info.node
        assert node is not None
        labels = node.metadata.labels
        pod_labels = pod.metadata.labels
        for i, c in enumerate(s.constraints):
            tv = labels.get(c.topology_key)
            if tv is None:
                return Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_NODE_LABEL_NOT_MATCH]
                )
            min_match = s.global_min(i, c.min_domains)
            self_match = 1 if c.selector.matches(pod_labels) else 0
            match_num = s.tp_value_to_match_num[i].get(tv, 0)
            if match_num + self_match - min_match > c.max_skew:
                return Status(Code.UNSCHEDULABLE, [ERR_REASON_CONSTRAINTS_NOT_MATCH])
        return None

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask | None:
        """Filter from the PreFilter state (matching pods per domain), per label column."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return None
        ok = np.ones(table.n, bool)
        for i, c in enumerate(s.constraints):
            labelled = table.label_column(c.topology_key) >= 0
            match_num = table.domain_values(c.topology_key, s.tp_value_to_match_num[i])
            min_match = s.global_min(i, c.min_domains)
            self_match = 1 if c.selector.matches(pod.metadata.labels) else 0
            ok &= labelled & (match_num + self_match - min_match <= c.max_skew)
        return ok

    def resource_monotone(self) -> bool:
        return False  # other pods' labels matter

    # -------------------------------------------------------------- Score
    def pre_score(
        self, state: CycleState, pod: Pod, filtered_nodes: list[NodeInfo]
    ) -> Status | None:
        all_nodes = self.handle.snapshot_shared_lister().node_infos().list()
        if not all_nodes:
            return Status(Code.SKIP)
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        constraints = self.get_constraints(pod, TOPOLOGY_SCHEDULE_ANYWAY)
        if not constraints:
            return Status(Code.SKIP)
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        topo_size = [0] * len(constraints)
        for ni in filtered_nodes:
            labels = ni.node.metadata.labels if ni.node is not None else {}
            if require_all and not node_labels_match_constraints(labels, constraints):
                ignored.add(ni.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue
                v = labels.get(c.topology_key, "")
                if v not in counts[i]:
                    counts[i][v] = 0
                    topo_size[i] += 1
        weights: list[float] = []
        for i, c in enumerate(constraints):
            sz = topo_size[i]
            if c.topology_key == LABEL_HOSTNAME:
                sz = len(filtered_nodes) - len(ignored)
            weights.append(math.log(float(sz + 2)))
        ns = pod.metadata.namespace
        for ni, labels, i, c in counted_nodes(pod, all_nodes, constraints, require_all):
            v = labels.get(c.topology_key, "")
            if v in counts[i]:
                counts[i][v] += count_pods_match_selector(ni.pods, c.selector, ns)
        state.write(PRE_SCORE_STATE_KEY, (constraints, ignored, counts, weights))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return 0, Status(Code.ERROR, [f"error reading {PRE_SCORE_STATE_KEY!r} from cycleState"])
        constraints, ignored, counts, weights = s
        if node_info.name in ignored:
            return 0, None
        labels = node_info.node.metadata.labels if node_info.node is not None else {}
        score = 0.0
        ns = pod.metadata.namespace
        for i, c in enumerate(constraints):
            tv = labels.get(c.topology_key)
            if tv is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_match_selector(node_info.pods, c.selector, ns)
            else:
                cnt = counts[i].get(tv, 0)
            score += float(cnt) * weights[i] + float(c.max_skew - 1)
        return go_round(score), None

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints | None:
        """Score + NormalizeScore from the PreScore state."""
        st = state.get(PRE_SCORE_STATE_KEY)
        if st is None:
            return None
        constraints, ignored, counts, weights = st
        n = len(rows)
        row_list = rows.tolist()
        score = np.zeros(n, np.float64)
        ns = pod.metadata.namespace
        for i, c in enumerate(constraints):
            present = table.label_column(c.topology_key)[rows] >= 0
            if c.topology_key == LABEL_HOSTNAME:
                cnt = np.fromiter(
                    (
                        count_pods_match_selector(table.infos[r].pods, c.selector, ns)
                        for r in row_list
                    ),
                    np.int64,
                    n,
                )
            else:
                cnt = table.domain_values(c.topology_key, counts[i])[rows]
            add = cnt.astype(np.float64) * weights[i] + float(c.max_skew - 1)
            score = np.where(present, score + add, score)
        r = np.floor(score)
        raw = (r + (score - r >= 0.5)).astype(np.int64)  # Go's math.Round (scores are >= 0)
        valid = np.ones(n, bool)
        if ignored:
            valid = np.fromiter((table.names[x] not in ignored for x in row_list), bool, n)
        if not valid.any():
            return np.zeros(n, np.int64)
        mx = max(0, int(raw[valid].max()))
        mn = int(raw[valid].min())
        if mx == 0:
            out = np.full(n, MAX_NODE_SCORE, np.int64)
        else:
            out = (MAX_NODE_SCORE * (mx + mn - raw)) // mx
        res: Ints = np.where(valid, out, 0)
        return res

    def score_extensions(self) -> PodTopologySpread:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return Status(Code.ERROR, [f"error reading {PRE_SCORE_STATE_KEY!r} from cycleState"])
        ignored = s[1]
        min_score = 2**63 - 1
        max_score = 0
        invalid = [False] * len(scores)
        for i, ns in enumerate(scores):
            if ns.name in ignored:
                invalid[i] = True
                continue
            min_score = min(min_score, ns.score)
            max_score = max(max_score, ns.score)
        for i, ns in enumerate(scores):
            if invalid[i]:
                ns.score = 0
                continue
            if max_score == 0:
                ns.score = MAX_NODE_SCORE
                continue
            ns.score = MAX_NODE_SCORE * (max_score + min_score - ns.score) // max_score
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
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                )
            ),
        ]


def new(args: Any, handle: Any) -> PodTopologySpread:
    return PodTopologySpread(
        args if isinstance(args, PodTopologySpreadArgs) else PodTopologySpreadArgs(), handle
    )


def default_selector(pod: Pod, workloads: list[Any]) -> Selector:
    """helper.DefaultSelector: the Services selecting the pod, plus its controller's selector.

    `workloads` are Service / ReplicationController / ReplicaSet / StatefulSet objects
    (pysched.workloads), told apart by `kind`. The result is empty (nothing to spread) when
    none applies.
    """
    from pysched.framework.labels import label_selector_as_selector as as_selector

    def exprs(labels: dict[str, str]) -> list[LabelSelectorRequirement]:
        return [LabelSelectorRequirement(key=k, operator="In", values=[v])
                for k, v in labels.items()]

    ns = pod.metadata.namespace
    label_set: dict[str, str] = {}
    for w in workloads:
        if (
            w.kind == "Service"
            and w.metadata.namespace == ns
            and w.spec.selector is not None
            and all(pod.metadata.labels.get(k) == v for k, v in w.spec.selector.items())
        ):
            label_set.update(w.spec.selector)
    reqs = exprs(label_set)
    owner = next((o for o in pod.metadata.owner_references if o.controller), None)
    if owner is not None:
        for w in workloads:
            if w.metadata.namespace != ns or w.metadata.name != owner.name:
                continue
            if (
                owner.kind == "ReplicationController"
                and w.kind == "ReplicationController"
                and owner.api_version == "v1"
            ):
                label_set.update(w.spec.selector)
                reqs = exprs(label_set)
            elif (
                w.kind in ("ReplicaSet", "StatefulSet")
                and owner.kind == w.kind
                and owner.api_version == "apps/v1"
                and w.spec.selector is not None
            ):
                reqs = reqs + exprs(w.spec.selector.match_labels)
                reqs = reqs + list(w.spec.selector.match_expressions)
    if not reqs:
        return EVERYTHING
    return as_selector(LabelSelector(match_expressions=reqs))
