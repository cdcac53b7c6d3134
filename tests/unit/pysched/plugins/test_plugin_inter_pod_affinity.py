"""InterPodAffinity: required affinity/anti-affinity, symmetry with existing pods, namespaces,
AddPod/RemovePod, and preferred-term scoring."""

from __future__ import annotations

from typing import Any

from builders import FakeSnapshot, make_node, make_pod, plugin_for, run_filter, run_score

from pysched import decode as sched_decode
from pysched.config import load_config
from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code
from pysched.framework.types import PodInfo

ZONE = "zone"
CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
NODES = [
    make_node("n1").label(ZONE, "a").obj(),
    make_node("n2").label(ZONE, "a").obj(),
    make_node("n3").label(ZONE, "b").obj(),
    make_node("n4").obj(),  # no zone label
]


def _filter(pod: Any, pods: list[Any], **deps: Any) -> dict[str, tuple[Code, str] | None]:
    res = run_filter(plugin_for("InterPodAffinity", NODES, pods, **deps), pod, NODES, pods)
    return {n: (s.code, s.reasons[0]) if s is not None else None for n, s in res.items()}


AFF = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't match pod affinity rules")
ANTI = (Code.UNSCHEDULABLE, "node(s) didn't match pod anti-affinity rules")
EXISTING = (Code.UNSCHEDULABLE, "node(s) didn't satisfy existing pods anti-affinity rules")


def test_required_affinity_by_zone() -> None:
    db = make_pod("db").node("n1").label("app", "db").obj()
    pod = make_pod().pod_affinity({"app": "db"}, ZONE).obj()
    assert _filter(pod, [db]) == {"n1": None, "n2": None, "n3": AFF, "n4": AFF}


def test_first_pod_of_a_self_affine_group_may_go_anywhere_with_the_label() -> None:
    pod = make_pod().label("app", "web").pod_affinity({"app": "web"}, ZONE).obj()
    assert _filter(pod, []) == {"n1": None, "n2": None, "n3": None, "n4": AFF}
    # not when it does not match its own term
    other = make_pod().label("app", "x").pod_affinity({"app": "web"}, ZONE).obj()
    assert _filter(other, [])["n1"] == AFF


def test_required_anti_affinity() -> None:
    web = make_pod("w").node("n1").label("app", "web").obj()
    pod = make_pod().pod_anti_affinity({"app": "web"}, ZONE).obj()
    assert _filter(pod, [web]) == {"n1": ANTI, "n2": ANTI, "n3": None, "n4": None}
    by_host = make_pod().pod_anti_affinity({"app": "web"}, "kubernetes.io/hostname").obj()
    assert _filter(by_host, [web]) == {"n1": ANTI, "n2": None, "n3": None, "n4": None}


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    guard = make_pod("g").node("n1").pod_anti_affinity({"app": "web"}, ZONE).obj()
    web = make_pod().label("app", "web").obj()
    assert _filter(web, [guard]) == {"n1": EXISTING, "n2": EXISTING, "n3": None, "n4": None}
    assert _filter(make_pod().label("app", "db").obj(), [guard]) == dict.fromkeys(
        ("n1", "n2", "n3", "n4")
    )


