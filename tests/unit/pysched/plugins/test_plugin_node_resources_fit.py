"""NodeResourcesFit: the resource filter (reasons, order, codes) and its three scoring
strategies, with upstream's least_allocated_test tables."""

from __future__ import annotations

import pytest
from builders import FakeSnapshot, make_node, make_pod, plugin_for, run_filter, run_score

from pysched.config import load_config
from pysched.framework.status import Code

CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
GPU = "example.com/gpu"


def _fit_args(**strategy_or_fields):  # type: ignore[no-untyped-def]
    cfg = load_config(
        {
            **CFG,
            "profiles": [
                {"pluginConfig": [{"name": "NodeResourcesFit", "args": strategy_or_fields}]}
            ],
        }
    )
    return cfg.profiles[0].plugin_config["NodeResourcesFit"]


def _filter(pod, node, pods=(), args=None):  # type: ignore[no-untyped-def]
    nodes = [node]
    return run_filter(
        plugin_for("NodeResourcesFit", nodes, list(pods), args=args), pod, nodes, list(pods)
    )[node.name]


NODE = make_node("n").capacity(cpu="10", memory="20", pods=32, **{GPU: 1}).obj()


@pytest.mark.parametrize(
    ("pod", "existing", "code", "reasons"),
    [
        (make_pod().container({"cpu": "1", "memory": "1"}), [], None, []),
        (
            make_pod().container({"cpu": "1", "memory": "1"}),
            [make_pod("e").node("n").container({"cpu": "10", "memory": "20"})],
            Code.UNSCHEDULABLE,
            ["Insufficient cpu", "Insufficient memory"],
        ),
        (
            make_pod().container({"cpu": "1", "memory": "1"}),
            [make_pod("e").node("n").container({"cpu": "9", "memory": "19"})],
            None,
            [],
        ),
        (
            make_pod().container({"cpu": "2", "memory": "1"}),
            [make_pod("e").node("n").container({"cpu": "9", "memory": "5"})],
            Code.UNSCHEDULABLE,
            ["Insufficient cpu"],
        ),
        # init containers: the max of init and the sum of containers counts
        (
            make_pod().init_container({"cpu": "3", "memory": "1"}).container({"cpu": "1"}),
            [make_pod("e").node("n").container({"cpu": "8", "memory": "19"})],
            Code.UNSCHEDULABLE,
            ["Insufficient cpu"],
        ),
        # a request larger than the whole node: preemption cannot help
        (
            make_pod().container({"cpu": "11"}),
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ["Insufficient cpu"],
        ),
        (
            make_pod().container({GPU: "2"}),
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            [f"Insufficient {GPU}"],
        ),
        (
            make_pod().container({GPU: "1"}),
            [make_pod("e").node("n").container({GPU: "1"})],
            Code.UNSCHEDULABLE,
            [f"Insufficient {GPU}"],
        ),
        (
            make_pod().container({"ephemeral-storage": "10"}),
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ["Insufficient ephemeral-storage"],
        ),
        # overhead counts
        (
            make_pod().container({"cpu": "9"}).overhead(cpu="2"),
            [],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ["Insufficient cpu"],
        ),
    ],
)
def test_filter(pod, existing, code, reasons) -> None:  # type: ignore[no-untyped-def]
    s = _filter(pod.obj(), NODE, [p.obj() for p in existing])
    if code is None:
        assert s is None
    else:
        assert s is not None
        assert (s.code, s.reasons) == (code, reasons)


def test_too_many_pods_comes_first_even_for_pods_without_requests() -> None:
    node = make_node("n").capacity(cpu="1", memory="1", pods=1).obj()
    existing = [make_pod("e").node("n").obj()]
    s = _filter(make_pod().obj(), node, existing)
    assert s is not None
    assert (s.code, s.reasons) == (Code.UNSCHEDULABLE, ["Too many pods"])
    s = _filter(make_pod().container({"cpu": "2"}).obj(), node, existing)
    assert s is not None
    assert s.reasons == ["Too many pods", "Insufficient cpu"]
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_ignored_extended_resources() -> None:
    pod = make_pod().container({GPU: "5", "other.io/x": "1"}).obj()
    assert _filter(pod, NODE, args=_fit_args(ignoredResources=[GPU, "other.io/x"])) is None
    assert (
        _filter(pod, NODE, args=_fit_args(ignoredResourceGroups=["example.com", "other.io"]))
        is None
    )
    s = _filter(pod, NODE, args=_fit_args(ignoredResourceGroups=["example.com"]))
    assert s is not None
    assert s.reasons == ["Insufficient other.io/x"]


# ---------------------------------------------------------------- scoring
def _two_nodes(c1: str, m1: str, c2: str, m2: str):  # type: ignore[no-untyped-def]
    return [
        make_node("node1").capacity(cpu=c1, memory=m1, pods=100).obj(),
        make_node("node2").capacity(cpu=c2, memory=m2, pods=100).obj(),
    ]


