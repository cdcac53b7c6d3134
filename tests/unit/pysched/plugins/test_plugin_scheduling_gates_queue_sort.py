"""SchedulingGates (PreEnqueue) and PrioritySort (QueueSort)."""

from __future__ import annotations

from dataclasses import dataclass

from builders import make_pod

from pykubelet.api.types import Pod
from pysched.framework.events import QueueingHint
from pysched.framework.status import Code
from pysched.plugins.queue_sort import PrioritySort
from pysched.plugins.scheduling_gates import SchedulingGates


def test_scheduling_gates() -> None:
    pl = SchedulingGates()
    assert pl.pre_enqueue(make_pod().obj()) is None
    gated = make_pod().spec(schedulingGates=[{"name": "a"}, {"name": "b"}]).obj()
    s = pl.pre_enqueue(gated)
    assert s is not None
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.reasons == ["waiting for scheduling gates: [a b]"]
    (ev,) = pl.events_to_register()
    assert ev.queueing_hint_fn is not None
    assert ev.queueing_hint_fn(gated, gated, make_pod().obj()) == QueueingHint.QUEUE
    assert ev.queueing_hint_fn(gated, gated, gated) == QueueingHint.QUEUE_SKIP
    other = make_pod("other").obj()
    assert ev.queueing_hint_fn(gated, other, other) == QueueingHint.QUEUE_SKIP


@dataclass
class _Q:
    pod: Pod
    timestamp: float


def test_priority_sort() -> None:
    less = PrioritySort().less
    hi = _Q(make_pod("hi").priority(10).obj(), 2.0)
    lo = _Q(make_pod("lo").priority(1).obj(), 1.0)
    none = _Q(make_pod("none").obj(), 0.5)
    same_later = _Q(make_pod("later").priority(10).obj(), 3.0)
    assert less(hi, lo)
    assert not less(lo, hi)
    assert less(lo, none)  # no priority counts as 0
    assert less(hi, same_later)  # equal priority: earlier timestamp first
    assert not less(same_later, hi)
