"""The control plane's scheduler with a KubeSchedulerConfiguration (issue 22), through the
API with fake nodes: profiles chosen by schedulerName, and HTTP extenders (ours, on
127.0.0.1) filtering, prioritizing, binding and vetoing preemption victims, an ignorable
one down and a non-ignorable one timing out; ``pykubectl why`` shows what they said."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cp_process import ControlPlaneProcess, FakeNode, control_plane, wait_for
from test_cp_scheduling import condition, get
from test_cp_semantics import Raw
from test_pykubectl import pk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "pysched"))
from extender_server import ExtenderServer

GPU, SLOW, DOWN = "example.com/gpu", "example.com/slow", "example.com/down"


class Setup:
    def __init__(self, cp: ControlPlaneProcess, main: ExtenderServer, binder: ExtenderServer,
                 slow: ExtenderServer, down_url: str) -> None:
        self.cp, self.main, self.binder, self.slow, self.down_url = (
            cp, main, binder, slow, down_url)
        self.raw = Raw(cp)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("cpext")
    with ExtenderServer() as down:
        down_url = down.url  # closed again: connection refused
    with ExtenderServer() as main, ExtenderServer() as binder, ExtenderServer() as slow:
        slow.delay = 2.0
        cfg = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"schedulerName": "default-scheduler"},
                {"schedulerName": "no-taints",
                 "plugins": {"multiPoint": {"disabled": [{"name": "TaintToleration"}]}}},
            ],
            "extenders": [
                {"urlPrefix": main.url, "filterVerb": "filter", "prioritizeVerb": "prioritize",
                 "preemptVerb": "preempt", "weight": 5, "nodeCacheCapable": True},
                {"urlPrefix": binder.url, "bindVerb": "bind",
                 "managedResources": [{"name": GPU, "ignoredByScheduler": True}]},
                {"urlPrefix": slow.url, "filterVerb": "filter", "httpTimeout": "300ms",
                 "managedResources": [{"name": SLOW, "ignoredByScheduler": True}]},
                {"urlPrefix": down_url, "filterVerb": "filter", "ignorable": True,
                 "managedResources": [{"name": DOWN, "ignoredByScheduler": True}]},
            ],
        }
        f = tmp / "sched.yaml"
        f.write_text(yaml.safe_dump(cfg))
        with control_plane(tmp / "root", "sqlite", ["--scheduler-config", str(f)]) as cp:
            yield Setup(cp, main, binder, slow, down_url)


@pytest.fixture
def ns(setup: Setup, request: pytest.FixtureRequest) -> Iterator[str]:
    name = "ext-" + request.node.name[5:30].replace("_", "-").strip("-")
    setup.cp.kubectl("create", "namespace", name)
    setup.main.reject, setup.main.unresolvable, setup.main.scores = {}, {}, {}
    setup.main.protected = set()
    yield name
    setup.cp.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def nodes(setup: Setup) -> Iterator[list[FakeNode]]:
    made: list[FakeNode] = []
    yield made
    for n in made:
        n.delete()


def pod(name: str, cpu: str = "100m", extended: str = "", scheduler: str = "",
        priority_class: str = "", node: str = "") -> dict[str, Any]:
    res: dict[str, Any] = {"requests": {"cpu": cpu}}
    if extended:
        res = {"requests": {"cpu": cpu, extended: "1"}, "limits": {extended: "1"}}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox",
                                            "resources": res}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def create(s: Setup, ns: str, body: dict[str, Any]) -> None:
    code, out = s.raw("POST", f"/api/v1/namespaces/{ns}/pods", body)
    assert code == 201, out


def events(s: Setup, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    code, out = s.raw("GET", f"/api/v1/namespaces/{ns}/events")
    assert code == 200, out
    return [e for e in out["items"] if e["involvedObject"]["name"] == name
            and e["reason"] == reason]


def decision(s: Setup, ns: str, name: str) -> dict[str, Any]:
    code, out = s.raw("GET", f"/api/v1/namespaces/{ns}/pods/{name}/scheduling")
    assert code == 200, out
    return out["decision"]  # type: ignore[no-any-return]


def node_name(s: Setup, ns: str, name: str) -> str:
    return str(get(s.raw, ns, name)["spec"].get("nodeName") or "")


def test_filter_extender_rejects_nodes_and_why_shows_it(setup: Setup, ns: str,
                                                        nodes: list[FakeNode]) -> None:
    s = setup
    a, b = f"{ns}-a", f"{ns}-b"
    s.main.reject = {a: "no licence here"}
    s.main.unresolvable = {b: "wrong rack"}
    nodes += [FakeNode(s.cp, a), FakeNode(s.cp, b)]
    create(s, ns, pod("lic"))
    wait_for(lambda: condition(get(s.raw, ns, "lic"), "PodScheduled").get("status") == "False",
             what="PodScheduled=False")
    msg = condition(get(s.raw, ns, "lic"), "PodScheduled")["message"]
    assert "1 no licence here" in msg
    assert "1 wrong rack" in msg
    wait_for(lambda: events(s, ns, "lic", "FailedScheduling"), what="FailedScheduling")
    assert "no licence here" in events(s, ns, "lic", "FailedScheduling")[0]["message"]
    d = decision(s, ns, "lic")
    assert d["profile"] == "default-scheduler"
    assert d["filtered"][a] == {"plugin": s.main.url, "code": "Unschedulable",
                                "reason": "no licence here"}
    assert d["filtered"][b]["code"] == "UnschedulableAndUnresolvable"
    assert any(e["verb"] == "filter" and e["failed"] >= 1 for e in d["extenders"])
    # node-cache-capable: names, not Node objects
    body = next(b for v, b in s.main.calls if v == "filter" and a in (b["NodeNames"] or []))
    assert body["Nodes"] is None
    why = pk(s.cp, "why", "lic", "-n", ns).stdout
    assert "Decided by profile default-scheduler" in why
    assert "no licence here" in why
    assert f"{s.main.url}   filter" in why
    # an extender has no queueing hints: a new node brings the pod back, and it fits there
    c = f"{ns}-c"
    nodes.append(FakeNode(s.cp, c))
    wait_for(lambda: node_name(s, ns, "lic") == c, what="scheduled on the new node",
             timeout=30)


def test_weighted_prioritize_changes_the_winner(setup: Setup, ns: str,
                                                nodes: list[FakeNode]) -> None:
    s = setup
    big, small = f"{ns}-big", f"{ns}-small"
    s.main.reject = {}
    s.main.scores = {small: 10}
    nodes += [FakeNode(s.cp, big, cpu="32", memory="64Gi"), FakeNode(s.cp, small, cpu="2")]
    create(s, ns, pod("web", cpu="1"))
    wait_for(lambda: node_name(s, ns, "web") != "", what="scheduled")
    assert node_name(s, ns, "web") == small  # LeastAllocated alone would pick big
    d = decision(s, ns, "web")
    assert d["scores"][small][s.main.url] == 100  # 10 x MaxNodeScore/MaxExtenderPriority


def test_bind_by_the_extender_for_a_managed_resource(setup: Setup, ns: str,
                                                     nodes: list[FakeNode]) -> None:
    s = setup
    n = f"{ns}-n"
    nodes.append(FakeNode(s.cp, n))  # no example.com/gpu: the scheduler ignores it

    def bind(args: dict[str, Any]) -> str:
        code, out = s.raw("POST", f"/api/v1/namespaces/{args['PodNamespace']}/pods/"
                          f"{args['PodName']}/binding",
                          {"apiVersion": "v1", "kind": "Binding",
                           "metadata": {"name": args["PodName"], "uid": args["PodUID"]},
                           "target": {"kind": "Node", "name": args["Node"]}})
        return "" if code == 201 else str(out)

    s.binder.on_bind = bind
    try:
        create(s, ns, pod("gpu", extended=GPU))
        create(s, ns, pod("plain"))
        wait_for(lambda: node_name(s, ns, "gpu") == n and node_name(s, ns, "plain") == n,
                 what="both bound")
    finally:
        s.binder.on_bind = None
    bound = [b["PodName"] for v, b in s.binder.calls if v == "bind"
             and b["PodNamespace"] == ns]
    assert bound == ["gpu"]  # only the pod asking for the managed resource
    wait_for(lambda: events(s, ns, "gpu", "Scheduled"), what="the Scheduled event")
    assert events(s, ns, "gpu", "Scheduled")[0]["message"] == (
        f"Successfully assigned {ns}/gpu to {n}")
    assert decision(s, ns, "gpu")["extenders"][-1] == {"extender": s.binder.url,
                                                       "verb": "bind", "node": n}


def test_ignorable_extender_down_is_skipped(setup: Setup, ns: str,
                                            nodes: list[FakeNode]) -> None:
    s = setup
    n = f"{ns}-n"
    nodes.append(FakeNode(s.cp, n))
    create(s, ns, pod("down", extended=DOWN))
    wait_for(lambda: node_name(s, ns, "down") == n, what="scheduled despite the extender")
    skipped = [e for e in decision(s, ns, "down")["extenders"] if e["extender"] == s.down_url]
    assert skipped[0]["ignored"] is True
    assert "refused" in skipped[0]["error"]


def test_non_ignorable_extender_timing_out_keeps_the_pod_pending(
        setup: Setup, ns: str, nodes: list[FakeNode]) -> None:
    s = setup
    nodes.append(FakeNode(s.cp, f"{ns}-n"))
    create(s, ns, pod("slow", extended=SLOW))
    wait_for(lambda: condition(get(s.raw, ns, "slow"), "PodScheduled").get("status") == "False",
             what="PodScheduled=False", timeout=30)
    cond = condition(get(s.raw, ns, "slow"), "PodScheduled")
    assert cond["reason"] == "SchedulerError"
    assert cond["message"] == (f'Post "{s.slow.url}/filter": context deadline exceeded '
                               "(Client.Timeout exceeded while awaiting headers)")
    wait_for(lambda: events(s, ns, "slow", "FailedScheduling"), what="FailedScheduling")
    assert "context deadline exceeded" in events(s, ns, "slow", "FailedScheduling")[0][
        "message"]
    assert node_name(s, ns, "slow") == ""


def test_preempt_verb_vetoes_a_victim(setup: Setup, ns: str, nodes: list[FakeNode]) -> None:
    s = setup
    p1, p2 = f"{ns}-p1", f"{ns}-p2"
    for name, value in (("ext-low", 1), ("ext-mid", 5), ("ext-high", 1000)):
        code, out = s.raw("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                          {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": name}, "value": value})
        assert code in (201, 409), out
    nodes += [FakeNode(s.cp, p1, cpu="1"), FakeNode(s.cp, p2, cpu="1")]
    create(s, ns, pod("low", cpu="800m", priority_class="ext-low", node=p1))
    create(s, ns, pod("mid", cpu="800m", priority_class="ext-mid", node=p2))
    low_uid = get(s.raw, ns, "low")["metadata"]["uid"]
    s.main.protected = {low_uid}  # without the extender, "low" (on p1) would be the victim
    body = pod("high", cpu="800m", priority_class="ext-high")
    body["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                   "values": [p1, p2]}]}]}}}
    create(s, ns, body)
    wait_for(lambda: get(s.raw, ns, "high").get("status", {}).get("nominatedNodeName") == p2
             or node_name(s, ns, "high") == p2, what="nominated to p2", timeout=30)
    code, _ = s.raw("GET", f"/api/v1/namespaces/{ns}/pods/low")
    assert code == 200  # vetoed: still there
    wait_for(lambda: s.raw("GET", f"/api/v1/namespaces/{ns}/pods/mid")[0] == 404
             or get(s.raw, ns, "mid")["metadata"].get("deletionTimestamp"),
             what="mid preempted", timeout=30)
    preempts = [b for v, b in s.main.calls if v == "preempt"
                and b["Pod"]["metadata"]["namespace"] == ns]
    assert preempts
    assert sorted(preempts[0]["NodeNameToMetaVictims"]) == [p1, p2]


def test_profiles_choose_by_scheduler_name(setup: Setup, ns: str,
                                           nodes: list[FakeNode]) -> None:
    s = setup
    t = f"{ns}-t"
    nodes.append(FakeNode(s.cp, t, taints=[{"key": "k", "value": "v",
                                            "effect": "NoSchedule"}]))
    create(s, ns, pod("tolerant", scheduler="no-taints"))
    create(s, ns, pod("plain"))
    create(s, ns, pod("nobody", scheduler="another-scheduler"))
    wait_for(lambda: node_name(s, ns, "tolerant") == t, what="no-taints profile bound it")
    wait_for(lambda: condition(get(s.raw, ns, "plain"), "PodScheduled").get("status")
             == "False", what="default profile refused the tainted node")
    assert decision(s, ns, "tolerant")["profile"] == "no-taints"
    scheduled = events(s, ns, "tolerant", "Scheduled")
    assert scheduled[0]["source"]["component"] == "no-taints"
    time.sleep(1.0)  # a pod for a name no profile has is left alone, without events
    nobody = get(s.raw, ns, "nobody")
    assert not nobody["spec"].get("nodeName")
    assert condition(nobody, "PodScheduled") == {}
    assert [e for e in s.raw("GET", f"/api/v1/namespaces/{ns}/events")[1]["items"]
            if e["involvedObject"]["name"] == "nobody"] == []
    assert s.raw("GET", f"/api/v1/namespaces/{ns}/pods/nobody/scheduling")[0] == 404