# Cases of upstream least_allocated_test.go (quantities scale away).
@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "want"),
    [
        (
            make_pod(),
            _two_nodes("4000", "10000", "4000", "10000"),
            [],
            {"node1": 100, "node2": 100},
        ),
        (
            make_pod()
            .container({"cpu": "1000", "memory": "2000"})
            .container({"cpu": "2000", "memory": "3000"}),
            _two_nodes("4000", "10000", "6000", "10000"),
            [],
            {"node1": 37, "node2": 50},
        ),
        (
            make_pod(),
            _two_nodes("10000", "20000", "10000", "20000"),
            [
                make_pod("a").node("node1").container({"cpu": "3000", "memory": "0"}),
                make_pod("b").node("node1").container({"cpu": "3000", "memory": "0"}),
                make_pod("c").node("node2").container({"cpu": "3000", "memory": "0"}),
                make_pod("d").node("node2").container({"cpu": "3000", "memory": "5000"}),
            ],
            {"node1": 70, "node2": 57},
        ),
        (
            make_pod()
            .container({"cpu": "1000", "memory": "2000"})
            .container({"cpu": "2000", "memory": "3000"}),
            _two_nodes("10000", "20000", "10000", "50000"),
            [
                make_pod("a").node("node1").container({"cpu": "3000", "memory": "0"}),
                make_pod("b").node("node2").container({"cpu": "3000", "memory": "5000"}),
            ],
            {"node1": 57, "node2": 60},
        ),
        (
            make_pod().container({"cpu": "3000", "memory": "0"}),
            _two_nodes("4000", "10000", "4000", "10000"),
            [
                make_pod("a").node("node1").container({"cpu": "3000", "memory": "0"}),
                make_pod("b").node("node2").container({"cpu": "3000", "memory": "5000"}),
            ],
            {"node1": 50, "node2": 25},
        ),
    ],
)
def test_least_allocated(pod, nodes, existing, want) -> None:  # type: ignore[no-untyped-def]
    pods = [p.obj() for p in existing]
    pl = plugin_for("NodeResourcesFit", nodes, pods)
    assert run_score(pl, pod.obj(), FakeSnapshot(nodes, pods)) == want


def test_least_allocated_weights_and_non_zero_defaults() -> None:
    nodes = _two_nodes("4000", "10000", "6000", "10000")
    args = _fit_args(
        scoringStrategy={
            "type": "LeastAllocated",
            "resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        }
    )
    pod = (
        make_pod()
        .container({"cpu": "1000", "memory": "2000"})
        .container({"cpu": "2000", "memory": "3000"})
        .obj()
    )
    pl = plugin_for("NodeResourcesFit", nodes, args=args)
    assert run_score(pl, pod, FakeSnapshot(nodes)) == {"node1": 41, "node2": 50}
    # a container without requests counts as 100m / 200Mi when scoring
    small = [make_node("s").capacity(cpu="1", memory="1Gi", pods=10).obj()]
    got = run_score(
        plugin_for("NodeResourcesFit", small), make_pod().container().obj(), FakeSnapshot(small)
    )
    # cpu: (1000 - 100) * 100 / 1000 = 90; memory: (1024 - 200) * 100 / 1024 = 80 -> 85
    assert got == {"s": 85}


def test_most_allocated() -> None:
    nodes = _two_nodes("4000", "10000", "6000", "10000")
    pod = (
        make_pod()
        .container({"cpu": "1000", "memory": "2000"})
        .container({"cpu": "2000", "memory": "3000"})
        .obj()
    )
    pl = plugin_for(
        "NodeResourcesFit", nodes, args=_fit_args(scoringStrategy={"type": "MostAllocated"})
    )
    # node1: cpu 3000*100/4000 = 75, mem 50 -> 62; node2: cpu 50, mem 50 -> 50
    assert run_score(pl, pod, FakeSnapshot(nodes)) == {"node1": 62, "node2": 50}
    over = [make_pod("e").node("node1").container({"cpu": "4000", "memory": "0"}).obj()]
    pl = plugin_for(
        "NodeResourcesFit", nodes, over, args=_fit_args(scoringStrategy={"type": "MostAllocated"})
    )
    # over capacity clamps to 100: (100 + 50) / 2
    assert run_score(pl, pod, FakeSnapshot(nodes, over))["node1"] == 75


def test_requested_to_capacity_ratio_rounds_half_away_from_zero() -> None:
    nodes = _two_nodes("4000", "10000", "6000", "10000")
    args = _fit_args(
        scoringStrategy={
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        }
    )
    pod = make_pod().container({"cpu": "3000", "memory": "5000"}).obj()
    pl = plugin_for("NodeResourcesFit", nodes, args=args)
    # node1: cpu 75, mem 50 -> round(62.5) = 63; node2: cpu 50, mem 50 -> 50
    assert run_score(pl, pod, FakeSnapshot(nodes)) == {"node1": 63, "node2": 50}
    # a decreasing shape (bin spreading): 100 - utilization
    args = _fit_args(
        scoringStrategy={
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
            },
        }
    )
    pl = plugin_for("NodeResourcesFit", nodes, args=args)
    assert run_score(pl, pod, FakeSnapshot(nodes)) == {"node1": 38, "node2": 50}


