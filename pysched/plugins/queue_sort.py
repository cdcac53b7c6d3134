"""PrioritySort: higher priority first, then the earlier queue timestamp."""

from __future__ import annotations

from typing import Any

NAME = "PrioritySort"


def _priority(qpi: Any) -> int:
    p = qpi.pod.spec.priority
    return p if p is not None else 0


class PrioritySort:
    def name(self) -> str:
        return NAME

    def less(self, a: Any, b: Any) -> bool:
        """a before b: higher spec.priority, or equal priority and older timestamp."""
        p1, p2 = _priority(a), _priority(b)
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)


def new(args: Any, handle: Any) -> PrioritySort:
    return PrioritySort()
