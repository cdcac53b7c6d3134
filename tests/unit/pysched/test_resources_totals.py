"""A pod's request totals are summed once per pod and shared by its copies (upstream's
PodInfo.CalculateResource caches them the same way): a scheduling cycle asked for them ~7 times
(PreFilter, PreScore twice, each NodeInfo the assumed and bound copies land in)."""

from __future__ import annotations

import copy

from builders import make_pod

from pysched import resources
from pysched.resources import non_zero_pod_requests, pod_requests


def test_totals_summed_once_per_pod_and_its_copies(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls = []
    real = resources.resourcehelper.pod_requests

    def counting(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(resources.resourcehelper, "pod_requests", counting)
    pod = make_pod().container({"cpu": "250m", "memory": "1Gi"}).container().obj()
    first = pod_requests(pod)
    assert first == {"cpu": 250, "memory": 2**30}
    assert non_zero_pod_requests(pod) == {"cpu": 350, "memory": 2**30 + 200 * 2**20}
    n = len(calls)
    bound = copy.copy(pod)  # what the assumed and the bound pods are
    bound.spec = copy.copy(pod.spec)
    bound.spec.node_name = "n1"
    for p in (pod, bound, pod):
        assert pod_requests(p) == first
        assert non_zero_pod_requests(p)["cpu"] == 350
    assert len(calls) == n  # no second summing


def test_callers_get_their_own_dict() -> None:
    pod = make_pod().container({"cpu": "1"}).obj()
    got = pod_requests(pod)
    got["cpu"] = 0  # a caller adding to its total (preemption's sums do)
    assert pod_requests(pod) == {"cpu": 1000}


def test_other_options_still_computed() -> None:
    pod = make_pod().container({"cpu": "1"}).obj()
    pod.spec.overhead = {}
    assert pod_requests(pod, exclude_overhead=True) == {"cpu": 1000}
    assert pod_requests(pod, non_missing={"memory": 5}) == {"cpu": 1000, "memory": 5}
    assert pod_requests(pod) == {"cpu": 1000}
