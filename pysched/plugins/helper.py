"""Shared plugin helpers: Go integer division and DefaultNormalizeScore (and its batch twin)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pysched.framework.events import QueueingHint
from pysched.framework.node_table import Ints
from pysched.framework.types import MAX_NODE_SCORE, NodeScore


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