def test_extended_resources_scored_only_when_requested() -> None:
    # upstream "honor extended resource if the pod requests" / "bypass ... does not request"
    nodes = [
        make_node("node1").capacity(cpu="6000", memory="10000", pods=9, **{GPU: 4}).obj(),
        make_node("node2").capacity(cpu="6000", memory="10000", pods=9, **{GPU: 10}).obj(),
    ]
    args = _fit_args(
        scoringStrategy={
            "type": "LeastAllocated",
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "memory", "weight": 1},
                {"name": GPU, "weight": 1},
            ],
        }
    )
    pl = plugin_for("NodeResourcesFit", nodes, args=args)
    pod = make_pod().container({"cpu": "3000", "memory": "5000", GPU: "2"}).obj()
    assert run_score(pl, pod, FakeSnapshot(nodes)) == {"node1": 50, "node2": 60}
    pod = make_pod().container({"cpu": "3000", "memory": "5000"}).obj()
    assert run_score(pl, pod, FakeSnapshot(nodes)) == {"node1": 50, "node2": 50}


def test_strategies_weigh_the_resources_a_node_has_and_ratio_only_positive_scores() -> None:
    """LeastAllocated/MostAllocated weigh every resource the node has (allocatable > 0), a
    zero score included; RequestedToCapacityRatio leaves a resource scoring 0 out of the sum
    (upstream's ``if resourceScore > 0``)."""
    from pysched.plugins.args import ResourceSpec
    from pysched.plugins.node_resources_fit import (
        least_resource_scorer,
        most_resource_scorer,
        requested_to_capacity_ratio_scorer,
    )

    res = [ResourceSpec("cpu", 3), ResourceSpec("memory", 1), ResourceSpec("gpu", 5)]
    requested, allocatable = [1000, 0, 1], [4000, 8000, 0]  # gpu: the node has none
    # least: cpu 75 * 3, memory 100 * 1 -> 325 // 4
    assert least_resource_scorer(res)(requested, [0, 0, 0], allocatable) == 81
    # most: cpu 25 * 3, memory 0 * 1 -> 75 // 4 (memory's 0 still weighs)
    assert most_resource_scorer(res)(requested, [0, 0, 0], allocatable) == 18
    ratio = requested_to_capacity_ratio_scorer(res, [(0, 0), (100, 10)])
    # cpu 25 * 3 only: memory scores 0 and is left out -> 75 / 3
    assert ratio(requested, [0, 0, 0], allocatable) == 25
    assert ratio([0, 0, 0], [0, 0, 0], allocatable) == 0  # nothing positive: 0
    assert least_resource_scorer(res)([0, 0, 0], [0, 0, 0], [0, 0, 0]) == 0


@pytest.mark.parametrize("seed", range(8))
def test_score_batch_equals_score_on_random_nodes(seed: int) -> None:
    """The batch twin (Least/MostAllocated) gives the per-node scores bit for bit: random
    weights, overcommitted nodes, containers without requests (the non-zero defaults); seeds
    with a remainder 1 or 3 modulo 4 give every node cpu and memory (the cpu/memory pass)."""
    import random

    import numpy as np

    from pysched.framework.cycle_state import CycleState
    from pysched.framework.node_table import NodeTable

    rng = random.Random(seed)
    lacking = seed % 2 == 0
    most = seed % 4 >= 2
    nodes = []
    for i in range(60):
        cpu = rng.choice(["0", "1", "3", "4", "7500m", "64"][0 if lacking else 1 :])
        mem = rng.choice(["0", "1Gi", "3Gi", "32Gi", "1000001"][0 if lacking else 1 :])
        nodes.append(make_node(f"n{i}").capacity(cpu=cpu, memory=mem, pods=110).obj())
    pods = [
        make_pod(f"b{j}")
        .node(f"n{rng.randrange(60)}")
        .container({"cpu": f"{rng.randrange(0, 5000)}m", "memory": str(rng.randrange(0, 2**33))})
        .container(None if rng.random() < 0.5 else {"cpu": "10m"})
        .obj()
        for j in range(90)
    ]
    snap = FakeSnapshot(nodes, pods)
    table = NodeTable()
    table.rebuild(snap.list())
    weights = [{"name": "cpu", "weight": rng.randint(1, 5)}]
    weights.append({"name": "memory", "weight": rng.randint(1, 5)})
    strategy = {"type": "MostAllocated" if most else "LeastAllocated", "resources": weights}
    pl = plugin_for("NodeResourcesFit", nodes, pods, args=_fit_args(scoringStrategy=strategy))
    for k in range(15):
        b = make_pod(f"p{k}")
        b = b.container({"cpu": f"{rng.randrange(0, 3000)}m", "memory": str(rng.randrange(2**32))})
        pod = (b.container() if rng.random() < 0.5 else b).obj()
        names = rng.sample([n.metadata.name for n in nodes], 40)
        want = run_score(pl, pod, snap, names)
        assert want is not None
        state = CycleState()
        pl.pre_score(state, pod, [snap.get(n) for n in names])
        rows = np.array([table.names.index(n) for n in names], np.int64)
        got = pl.score_batch(state, pod, table, rows)
        assert got.tolist() == [want[n] for n in names], pod.key
