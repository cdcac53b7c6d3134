"""Framework: extension points run in order, with upstream's status handling."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from builders import FakeSnapshot, framework_for, make_node, make_pod

from pysched.framework.cycle_state import CycleState
from pysched.framework.runtime import Framework, FrameworkDeps
from pysched.framework.status import Code, Status
from pysched.framework.types import NodeScore, PodInfo, PreFilterResult


class Fake:
    """A plugin whose behaviour per point is given as a Status (or callable) table."""

    def __init__(self, name: str, log: list[str], **behaviour: Any) -> None:
        self._name = name
        self.log = log
        self.b = behaviour

    def name(self) -> str:
        return self._name

    def _ret(self, point: str, *args: Any) -> Any:
        self.log.append(f"{self._name}.{point}")
        v = self.b.get(point)
        return v(*args) if callable(v) else v

    def pre_filter(self, state, pod, nodes):  # type: ignore[no-untyped-def]
        r = self._ret("pre_filter")
        return r if isinstance(r, tuple) else (None, r)

    def pre_filter_extensions(self):  # type: ignore[no-untyped-def]
        return self if "add_pod" in self.b else None

    def add_pod(self, state, pod, pi, ni):  # type: ignore[no-untyped-def]
        return self._ret("add_pod", state, pi)

    def remove_pod(self, state, pod, pi, ni):  # type: ignore[no-untyped-def]
        return self._ret("remove_pod")

    def filter(self, state, pod, ni):  # type: ignore[no-untyped-def]
        return self._ret("filter", state, pod, ni)

    def pre_score(self, state, pod, nodes):  # type: ignore[no-untyped-def]
        return self._ret("pre_score")

    def score(self, state, pod, ni):  # type: ignore[no-untyped-def]
        return self._ret("score", ni), None

    def score_extensions(self):  # type: ignore[no-untyped-def]
        return self if "normalize" in self.b else None

    def normalize_score(self, state, pod, scores: list[NodeScore]):  # type: ignore[no-untyped-def]
        return self._ret("normalize", scores)


def _fw(
    points: dict[str, list[Any]],
    weights: dict[str, int] | None = None,
    nodes: list[Any] | None = None,
    **deps: Any,
) -> Framework:
    snap = FakeSnapshot(nodes or [make_node("n1").obj(), make_node("n2").obj()])
    return Framework("p", {}, points, weights or {}, FrameworkDeps(snapshot=snap, **deps))


def test_filters_stop_at_first_failure_and_record_the_plugin() -> None:
    log: list[str] = []
    a = Fake("A", log, filter=None)
    b = Fake("B", log, filter=lambda *_: Status(Code.UNSCHEDULABLE, ["no"]))
    c = Fake("C", log, filter=None)
    fw = _fw({"filter": [a, b, c]})
    ni = fw.snapshot_shared_lister().get("n1")
    s = fw.run_filter_plugins(CycleState(), make_pod().obj(), ni)
    assert (s.code, s.plugin, s.reasons) == (Code.UNSCHEDULABLE, "B", ["no"])
    assert log == ["A.filter", "B.filter"]


def test_filter_error_codes_become_errors_and_skipped_filters_do_not_run() -> None:
    log: list[str] = []
    bad = Fake("Bad", log, filter=lambda *_: Status(Code.WAIT))
    fw = _fw({"filter": [bad]})
    ni = fw.snapshot_shared_lister().get("n1")
    s = fw.run_filter_plugins(CycleState(), make_pod().obj(), ni)
    assert s.code == Code.ERROR
    assert s.plugin == "Bad"
    state = CycleState()
    state.skip_filter_plugins = {"Bad"}
    assert fw.run_filter_plugins(state, make_pod().obj(), ni).is_success()


def test_pre_filter_semantics() -> None:
    log: list[str] = []
    skip = Fake("Skip", log, pre_filter=Status(Code.SKIP))
    uns = Fake("Uns", log, pre_filter=Status(Code.UNSCHEDULABLE, ["u"]))
    last = Fake("Last", log, pre_filter=None)
    fw = _fw({"preFilter": [skip, uns, last]})
    state = CycleState()
    _, s, _ = fw.run_pre_filter_plugins(state, make_pod().obj())
    # Unschedulable is remembered and the rest still run (preemption may follow)
    assert s is not None
    assert (s.code, s.plugin) == (Code.UNSCHEDULABLE, "Uns")
    assert log == ["Skip.pre_filter", "Uns.pre_filter", "Last.pre_filter"]
    assert state.skip_filter_plugins == {"Skip"}
    log.clear()
    unres = Fake("Unres", log, pre_filter=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["x"]))
    fw = _fw({"preFilter": [unres, last]})
    _, s, _ = fw.run_pre_filter_plugins(CycleState(), make_pod().obj())
    assert s is not None
    assert (s.code, s.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Unres")
    assert log == ["Unres.pre_filter"]


def test_pre_filter_results_intersect_and_empty_is_unresolvable() -> None:
    log: list[str] = []
    p1 = Fake("P1", log, pre_filter=(PreFilterResult({"n1", "n2"}), None))
    p2 = Fake("P2", log, pre_filter=(PreFilterResult({"n2"}), None))
    r, s, names = _fw({"preFilter": [p1, p2]}).run_pre_filter_plugins(
        CycleState(), make_pod().obj()
    )
    assert s is None
    assert r.node_names == {"n2"}
    assert names == {"P1", "P2"}
    p3 = Fake("P3", log, pre_filter=(PreFilterResult({"n1"}), None))
    _, s, _ = _fw({"preFilter": [p2, p3]}).run_pre_filter_plugins(CycleState(), make_pod().obj())
    assert s is not None
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.reasons == ["node(s) didn't satisfy plugin(s) [P2 P3] simultaneously"]


def test_score_normalize_weight_and_range_check() -> None:
    log: list[str] = []
    a = Fake(
        "A",
        log,
        pre_score=None,
        score=lambda ni: 10 if ni.name == "n1" else 20,
        normalize=lambda scores: [setattr(s, "score", s.score * 5) for s in scores] and None,
    )
    b = Fake("B", log, pre_score=Status(Code.SKIP), score=lambda ni: 1)
    fw = _fw({"preScore": [a, b], "score": [a, b]}, {"A": 2, "B": 1})
    state = CycleState()
    nodes = fw.snapshot_shared_lister().list()
    assert fw.run_pre_score_plugins(state, make_pod().obj(), nodes) is None
    assert state.skip_score_plugins == {"B"}
    out, s = fw.run_score_plugins(state, make_pod().obj(), nodes)
    assert s is None
    assert [(n.name, n.total_score, [(p.name, p.score) for p in n.scores]) for n in out] == [
        ("n1", 100, [("A", 100)]),
        ("n2", 200, [("A", 200)]),
    ]
    bad = Fake("Bad", log, score=lambda ni: 101)
    out, s = _fw({"score": [bad]}, {"Bad": 1}).run_score_plugins(
        CycleState(), make_pod().obj(), nodes
    )
    assert s is not None
    assert s.code == Code.ERROR
    assert "invalid score 101" in s.message()


def test_nominated_pods_are_added_in_the_first_pass_only_when_priority_allows() -> None:
    log: list[str] = []
    seen: list[int] = []

    def flt(state, pod, ni):  # type: ignore[no-untyped-def]
        seen.append(len(ni.pods))
        return None if len(ni.pods) == 0 else Status(Code.UNSCHEDULABLE, ["full"])

    class Nominator:
        def __init__(self, pods: list[Any]) -> None:
            self.pods = pods

        def nominated_pods_for_node(self, name: str) -> list[PodInfo]:
            return [PodInfo(p) for p in self.pods] if name == "n1" else []

    added: list[str] = []
    ext = Fake("Ext", log, filter=flt, add_pod=lambda st, pi: added.append(pi.pod.name))
    high = make_pod("high").priority(10).obj()
    fw = _fw({"preFilter": [], "filter": [ext]}, nominator=Nominator([high]))
    fw.pre_filter_plugins = [ext]
    ni = fw.snapshot_shared_lister().get("n1")
    s = fw.run_filter_plugins_with_nominated_pods(CycleState(), make_pod().priority(5).obj(), ni)
    assert s.code == Code.UNSCHEDULABLE  # the higher-priority nominated pod takes the node
    assert added == ["high"]
    assert not ni.pods  # the snapshot's NodeInfo was not modified
    seen.clear()
    s = fw.run_filter_plugins_with_nominated_pods(CycleState(), make_pod().priority(50).obj(), ni)
    assert s.is_success()  # lower-priority nominations are ignored
    assert seen == [0]


def test_post_filter_collects_reasons_until_one_succeeds() -> None:
    class PF:
        def __init__(self, name: str, st: Status) -> None:
            self._n, self.st = name, st

        def name(self) -> str:
            return self._n

        def post_filter(self, state, pod, m):  # type: ignore[no-untyped-def]
            return None, self.st

    fw = _fw(
        {
            "postFilter": [
                PF("D", Status(Code.UNSCHEDULABLE, ["no new claims to deallocate"])),
                PF("P", Status(Code.UNSCHEDULABLE, ["preemption: 0/2 nodes"])),
            ]
        }
    )
    _, s = fw.run_post_filter_plugins(CycleState(), make_pod().obj(), {})
    assert s.message() == "no new claims to deallocate, preemption: 0/2 nodes"
    assert s.plugin == "D"
    fw = _fw({"postFilter": [PF("D", Status(Code.UNSCHEDULABLE, ["x"])), PF("P", Status())]})
    _, s = fw.run_post_filter_plugins(CycleState(), make_pod().obj(), {})
    assert s.is_success()


def test_permit_wait_allow_reject_and_timeout() -> None:
    class Permit:
        def __init__(self, name: str, st: Status, timeout: float) -> None:
            self._n, self.st, self.t = name, st, timeout

        def name(self) -> str:
            return self._n

        def permit(self, state, pod, node):  # type: ignore[no-untyped-def]
            return self.st, self.t

    fw = _fw({"permit": [Permit("W", Status(Code.WAIT), 30.0)]})
    pod = make_pod("w").obj()
    assert fw.run_permit_plugins(CycleState(), pod, "n1").code == Code.WAIT
    wp = fw.get_waiting_pod(pod.uid)
    assert wp is not None
    threading.Timer(0.05, wp.allow, ("W",)).start()
    assert fw.wait_on_permit(pod).is_success()
    assert fw.run_permit_plugins(CycleState(), pod, "n1").code == Code.WAIT
    fw.get_waiting_pod(pod.uid).reject("W", "nope")  # type: ignore[union-attr]
    s = fw.wait_on_permit(pod)
    assert (s.code, s.reasons) == (Code.UNSCHEDULABLE, ["nope"])
    fw = _fw({"permit": [Permit("T", Status(Code.WAIT), 0.01)]})
    fw.run_permit_plugins(CycleState(), pod, "n1")
    s = fw.wait_on_permit(pod)
    assert s.code == Code.UNSCHEDULABLE
    assert s.reasons == ["rejected due to timeout after waiting 10ms at plugin T"]
    fw = _fw({"permit": [Permit("R", Status(Code.UNSCHEDULABLE, ["r"]), 0)]})
    s = fw.run_permit_plugins(CycleState(), pod, "n1")
    assert (s.code, s.plugin) == (Code.UNSCHEDULABLE, "R")


def test_bind_skip_falls_through_and_reserve_unreserves_in_reverse() -> None:
    log: list[str] = []

    class B:
        def __init__(self, name: str, st: Status | None) -> None:
            self._n, self.st = name, st

        def name(self) -> str:
            return self._n

        def bind(self, state, pod, node):  # type: ignore[no-untyped-def]
            log.append(f"{self._n}.bind")
            return self.st

        def reserve(self, state, pod, node):  # type: ignore[no-untyped-def]
            log.append(f"{self._n}.reserve")
            return self.st

        def unreserve(self, state, pod, node):  # type: ignore[no-untyped-def]
            log.append(f"{self._n}.unreserve")

    fw = _fw(
        {
            "bind": [B("S", Status(Code.SKIP)), B("OK", None)],
            "reserve": [B("R1", None), B("R2", None)],
        }
    )
    assert fw.run_bind_plugins(CycleState(), make_pod().obj(), "n1").is_success()
    assert log == ["S.bind", "OK.bind"]
    assert fw.run_reserve_plugins_reserve(CycleState(), make_pod().obj(), "n1").is_success()
    fw.run_reserve_plugins_unreserve(CycleState(), make_pod().obj(), "n1")
    assert log[-4:] == ["R1.reserve", "R2.reserve", "R2.unreserve", "R1.unreserve"]
    assert _fw({}).run_bind_plugins(CycleState(), make_pod().obj(), "n1").code == Code.SKIP


def test_default_profile_end_to_end_filter_reasons_in_upstream_order() -> None:
    nodes = [
        make_node("cordoned").capacity(cpu="4", memory="4Gi", pods=10).unschedulable().obj(),
        make_node("tainted").capacity(cpu="4", memory="4Gi", pods=10).taint("k", "v").obj(),
        make_node("small").capacity(cpu="1", memory="4Gi", pods=10).obj(),
        make_node("wrongzone").capacity(cpu="4", memory="4Gi", pods=10).label("zone", "b").obj(),
        make_node("good").capacity(cpu="4", memory="4Gi", pods=10).label("zone", "a").obj(),
    ]
    fw = framework_for(nodes)
    pod = make_pod().container({"cpu": "2"}).node_affinity_in("zone", ["a", "x"]).obj()
    state = CycleState()
    _, s, _ = fw.run_pre_filter_plugins(state, pod)
    assert s is None
    got = {}
    for ni in fw.snapshot_shared_lister().list():
        st = fw.run_filter_plugins_with_nominated_pods(state, pod, ni)
        got[ni.name] = None if st.is_success() else (st.plugin, st.reasons[0])
    assert got == {
        "cordoned": ("NodeUnschedulable", "node(s) were unschedulable"),
        "tainted": ("TaintToleration", "node(s) had untolerated taint(s)"),
        "small": ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector"),
        "wrongzone": ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector"),
        "good": None,
    }


@pytest.mark.parametrize("n", [1, 3])
def test_default_profile_scores_are_weighted(n: int) -> None:
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10).obj() for i in range(n)]
    fw = framework_for(nodes)
    pod = make_pod().container({"cpu": "1", "memory": "1Gi"}).obj()
    state = CycleState()
    fw.run_pre_filter_plugins(state, pod)
    infos = fw.snapshot_shared_lister().list()
    assert fw.run_pre_score_plugins(state, pod, infos) is None
    out, s = fw.run_score_plugins(state, pod, infos)
    assert s is None
    by = {p.name: p.score for p in out[0].scores}
    # TaintToleration: no taints -> 100 * 3; NodeResourcesFit: (75 + 87) / 2 = 81
    assert by["TaintToleration"] == 300
    assert by["NodeResourcesFit"] == 81
    # BalancedAllocation: without 100, with |.25 - .125| / 2 -> 93: 50 + 43 // 2 = 71
    assert by["NodeResourcesBalancedAllocation"] == 71
    assert by["ImageLocality"] == 0
    assert out[0].total_score == sum(by.values())


def test_out_of_tree_plugin_through_registry_and_config() -> None:
    from pysched.config import build_frameworks, load_config
    from pysched.framework.registry import RegistryError, in_tree_registry

    class OnlyEven:
        """A Filter+Score plugin: rejects odd-numbered nodes, prefers higher numbers."""

        def __init__(self, args: Any, handle: Any) -> None:
            self.handle = handle

        def name(self) -> str:
            return "OnlyEven"

        def filter(self, state, pod, ni):  # type: ignore[no-untyped-def]
            return None if int(ni.name[1:]) % 2 == 0 else Status(Code.UNSCHEDULABLE, ["odd"])

        def score(self, state, pod, ni):  # type: ignore[no-untyped-def]
            return int(ni.name[1:]) * 10, None

        def score_extensions(self):  # type: ignore[no-untyped-def]
            return None

    reg = in_tree_registry()
    reg.register("OnlyEven", OnlyEven)
    with pytest.raises(RegistryError):
        reg.register("OnlyEven", OnlyEven)
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "OnlyEven", "weight": 4}]}}}],
    }
    c = load_config(doc, registry=reg)
    nodes = [make_node(f"n{i}").capacity(cpu="1", memory="1Gi", pods=9).obj() for i in range(4)]
    deps = FrameworkDeps(snapshot=FakeSnapshot(nodes))
    fw = build_frameworks(c, deps, registry=reg)["default-scheduler"]
    assert fw.list_plugins()["filter"][-1] == "OnlyEven"
    assert fw.score_plugin_weight["OnlyEven"] == 4
    pod = make_pod().obj()
    state = CycleState()
    fw.run_pre_filter_plugins(state, pod)
    ok = [
        ni
        for ni in deps.snapshot.list()
        if fw.run_filter_plugins_with_nominated_pods(state, pod, ni).is_success()
    ]
    assert [ni.name for ni in ok] == ["n0", "n2"]
    fw.run_pre_score_plugins(state, pod, ok)
    out, _ = fw.run_score_plugins(state, pod, ok)
    assert {n.name: dict((p.name, p.score) for p in n.scores)["OnlyEven"] for n in out} == {
        "n0": 0,
        "n2": 80,
    }
    with pytest.raises(Exception, match="OnlyEven"):
        load_config(doc)  # unknown to the default registry


def test_pre_enqueue_and_events_to_register() -> None:
    fw = framework_for([make_node("n").obj()])
    assert fw.run_pre_enqueue_plugins(make_pod().obj()).is_success()
    s = fw.run_pre_enqueue_plugins(make_pod().spec(schedulingGates=[{"name": "g"}]).obj())
    assert (s.code, s.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "SchedulingGates")
    ev = fw.events_to_register()
    assert {
        "NodeResourcesFit",
        "TaintToleration",
        "NodeAffinity",
        "InterPodAffinity",
        "PodTopologySpread",
        "SchedulingGates",
        "NodeName",
        "NodePorts",
    } <= set(ev)
    assert all(e.event.action_type for evs in ev.values() for e in evs)


def test_cycle_state_clone_is_deep_for_state_data() -> None:
    class Data:
        def __init__(self, n: int) -> None:
            self.n = n

        def clone(self) -> Data:
            return Data(self.n)

    st = CycleState()
    st.write("k", Data(1))
    st.skip_filter_plugins = {"A"}
    c = st.clone()
    c.read("k").n = 2
    c.skip_filter_plugins.add("B")
    assert st.read("k").n == 1
    assert st.skip_filter_plugins == {"A"}
    st.delete("k")
    with pytest.raises(KeyError):
        st.read("k")


def test_extension_point_durations_reach_the_metrics_hook() -> None:
    seen: list[tuple[str, str, str]] = []

    class M:
        def observe_extension_point(
            self, point: str, status: str, profile: str, seconds: float
        ) -> None:
            assert seconds >= 0
            seen.append((point, status, profile))

    nodes = [make_node("n").capacity(cpu="1", memory="1Gi", pods=9).obj()]
    fw = framework_for(nodes, extras={"metrics": M()})
    pod = make_pod().container({"cpu": "2"}).obj()
    state = CycleState()
    fw.run_pre_filter_plugins(state, pod)
    fw.run_reserve_plugins_reserve(state, pod, "n")
    fw.run_pre_score_plugins(state, pod, fw.snapshot_shared_lister().list())
    assert seen[0] == ("PreFilter", "Success", "default-scheduler")
    assert seen[1] == ("Reserve", "Success", "default-scheduler")
    assert seen[2] == ("PreScore", "Success", "default-scheduler")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.01, "10ms"), (1.5, "1.5s"), (90, "1m30s"), (900, "15m0s"), (3723, "1h2m3s")],
)
def test_go_duration(seconds: float, text: str) -> None:
    from pysched.framework.runtime import go_duration

    assert go_duration(seconds) == text
