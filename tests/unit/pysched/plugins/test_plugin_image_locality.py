"""ImageLocality: image sizes on the node, scaled by spread, clamped to [23MB, 1000MB * n]."""

from __future__ import annotations

from builders import FakeSnapshot, make_node, make_pod, plugin_for, run_score

from pysched.plugins.image_locality import calculate_priority

MB = 1024 * 1024


def test_calculate_priority_thresholds() -> None:
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(23 * MB, 1) == 0
    assert calculate_priority(1000 * MB, 1) == 100
    assert calculate_priority(5000 * MB, 1) == 100
    assert calculate_priority(511 * MB, 1) == 49  # 100 * 488 / 977
    assert calculate_priority(1000 * MB, 2) == 49  # max threshold doubles with two containers
    assert calculate_priority(0, 0) == 0


def test_scores_scaled_by_image_spread() -> None:
    # upstream image_locality_test: two nodes, each holding one of the pod's images
    nodes = [
        make_node("node1")
        .image(["gcr.io/40:latest", "gcr.io/40:v1"], 40 * MB)
        .image(["gcr.io/300:latest"], 300 * MB)
        .obj(),
        make_node("node2")
        .image(["gcr.io/250:latest"], 250 * MB)
        .image(["gcr.io/300:latest"], 300 * MB)
        .obj(),
    ]
    snap = FakeSnapshot(nodes)
    pl = plugin_for("ImageLocality", nodes)
    pod = make_pod().container(image="gcr.io/40").container(image="gcr.io/250").obj()
    # node1: 40MB on 1 of 2 nodes -> 20MB < 23MB -> 0
    # node2: 250MB * 1/2 = 125MB -> 100 * (125 - 23) / (2000 - 23) = 5
    assert run_score(pl, pod, snap) == {"node1": 0, "node2": 5}
    pod = make_pod().container(image="gcr.io/300").obj()
    # on both nodes: 300MB * 2/2 -> 100 * 277 / 977 = 28
    assert run_score(pl, pod, snap) == {"node1": 28, "node2": 28}
    # init containers count, and the tag must match after normalization
    pod = make_pod().init_container().container(image="gcr.io/40:v1").obj()
    pod.spec.init_containers[0].image = "gcr.io/300:latest"
    assert run_score(pl, pod, snap) == {"node1": 15, "node2": 14}
