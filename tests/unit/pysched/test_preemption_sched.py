"""DefaultPreemption: minimal victims, lowest priority first, PDBs, policy Never, nomination."""

from __future__ import annotations

import random
from typing import Any

from engine_objects import CPUFit, FreeCPUScore, NoTaints, make_node, make_pdb, make_pod

from pysched.cache import Cache, Snapshot
from pysched.clock import FakeClock
from pysched.framework.runtime import Framework, FrameworkDeps
from pysched.framework.types import PodInfo
from pysched.preemption import DefaultPreemption, filter_pods_with_pdb_violation
from pysched.queue import PriorityQueue
from pysched.scheduler import Scheduler


class Env:
    def __init__(self, nodes: list[Any], bound: list[Any], pdbs: list[Any] | None = None) -> None:
        self.cache = Cache()
        for n in nodes:
            self.cache.add_node(n)
        for p in bound:
            self.cache.add_pod(p)
        self.snap = Snapshot()
        self.evicted: list[str] = []
        self.queue = PriorityQueue(clock=FakeClock())
        deps = FrameworkDeps(
            snapshot=self.snap,
            nominator=self.queue,
            extras={"pdb_lister": lambda: list(pdbs or []), "evict": self._evict},
        )
        plugins: dict[str, Any] = {
            "FakeFit": CPUFit(),
            "FakeTaint": NoTaints(),
            "FakeScore": FreeCPUScore(),
        }
        fwk = Framework(
            "default-scheduler",
            plugins,
            {"filter": [plugins["FakeFit"], plugins["FakeTaint"]], "score": [plugins["FakeScore"]]},
            {"FakeScore": 1},
            deps,
        )
        self.pl = DefaultPreemption(fwk, rng=random.Random(0))
        fwk.post_filter_plugins = [self.pl]
        fwk.plugins_map["DefaultPreemption"] = self.pl
        self.bound: list[tuple[str, str]] = []

        class _B:
            def name(_self) -> str:
                return "B"

            def bind(_self, state: Any, pod: Any, node: str) -> None:
                self.bound.append((pod.metadata.name, node))

        fwk.bind_plugins = [_B()]
        self.sched = Scheduler(
            {"default-scheduler": fwk}, self.cache, self.queue, self.snap, rng=random.Random(0)
        )

    def _evict(self, victim: Any, preemptor: Any, node: str) -> None:
        self.evicted.append(victim.metadata.name)
        self.cache.remove_pod(victim)

    def schedule(self, pod: Any) -> Any:
        self.queue.add(pod)
        return self.sched.schedule_one()


def bound(name: str, node: str, cpu: str, prio: int, **kw: Any) -> Any:
    return make_pod(name, cpu=cpu, node=node, priority=prio, **kw)


def test_minimal_victims_keeps_more_important_pods() -> None:
    env = Env(
        [make_node("a", cpu="3")],
        [bound("low", "a", "1", 1), bound("mid", "a", "1", 5), bound("high", "a", "1", 20)],
    )
    rec = env.schedule(make_pod("p", cpu="1", priority=10))
    assert rec.result == "unschedulable"
    assert rec.nominated_node == "a"
    assert [v.metadata.name for v in rec.victims] == ["low"]
    assert env.evicted == ["low"]
    assert rec.message == "0/1 nodes are available: 1 Insufficient cpu."
    # the preemptor is nominated: the queue's nominator knows it
    assert [pi.pod.metadata.name for pi in env.queue.nominated_pods_for_node("a")] == ["p"]


def test_picks_node_whose_highest_victim_has_lowest_priority() -> None:
    env = Env(
        [make_node("a", cpu="1"), make_node("b", cpu="1")],
        [bound("a-victim", "a", "1", 5), bound("b-victim", "b", "1", 1)],
    )
    rec = env.schedule(make_pod("p", cpu="1", priority=10))
    assert rec.nominated_node == "b"
    assert env.evicted == ["b-victim"]


def test_picks_node_with_fewer_victims_on_equal_priority() -> None:
    env = Env(
        [make_node("a", cpu="2"), make_node("b", cpu="2")],
        [
            bound("a1", "a", "1", 1),
            bound("a2", "a", "1", 1),
            bound("b1", "b", "2", 1),
        ],
    )
    rec = env.schedule(make_pod("p", cpu="2", priority=10))
    # sum of priorities decides before the count: b has one victim (sum smaller)
    assert rec.nominated_node == "b"


def test_pdb_violation_is_avoided() -> None:
    pdb = make_pdb("guard", {"app": "guarded"}, allowed=0)
    env = Env(
        [make_node("a", cpu="1"), make_node("b", cpu="1")],
        [bound("a-victim", "a", "1", 1, labels={"app": "guarded"}), bound("b-victim", "b", "1", 3)],
        [pdb],
    )
    rec = env.schedule(make_pod("p", cpu="1", priority=10))
    assert rec.nominated_node == "b"  # higher-priority victim, but no PDB violated


def test_pdb_violation_counted_when_unavoidable() -> None:
    pi = [PodInfo(bound(f"x{i}", "a", "1", 1, labels={"app": "x"})) for i in range(3)]
    violating, ok = filter_pods_with_pdb_violation(pi, [make_pdb("g", {"app": "x"}, allowed=1)])
    assert [p.pod.metadata.name for p in ok] == ["x0"]
    assert [p.pod.metadata.name for p in violating] == ["x1", "x2"]


