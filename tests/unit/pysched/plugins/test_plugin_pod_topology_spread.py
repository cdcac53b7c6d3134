"""PodTopologySpread: skew filter (DoNotSchedule), minDomains, inclusion policies,
matchLabelKeys, AddPod/RemovePod, and the ScheduleAnyway score."""

from __future__ import annotations

from typing import Any

import pytest
from builders import FakeSnapshot, make_node, make_pod, plugin_for, run_filter, run_score

from pysched.config import load_config
from pysched.framework.cycle_state import CycleState
from pysched.framework.labels import selector_from_set
from pysched.framework.status import Code
from pysched.framework.types import PodInfo

ZONE = "zone"
HOST = "kubernetes.io/hostname"
CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
SKEW = (Code.UNSCHEDULABLE, "node(s) didn't match pod topology spread constraints")
MISSING = (
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    "node(s) didn't match pod topology spread constraints (missing required label)",
)


def _nodes() -> list[Any]:
    return [
        make_node("n1").label(ZONE, "a").obj(),
        make_node("n2").label(ZONE, "a").obj(),
        make_node("n3").label(ZONE, "b").obj(),
        make_node("n4").obj(),
    ]


def _foo(name: str, node: str, **labels: str) -> Any:
    return make_pod(name).node(node).labels({"app": "foo", **labels}).obj()


def _filter(pod: Any, nodes: list[Any], pods: list[Any], args: Any = None) -> dict[str, Any]:
    res = run_filter(plugin_for("PodTopologySpread", nodes, pods, args=args), pod, nodes, pods)
    return {n: (s.code, s.reasons[0]) if s is not None else None for n, s in res.items()}


def test_skew_filter_by_zone() -> None:
    pods = [_foo("a1", "n1"), _foo("a2", "n2"), _foo("a3", "n2")]  # zone a: 3, zone b: 0
    pod = make_pod().label("app", "foo").spread(1, ZONE, labels={"app": "foo"}).obj()
    assert _filter(pod, _nodes(), pods) == {"n1": SKEW, "n2": SKEW, "n3": None, "n4": MISSING}
    loose = make_pod().label("app", "foo").spread(4, ZONE, labels={"app": "foo"}).obj()
    assert _filter(loose, _nodes(), pods)["n1"] is None
    # a pod that does not match its own selector adds no self-match
    other = make_pod().spread(3, ZONE, labels={"app": "foo"}).obj()
    assert _filter(other, _nodes(), pods)["n1"] is None


def test_pods_in_other_namespaces_and_terminating_pods_do_not_count() -> None:
    term = _foo("t", "n1")
    term.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    pods = [_foo("a1", "n1"), make_pod("x", "other").node("n1").label("app", "foo").obj(), term]
    pod = make_pod().label("app", "foo").spread(1, ZONE, labels={"app": "foo"}).obj()
    # zone a: 1 (a1), zone b: 0 -> a: 1 + 1 - 0 = 2 > 1
    assert _filter(pod, _nodes(), pods)["n1"] == SKEW
    assert _filter(pod, _nodes(), pods[1:])["n1"] is None


def test_min_domains_treats_the_global_minimum_as_zero() -> None:
    pods = [_foo("a1", "n1"), _foo("a2", "n1"), _foo("b1", "n3")]  # a: 2, b: 1
    pod = make_pod().label("app", "foo").spread(1, ZONE, labels={"app": "foo"}).obj()
    assert _filter(pod, _nodes(), pods)["n3"] is None  # 1 + 1 - 1 = 1
    strict = (
        make_pod().label("app", "foo").spread(1, ZONE, labels={"app": "foo"}, minDomains=3).obj()
    )
    assert _filter(strict, _nodes(), pods)["n3"] == SKEW  # 1 + 1 - 0 = 2


def test_node_inclusion_policies() -> None:
    nodes = [
        make_node("n1").label(ZONE, "a").obj(),
        make_node("n3").label(ZONE, "b").label("pool", "x").obj(),
        make_node("n5").label(ZONE, "c").taint("t", "v").obj(),
    ]
    pods = [_foo("a1", "n1"), _foo("b1", "n3")]
    base = make_pod().label("app", "foo")
    # Honor (default) affinity: zone c has no matching nodes -> not a domain; min stays 1.
    pod = base.spread(1, ZONE, labels={"app": "foo"}).node_selector({ZONE: "a"}).obj()
    assert _filter(pod, nodes, pods)["n1"] is None
    # Ignore: every node's domain counts, zone c (0 pods) is the minimum.
    pod = (
        make_pod()
        .label("app", "foo")
        .node_selector({ZONE: "a"})
        .spread(1, ZONE, labels={"app": "foo"}, nodeAffinityPolicy="Ignore")
        .obj()
    )
    assert _filter(pod, nodes, pods)["n1"] == SKEW
    # Taints are ignored by default (zone c counts) and honored on request.
    pod = make_pod().label("app", "foo").spread(1, ZONE, labels={"app": "foo"}).obj()
    assert _filter(pod, nodes, pods)["n1"] == SKEW
    pod = (
        make_pod()
        .label("app", "foo")
        .spread(1, ZONE, labels={"app": "foo"}, nodeTaintsPolicy="Honor")
        .obj()
    )
    assert _filter(pod, nodes, pods)["n1"] is None


