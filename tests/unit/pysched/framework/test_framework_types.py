"""Pod requests (init containers, sidecars, overhead, non-zero defaults), NodeInfo sums,
HostPortInfo, selectors and PreFilterResult: the framework's data types."""

from __future__ import annotations

import pytest
from builders import make_node, make_pod

from pykubelet.api.types import LabelSelector, LabelSelectorRequirement
from pysched import decode as sched_decode
from pysched.framework.labels import (
    EVERYTHING,
    NOTHING,
    CompiledNodeSelector,
    RequiredNodeAffinity,
    label_selector_as_selector,
)
from pysched.framework.status import Code, Status, is_success
from pysched.framework.types import HostPortInfo, NodeInfo, PreFilterResult, normalized_image_name
from pysched.resources import non_zero_pod_requests, pod_requests

MI = 2**20


# ---------------------------------------------------------------- PodRequests
# The example of noderesources.computePodResourceRequest's comment, then sidecar cases of
# component-helpers' resource tests.
@pytest.mark.parametrize(
    ("build", "want"),
    [
        (
            lambda: (
                make_pod()
                .init_container({"cpu": "2", "memory": "1G"})
                .init_container({"cpu": "2", "memory": "3G"})
                .container({"cpu": "2", "memory": "1G"})
                .container({"cpu": "1", "memory": "1G"})
            ),
            {"cpu": 3000, "memory": 3 * 10**9},
        ),
        # sidecar (restartable init) adds to the regular containers' sum
        (
            lambda: make_pod().init_container({"cpu": "1"}, sidecar=True).container({"cpu": "2"}),
            {"cpu": 3000},
        ),
        # an init container after a sidecar runs alongside it: max(init + sidecar, sum)
        (
            lambda: (
                make_pod()
                .init_container({"cpu": "1"}, sidecar=True)
                .init_container({"cpu": "5"})
                .container({"cpu": "2"})
            ),
            {"cpu": 6000},
        ),
        # an init container before the sidecar does not see it
        (
            lambda: (
                make_pod()
                .init_container({"cpu": "5"})
                .init_container({"cpu": "1"}, sidecar=True)
                .container({"cpu": "2"})
            ),
            {"cpu": 5000},
        ),
        # overhead is added on top
        (
            lambda: make_pod().container({"cpu": "1", "memory": "1Mi"}).overhead(cpu="250m"),
            {"cpu": 1250, "memory": MI},
        ),
        # pod-level requests replace the aggregate for the resources they name
        (
            lambda: (
                make_pod()
                .container({"cpu": "1", "memory": "1Mi"})
                .spec(resources={"requests": {"cpu": "3"}})
            ),
            {"cpu": 3000, "memory": MI},
        ),
    ],
)
def test_pod_requests(build, want) -> None:  # type: ignore[no-untyped-def]
    assert pod_requests(build().obj()) == want


def test_non_zero_requests_fill_only_missing_requests() -> None:
    p = make_pod().container({"memory": "0"}).container().obj()
    # c0: cpu missing -> 100m, memory explicitly 0 stays 0; c1: both missing.
    assert non_zero_pod_requests(p) == {"cpu": 200, "memory": 200 * MI}
    assert non_zero_pod_requests(make_pod().obj()) == {}  # no containers, no defaults


