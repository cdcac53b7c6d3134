"""Cache.update_pod of a bound pod whose spec did not change (the kubelet's status
writes): the pod's NodeInfo entry keeps its request sums, host ports and affinity
terms (no recompute), the new pod object replaces the old one in the next snapshot, and
the node's pods end in the order remove + add gives. A spec change still recomputes."""

from __future__ import annotations

from typing import Any

import pytest
from engine_objects import make_node, pod_dict

from pysched import decode as sched_decode
from pysched.cache import Cache, Snapshot
from pysched.framework import types


def bound(name: str, phase: str = "Pending", **kw: Any) -> Any:
    d = pod_dict(name, cpu="500m", memory="1Gi", node="n1", host_port=8080,
                 affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchLabels": {"app": "x"}},
                      "topologyKey": "kubernetes.io/hostname"}]}}, **kw)
    d["metadata"]["uid"] = f"uid-{name}"
    d["status"] = {"phase": phase}
    return sched_decode.pod(d)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = types.pod_requests

    def counting(pod: Any, *a: Any, **kw: Any) -> Any:
        calls.append(pod.metadata.name)
        return real(pod, *a, **kw)

    monkeypatch.setattr(types, "pod_requests", counting)
    return calls


def test_a_status_update_keeps_the_sums_and_shows_the_new_pod(counted: list[str]) -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    a, b = bound("a"), bound("b")
    c.add_pod(a)
    c.add_pod(b)
    snap = Snapshot()
    c.update_snapshot(snap)
    before = snap.get("n1")
    assert before.requested.milli_cpu == 1000
    counted.clear()
    running = bound("a", phase="Running")
    c.update_pod(a, running)
    assert counted == []  # nothing recomputed
    c.update_snapshot(snap)
    ni = snap.get("n1")
    assert ni.requested.milli_cpu == 1000
    assert ni.requested.memory == 2 * 1024 ** 3
    assert ni.non_zero_requested.milli_cpu == 1000
    assert [p.pod.metadata.name for p in ni.pods] == ["b", "a"]  # as remove + add
    assert ni.pods[1].pod is running
    assert [p.pod is running for p in ni.pods_with_required_anti_affinity] == [False, True]
    assert ni.pods[1].required_anti_affinity_terms
    assert ni.used_ports.check_conflict("0.0.0.0", "TCP", 8080)
    assert c.get_pod(running) is running
    c.remove_pod(running)
    c.remove_pod(b)
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 0
    assert not snap.get("n1").used_ports.check_conflict("0.0.0.0", "TCP", 8080)


def test_a_spec_change_is_recomputed(counted: list[str]) -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    a = bound("a")
    c.add_pod(a)
    counted.clear()
    d = pod_dict("a", cpu="2", memory="1Gi", node="n1")
    d["metadata"]["uid"] = "uid-a"
    bigger = sched_decode.pod(d)
    c.update_pod(a, bigger)
    assert counted  # the new spec's requests were computed
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 2000
    assert snap.get("n1").pods_with_required_anti_affinity == []
    assert not snap.get("n1").used_ports.check_conflict("0.0.0.0", "TCP", 8080)