def test_match_label_keys_narrow_the_selector() -> None:
    pods = [_foo("a1", "n1", rev="1"), _foo("a2", "n1", rev="1"), _foo("b1", "n3", rev="2")]
    pod = (
        make_pod()
        .labels({"app": "foo", "rev": "2"})
        .spread(1, ZONE, labels={"app": "foo"}, matchLabelKeys=["rev"])
        .obj()
    )
    # only rev=2 pods count: a: 0, b: 1 -> b: 1 + 1 - 0 = 2 > 1, a: 0 + 1 - 0 = 1
    got = _filter(pod, _nodes(), pods)
    assert got["n1"] is None
    assert got["n3"] == SKEW


def test_no_hard_constraints_skips() -> None:
    pl = plugin_for("PodTopologySpread", _nodes())
    _, s = pl.pre_filter(CycleState(), make_pod().obj(), FakeSnapshot(_nodes()).list())
    assert s is not None
    assert s.code == Code.SKIP
    soft = make_pod().spread(1, ZONE, "ScheduleAnyway", labels={"app": "foo"}).obj()
    _, s = pl.pre_filter(CycleState(), soft, [])
    assert s is not None
    assert s.code == Code.SKIP


def test_add_and_remove_pod_keep_the_minimum_exact() -> None:
    nodes = _nodes()
    pods = [_foo("a1", "n1"), _foo("b1", "n3")]
    snap = FakeSnapshot(nodes, pods)
    pl = plugin_for("PodTopologySpread", nodes, pods)
    pod = make_pod().label("app", "foo").spread(1, ZONE, labels={"app": "foo"}).obj()
    state = CycleState()
    pl.pre_filter(state, pod, snap.list())
    assert pl.filter(state, pod, snap.get("n1")) is None  # 1 + 1 - 1
    pl.add_pod(state, pod, PodInfo(_foo("a2", "n2")), snap.get("n2"))  # a: 2
    s = pl.filter(state, pod, snap.get("n1"))
    assert s is not None
    assert s.code == Code.UNSCHEDULABLE
    pl.remove_pod(state, pod, PodInfo(pods[1]), snap.get("n3"))  # b: 0
    assert pl.filter(state, pod, snap.get("n3")) is None
    s = pl.filter(state, pod, snap.get("n2"))
    assert s is not None
    # pods of other namespaces do not change the counts
    pl.add_pod(
        state, pod, PodInfo(make_pod("o", "x").node("n3").label("app", "foo").obj()), snap.get("n3")
    )
    assert pl.filter(state, pod, snap.get("n3")) is None


# ---------------------------------------------------------------- scoring
def test_score_by_hostname() -> None:
    nodes = [make_node(n).obj() for n in ("n1", "n2", "n3")]
    pods = [_foo("a", "n1"), _foo("b", "n1"), _foo("c", "n2")]
    pl = plugin_for("PodTopologySpread", nodes, pods)
    pod = (
        make_pod()
        .label("app", "foo")
        .spread(1, HOST, "ScheduleAnyway", labels={"app": "foo"})
        .obj()
    )
    # weight log(3 + 2); raw: n1 round(2 * 1.609) = 3, n2 2, n3 0
    # normalized 100 * (max + min - s) / max: 0, 33, 100
    assert run_score(pl, pod, FakeSnapshot(nodes, pods)) == {"n1": 0, "n2": 33, "n3": 100}


def test_score_by_zone_ignores_nodes_without_the_label() -> None:
    nodes = _nodes()
    pods = [_foo("a1", "n1"), _foo("a2", "n2"), _foo("a3", "n2")]
    pl = plugin_for("PodTopologySpread", nodes, pods)
    pod = (
        make_pod()
        .label("app", "foo")
        .spread(2, ZONE, "ScheduleAnyway", labels={"app": "foo"})
        .obj()
    )
    # weight log(2 + 2); raw: zone a 3 * 1.386 + (2 - 1) = 5.16 -> 5; zone b 0 + 1 = 1
    # normalized over [1, 5]: a 100 * (5 + 1 - 5) / 5 = 20, b 100; n4 ignored -> 0
    assert run_score(pl, pod, FakeSnapshot(nodes, pods)) == {"n1": 20, "n2": 20, "n3": 100, "n4": 0}


