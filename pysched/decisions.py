"""The scheduler's last decision per pod: why it is Pending, or why it went where it went.

Beyond kube-scheduler (which logs its reasons and forgets them), the embedded scheduler keeps,
for each pod, what its last scheduling attempt decided, so a control plane can show it
(``pykubectl why POD``). A decision has the shape of one ``pysched simulate -o json`` entry
(DESIGN.md) plus two counts::

    {"pod": "default/web-1", "node": "n2" | None, "nominatedNode": None, "victims": [],
     "message": "<kube-scheduler's FitError message, or ''>",
     "filtered": {"n1": {"plugin": "NodeResourcesFit", "code": "Unschedulable",
                         "reason": "Insufficient cpu"}},
     "scores": {"n2": {"NodeResourcesFit": 40, ..., "total": 413}},   # when >= 2 feasible
     "evaluatedNodes": 120, "feasibleNodes": 100}

``filtered`` names, for each infeasible node the attempt evaluated, the first plugin that
rejected it and its reason. A pod that fits is decided from the vectorised masks without
asking its rejecting plugins why (that is what keeps the fast path fast); when the attempt
is recorded, the scheduler asks them then (Diagnosis.resolve: one Filter call of the plugin
the masks name per rejected node) for up to ``scheduler.DECISION_VERDICTS`` nodes, so a
scheduled pod's decision on a cluster of that size has every reason too; beyond it,
``evaluatedNodes - feasibleNodes`` says how many nodes were rejected in all. ``scores``
holds the reported nodes (the chosen node first, then the best totals: upstream's
numberOfHighestScoredNodesToReport, 3), normalised per plugin (0..100) with the weighted total.

Cost and memory: a decision is built on the scheduling thread from what the attempt computed
(besides the deferred verdicts above, no plugin runs again): references to node names plus
one small index per rejected node, and the distinct verdicts once. The log is bounded: at
most ``max_decisions`` pods and at most ``max_node_verdicts`` per-node verdicts in all
(oldest decisions forgotten first); a deleted pod's decision is forgotten at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from pysched.diagnosis import Diagnosis
from pysched.framework.status import Status
from pysched.scheduler import ReportedScores

DEFAULT_MAX_DECISIONS = 10_000
DEFAULT_MAX_NODE_VERDICTS = 2_000_000

Verdict = tuple[str, str, str]  # (plugin, code, reason)


def verdict_of(st: Status) -> Verdict:
    return (st.plugin, str(st.code), st.message())


def verdict_json(v: Verdict) -> dict[str, str]:
    return {"plugin": v[0], "code": v[1], "reason": v[2]}


class Decision:
    """One attempt's outcome, compact (see module doc); ``to_dict()`` is the JSON form."""

    __slots__ = (
        "evaluated_nodes",
        "extenders",
        "feasible_nodes",
        "filtered_nodes",
        "filtered_verdict",
        "message",
        "node",
        "nominated_node",
        "pod",
        "profile",
        "scores",
        "verdicts",
        "victims",
    )

    def __init__(
        self,
        pod: str,
        node: str | None,
        nominated_node: str | None,
        victims: Sequence[str],
        message: str,
        filtered: Sequence[tuple[str, Status]],
        scores: ReportedScores | None,
        evaluated_nodes: int,
        feasible_nodes: int,
        *,
        profile: str = "",
        extenders: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.pod = pod
        self.profile = profile  # the schedulerName whose profile decided
        self.extenders = tuple(extenders)  # what each extender call said
        self.node = node
        self.nominated_node = nominated_node
        self.victims = tuple(victims)
        self.message = message
        ids: dict[Verdict, int] = {}
        per_status: dict[int, int] = {}  # id(Status) -> verdict index: statuses are shared
        names: list[str] = []
        which: list[int] = []
        for name, st in filtered:
            k = per_status.get(id(st))
            if k is None:
                v = verdict_of(st)
                k = ids.get(v)
                if k is None:
                    k = ids[v] = len(ids)
                per_status[id(st)] = k
            names.append(name)
            which.append(k)
        self.verdicts = tuple(ids)
        self.filtered_nodes = tuple(names)
        self.filtered_verdict = bytes(which) if len(ids) < 256 else tuple(which)
        self.scores = scores  # a few nodes' ints: small, kept as built
        self.evaluated_nodes = evaluated_nodes
        self.feasible_nodes = feasible_nodes

    def weight(self) -> int:
        """What this decision costs the log's node-verdict budget."""
        return len(self.filtered_nodes) + 1

    def to_dict(self, counts: bool = True) -> dict[str, Any]:
        """The JSON form; ``counts=False`` leaves out evaluatedNodes/feasibleNodes (simulate's
        entries are exactly DESIGN.md's)."""
        filtered = {
            name: verdict_json(self.verdicts[k])
            for name, k in zip(self.filtered_nodes, self.filtered_verdict, strict=True)
        }
        out: dict[str, Any] = {
            "pod": self.pod,
            "node": self.node,
            "nominatedNode": self.nominated_node,
            "victims": list(self.victims),
            "message": self.message,
            "filtered": filtered,
        }
        sc = self.scores
        if sc is not None and len(sc.nodes) >= 2:
            out["scores"] = {
                node: {**dict(zip(sc.plugins, values, strict=True)), "total": total}
                for node, values, total in zip(sc.nodes, sc.normalized, sc.totals, strict=True)
            }
        if counts:
            out["evaluatedNodes"] = self.evaluated_nodes
            out["feasibleNodes"] = self.feasible_nodes
            if self.profile:
                out["profile"] = self.profile
        if self.extenders:
            out["extenders"] = [dict(e) for e in self.extenders]
        return out


def filtered_statuses(
    diagnosis: Diagnosis | None,
    nodes: Sequence[Any],
    index_of: Mapping[str, int],
    feasible: Sequence[Any],
) -> list[tuple[str, Status]]:
    """(node, status) for every infeasible node the diagnosis knows, in snapshot order
    (``nodes``: the snapshot's node infos, ``index_of``: their positions); when a PreFilter
    rejected the pod or narrowed its nodes, every other node not ``feasible`` (node infos)
    gets the absent-nodes status."""
    if diagnosis is None:
        return []
    nts = diagnosis.node_to_status
    explicit = nts.node_to_status
    absent = nts.absent_nodes_status
    if absent.reasons:
        ok = {ni.name for ni in feasible}
        return [
            (ni.name, explicit.get(ni.name, absent))
            for ni in nodes
            if ni.name in explicit or ni.name not in ok
        ]
    if len(explicit) == len(nodes):
        return [(ni.name, explicit[ni.name]) for ni in nodes if ni.name in explicit]
    names = sorted(explicit, key=lambda n: index_of.get(n, -1))
    return [(n, explicit[n]) for n in names]


class DecisionLog:
    """The last Decision per pod key ("namespace/name"), bounded (see module doc)."""

    def __init__(
        self,
        max_decisions: int = DEFAULT_MAX_DECISIONS,
        max_node_verdicts: int = DEFAULT_MAX_NODE_VERDICTS,
    ) -> None:
        if max_decisions < 1 or max_node_verdicts < 1:
            raise ValueError("max_decisions and max_node_verdicts must be positive")
        self.max_decisions = max_decisions
        self.max_node_verdicts = max_node_verdicts
        self._by_pod: OrderedDict[str, Decision] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def put(self, d: Decision) -> None:
        with self._lock:
            old = self._by_pod.pop(d.pod, None)
            if old is not None:
                self._weight -= old.weight()
            self._by_pod[d.pod] = d
            self._weight += d.weight()
            while len(self._by_pod) > self.max_decisions or (
                self._weight > self.max_node_verdicts and len(self._by_pod) > 1
            ):
                _, gone = self._by_pod.popitem(last=False)
                self._weight -= gone.weight()

    def get(self, key: str) -> Decision | None:
        with self._lock:
            return self._by_pod.get(key)

    def forget(self, key: str) -> None:
        with self._lock:
            old = self._by_pod.pop(key, None)
            if old is not None:
                self._weight -= old.weight()

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_pod)

    def node_verdicts(self) -> int:
        """How much of the node-verdict budget is in use."""
        with self._lock:
            return self._weight
