"""Why a pod did not fit: NodeToStatus, Diagnosis and FitError (framework/types.go).

FitError's message has kube-scheduler's exact shape::

    0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {k: v}. \
preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod.

- the PreFilter message, when PreFilter rejected the pod (then per-node reasons are omitted);
- else a histogram "<count> <reason>" over every node's reasons (absent nodes counted with the
  absent-nodes status), sorted as strings, joined by ", " and ended by ".";
- then the PostFilter (preemption) message, after a space.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pysched.framework.status import Code, Status

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


class NodeToStatus:
    """framework.NodeToStatus: explicit per-node statuses plus one status for absent nodes."""

    __slots__ = ("absent_nodes_status", "node_to_status")

    def __init__(self, absent: Status | None = None) -> None:
        self.node_to_status: dict[str, Status] = {}
        self.absent_nodes_status = absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def get(self, node_name: str) -> Status:
        return self.node_to_status.get(node_name, self.absent_nodes_status)

    def set(self, node_name: str, status: Status) -> None:
        self.node_to_status[node_name] = status

    def __len__(self) -> int:
        return len(self.node_to_status)

    def set_absent_nodes_status(self, status: Status) -> None:
        self.absent_nodes_status = status

    def items(self) -> Iterable[tuple[str, Status]]:
        return self.node_to_status.items()

    def nodes_for_status_code(self, node_infos: Iterable[Any], code: Code) -> list[Any]:
        """The snapshot's node infos whose status has ``code`` (absent ones included when
        the absent-nodes status has it), in snapshot order."""
        out = []
        absent_matches = self.absent_nodes_status.code == code
        for ni in node_infos:
            st = self.node_to_status.get(ni.name)
            if st is None:
                if absent_matches:
                    out.append(ni)
            elif st.code == code:
                out.append(ni)
        return out


@dataclass
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    # Infeasible nodes the vectorised path found but whose Status was not computed yet (the
    # pod fits elsewhere, so nobody needs it unless asked): resolve() runs their filters.
    deferred_count: int = 0
    deferred_resolver: Any = None

    def num_rejected(self) -> int:
        """Nodes known infeasible (explicit statuses plus deferred ones)."""
        return len(self.node_to_status) + self.deferred_count

    def resolve(self, limit: int | None = None) -> None:
        """Compute the deferred statuses (idempotent); with ``limit``, at most that many now,
        the rest staying deferred (and counted) for a later call."""
        fn = self.deferred_resolver
        if fn is None:
            return
        before = len(self.node_to_status)
        left = fn(self, limit)
        if not left:
            self.deferred_resolver = None
            self.deferred_count = 0
        else:
            self.deferred_count = max(0, self.deferred_count
                                      - (len(self.node_to_status) - before))

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)


def _go_sort_key(s: str) -> bytes:
    return s.encode()  # Go's sort.Strings compares bytes


class FitError(Exception):
    """The pod fits no node; ``str()`` is kube-scheduler's message."""

    def __init__(self, pod: Any, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def message(self) -> str:
        d = self.diagnosis
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            reasons: dict[str, int] = {}
            for _, st in d.node_to_status.items():
                for r in st.reasons:
                    reasons[r] = reasons.get(r, 0) + 1
            absent = self.num_all_nodes - len(d.node_to_status)
            if absent > 0:
                for r in d.node_to_status.absent_nodes_status.reasons:
                    reasons[r] = reasons.get(r, 0) + absent
            hist = sorted((f"{v} {k}" for k, v in reasons.items()), key=_go_sort_key)
            if hist:
                msg += " " + ", ".join(hist) + "."
        if d.post_filter_msg:
            msg += f" {d.post_filter_msg}"
        return msg

    def __str__(self) -> str:
        return self.message()


class NoNodesAvailableError(Exception):
    """ErrNoNodesAvailable."""

    def __init__(self) -> None:
        super().__init__("no nodes available to schedule pods")