def test_score_all_equal_gives_max_and_no_soft_constraints_skip() -> None:
    nodes = [make_node(n).obj() for n in ("n1", "n2")]
    pl = plugin_for("PodTopologySpread", nodes)
    pod = make_pod().spread(1, HOST, "ScheduleAnyway", labels={"app": "foo"}).obj()
    assert run_score(pl, pod, FakeSnapshot(nodes)) == {"n1": 100, "n2": 100}
    assert run_score(pl, make_pod().obj(), FakeSnapshot(nodes)) is None


def test_system_default_constraints_apply_with_a_default_selector() -> None:
    nodes = [
        make_node("n1").label("topology.kubernetes.io/zone", "a").obj(),
        make_node("n2").label("topology.kubernetes.io/zone", "b").obj(),
        make_node("n3").obj(),
    ]
    pods = [_foo("a", "n1"), _foo("b", "n1")]
    pod = make_pod().label("app", "foo").obj()
    # No Service/ReplicaSet selects the pod: no default constraints, nothing to score.
    assert (
        run_score(plugin_for("PodTopologySpread", nodes, pods), pod, FakeSnapshot(nodes, pods))
        is None
    )
    pl = plugin_for(
        "PodTopologySpread",
        nodes,
        pods,
        extras={"default_spread_selector": lambda p: selector_from_set({"app": "foo"})},
    )
    got = run_score(pl, pod, FakeSnapshot(nodes, pods))
    assert got is not None
    # n3 lacks the zone label but system defaults still spread it by hostname
    assert got["n3"] == 100
    assert got["n1"] < got["n2"] <= 100


def test_list_defaulting_from_args() -> None:
    cfg = load_config(
        {
            **CFG,
            "profiles": [
                {
                    "pluginConfig": [
                        {
                            "name": "PodTopologySpread",
                            "args": {
                                "defaultingType": "List",
                                "defaultConstraints": [
                                    {
                                        "maxSkew": 1,
                                        "topologyKey": HOST,
                                        "whenUnsatisfiable": "DoNotSchedule",
                                    }
                                ],
                            },
                        }
                    ]
                }
            ],
        }
    )
    args = cfg.profiles[0].plugin_config["PodTopologySpread"]
    nodes = [make_node(n).obj() for n in ("n1", "n2")]
    pods = [_foo("a", "n1")]
    pl = plugin_for(
        "PodTopologySpread",
        nodes,
        pods,
        args=args,
        extras={"default_spread_selector": lambda p: selector_from_set({"app": "foo"})},
    )
    got = run_filter(pl, make_pod().label("app", "foo").obj(), nodes, pods)
    assert got["n2"] is None
    assert got["n1"] is not None
    assert got["n1"].code == Code.UNSCHEDULABLE


def test_default_selector_from_services_and_controllers() -> None:
    from pykubelet.api.types import OwnerReference
    from pysched.plugins.pod_topology_spread import default_selector
    from pysched.workloads import workload_from_dict

    svc = workload_from_dict(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"selector": {"app": "foo"}, "ports": [{"port": 80}]},
        }
    )
    rs = workload_from_dict(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "rs1"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "fe"}}, "template": {}},
        }
    )
    other_ns = workload_from_dict(
        {
            "kind": "Service",
            "metadata": {"name": "x", "namespace": "o"},
            "spec": {"selector": {"app": "foo"}},
        }
    )
    pod = make_pod().labels({"app": "foo", "tier": "fe"}).obj()
    sel = default_selector(pod, [svc, rs, other_ns])
    assert sel.matches({"app": "foo", "tier": "be"})  # only the Service applies (no owner)
    assert not sel.matches({"app": "bar"})
    pod.metadata.owner_references = [
        OwnerReference(
            api_version="apps/v1", kind="ReplicaSet", name="rs1", uid="uid", controller=True
        )
    ]
    sel = default_selector(pod, [svc, rs])
    assert sel.matches({"app": "foo", "tier": "fe"})
    assert not sel.matches({"app": "foo", "tier": "be"})
    assert default_selector(make_pod().label("app", "zzz").obj(), [svc]).empty