def test_preemption_policy_never() -> None:
    env = Env([make_node("a", cpu="1")], [bound("low", "a", "1", 1)])
    rec = env.schedule(make_pod("p", cpu="1", priority=10, preemption_policy="Never"))
    assert rec.nominated_node == ""
    assert env.evicted == []
    assert rec.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_no_victims_and_not_helpful_messages() -> None:
    env = Env(
        [
            make_node("a", cpu="1"),
            make_node("b", cpu="1"),
            make_node("t", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        ],
        [bound("same", "a", "1", 10), bound("same-b", "b", "1", 10)],
    )
    rec = env.schedule(make_pod("p", cpu="1", priority=10))
    assert rec.nominated_node == ""
    assert rec.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod."
    )


def test_preemptor_binds_after_victims_leave_and_nominated_pods_count() -> None:
    env = Env(
        [make_node("a", cpu="2")],
        [bound("low", "a", "1", 1), bound("keep", "a", "1", 50)],
    )
    p = make_pod("p", cpu="1", priority=10)
    rec = env.schedule(p)
    assert rec.nominated_node == "a"
    # a pod of the same priority now sees "a" full: p is nominated there (first pass)
    rec_q = env.schedule(make_pod("q", cpu="1", priority=10))
    assert rec_q.result == "unschedulable"
    assert rec_q.nominated_node == ""  # q cannot preempt: the only victim left is more important
    # p is retried with its nomination and lands on a
    p2 = make_pod("p", cpu="1", priority=10, nominated="a")
    env.queue.delete(p)
    rec2 = env.schedule(p2)
    assert rec2.node == "a"
    assert env.bound == [("p", "a")]


def test_lower_priority_pod_ignores_nominated_pod_of_lower_priority() -> None:
    env = Env([make_node("a", cpu="2")], [bound("keep", "a", "1", 50)])
    nominated = PodInfo(make_pod("n", cpu="1", priority=1))
    from pysched.queue import NominatingInfo

    env.queue.add_nominated_pod(nominated, NominatingInfo("a"))
    # a higher-priority pod does not count the lower-priority nominated pod
    rec = env.schedule(make_pod("hi", cpu="1", priority=10))
    assert rec.node == "a"


def test_victims_on_sums_equal_victims_through_plugins() -> None:
    """Resource-only profiles pick victims on request sums: same victims as the plugin walk."""
    from pykubelet.api.objects import PodDisruptionBudget
    from pysched.api import EmbeddedScheduler
    from pysched.framework.cycle_state import CycleState

    compared = with_victims = violations = 0
    for seed in range(6):
        rng = random.Random(seed)

        class _W:
            def bind(self, pod: Any, node: str) -> None:
                pass

        s = EmbeddedScheduler(_W(), rng=random.Random(seed), fast=False)
        nodes = [
            make_node(f"n{i}", cpu=str(rng.choice([2, 4])), pods=rng.choice([4, 110]))
            for i in range(12)
        ]
        for n in nodes:
            s.on_node_add(n)
        for i in range(40):
            s.on_pod_add(
                make_pod(
                    f"b{i}",
                    cpu=rng.choice(["250m", "500m", "1"]),
                    memory="64Mi",
                    node=rng.choice(nodes).metadata.name,
                    priority=rng.choice([0, 1, 2, 3]),
                    labels={"app": rng.choice(["a", "b"])},
                    start_time=f"2026-01-01T00:00:{rng.randint(10, 59)}Z",
                )
            )
        pdbs: list[PodDisruptionBudget] = [make_pdb("pa", {"app": "a"}, allowed=rng.randint(0, 2))]
        # a nominated pod of high priority on some node
        from pysched.queue import NominatingInfo

        s.queue.add_nominated_pod(
            PodInfo(make_pod("nom", cpu="500m", priority=50)),
            NominatingInfo(nodes[0].metadata.name),
        )
        fwk = s.frameworks["default-scheduler"]
        pl = next(p for p in fwk.post_filter_plugins if p.name() == "DefaultPreemption")
        s.cache.update_snapshot(s.snapshot)
        for _ in range(5):
            pre = make_pod("pre", cpu=rng.choice(["1", "2", "3"]), priority=rng.choice([2, 10]))
            state = CycleState()
            fwk.run_pre_filter_plugins(state, pre)
            assert pl._resource_only_filters(state) is not None
            for ni in s.snapshot.list():
                fast = pl._select_victims_by_sums(
                    state.clone(), pre, ni.clone(), pdbs, pl._resource_only_filters(state)
                )
                slow = pl._select_victims_with_plugins(state.clone(), pre, ni.clone(), pdbs)
                if fast is None:
                    assert not slow[2].is_success()  # the plugins report why
                    continue
                assert [p.key for p in fast[0]] == [p.key for p in slow[0]]
                assert fast[1] == slow[1]
                assert (fast[2].code, fast[2].reasons) == (slow[2].code, slow[2].reasons)
                compared += 1
                with_victims += bool(fast[0])
                violations += fast[1]
    assert compared > 100
    assert with_victims > 30
    assert violations > 0
