"""NodeResourcesBalancedAllocation: favours nodes whose balance improves with the pod.

Since v1.36 (kubernetes#135573) the score compares the std-dev of the resource
fractions with and without the pod: both balanced scores lie in [50, 100], and
score = 50 + (50 + with - without) / 2 (75 when the balance is unchanged).
BestEffort pods (no requests for the scored resources) are not scored (PreScore Skip).
It reads the node's real requested sums (not the non-zero ones).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.node_table import Ints, NodeTable
from pysched.framework.status import Code, Status
from pysched.framework.types import MAX_NODE_SCORE, NodeInfo
from pysched.plugins.args import NodeResourcesBalancedAllocationArgs
from pysched.plugins.node_resources_fit import (
    allocatable_and_requested_batch,
    pod_resource_request_list,
    resource_allocation_score,
)

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def balanced_resource_score(requested: list[int], allocatable: list[int]) -> int:
    """(1 - std) * 100 over the capped fractions requested/allocatable (truncated)."""
    fractions: list[float] = []
    total = 0.0
    for i, rq in enumerate(requested):
        if allocatable[i] == 0:
            continue
        f = rq / allocatable[i]
        if f > 1:
            f = 1.0
        total += f
        fractions.append(f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        s = 0.0
        for f in fractions:
            s = s + (f - mean) * (f - mean)
        std = math.sqrt(s / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_resource_score_batch(requested: list[Ints], allocatable: list[Ints]) -> Ints:
    """balanced_resource_score for rows where every resource has allocatable > 0."""
    fr = [
        np.minimum(r.astype(np.float64) / a.astype(np.float64), 1.0)
        for r, a in zip(requested, allocatable, strict=True)
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
    out: Ints = np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return out


def balanced_resource_scorer(
    requested: list[int], allocated: list[int], allocatable: list[int]
) -> int:
    if len(allocatable) == 2 and allocatable[0] and allocatable[1]:
        # the default cpu+memory case, inlined: std of two fractions is |f0 - f1| / 2
        a0, a1 = allocatable
        with_pod = int(
            (1 - abs((min(requested[0] / a0, 1.0) - min(requested[1] / a1, 1.0)) / 2)) * 100.0
        )
        without_pod = int(
            (1 - abs((min(allocated[0] / a0, 1.0) - min(allocated[1] / a1, 1.0)) / 2)) * 100.0
        )
    else:
        with_pod = balanced_resource_score(requested, allocatable)
        without_pod = balanced_resource_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + (half + with_pod - without_pod) // 2  # numerator >= 0: // == Go's /


def _cpu_memory_batch(table: NodeTable, rows: Ints, pod_cpu: int, pod_mem: int) -> Ints | None:
    """The default resources (cpu, memory) in one pass over the table's columns, the same
    float arithmetic as balanced_resource_score_batch (int64 / int64 divides in float64) with
    fewer temporaries; None when some row lacks cpu or memory (the general path)."""
    a0 = table.alloc_cpu[rows]
    a1 = table.alloc_mem[rows]
    if not (a0.all() and a1.all()):
        return None
    u0 = table.req_cpu[rows]
    u1 = table.req_mem[rows]
    without = _two_balance(u0, u1, a0, a1)
    u0 += pod_cpu  # copies (fancy indexing): the table is untouched
    u1 += pod_mem
    with_pod = _two_balance(u0, u1, a0, a1)
    half = MAX_NODE_SCORE // 2
    out: Ints = half + (half + with_pod - without) // 2
    return out


def _two_balance(u0: Ints, u1: Ints, a0: Ints, a1: Ints) -> Ints:
    """balanced_resource_score_batch for two resources: std of two fractions is |f0 - f1| / 2."""
    std = np.abs((np.minimum(u0 / a0, 1.0) - np.minimum(u1 / a1, 1.0)) / 2)
    out: Ints = np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return out


class BalancedAllocation:
    def __init__(self, args: NodeResourcesBalancedAllocationArgs) -> None:
        self.resources = list(args.resources)

    def name(self) -> str:
        return NAME

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        reqs = pod_resource_request_list(pod, self.resources, True)
        if all(r == 0 for r in reqs):
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, reqs)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        reqs = state.get(PRE_SCORE_STATE_KEY)
        if reqs is None:
            reqs = pod_resource_request_list(pod, self.resources, True)
            if all(r == 0 for r in reqs):
                return 0, None
        return resource_allocation_score(
            node_info, self.resources, reqs, True, balanced_resource_scorer
        ), None

    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: Ints) -> Ints | None:
        reqs = state.get(PRE_SCORE_STATE_KEY)
        if reqs is None:
            return None
        # a per-row score: kept by the table while pods of this shape keep coming
        return table.per_row(
            (self, "score", tuple(reqs)),
            lambda rs: self._score_rows(table, table.rows_or_every(rs), reqs),
            rows,
            lambda ni: resource_allocation_score(
                ni, self.resources, reqs, True, balanced_resource_scorer
            ),
        )

    def _score_rows(self, table: NodeTable, rows: Ints, reqs: list[int]) -> Ints:
        res = self.resources
        if len(res) == 2 and res[0].name == "cpu" and res[1].name == "memory":
            out = _cpu_memory_batch(table, rows, reqs[0], reqs[1])
            if out is not None:
                return out
        cols = [
            allocatable_and_requested_batch(table, rows, r.name, reqs[i], True)
            for i, r in enumerate(self.resources)
        ]
        alloc = [c[0] for c in cols]
        all_valid = np.ones(len(rows), bool)
        for a in alloc:
            all_valid &= a != 0
        out = np.zeros(len(rows), np.int64)
        if all_valid.all():
            with_pod = balanced_resource_score_batch([c[1] for c in cols], alloc)
            without = balanced_resource_score_batch([c[2] for c in cols], alloc)
            half = MAX_NODE_SCORE // 2
            out = half + (half + with_pod - without) // 2
        else:  # some node lacks a resource: the per-node arithmetic for those, no 0/0
            ok = np.flatnonzero(all_valid)
            if len(ok):
                a_ok = [a[ok] for a in alloc]
                with_pod = balanced_resource_score_batch([c[1][ok] for c in cols], a_ok)
                without = balanced_resource_score_batch([c[2][ok] for c in cols], a_ok)
                half = MAX_NODE_SCORE // 2
                out[ok] = half + (half + with_pod - without) // 2
            for j in np.flatnonzero(~all_valid).tolist():
                ni = table.infos[int(rows[j])]
                out[j] = resource_allocation_score(
                    ni, self.resources, reqs, True, balanced_resource_scorer
                )
        return out

    def score_extensions(self) -> None:
        return None


def new(args: Any, handle: Any) -> BalancedAllocation:
    return BalancedAllocation(
        args
        if isinstance(args, NodeResourcesBalancedAllocationArgs)
        else NodeResourcesBalancedAllocationArgs()
    )
