"""The scheduler's last decision per pod, and what kube-scheduler writes besides bindings.

last_decision() is what a control plane serves for "why is my pod Pending / why there";
set_pod_condition / set_nominated_node_name / evict carry kube-scheduler's exact texts.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from engine_objects import make_node, make_pod, node_dict, pod_dict
from test_fast_path import cluster

from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched import decode as sched_decode
from pysched.api import EmbeddedScheduler
from pysched.decisions import Decision, DecisionLog
from pysched.framework.status import Code, Status
from pysched.simulate import Inputs, simulate

TAINT = [{"key": "k", "value": "v", "effect": "NoSchedule"}]


class Client:
    """Binder + status writer recording what a control plane would write."""

    def __init__(self) -> None:
        self.sched: EmbeddedScheduler | None = None
        self.bindings: list[tuple[str, str]] = []
        self.conditions: list[tuple[str, str, str]] = []
        self.nominations: list[tuple[str, str]] = []
        self.evictions: list[tuple[str, str, str]] = []

    def bind(self, pod: Pod, node_name: str) -> None:
        self.bindings.append((pod.key, node_name))

    def set_pod_condition(self, pod: Pod, reason: str, message: str) -> None:
        self.conditions.append((pod.key, reason, message))

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        self.nominations.append((pod.key, node_name))

    def evict(self, victim: Pod, preemptor: Pod, node_name: str) -> None:
        self.evictions.append((victim.key, preemptor.key, node_name))
        assert self.sched is not None
        self.sched.on_pod_delete(victim)


def make(fast: bool = True, **kw: Any) -> tuple[EmbeddedScheduler, Client]:
    c = Client()
    s = EmbeddedScheduler(c, status_writer=c, rng=random.Random(7), fast=fast, **kw)
    c.sched = s
    return s, c


def schedule(s: EmbeddedScheduler, pod: Pod) -> Any:
    s.on_pod_add(pod)
    rec = s.schedule_one()
    assert rec is not None
    if rec.node:
        s.on_pod_update(pod, rec.pod)
    return rec


@pytest.mark.parametrize("fast", [True, False])
def test_failed_scheduling_message_and_decision_of_an_unschedulable_pod(fast: bool) -> None:
    s, c = make(fast)
    s.on_node_add(make_node("n1", cpu="1", labels={"disk": "ssd"}))
    s.on_node_add(make_node("n2", cpu="8", labels={"disk": "hdd"}))
    s.on_node_add(make_node("n3", cpu="8", labels={"disk": "hdd"}))
    s.on_pod_add(sched_decode.pod(pod_dict("busy", cpu="800m", node="n1", priority=100)))
    p = sched_decode.pod(pod_dict("web", cpu="500m", node_selector={"disk": "ssd"}))
    rec = schedule(s, p)
    assert rec.result == "unschedulable"
    want = (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )
    # PodScheduled=False, reason Unschedulable, kube-scheduler's FitError text
    assert c.conditions == [("default/web", "Unschedulable", want)]
    assert c.nominations == []
    affinity = {
        "plugin": "NodeAffinity",
        "code": "UnschedulableAndUnresolvable",
        "reason": "node(s) didn't match Pod's node affinity/selector",
    }
    d = s.last_decision("default", "web")
    assert d == {
        "pod": "default/web",
        "node": None,
        "nominatedNode": None,
        "victims": [],
        "message": want,
        "filtered": {
            "n1": {
                "plugin": "NodeResourcesFit",
                "code": "Unschedulable",
                "reason": "Insufficient cpu",
            },
            "n2": affinity,
            "n3": affinity,
        },
        "evaluatedNodes": 3,
        "feasibleNodes": 0,
        "profile": "default-scheduler",  # which profile decided
    }
    json.dumps(d)  # JSON-ready


@pytest.mark.parametrize("fast", [True, False])
def test_decision_of_a_scheduled_pod_reports_the_top_three_nodes(fast: bool) -> None:
    s, _ = make(fast)
    for i, cpu in enumerate(["2", "4", "8", "16", "32"]):
        s.on_node_add(make_node(f"n{i}", cpu=cpu, memory="64Gi"))
    s.on_node_add(make_node("tainted", cpu="64", taints=TAINT))
    rec = schedule(s, make_pod("web", cpu="1"))
    d = s.last_decision("default", "web")
    assert d is not None
    assert d["node"] == rec.node == "n4"  # LeastAllocated: the biggest node
    assert next(iter(d["scores"])) == "n4"  # the chosen node first
    assert len(d["scores"]) == 3
    totals = [v["total"] for v in d["scores"].values()]
    assert totals == sorted(totals, reverse=True)
    assert set(d["scores"]["n4"]) == {
        "TaintToleration",
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "total",
    }
    assert (d["evaluatedNodes"], d["feasibleNodes"]) == (6, 5)
    assert d["message"] == ""
    json.dumps(d)


def test_preemption_decision_names_the_nominated_node_and_victims() -> None:
    s, c = make()
    s.on_node_add(make_node("n1", cpu="2"))
    s.on_pod_add(sched_decode.pod(pod_dict("low", cpu="2", node="n1", priority=1)))
    rec = schedule(s, sched_decode.pod(pod_dict("urgent", cpu="1", priority=100)))
    assert rec.result == "unschedulable"
    d = s.last_decision("default", "urgent")
    assert d is not None
    assert d["nominatedNode"] == "n1"
    assert d["victims"] == ["default/low"]
    assert d["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert c.evictions == [("default/low", "default/urgent", "n1")]
    assert c.nominations == [("default/urgent", "n1")]
    assert c.conditions[-1][1] == "Unschedulable"
    # the victim is gone from the log too; the preemptor's next attempt replaces its decision
    assert s.last_decision("default", "low") is None


def test_a_deleted_pod_is_forgotten() -> None:
    s, _ = make()
    s.on_node_add(make_node("n1", cpu="1"))
    p = make_pod("big", cpu="4")
    schedule(s, p)
    assert s.last_decision("default", "big") is not None
    s.on_pod_delete(p)
    assert s.last_decision("default", "big") is None
    assert s.last_decision("default", "never-seen") is None


def test_the_log_is_bounded_by_pods_and_by_node_verdicts() -> None:
    log = DecisionLog(max_decisions=3, max_node_verdicts=1000)
    st = Status(Code.UNSCHEDULABLE, ["Insufficient cpu"], plugin="NodeResourcesFit")

    def d(name: str, nodes: int) -> Decision:
        filtered = [(f"n{i}", st) for i in range(nodes)]
        return Decision(f"ns/{name}", None, None, [], "m", filtered, None, nodes, 0)

    for i in range(5):
        log.put(d(f"p{i}", 1))
    assert len(log) == 3
    assert log.get("ns/p0") is None
    assert log.get("ns/p4") is not None
    log.put(d("wide", 900))  # the budget pushes out older decisions, never the newest
    assert log.node_verdicts() <= 1000
    assert log.get("ns/wide") is not None
    log.put(d("wider", 5000))
    assert len(log) == 1
    assert log.get("ns/wider") is not None
    one = log.get("ns/wider")
    assert one is not None
    assert len(one.verdicts) == 1  # one distinct verdict, stored once
    log.forget("ns/wider")
    assert (len(log), log.node_verdicts()) == (0, 0)


def test_a_higher_preemptor_clears_a_lower_nomination_on_its_node() -> None:
    s, c = make()
    s.on_node_add(make_node("n1", cpu="2"))
    s.on_pod_add(sched_decode.pod(pod_dict("low", cpu="2", node="n1", priority=1)))
    schedule(s, sched_decode.pod(pod_dict("mid", cpu="2", priority=10)))
    assert c.nominations == [("default/mid", "n1")]
    # before mid comes back, another pod lands on n1; then a higher pod preempts there
    s.on_pod_add(sched_decode.pod(pod_dict("other", cpu="2", node="n1", priority=5)))
    schedule(s, sched_decode.pod(pod_dict("high", cpu="2", priority=100)))
    assert c.evictions[-1] == ("default/other", "default/high", "n1")
    assert c.nominations[1:] == [("default/mid", ""), ("default/high", "n1")]
    d = s.last_decision("default", "high")
    assert d is not None
    assert (d["nominatedNode"], d["victims"]) == ("n1", ["default/other"])


@pytest.mark.parametrize("seed", [71, 72, 73])
def test_simulate_decides_the_same_on_both_paths(seed: int) -> None:
    """simulate() on the vectorised path and on the plugins: identical entries, verdicts,
    reported scores and messages (preemption, nominations and node filters included)."""
    nodes, bound, pending = cluster(seed, 150)
    rng = random.Random(seed)
    for p in pending:
        p.spec.priority = rng.choice([0, 5, 50])
    inputs = Inputs(nodes=nodes, pods=[*bound, *pending])
    fast = simulate(inputs, seed=seed, fast=True)
    plain = simulate(inputs, seed=seed, fast=False)
    for a, b in zip(fast["results"], plain["results"], strict=True):
        assert a == b, a["pod"]
    assert any(e["filtered"] for e in fast["results"])
    assert any("scores" in e for e in fast["results"])


def test_simulate_reads_json_fast_and_yaml_still(tmp_path: Any) -> None:
    from pysched.simulate import load_inputs

    doc = {"apiVersion": "v1", "kind": "List", "items": [node_dict("n1")]}
    j = tmp_path / "c.json"
    j.write_text(json.dumps(doc))
    y = tmp_path / "c.yaml"
    y.write_text("apiVersion: v1\nkind: List\nitems:\n- " + json.dumps(node_dict("n1")) + "\n")
    for f in (j, y):
        got = load_inputs(f)
        assert [n.metadata.name for n in got.nodes] == ["n1"]
        assert isinstance(got.nodes[0], Node)


@pytest.mark.parametrize("fast", [True, False])
def test_a_scheduled_pods_decision_names_the_reason_of_every_rejected_node(fast: bool) -> None:
    """The fast path decides from masks without asking why; the decision still records, per
    rejected node, the plugin and its reason (pykubectl why shows them)."""
    s, _ = make(fast)
    for i in range(4):
        s.on_node_add(make_node(f"n{i}", cpu="8", memory="64Gi"))
    s.on_node_add(make_node("tainted", cpu="64", taints=TAINT))
    s.on_node_add(make_node("small", cpu="100m"))
    rec = schedule(s, make_pod("web", cpu="1"))
    assert rec.node in {"n0", "n1", "n2", "n3"}
    d = s.last_decision("default", "web")
    assert d is not None
    assert d["filtered"] == {
        "tainted": {
            "plugin": "TaintToleration",
            "code": "UnschedulableAndUnresolvable",
            "reason": "node(s) had untolerated taint(s)",
        },
        "small": {"plugin": "NodeResourcesFit", "code": "UnschedulableAndUnresolvable",
                  "reason": "Insufficient cpu"},
    }
    assert (d["evaluatedNodes"], d["feasibleNodes"]) == (6, 4)


def test_a_decision_records_a_bounded_number_of_deferred_reasons_and_counts_the_rest() -> None:
    """On a big cluster the reasons cost a Filter call each: a recorded decision computes
    DECISION_VERDICTS of them (the counts say how many more were rejected); the attempt's
    diagnosis can still resolve the rest (simulate does)."""
    from pysched.scheduler import DECISION_VERDICTS

    s, _ = make(True)
    extra = 9
    for i in range(DECISION_VERDICTS + extra):
        s.on_node_add(make_node(f"t{i:03d}", cpu="8", taints=TAINT))
    s.on_node_add(make_node("ok", cpu="8"))
    rec = schedule(s, make_pod("web", cpu="1"))
    assert rec.node == "ok"
    d = s.last_decision("default", "web")
    assert d is not None
    assert len(d["filtered"]) == DECISION_VERDICTS
    assert {v["plugin"] for v in d["filtered"].values()} == {"TaintToleration"}
    assert (d["evaluatedNodes"], d["feasibleNodes"]) == (DECISION_VERDICTS + extra + 1, 1)
    assert rec.diagnosis.num_rejected() == DECISION_VERDICTS + extra
    rec.diagnosis.resolve()
    assert len(rec.diagnosis.node_to_status) == DECISION_VERDICTS + extra
    assert rec.diagnosis.num_rejected() == DECISION_VERDICTS + extra