def test_terms_match_only_their_namespaces() -> None:
    web = make_pod("w", "prod").node("n1").label("app", "web").obj()
    same_ns = make_pod().pod_anti_affinity({"app": "web"}, ZONE).obj()  # default namespace
    assert _filter(same_ns, [web])["n1"] is None
    listed = make_pod().pod_anti_affinity({"app": "web"}, ZONE, namespaces=["prod"]).obj()
    assert _filter(listed, [web])["n1"] == ANTI
    # namespaceSelector: {} selects every namespace
    every = make_pod().pod_anti_affinity({"app": "web"}, ZONE, namespaceSelector={}).obj()
    assert _filter(every, [web])["n1"] == ANTI
    # namespaceSelector by labels, resolved through the handle's namespaces
    namespaces = [
        sched_decode.namespace(
            {"kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}}
        )
    ]
    sel = (
        make_pod()
        .pod_anti_affinity({"app": "web"}, ZONE, namespaceSelector={"matchLabels": {"env": "prod"}})
        .obj()
    )
    assert _filter(sel, [web], namespaces=lambda: namespaces)["n1"] == ANTI
    assert _filter(sel, [web])["n1"] is None  # unknown namespace labels: no match


def test_existing_anti_affinity_namespace_selector_uses_incoming_namespace_labels() -> None:
    namespaces = [
        sched_decode.namespace(
            {"kind": "Namespace", "metadata": {"name": "default", "labels": {"team": "a"}}}
        )
    ]
    guard = (
        make_pod("g", "ops")
        .node("n3")
        .pod_anti_affinity({"app": "web"}, ZONE, namespaceSelector={"matchLabels": {"team": "a"}})
        .obj()
    )
    web = make_pod().label("app", "web").obj()
    assert _filter(web, [guard], namespaces=lambda: namespaces)["n3"] == EXISTING
    assert _filter(web, [guard])["n3"] is None


def test_pod_without_any_rules_skips() -> None:
    pl = plugin_for("InterPodAffinity", NODES)
    _, s = pl.pre_filter(CycleState(), make_pod().obj(), FakeSnapshot(NODES).list())
    assert s is not None
    assert s.code == Code.SKIP


def test_add_and_remove_pod_update_the_prefilter_state() -> None:
    web = make_pod("w").node("n3").label("app", "web").obj()
    snap = FakeSnapshot(NODES, [web])
    pl = plugin_for("InterPodAffinity", NODES, [web])
    pod = make_pod().pod_anti_affinity({"app": "web"}, ZONE).obj()
    state = CycleState()
    pl.pre_filter(state, pod, snap.list())
    n1, n3 = snap.get("n1"), snap.get("n3")
    assert pl.filter(state, pod, n1) is None
    assert pl.filter(state, pod, n3) is not None
    # a nominated web pod on n2 (zone a) blocks zone a too
    extra = PodInfo(make_pod("x").node("n2").label("app", "web").obj())
    clone = state.clone()
    pl.add_pod(clone, pod, extra, snap.get("n2"))
    assert pl.filter(clone, pod, n1) is not None
    assert pl.filter(state, pod, n1) is None  # the original state is untouched
    # preemption removing the web pod on n3 frees zone b
    pl.remove_pod(state, pod, PodInfo(web), n3)
    assert pl.filter(state, pod, n3) is None


def test_score_preferred_affinity_and_anti_affinity() -> None:
    db = make_pod("db").node("n1").label("app", "db").obj()
    snap = FakeSnapshot(NODES, [db])
    pl = plugin_for("InterPodAffinity", NODES, [db])
    pod = make_pod().pod_affinity({"app": "db"}, ZONE, weight=5).obj()
    assert run_score(pl, pod, snap) == {"n1": 100, "n2": 100, "n3": 0, "n4": 0}
    pod = make_pod().pod_anti_affinity({"app": "db"}, ZONE, weight=5).obj()
    assert run_score(pl, pod, snap) == {"n1": 0, "n2": 0, "n3": 100, "n4": 100}
    # both: +3 for zone a, -5 for the db host
    pod = (
        make_pod()
        .pod_affinity({"app": "db"}, ZONE, weight=3)
        .pod_anti_affinity({"app": "db"}, "kubernetes.io/hostname", weight=5)
        .obj()
    )
    # raw: n1 = 3 - 5 = -2, n2 = 3, n3 = n4 = 0 -> 100 * (s + 2) / 5
    assert run_score(pl, pod, snap) == {"n1": 0, "n2": 100, "n3": 40, "n4": 40}


def test_score_existing_pods_terms_toward_the_incoming_pod() -> None:
    hard = make_pod("h").node("n1").pod_affinity({"app": "web"}, ZONE).obj()
    soft_anti = make_pod("s").node("n3").pod_anti_affinity({"app": "web"}, ZONE, weight=4).obj()
    pods = [hard, soft_anti]
    snap = FakeSnapshot(NODES, pods)
    pl = plugin_for("InterPodAffinity", NODES, pods)
    web = make_pod().label("app", "web").obj()
    # zone a: +1 (hardPodAffinityWeight) ; zone b: -4 -> normalized over [-4, 1]
    assert run_score(pl, web, snap) == {"n1": 100, "n2": 100, "n3": 0, "n4": 80}
    # pods the existing terms do not select: nothing to score
    assert run_score(pl, make_pod().label("app", "db").obj(), snap) is None


def test_args_hard_weight_and_ignore_existing_preferences() -> None:
    hard = make_pod("h").node("n1").pod_affinity({"app": "web"}, ZONE).obj()
    snap = FakeSnapshot(NODES, [hard])
    web = make_pod().label("app", "web").obj()
    cfg = load_config(
        {
            **CFG,
            "profiles": [
                {
                    "pluginConfig": [
                        {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 0}}
                    ]
                }
            ],
        }
    )
    pl = plugin_for(
        "InterPodAffinity", NODES, [hard], args=cfg.profiles[0].plugin_config["InterPodAffinity"]
    )
    assert run_score(pl, web, snap) is None
    cfg = load_config(
        {
            **CFG,
            "profiles": [
                {
                    "pluginConfig": [
                        {
                            "name": "InterPodAffinity",
                            "args": {"ignorePreferredTermsOfExistingPods": True},
                        }
                    ]
                }
            ],
        }
    )
    pl = plugin_for(
        "InterPodAffinity", NODES, [hard], args=cfg.profiles[0].plugin_config["InterPodAffinity"]
    )
    assert run_score(pl, web, snap) is None