# ---------------------------------------------------------------- NodeInfo
def test_node_info_keeps_requested_sums_incrementally() -> None:
    n = make_node("n1").capacity(cpu="4", memory="8Gi", pods=10, **{"example.com/gpu": 2}).obj()
    a = make_pod("a").node("n1").container({"cpu": "1", "example.com/gpu": "1"}).obj()
    b = make_pod("b").node("n1").container().host_port(80).obj()
    ni = NodeInfo()
    ni.set_node(n)
    assert ni.allocatable.milli_cpu == 4000
    assert ni.allocatable.allowed_pod_number == 10
    assert ni.allocatable.scalar == {"example.com/gpu": 2}
    g0 = ni.generation
    ni.add_pod(a)
    ni.add_pod(b)
    assert ni.generation > g0
    assert ni.requested.milli_cpu == 1000
    assert ni.requested.memory == 0
    assert ni.requested.scalar == {"example.com/gpu": 1}
    assert ni.non_zero_requested.milli_cpu == 1000 + 100 + 100  # b has two request-less containers
    assert ni.non_zero_requested.memory == 200 * MI + 200 * MI + 200 * MI
    assert ni.used_ports.check_conflict("", "TCP", 80)
    clone = ni.clone()
    ni.remove_pod(b)
    assert not ni.used_ports.check_conflict("", "TCP", 80)
    assert ni.non_zero_requested.milli_cpu == 1000
    assert ni.non_zero_requested.memory == 200 * MI
    assert [p.pod.name for p in ni.pods] == ["a"]
    assert len(clone.pods) == 2  # the clone is unaffected
    assert clone.used_ports.check_conflict("1.2.3.4", "TCP", 80)
    with pytest.raises(KeyError):
        ni.remove_pod(b)


def test_node_info_removes_any_pod_of_many_in_any_order() -> None:
    """RemovePod by uid with the last pod swapped into its place, whichever pod it is;
    a clone keeps its own pods as the original changes."""
    import random

    ni = NodeInfo()
    ni.set_node(make_node("n").obj())
    pods = [make_pod(f"p{i}").req(cpu="100m").obj() for i in range(50)]
    for p in pods:
        ni.add_pod(p)
    clone = ni.clone()
    rng = random.Random(23)
    order = pods[:]
    rng.shuffle(order)
    left = {p.metadata.uid for p in pods}
    for p in order[:30]:
        ni.remove_pod(p)
        left.discard(p.metadata.uid)
        assert {pi.pod.metadata.uid for pi in ni.pods} == left
        assert ni.requested.milli_cpu == 100 * len(left)
    ni.add_pod(order[0])  # back again, then gone again
    ni.remove_pod(order[0])
    for p in order[30:]:
        ni.remove_pod(p)
    assert ni.pods == []
    assert ni.requested.milli_cpu == 0
    with pytest.raises(KeyError):
        ni.remove_pod(pods[0])
    assert len(clone.pods) == 50
    clone.remove_pod(pods[7])
    assert pods[7].metadata.uid not in {pi.pod.metadata.uid for pi in clone.pods}


def test_node_info_tracks_pods_with_affinity() -> None:
    ni = NodeInfo()
    ni.set_node(make_node("n").obj())
    ni.add_pod(make_pod("x").pod_affinity({"a": "b"}, "zone", weight=5).obj())
    ni.add_pod(make_pod("y").pod_anti_affinity({"a": "b"}, "zone").obj())
    ni.add_pod(make_pod("z").obj())
    assert [p.pod.name for p in ni.pods_with_affinity] == ["x", "y"]
    assert [p.pod.name for p in ni.pods_with_required_anti_affinity] == ["y"]


