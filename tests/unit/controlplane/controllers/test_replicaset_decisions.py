"""The ReplicaSet controller's decisions as tables (pkg/controller/replicaset and
controller_utils' ActivePodsWithRanks): which pods go first, what is claimed, how many
are made, the status, the slow-start batches, the expectations."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.api.machinery.timeutil import rfc3339
from pykubelet.controlplane.controllers.activepods import less, pods_to_delete
from pykubelet.controlplane.controllers.controller_ref_manager import claim_pods
from pykubelet.controlplane.controllers.expectations import (
    EXPECTATIONS_TIMEOUT_S,
    Expectations,
)
from pykubelet.controlplane.controllers.replicaset import (
    BURST_REPLICAS,
    calculate_status,
    compute_actions,
    pod_from_template,
    slow_start_batches,
)

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def pod(name: str, *, node: str = "n1", phase: str = "Running", ready: bool = True,
        ready_ago: float = 3600.0, created_ago: float = 7200.0, restarts: int = 0,
        cost: int | None = None, labels: dict[str, str] | None = None,
        owner: str | None = None, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                            "labels": labels if labels is not None else {"app": "web"},
                            "creationTimestamp": rfc3339(NOW - dt.timedelta(seconds=created_ago))}
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": str(cost)}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                    "name": owner, "uid": f"uid-{owner}", "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = rfc3339(NOW)
    status: dict[str, Any] = {"phase": phase, "containerStatuses": [
        {"name": "c", "restartCount": restarts}]}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime":
                                 rfc3339(NOW - dt.timedelta(seconds=ready_ago))}]
    return {"metadata": meta, "spec": {"nodeName": node}, "status": status}


def rs(name: str = "web", replicas: int = 3, min_ready: int = 0,
       status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "generation": 4},
            "spec": {"replicas": replicas, "minReadySeconds": min_ready,
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web", "tier": "fe"},
                                               "annotations": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": status or {}}


# ---------------------------------------------------------------------------- ranking

@pytest.mark.parametrize(("first", "second", "why"), [
    (pod("a", node=""), pod("b"), "unassigned before assigned"),
    (pod("a", phase="Pending"), pod("b"), "pending before running"),
    (pod("a", phase="Unknown"), pod("b"), "unknown before running"),
    (pod("a", ready=False), pod("b"), "not ready before ready"),
    (pod("a", cost=-5), pod("b"), "lower deletion cost first"),
    (pod("a", ready_ago=10), pod("b", ready_ago=3600), "ready for less time first"),
    (pod("a", restarts=5), pod("b", restarts=1), "more restarts first"),
    (pod("a", created_ago=10), pod("b", created_ago=3600), "younger first"),
])
def test_ranking(first: dict[str, Any], second: dict[str, Any], why: str) -> None:
    assert less(first, second, 0, 0, NOW), why
    assert not less(second, first, 0, 0, NOW), why


def test_ranking_doubled_up_pods_first_and_log_scale_ties() -> None:
    a, b = pod("a"), pod("b")
    assert less(a, b, 2, 1, NOW)
    assert not less(b, a, 1, 2, NOW)
    # ready 100 s and 120 s ago: the same power of two of nanoseconds, so the uid decides
    # (not the more recent readiness)
    recent, earlier = pod("z", ready_ago=100), pod("a", ready_ago=120)
    assert less(earlier, recent, 0, 0, NOW)
    assert not less(recent, earlier, 0, 0, NOW)
    # 10 s and 1000 s: different ranks, the more recent goes first
    assert less(pod("z", ready_ago=10), pod("a", ready_ago=1000), 0, 0, NOW)


def test_pods_to_delete_picks_the_least_valuable() -> None:
    pods = [pod("old"), pod("unready", ready=False), pod("young", created_ago=5,
                                                          ready_ago=5),
            pod("pending", phase="Pending", ready=False), pod("nowhere", node="",
                                                              phase="Pending", ready=False)]
    got = [p["metadata"]["name"] for p in pods_to_delete(pods, pods, 3, NOW)]
    assert got == ["nowhere", "pending", "unready"]
    # a node with two related pods: its pod goes before an equal one alone on its node
    pods = [pod("alone", node="n2"), pod("crowded", node="n1")]
    related = [*pods, pod("sibling", node="n1", owner="other")]
    assert [p["metadata"]["name"] for p in pods_to_delete(pods, related, 1, NOW)] == [
        "crowded"]


# ---------------------------------------------------------------------------- claim


def test_claim_adopts_keeps_releases_and_ignores() -> None:
    pods = [pod("mine", owner="web"), pod("orphan"),
            pod("orphan-deleting", deleting=True),
            pod("other-label", labels={"app": "db"}),
            pod("mine-relabelled", owner="web", labels={"app": "db"}),
            pod("theirs", owner="api")]
    got = claim_pods(rs(), pods)
    assert [p["metadata"]["name"] for p in got.owned] == ["mine", "orphan"]
    assert [p["metadata"]["name"] for p in got.adopt] == ["orphan"]
    assert [p["metadata"]["name"] for p in got.release] == ["mine-relabelled"]
    deleting = rs()
    deleting["metadata"]["deletionTimestamp"] = rfc3339(NOW)
    got = claim_pods(deleting, pods)
    assert [p["metadata"]["name"] for p in got.owned] == ["mine"]
    assert not got.adopt
    assert not got.release


# ---------------------------------------------------------------------------- manage


@pytest.mark.parametrize(("want", "have", "create", "delete"), [
    (3, 0, 3, 0), (3, 3, 0, 0), (1, 3, 0, 2), (0, 2, 0, 2),
    (BURST_REPLICAS + 10, 0, BURST_REPLICAS, 0),
])
def test_compute_actions(want: int, have: int, create: int, delete: int) -> None:
    owned = [pod(f"p{i}") for i in range(have)]
    got = compute_actions(rs(replicas=want), owned, owned, NOW)
    assert (got.create, len(got.delete)) == (create, delete)


def test_slow_start_batches() -> None:
    assert slow_start_batches(0) == []
    assert slow_start_batches(1) == [1]
    assert slow_start_batches(10) == [1, 2, 4, 3]
    assert sum(slow_start_batches(500)) == 500


def test_pod_from_template() -> None:
    got = pod_from_template(rs())
    assert got["metadata"] == {
        "generateName": "web-", "namespace": "ns",
        "labels": {"app": "web", "tier": "fe"}, "annotations": {"a": "b"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                             "uid": "uid-web", "controller": True,
                             "blockOwnerDeletion": True}]}
    assert got["spec"] == {"containers": [{"name": "c", "image": "i"}]}


# ---------------------------------------------------------------------------- status


def test_status_counts_and_min_ready_seconds() -> None:
    owned = [pod("a", labels={"app": "web", "tier": "fe"}, ready_ago=60),
             pod("b", labels={"app": "web", "tier": "fe"}, ready_ago=5),
             pod("c", ready=False)]
    got = calculate_status(rs(min_ready=30), owned, None, NOW)
    assert got == {"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 2,
                   "availableReplicas": 1, "observedGeneration": 4}
    got = calculate_status(rs(), [], None, NOW)
    assert got == {"replicas": 0, "observedGeneration": 4}


def test_status_replica_failure_set_kept_and_cleared() -> None:
    failed = calculate_status(rs(replicas=2), [], 'pods "web-x" is forbidden: quota', NOW)
    cond = failed["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "ReplicaFailure", "True", "FailedCreate")
    assert cond["message"] == 'pods "web-x" is forbidden: quota'
    later = NOW + dt.timedelta(seconds=30)
    again = calculate_status(rs(replicas=2, status=failed), [], "other", later)
    assert again["conditions"] == [cond]  # an existing condition is kept as it was
    cleared = calculate_status(rs(replicas=2, status=failed), [], None, later)
    assert "conditions" not in cleared
    too_many = calculate_status(rs(replicas=0), [pod("a")], "cannot delete", NOW)
    assert too_many["conditions"][0]["reason"] == "FailedDelete"


# ---------------------------------------------------------------------------- expectations


def test_expectations() -> None:
    clock = [0.0]
    exp = Expectations(lambda: clock[0])
    assert exp.satisfied("ns/web")
    exp.expect_creations("ns/web", 2)
    assert not exp.satisfied("ns/web")
    exp.creation_observed("ns/web")
    assert not exp.satisfied("ns/web")
    exp.creation_observed("ns/web")
    assert exp.satisfied("ns/web")
    exp.expect_deletions("ns/web", ["ns/a", "ns/b"])
    exp.deletion_observed("ns/web", "ns/a")
    exp.deletion_observed("ns/web", "ns/a")  # the same pod twice counts once
    assert not exp.satisfied("ns/web")
    clock[0] = EXPECTATIONS_TIMEOUT_S + 1
    assert exp.satisfied("ns/web")  # expired
    exp.expect_creations("ns/web", 3)
    exp.lower_creations("ns/web", 3)
    assert exp.satisfied("ns/web")