# Cases of upstream filtering_test.go (nodes nodeA/nodeB/nodeC labelled region/zone).
def _exists(key: str, topo: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
        "topologyKey": topo,
    }


def _rz(name: str, zone: str) -> Any:
    return make_node(name).labels({"region": "r1", "zone": zone, "hostname": name}).obj()


def _run(pod: Any, pods: list[Any], nodes: list[Any]) -> list[tuple[Code, str] | None]:
    res = run_filter(plugin_for("InterPodAffinity", nodes, pods), pod, nodes, pods)
    return [(s.code, s.reasons[0]) if s is not None else None for s in res.values()]


def test_upstream_affinity_terms_must_all_match_the_same_pod() -> None:
    pod = (
        make_pod()
        .spec(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        _exists("foo", "region"),
                        _exists("bar", "zone"),
                    ]
                }
            }
        )
        .obj()
    )
    both = [make_pod("pod1").node("nodeA").labels({"foo": "", "bar": ""}).obj()]
    assert _run(pod, both, [_rz("nodeA", "z1"), _rz("nodeB", "z1")]) == [None, None]
    split = [
        make_pod("pod1").node("nodeA").labels({"foo": ""}).obj(),
        make_pod("pod2").node("nodeB").labels({"bar": ""}).obj(),
    ]
    assert _run(pod, split, [_rz("nodeA", "z1"), _rz("nodeB", "z2")]) == [AFF, AFF]


def test_upstream_existing_pods_with_one_matching_anti_term_each() -> None:
    pods = [
        make_pod("a")
        .node("nodeA")
        .spec(
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        _exists("foo", "zone"),
                        _exists("labelA", "zone"),
                    ]
                }
            }
        )
        .obj(),
        make_pod("b")
        .node("nodeB")
        .spec(
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        _exists("bar", "zone"),
                        _exists("labelB", "zone"),
                    ]
                }
            }
        )
        .obj(),
    ]
    nodes = [_rz("nodeA", "z1"), _rz("nodeB", "z2"), _rz("nodeC", "z3")]
    pod = make_pod().labels({"foo": "", "bar": ""}).obj()
    assert _run(pod, pods, nodes) == [EXISTING, EXISTING, None]


def test_upstream_incoming_anti_affinity_counts_terms_by_their_own_topology() -> None:
    pod = (
        make_pod()
        .spec(
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        _exists("foo", "region"),
                        _exists("bar", "zone"),
                    ]
                }
            }
        )
        .obj()
    )
    pods = [make_pod("x").node("nodeA").labels({"foo": "", "bar": ""}).obj()]
    # region r1 holds a foo pod: both nodes (same region) are rejected
    assert _run(pod, pods, [_rz("nodeA", "z1"), _rz("nodeB", "z2")]) == [ANTI, ANTI]