def test_system_defaults_from_workload_objects() -> None:
    from pysched.workloads import workload_from_dict

    nodes = [make_node(n).obj() for n in ("n1", "n2")]
    pods = [_foo("a", "n1"), _foo("b", "n1")]
    svc = workload_from_dict(
        {"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"app": "foo"}}}
    )
    pl = plugin_for("PodTopologySpread", nodes, pods, extras={"workload_objects": lambda: [svc]})
    got = run_score(pl, make_pod().label("app", "foo").obj(), FakeSnapshot(nodes, pods))
    # hostname maxSkew 3: weight log(4); n1 2 * 1.386 + 2 = 4.77 -> 5, n2 0 + 2 = 2
    # normalized over [2, 5]: n1 100 * (5 + 2 - 5) / 5 = 40, n2 100 * 5 / 5 = 100
    assert got == {"n1": 40, "n2": 100}


FOO_EXISTS = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def _spread_pods(counts: dict[str, int]) -> list[Any]:
    return [
        make_pod(f"p-{n}{i}").node(n).label("foo", "").obj()
        for n, c in counts.items()
        for i in range(c)
    ]


# Cases of upstream scoring_test.go TestPodTopologySpreadScore.
@pytest.mark.parametrize(
    ("max_skew", "selector", "counts", "candidates", "want"),
    [
        (1, FOO_EXISTS, {"node-a": 0, "node-b": 0}, None, {"node-a": 100, "node-b": 100}),
        (
            1,
            FOO_EXISTS,
            {"node-a": 2, "node-b": 1, "node-c": 0, "node-d": 3},
            None,
            {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        ),
        (
            1,
            None,
            {"node-a": 2, "node-b": 1, "node-c": 0, "node-d": 3},
            None,
            {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
        ),
        (
            2,
            FOO_EXISTS,
            {"node-a": 2, "node-b": 1, "node-c": 0, "node-d": 3},
            None,
            {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
        ),
        (
            3,
            FOO_EXISTS,
            {"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1},
            None,
            {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        ),
        (
            1,
            FOO_EXISTS,
            {"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3},
            ["node-a", "node-b", "node-x"],
            {"node-a": 33, "node-b": 83, "node-x": 100},
        ),
    ],
)
def test_upstream_score_table(max_skew, selector, counts, candidates, want) -> None:  # type: ignore[no-untyped-def]
    nodes = [make_node(n).obj() for n in counts]
    pods = _spread_pods(counts)
    extra = {"labelSelector": selector} if selector is not None else {}
    pod = make_pod("p").label("foo", "").spread(max_skew, HOST, "ScheduleAnyway", **extra).obj()
    pl = plugin_for("PodTopologySpread", nodes, pods)
    assert run_score(pl, pod, FakeSnapshot(nodes, pods), candidates) == want


def test_upstream_system_defaulting_with_a_service() -> None:
    from pysched.workloads import workload_from_dict

    counts = {"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}
    nodes = [make_node(n).obj() for n in counts]
    pods = _spread_pods(counts)
    svc = workload_from_dict(
        {"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"foo": ""}}}
    )
    pl = plugin_for("PodTopologySpread", nodes, pods, extras={"workload_objects": lambda: [svc]})
    got = run_score(pl, make_pod("p").label("foo", "").obj(), FakeSnapshot(nodes, pods))
    assert got == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}


def test_score_counts_pods_by_the_inclusion_policies() -> None:
    """PreScore's counts walk the nodes as PreFilter's do: nodeTaintsPolicy Honor leaves a
    tainted node's pods out of its zone's count (Ignore, the default, counts them)."""
    nodes = [
        make_node("n1").label(ZONE, "a").obj(),
        make_node("n2").label(ZONE, "a").taint("t", "v").obj(),
        make_node("n3").label(ZONE, "b").obj(),
    ]
    pods = [_foo("a1", "n2"), _foo("a2", "n2"), _foo("b1", "n3")]
    pl = plugin_for("PodTopologySpread", nodes, pods)

    def scores(**policy: str) -> dict[str, int]:
        pod = (
            make_pod()
            .label("app", "foo")
            .spread(1, ZONE, "ScheduleAnyway", labels={"app": "foo"}, **policy)
            .obj()
        )
        return run_score(pl, pod, FakeSnapshot(nodes, pods))

    # Ignore: zone a 2 pods, zone b 1 -> b preferred
    assert scores() == {"n1": 33, "n2": 33, "n3": 100}
    # Honor: n2's pods are left out, zone a 0, zone b 1 -> a preferred
    assert scores(nodeTaintsPolicy="Honor") == {"n1": 100, "n2": 100, "n3": 0}