@pytest.mark.parametrize(
    ("existing", "want", "conflict"),
    [
        (("", "TCP", 80), ("", "TCP", 80), True),
        (("", "TCP", 80), ("", "UDP", 80), False),
        (("127.0.0.1", "TCP", 80), ("127.0.0.2", "TCP", 80), False),
        (("127.0.0.1", "TCP", 80), ("0.0.0.0", "TCP", 80), True),
        (("0.0.0.0", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
        (("10.0.0.1", "TCP", 80), ("10.0.0.1", "", 80), True),  # empty protocol is TCP
        (("10.0.0.1", "TCP", 0), ("10.0.0.1", "TCP", 0), False),  # port 0 never conflicts
    ],
)
def test_host_port_conflicts(existing, want, conflict) -> None:  # type: ignore[no-untyped-def]
    h = HostPortInfo()
    h.add(*existing)
    assert h.check_conflict(*want) is conflict


# ---------------------------------------------------------------- selectors
def test_label_selector_nil_empty_and_requirements() -> None:
    assert label_selector_as_selector(None) is NOTHING
    assert label_selector_as_selector(LabelSelector()) is EVERYTHING
    sel = label_selector_as_selector(
        LabelSelector(
            match_labels={"app": "web"},
            match_expressions=[
                LabelSelectorRequirement(key="tier", operator="NotIn", values=["db"]),
                LabelSelectorRequirement(key="track", operator="DoesNotExist"),
            ],
        )
    )
    assert sel.matches({"app": "web"})
    assert sel.matches({"app": "web", "tier": "fe"})
    assert not sel.matches({"app": "web", "tier": "db"})
    assert not sel.matches({"app": "web", "track": "x"})
    assert not sel.matches({})


def test_node_selector_terms_or_requirements_and_fields() -> None:
    ns = sched_decode.node_selector(
        {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "gen", "operator": "Gt", "values": ["3"]},
                        {"key": "zone", "operator": "In", "values": ["a", "b"]},
                    ]
                },
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["special"]}
                    ]
                },
                {},  # an empty term selects nothing
            ]
        }
    )
    sel = CompiledNodeSelector(ns)
    assert sel.match(make_node("n").label("gen", "4").label("zone", "a").obj())
    assert not sel.match(make_node("n").label("gen", "3").label("zone", "a").obj())
    assert not sel.match(make_node("n").label("gen", "x").label("zone", "a").obj())
    assert sel.match(make_node("special").obj())
    assert not sel.match(make_node("other").obj())
    # an invalid term (In without values) never matches but does not hide the others
    bad = CompiledNodeSelector(
        sched_decode.node_selector(
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
                    {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
                ]
            }
        )
    )
    assert bad.errors()
    assert bad.match(make_node("n").label("b", "1").obj())
    assert not bad.match(make_node("n").label("a", "1").obj())


def test_required_node_affinity_ands_node_selector_and_affinity() -> None:
    p = make_pod().node_selector({"disk": "ssd"}).node_affinity_in("zone", ["a"]).obj()
    r = RequiredNodeAffinity(p)
    assert r.match(make_node().labels({"disk": "ssd", "zone": "a"}).obj())
    assert not r.match(make_node().labels({"disk": "ssd", "zone": "b"}).obj())
    assert not r.match(make_node().labels({"zone": "a"}).obj())
    assert RequiredNodeAffinity(make_pod().obj()).match(make_node().obj())


# ---------------------------------------------------------------- misc
def test_pre_filter_result_merge_intersects() -> None:
    all_nodes = PreFilterResult()
    assert all_nodes.merge(None).all_nodes()
    a = PreFilterResult({"n1", "n2"})
    assert all_nodes.merge(a).node_names == {"n1", "n2"}
    assert a.merge(PreFilterResult({"n2", "n3"})).node_names == {"n2"}
    assert a.merge(all_nodes).node_names == {"n1", "n2"}


def test_status_helpers() -> None:
    assert is_success(None)
    assert is_success(Status())
    s = Status(Code.UNSCHEDULABLE, ["a", "b"])
    assert s.is_rejected()
    assert s.message() == "a, b"
    assert str(s) == "Unschedulable: a, b"
    assert Status(Code.PENDING).is_rejected()
    assert not Status(Code.ERROR).is_rejected()
    assert isinstance(Status(Code.ERROR, ["x"]).as_error(), RuntimeError)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.2", "nginx:1.2"),
        ("registry:5000/app", "registry:5000/app:latest"),
        ("app@sha256:abc", "app@sha256:abc"),
    ],
)
def test_normalized_image_name(name: str, want: str) -> None:
    assert normalized_image_name(name) == want


def test_calculate_resource_shared_by_a_pods_copies() -> None:
    """A cycle builds ~3 PodInfos of one pod (the queued, the assumed and the bound copies):
    the requests are summed once and shared through the pod's resource view."""
    import copy

    from pysched.framework.types import PodInfo

    pod = make_pod().container({"cpu": "250m", "memory": "1Gi"}).container().obj()
    first = PodInfo(pod).calculate_resource()
    bound = copy.copy(pod)
    bound.spec = copy.copy(pod.spec)
    bound.spec.node_name = "n1"
    again = PodInfo(bound).calculate_resource()
    assert again[0] is first[0]
    assert (first[0].milli_cpu, first[0].memory, first[1], first[2]) == (
        250,
        2**30,
        350,
        2**30 + 200 * 2**20,
    )
