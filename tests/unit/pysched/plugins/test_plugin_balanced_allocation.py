"""NodeResourcesBalancedAllocation: std-dev of resource fractions, with vs. without the pod
(v1.36, kubernetes#135573): score = 50 + (50 + balanced(with) - balanced(without)) / 2."""

from __future__ import annotations

import pytest
from builders import FakeSnapshot, make_node, make_pod, plugin_for, run_score

from pysched.config import load_config
from pysched.plugins.balanced_allocation import balanced_resource_score, balanced_resource_scorer

CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        ([0, 0], [4000, 10000], 100),
        ([3000, 5000], [4000, 10000], 87),  # |0.75 - 0.5| / 2 = 0.125 -> 87.5 truncated
        ([3000, 0], [4000, 10000], 62),  # std 0.375
        ([8000, 5000], [4000, 10000], 75),  # the fraction is capped at 1: |1 - 0.5| / 2
        ([3000, 5000], [4000, 0], 100),  # one resource left: std 0
        ([1, 2, 3], [4, 4, 4], 79),  # sqrt(((.25-.5)^2 + 0 + (.75-.5)^2) / 3) = 0.2041
    ],
)
def test_balanced_resource_score(requested: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_resource_score(requested, allocatable) == want


@pytest.mark.parametrize(
    ("with_pod", "without_pod", "allocatable", "want"),
    [
        ([3000, 5000], [0, 0], [4000, 10000], 68),  # 100 -> 87: 50 + (50 + 87 - 100) / 2
        ([3000, 5000], [3000, 0], [4000, 10000], 87),  # 62 -> 87: balance improves
        ([2000, 5000], [2000, 5000], [4000, 10000], 75),  # unchanged balance
    ],
)
def test_scorer_rewards_improvement(with_pod, without_pod, allocatable, want) -> None:  # type: ignore[no-untyped-def]
    assert balanced_resource_scorer(with_pod, without_pod, allocatable) == want


def test_plugin_uses_real_requests_and_skips_best_effort_pods() -> None:
    nodes = [
        make_node("node1").capacity(cpu="4000", memory="10000", pods=9).obj(),
        make_node("node2").capacity(cpu="4000", memory="10000", pods=9).obj(),
    ]
    pods = [
        make_pod("e").node("node2").container({"cpu": "3000", "memory": "0"}).obj(),
        # request-less pods do not count (Requested, not NonZeroRequested)
        make_pod("be").node("node1").container().obj(),
    ]
    pl = plugin_for("NodeResourcesBalancedAllocation", nodes, pods)
    pod = make_pod().container({"memory": "5000"}).obj()
    # node1: without 100 (0, 0), with (0, .5) -> 75: 50 + 25/2 = 62
    # node2: without 62 (.75, 0), with (.75, .5) -> 87: 50 + 75/2 = 87
    assert run_score(pl, pod, FakeSnapshot(nodes, pods)) == {"node1": 62, "node2": 87}
    assert run_score(pl, make_pod().container().obj(), FakeSnapshot(nodes, pods)) is None


def test_resources_from_args() -> None:
    gpu = "example.com/gpu"
    cfg = load_config(
        {
            **CFG,
            "profiles": [
                {
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesBalancedAllocation",
                            "args": {"resources": [{"name": "cpu"}, {"name": gpu}]},
                        }
                    ]
                }
            ],
        }
    )
    args = cfg.profiles[0].plugin_config["NodeResourcesBalancedAllocation"]
    nodes = [make_node("n").capacity(cpu="4", memory="1", pods=9, **{gpu: 4}).obj()]
    pl = plugin_for("NodeResourcesBalancedAllocation", nodes, args=args)
    pod = make_pod().container({"cpu": "2", gpu: "1"}).obj()
    # without: (0, 0) -> 100; with: (.5, .25) -> 87: 50 + 37/2 = 68
    assert run_score(pl, pod, FakeSnapshot(nodes)) == {"n": 68}


@pytest.mark.parametrize("seed", range(6))
def test_score_batch_equals_score_on_random_nodes(seed: int) -> None:
    """The batch twin gives the per-node scores bit for bit: nodes without cpu or memory,
    overcommitted nodes (fractions capped at 1), odd sizes, rows in any order. Odd seeds give
    every node cpu and memory (the one-pass cpu/memory path), even seeds some without."""
    import random

    import numpy as np

    from pysched.framework.cycle_state import CycleState
    from pysched.framework.node_table import NodeTable

    rng = random.Random(seed)
    lacking = seed % 2 == 0
    nodes = []
    for i in range(60):
        b = make_node(f"n{i}")
        cpu = rng.choice(["0", "1", "3", "4", "7500m", "64"][0 if lacking else 1 :])
        mem = rng.choice(["0", "1Gi", "3Gi", "32Gi", "1000001"][0 if lacking else 1 :])
        if lacking and rng.random() < 0.1:
            b = b.capacity(memory=mem, pods=110)  # no cpu at all
        else:
            b = b.capacity(cpu=cpu, memory=mem, pods=110)
        nodes.append(b.obj())
    pods = [
        make_pod(f"b{j}")
        .node(f"n{rng.randrange(60)}")
        .container({"cpu": f"{rng.randrange(0, 5000)}m", "memory": str(rng.randrange(0, 2**33))})
        .obj()
        for j in range(90)
    ]
    snap = FakeSnapshot(nodes, pods)
    table = NodeTable()
    table.rebuild(snap.list())
    pl = plugin_for("NodeResourcesBalancedAllocation", nodes, pods)
    for k in range(15):
        pod = (
            make_pod(f"p{k}")
            .container(
                {"cpu": f"{rng.randrange(0, 3000)}m", "memory": str(rng.randrange(0, 2**32))}
            )
            .obj()
        )
        names = rng.sample([n.metadata.name for n in nodes], 40)
        want = run_score(pl, pod, snap, names)
        if want is None:
            continue
        state = CycleState()
        pl.pre_score(state, pod, [snap.get(n) for n in names])
        rows = np.array([table.names.index(n) for n in names], np.int64)
        got = pl.score_batch(state, pod, table, rows)
        assert got.tolist() == [want[n] for n in names], pod.key
