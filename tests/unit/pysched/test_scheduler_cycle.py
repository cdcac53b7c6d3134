"""schedule_one's algorithm with small fake plugins: cut-off, round robin, selectHost, FitError."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from engine_objects import CPUFit, FreeCPUScore, NoTaints, make_node, make_pod
from prometheus_client.parser import text_string_to_metric_families

from pysched.cache import Cache, Snapshot
from pysched.clock import FakeClock
from pysched.diagnosis import Diagnosis, FitError, NodeToStatus
from pysched.framework.cycle_state import CycleState
from pysched.framework.runtime import Framework, FrameworkDeps
from pysched.framework.status import Code, Status
from pysched.framework.types import NodePluginScores
from pysched.queue import PriorityQueue
from pysched.scheduler import Scheduler, num_feasible_nodes_to_find, select_host


class Binder:
    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    def name(self) -> str:
        return "FakeBinder"

    def bind(self, state: CycleState, pod: Any, node: str) -> Status | None:
        self.bound.append((pod.metadata.name, node))
        return None


def make_sched(nodes: list[Any], *, score: bool = True, seed: int = 1) -> tuple[Scheduler, Binder]:
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    snap = Snapshot()
    binder = Binder()
    plugins: dict[str, Any] = {"FakeFit": CPUFit(), "FakeTaint": NoTaints(), "FakeBinder": binder}
    points: dict[str, list[Any]] = {
        "filter": [plugins["FakeFit"], plugins["FakeTaint"]],
        "bind": [binder],
    }
    weights: dict[str, int] = {}
    if score:
        plugins["FakeScore"] = FreeCPUScore()
        points["score"] = [plugins["FakeScore"]]
        weights["FakeScore"] = 1
    queue = PriorityQueue(clock=FakeClock())
    fwk = Framework("default-scheduler", plugins, points, weights, FrameworkDeps(snapshot=snap))
    fwk.deps.nominator = queue
    s = Scheduler({"default-scheduler": fwk}, cache, queue, snap, rng=random.Random(seed))
    return s, binder


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        (5, 5),
        (99, 99),
        (100, 100),
        (500, 230),
        (1000, 420),
        (5000, 500),
        (6000, 300),
        (15000, 750),
        (200, 100),
        (250, 120),
    ],
)
def test_num_feasible_nodes_to_find_adaptive(nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(0, nodes) == expected


def test_num_feasible_nodes_to_find_configured_percentage() -> None:
    assert num_feasible_nodes_to_find(10, 5000) == 500
    assert num_feasible_nodes_to_find(1, 5000) == 100  # never below 100 nodes
    assert num_feasible_nodes_to_find(100, 50) == 50


def test_fit_error_message_has_kube_scheduler_shape() -> None:
    nodes = [make_node(f"n{i}", cpu="1") for i in range(2)] + [
        make_node(f"t{i}", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
        for i in range(3)
    ]
    s, binder = make_sched(nodes)
    s.queue.add(make_pod("big", cpu="2"))
    rec = s.schedule_one()
    assert rec is not None
    assert rec.result == "unschedulable"
    assert rec.message == (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {k: v}."
    )
    assert binder.bound == []
    assert rec.diagnosis is not None
    assert rec.diagnosis.unschedulable_plugins == {"FakeFit", "FakeTaint"}
    # it went back to the queue as unschedulable, rejected by both plugins
    assert s.queue.where(rec.pod) == "unschedulable"


def test_fit_error_with_prefilter_and_postfilter_messages() -> None:
    d = Diagnosis(node_to_status=NodeToStatus(Status(Code.UNSCHEDULABLE, ["x"])))
    d.pre_filter_msg = "node(s) didn't match pod's node affinity/selector"
    d.post_filter_msg = "preemption: not eligible due to preemptionPolicy=Never."
    err = FitError(make_pod("p"), 3, d)
    assert str(err) == (
        "0/3 nodes are available: node(s) didn't match pod's node affinity/selector. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_fit_error_counts_absent_nodes_with_absent_status() -> None:
    nts = NodeToStatus(
        Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]
        )
    )
    nts.set("a", Status(Code.UNSCHEDULABLE, ["Insufficient memory", "Insufficient cpu"]))
    err = FitError(make_pod("p"), 4, Diagnosis(node_to_status=nts))
    assert str(err) == (
        "0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_schedules_onto_highest_score_and_assumes() -> None:
    s, binder = make_sched(
        [make_node("a", cpu="2"), make_node("b", cpu="8"), make_node("c", cpu="4")]
    )
    s.queue.add(make_pod("p", cpu="1"))
    rec = s.schedule_one()
    assert rec is not None
    assert rec.node == "b"
    assert binder.bound == [("p", "b")]
    assert s.cache.is_assumed_pod(rec.pod)
    s.cache.update_snapshot(s.snapshot)
    assert s.snapshot.get("b").requested.milli_cpu == 1000


def test_round_robin_start_and_cut_off() -> None:
    nodes = [make_node(f"n{i:03d}", cpu="100") for i in range(300)]
    s, _ = make_sched(nodes)
    assert num_feasible_nodes_to_find(0, 300) == 144
    state = CycleState()
    fwk = s.frameworks["default-scheduler"]
    s.cache.update_snapshot(s.snapshot)
    feasible, _diag = s.find_nodes_that_fit_pod(fwk, state, make_pod("p"))
    assert [ni.name for ni in feasible] == [f"n{i:03d}" for i in range(144)]
    assert s.next_start_node_index == 144
    feasible, _ = s.find_nodes_that_fit_pod(fwk, state, make_pod("p"))
    assert feasible[0].name == "n144"
    assert feasible[-1].name == "n287"
    feasible, _ = s.find_nodes_that_fit_pod(fwk, state, make_pod("p"))
    assert feasible[0].name == "n288"
    assert feasible[12].name == "n000"  # wraps around
    assert s.next_start_node_index == (288 + 144) % 300


def test_cut_off_counts_infeasible_nodes_in_processed() -> None:
    nodes = [make_node(f"n{i:03d}", cpu="100" if i % 2 else "1") for i in range(300)]
    s, _ = make_sched(nodes)
    s.cache.update_snapshot(s.snapshot)
    fwk = s.frameworks["default-scheduler"]
    feasible, diag = s.find_nodes_that_fit_pod(fwk, CycleState(), make_pod("p", cpu="2"))
    assert len(feasible) == 144
    assert feasible[-1].name == "n287"
    assert len(diag.node_to_status) == 144  # the even nodes before n287
    assert s.next_start_node_index == 288


def test_without_score_plugins_first_feasible_node_wins() -> None:
    nodes = [make_node(f"n{i}", cpu="1" if i < 3 else "8") for i in range(10)]
    s, _binder = make_sched(nodes, score=False)
    s.queue.add(make_pod("p", cpu="2"))
    rec = s.schedule_one()
    assert rec is not None
    assert rec.node == "n3"


def test_select_host_breaks_ties_uniformly() -> None:
    rng = random.Random(7)
    scores = [
        NodePluginScores("a", [], 10),
        NodePluginScores("b", [], 30),
        NodePluginScores("c", [], 30),
        NodePluginScores("d", [], 30),
    ]
    counts = Counter(select_host(scores, rng) for _ in range(3000))
    assert set(counts) == {"b", "c", "d"}
    for n in "bcd":
        assert 850 < counts[n] < 1150


def test_select_host_is_reproducible_with_seeded_rng() -> None:
    scores = [NodePluginScores(n, [], 5) for n in "abcdef"]
    a = [select_host(scores, random.Random(3)) for _ in range(5)]
    b = [select_host(scores, random.Random(3)) for _ in range(5)]
    assert a == b


def test_no_nodes_is_unresolvable_error() -> None:
    s, _ = make_sched([])
    s.queue.add(make_pod("p"))
    rec = s.schedule_one()
    assert rec is not None
    assert rec.result == "unschedulable"
    assert rec.message == "no nodes available to schedule pods"


def test_nominated_node_is_tried_first() -> None:
    nodes = [make_node("a", cpu="8"), make_node("b", cpu="2")]
    s, _binder = make_sched(nodes)
    s.queue.add(make_pod("p", cpu="1", nominated="b"))
    rec = s.schedule_one()
    assert rec is not None
    assert rec.node == "b"
    assert rec.feasible == ["b"]


def test_bind_failure_forgets_and_requeues() -> None:
    s, binder = make_sched([make_node("a")])

    def broken(state: CycleState, pod: Any, node: str) -> Status:
        return Status(Code.ERROR, ["apiserver down"])

    binder.bind = broken  # type: ignore[method-assign]
    p = make_pod("p")
    s.queue.add(p)
    rec = s.schedule_one()
    assert rec is not None
    assert rec.result == "error"
    assert not s.cache.is_assumed_pod(p)
    assert s.queue.where(p) == "backoff"
    s.cache.update_snapshot(s.snapshot)
    assert s.snapshot.get("a").requested.milli_cpu == 0


def test_metrics_count_attempts() -> None:
    s, _ = make_sched([make_node("a", cpu="1")])
    s.queue.add(make_pod("fits", cpu="500m"))
    s.queue.add(make_pod("nope", cpu="4"))
    s.schedule_one()
    s.schedule_one()
    assert s.metrics.attempts("scheduled") == 1
    assert s.metrics.attempts("unschedulable") == 1
    families = {f.name: f for f in text_string_to_metric_families(s.metrics.render())}
    attempts = {(x.labels["result"], x.labels["profile"]): x.value
                for x in families["scheduler_schedule_attempts"].samples}
    assert attempts == {("scheduled", "default-scheduler"): 1.0,
                        ("unschedulable", "default-scheduler"): 1.0}
    assert families["scheduler_scheduling_attempt_duration_seconds"].type == "histogram"


class Gate:
    """A Permit plugin that parks every pod until allowed or rejected."""

    def name(self) -> str:
        return "Gate"

    def permit(self, state: CycleState, pod: Any, node: str) -> tuple[Status, float]:
        return Status(Code.WAIT), 5.0


def test_permit_wait_then_reject_marks_plugin_unschedulable() -> None:
    s, binder = make_sched([make_node("a")])
    fwk = s.frameworks["default-scheduler"]
    fwk.permit_plugins = [Gate()]
    p = make_pod("p")
    s.queue.add(p)

    def reject_soon() -> None:
        import time as _t

        for _ in range(200):
            wp = fwk.get_waiting_pod(p.metadata.uid)
            if wp is not None:
                wp.reject("Gate", "not today")
                return
            _t.sleep(0.01)

    import threading

    t = threading.Thread(target=reject_soon)
    t.start()
    rec = s.schedule_one()
    t.join()
    assert rec is not None
    assert rec.result == "unschedulable"
    assert rec.message == "0/1 nodes are available: 1 not today."
    assert binder.bound == []
    assert not s.cache.is_assumed_pod(p)
    assert s.queue.get(p).unschedulable_plugins == {"Gate"}
