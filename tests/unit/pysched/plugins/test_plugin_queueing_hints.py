"""Queueing hints: which cluster events may make a pod rejected by a plugin schedulable."""

from __future__ import annotations

from typing import Any

from builders import make_node, make_pod, plugin_for

from pysched.framework.events import QueueingHint

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def _hints(name: str) -> list[Any]:
    return [e.queueing_hint_fn for e in plugin_for(name, []).events_to_register()]


def test_taint_toleration_hints() -> None:
    node_hint, pod_hint = _hints("TaintToleration")
    pod = make_pod().obj()
    tainted = make_node("n").taint("k", "v").obj()
    clean = make_node("n").obj()
    assert node_hint(pod, tainted, clean) == Q  # the taint went away
    assert node_hint(pod, None, clean) == Q  # a clean node was added
    assert node_hint(pod, None, tainted) == SKIP
    assert node_hint(pod, clean, clean) == SKIP  # never rejected by taints there
    assert node_hint(make_pod().toleration("k", "v", "NoSchedule").obj(), tainted, tainted) == SKIP
    assert pod_hint(pod, pod, pod) == Q
    assert pod_hint(pod, None, make_pod("other").obj()) == SKIP


def test_node_affinity_hint() -> None:
    (hint,) = _hints("NodeAffinity")
    pod = make_pod().node_selector({"disk": "ssd"}).obj()
    ssd = make_node("n").label("disk", "ssd").obj()
    hdd = make_node("n").label("disk", "hdd").obj()
    assert hint(pod, hdd, ssd) == Q
    assert hint(pod, None, ssd) == Q
    assert hint(pod, ssd, hdd) == SKIP
    assert hint(pod, ssd, ssd) == SKIP


def test_node_unschedulable_hints() -> None:
    node_hint, pod_hint = _hints("NodeUnschedulable")
    pod = make_pod().obj()
    cordoned = make_node("n").unschedulable().obj()
    ready = make_node("n").obj()
    assert node_hint(pod, cordoned, ready) == Q
    assert node_hint(pod, None, cordoned) == SKIP
    assert node_hint(pod, ready, ready) == SKIP
    tolerant = (
        make_pod().toleration("node.kubernetes.io/unschedulable", "", "NoSchedule", "Exists").obj()
    )
    other = (
        make_pod("other")
        .toleration("node.kubernetes.io/unschedulable", "", "NoSchedule", "Exists")
        .obj()
    )
    assert pod_hint(pod, other, other) == SKIP  # another pod
    assert pod_hint(tolerant, tolerant, tolerant) == Q


def test_node_ports_hint() -> None:
    hint = _hints("NodePorts")[0]
    pod = make_pod().host_port(80).obj()
    assert hint(pod, make_pod("o").node("n").host_port(80).obj(), None) == Q
    assert hint(pod, make_pod("o").node("n").host_port(81).obj(), None) == SKIP
    assert hint(pod, make_pod("o").host_port(80).obj(), None) == SKIP  # was never scheduled


def test_node_resources_fit_hint() -> None:
    hint = _hints("NodeResourcesFit")[0]
    pod = make_pod().obj()
    assert hint(pod, make_pod("o").node("n").obj(), None) == Q
    assert hint(pod, make_pod("o").obj(), None) == SKIP
