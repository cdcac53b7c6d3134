"""PriorityQueue timings and moves, driven by a FakeClock (no threads, no sleeps)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from pysched.clock import FakeClock
from pysched.queue import (
    ACTIVE_Q,
    BACKOFF_Q,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    EVENT_NODE_LABEL_CHANGE,
    UNSCHEDULABLE_Q,
    ActionType,
    ClusterEvent,
    NominatingInfo,
    PriorityQueue,
    QueueingHint,
    QueueingHintFunction,
    Resource,
)


@dataclass
class _Meta:
    name: str
    namespace: str = "default"
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class _Spec:
    priority: int | None = None
    node_name: str = ""
    scheduler_name: str = "default-scheduler"


@dataclass
class _Status:
    nominated_node_name: str = ""


@dataclass
class _Pod:
    metadata: _Meta
    spec: _Spec = field(default_factory=_Spec)
    status: _Status = field(default_factory=_Status)


@dataclass
class _Term:
    key: str
    value: str

    def matches(self, pod: Any, ns_labels: dict[str, str]) -> bool:
        return pod.metadata.labels.get(self.key) == self.value


@dataclass
class _PInfo:
    pod: Any
    required_affinity_terms: list[Any] = field(default_factory=list)


def pod(name: str, priority: int | None = None, **labels: str) -> _Pod:
    return _Pod(_Meta(name, uid=name, labels=dict(labels)), _Spec(priority=priority))


def _factory(p: Any) -> _PInfo:
    terms = getattr(p, "_terms", [])
    return _PInfo(p, terms)


HINTS = {
    "default-scheduler": [
        (
            ClusterEvent(Resource.NODE, ActionType.ADD),
            QueueingHintFunction("NodeResourcesFit", None),
        ),
        (
            ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE),
            QueueingHintFunction("NodeResourcesFit", None),
        ),
        (
            ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL),
            QueueingHintFunction(
                "NodeAffinity",
                lambda p, old, new: (
                    QueueingHint.QUEUE
                    if new is not None and new.get("zone") == "a"
                    else QueueingHint.QUEUE_SKIP
                ),
            ),
        ),
        (
            ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD),
            QueueingHintFunction("InterPodAffinity", None),
        ),
    ]
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.fixture
def q(clock: FakeClock) -> PriorityQueue:
    return PriorityQueue(clock=clock, pod_info_factory=_factory, queueing_hints=HINTS)


def fail(q: PriorityQueue, pinfo: Any, *plugins: str) -> None:
    pinfo.unschedulable_plugins = set(plugins)
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)


def test_active_q_orders_by_priority_then_timestamp(q: PriorityQueue, clock: FakeClock) -> None:
    q.add(pod("low", 1))
    clock.step(0.1)
    q.add(pod("high-late", 10))
    q.add(pod("mid", 5))
    clock.step(0.1)
    q.add(pod("high-later", 10))
    names = [q.pop().pod.metadata.name for _ in range(4)]
    assert names == ["high-late", "high-later", "mid", "low"]
    assert q.pop() is None


def test_pop_counts_attempts_and_cycles(q: PriorityQueue) -> None:
    q.add(pod("a"))
    p = q.pop()
    assert p.attempts == 1
    assert q.scheduling_cycle == 1


def test_backoff_doubles_per_attempt_and_caps_at_ten_seconds(q: PriorityQueue) -> None:
    pi = q.new_queued_pod_info(pod("a"))
    expected = {1: 1, 2: 2, 3: 4, 4: 8, 5: 10, 6: 10, 12: 10}
    for attempts, secs in expected.items():
        pi.attempts = attempts
        assert q.backoff_duration(pi) == secs


def test_error_goes_to_backoff_then_active_after_flush(q: PriorityQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    p = q.pop()
    fail(q, p)  # no rejecting plugin: an error, back after backoff
    assert q.where(p.pod) == BACKOFF_Q
    clock.step(0.5)
    q.tick()
    assert q.where(p.pod) == BACKOFF_Q
    clock.step(0.5)
    q.tick()
    assert q.where(p.pod) == ACTIVE_Q


def test_second_attempt_backs_off_two_seconds(q: PriorityQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    p = q.pop()
    fail(q, p)
    clock.step(1)
    q.tick()
    p = q.pop()
    assert p.attempts == 2
    fail(q, p)
    clock.step(1.0)
    q.tick()
    assert q.where(p.pod) == BACKOFF_Q
    clock.step(1.0)
    q.tick()
    assert q.where(p.pod) == ACTIVE_Q


def test_backoff_flush_happens_on_the_one_second_period(q: PriorityQueue, clock: FakeClock) -> None:
    clock.step(0.4)  # the flush timer started at t=1000; next flush at 1001
    q.add(pod("a"))
    p = q.pop()
    fail(q, p)  # backoff until 1001.4
    clock.step(0.6)  # t=1001.0: flush runs, pod still backing off
    q.tick()
    assert q.where(p.pod) == BACKOFF_Q
    clock.step(0.5)  # t=1001.5: no flush due yet
    q.tick()
    assert q.where(p.pod) == BACKOFF_Q
    clock.step(0.5)  # t=1002.0: flush
    q.tick()
    assert q.where(p.pod) == ACTIVE_Q


def test_unschedulable_pod_moves_after_five_minutes_checked_every_30s(
    q: PriorityQueue, clock: FakeClock
) -> None:
    q.add(pod("a"))
    p = q.pop()
    fail(q, p, "NodeResourcesFit")
    assert q.where(p.pod) == UNSCHEDULABLE_Q
    for _ in range(10):  # 300 s: not strictly more than 5 min yet
        clock.step(30)
        q.tick()
    assert q.where(p.pod) == UNSCHEDULABLE_Q
    clock.step(29)
    q.tick()
    assert q.where(p.pod) == UNSCHEDULABLE_Q  # no check between the 30 s marks
    clock.step(1)
    q.tick()
    assert q.where(p.pod) == ACTIVE_Q


def test_node_add_moves_pod_rejected_by_interested_plugin(
    q: PriorityQueue, clock: FakeClock
) -> None:
    q.add(pod("fit"))
    q.add(pod("aff"))
    a = q.pop()
    b = q.pop()
    fail(q, a, "NodeResourcesFit")
    fail(q, b, "InterPodAffinity")
    clock.step(0.2)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, {"zone": "b"})
    # still backing off (1 s) -> backoffQ; InterPodAffinity did not register NodeAdd
    assert q.where(a.pod) == BACKOFF_Q
    assert q.where(b.pod) == UNSCHEDULABLE_Q


def test_event_after_backoff_goes_straight_to_active(q: PriorityQueue, clock: FakeClock) -> None:
    q.add(pod("fit"))
    a = q.pop()
    fail(q, a, "NodeResourcesFit")
    clock.step(5)
    q.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE)
    assert q.where(a.pod) == ACTIVE_Q


def test_queueing_hint_decides(q: PriorityQueue, clock: FakeClock) -> None:
    q.add(pod("aff"))
    a = q.pop()
    fail(q, a, "NodeAffinity")
    clock.step(5)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_LABEL_CHANGE, {}, {"zone": "b"})
    assert q.where(a.pod) == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_LABEL_CHANGE, {}, {"zone": "a"})
    assert q.where(a.pod) == ACTIVE_Q


def test_pre_enqueue_check_filters_moves(q: PriorityQueue, clock: FakeClock) -> None:
    q.add(pod("x"))
    q.add(pod("y"))
    x, y = q.pop(), q.pop()
    fail(q, x, "NodeResourcesFit")
    fail(q, y, "NodeResourcesFit")
    clock.step(5)
    q.move_all_to_active_or_backoff_queue(
        EVENT_NODE_ADD, pre_check=lambda p: p.metadata.name == "x"
    )
    assert q.where(x.pod) == ACTIVE_Q
    assert q.where(y.pod) == UNSCHEDULABLE_Q


def test_event_while_in_flight_requeues_on_failure(q: PriorityQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    a = q.pop()
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD)  # arrives mid-cycle
    fail(q, a, "NodeResourcesFit")
    assert q.where(a.pod) == BACKOFF_Q  # not parked: the event may have helped


def test_event_while_in_flight_irrelevant_plugin_parks_pod(q: PriorityQueue) -> None:
    q.add(pod("a"))
    a = q.pop()
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD)
    fail(q, a, "InterPodAffinity")
    assert q.where(a.pod) == UNSCHEDULABLE_Q


def test_in_flight_pods_see_only_the_events_after_their_own_pop(q: PriorityQueue) -> None:
    """One log of in-flight events (upstream's inFlightEvents): a pod popped after an event
    does not see it, one popped before does, and the log keeps nothing once none is in
    flight."""
    q.add(pod("a"))
    q.add(pod("b"))
    a = q.pop()
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD)  # only a is in flight
    b = q.pop()
    fail(q, b, "NodeResourcesFit")
    assert q.where(b.pod) == UNSCHEDULABLE_Q  # the node came before b's attempt began
    fail(q, a, "NodeResourcesFit")
    assert q.where(a.pod) == BACKOFF_Q  # ...and during a's
    assert q._flight_log == []


def test_assigned_pod_added_moves_pods_with_matching_affinity_term(
    q: PriorityQueue, clock: FakeClock
) -> None:
    w = pod("wants-db")
    w._terms = [_Term("app", "db")]  # type: ignore[attr-defined]
    q.add(w)
    other = pod("other")
    other._terms = [_Term("app", "cache")]  # type: ignore[attr-defined]
    q.add(other)
    a, b = q.pop(), q.pop()
    fail(q, a, "InterPodAffinity")
    fail(q, b, "InterPodAffinity")
    clock.step(5)
    q.assigned_pod_added(pod("db-0", app="db"))
    assert q.where(w) == ACTIVE_Q
    assert q.where(other) == UNSCHEDULABLE_Q


def test_uninteresting_event_moves_nothing(q: PriorityQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    a = q.pop()
    fail(q, a, "NodeResourcesFit")
    clock.step(5)
    q.move_all_to_active_or_backoff_queue(
        ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange")
    )
    assert q.where(a.pod) == UNSCHEDULABLE_Q


def test_delete_and_update(q: PriorityQueue, clock: FakeClock) -> None:
    p = pod("a", 1)
    q.add(p)
    q.add(pod("b", 2))
    p2 = pod("a", 5)
    q.update(p, p2)
    assert q.pop().pod.metadata.name == "a"
    q.delete(pod("b"))
    assert q.pop() is None


def test_update_without_pod_update_hint_keeps_pod_parked(
    q: PriorityQueue, clock: FakeClock
) -> None:
    p = pod("a")
    q.add(p)
    a = q.pop()
    fail(q, a)  # error -> backoff
    clock.step(2)
    q.tick()
    a = q.pop()
    fail(q, a, "NodeResourcesFit")
    assert q.where(p) == UNSCHEDULABLE_Q
    clock.step(5)
    q.update(p, pod("a", 3))  # no hint for pod updates registered -> stays
    assert q.where(p) == UNSCHEDULABLE_Q


def test_nominator(q: PriorityQueue) -> None:
    p = pod("a", 10)
    q.add(p)
    pi = q.pop()
    q.add_nominated_pod(pi.pod_info, NominatingInfo("n1"))
    assert [x.pod.metadata.name for x in q.nominated_pods_for_node("n1")] == ["a"]
    q.add_nominated_pod(pi.pod_info, NominatingInfo("n2"))
    assert q.nominated_pods_for_node("n1") == []
    assert len(q.nominated_pods_for_node("n2")) == 1
    q.delete_nominated_pod_if_exists(p)
    assert q.nominated_pods_for_node("n2") == []


def test_pending_pods_metric_counts_each_queue(q: PriorityQueue, clock: FakeClock) -> None:
    for n in "abc":
        q.add(pod(n))
    a, b = q.pop(), q.pop()
    fail(q, a)
    fail(q, b, "NodeResourcesFit")
    assert q.pending_pods() == {"active": 1, "backoff": 1, "unschedulable": 1, "gated": 0}


def test_bad_backoff_config_is_rejected() -> None:
    with pytest.raises(ValueError, match="pod_max_backoff"):
        PriorityQueue(pod_initial_backoff=5, pod_max_backoff=1)


def test_pop_waits_for_add_from_another_thread(q: PriorityQueue) -> None:
    import threading

    t = threading.Timer(0.05, lambda: q.add(pod("late")))
    t.start()
    try:
        got = q.pop(timeout=5)
    finally:
        t.join()
    assert got is not None
    assert got.pod.metadata.name == "late"


def test_sort_key_orders_like_the_less_function(clock: FakeClock) -> None:
    import random

    from pysched.queue import priority_sort_key

    rng = random.Random(5)
    a = PriorityQueue(clock=clock, pod_info_factory=_factory)
    b = PriorityQueue(clock=clock, pod_info_factory=_factory, sort_key=priority_sort_key)
    for i in range(200):
        p = pod(f"p{i}", rng.choice([None, 0, 1, 5, 100]))
        a.add(p)
        b.add(p)
        if rng.random() < 0.3:
            clock.step(0.01)
        if rng.random() < 0.1:
            a.delete(p)
            b.delete(p)
    names_a = [x.pod.metadata.name for x in iter(a.pop, None)]
    names_b = [x.pod.metadata.name for x in iter(b.pop, None)]
    assert names_a == names_b
    assert len(names_a) > 150
