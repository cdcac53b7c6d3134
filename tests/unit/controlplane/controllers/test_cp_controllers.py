"""The controllers' pure rules: node taints from conditions, taint eviction deadlines,
PodDisruptionBudget status for pods without a workload controller."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pykubelet.controlplane.controllers.disruption import pdb_status
from pykubelet.controlplane.controllers.nodelifecycle import (
    desired_taints,
    eviction_delay,
    mark_unknown,
    reconcile_taints,
)

T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC)


def node(ready: str | None, **extra: Any) -> dict[str, Any]:
    conds = [] if ready is None else [{"type": "Ready", "status": ready}]
    conds += [{"type": k, "status": v} for k, v in extra.items()]
    return {"metadata": {"name": "n"}, "spec": {}, "status": {"conditions": conds}}


def test_taints_follow_conditions() -> None:
    assert desired_taints(node("True")) == []
    assert desired_taints(node("False")) == [("node.kubernetes.io/not-ready", "NoSchedule"),
                                             ("node.kubernetes.io/not-ready", "NoExecute")]
    assert desired_taints(node("Unknown")) == [
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute")]
    assert ("node.kubernetes.io/memory-pressure", "NoSchedule") in desired_taints(
        node("True", MemoryPressure="True"))
    n = node("True")
    n["spec"]["unschedulable"] = True
    assert desired_taints(n) == [("node.kubernetes.io/unschedulable", "NoSchedule")]


def test_reconcile_keeps_user_taints_and_stamps_no_execute() -> None:
    n = node("Unknown")
    n["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                           {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    assert reconcile_taints(n, T0)
    keys = [(t["key"], t["effect"]) for t in n["spec"]["taints"]]
    assert keys == [("dedicated", "NoSchedule"),
                    ("node.kubernetes.io/unreachable", "NoSchedule"),
                    ("node.kubernetes.io/unreachable", "NoExecute")]
    assert n["spec"]["taints"][2]["timeAdded"] == "2026-12-01T12:00:00Z"
    assert not reconcile_taints(n, T0)  # idempotent
    n["status"]["conditions"][0]["status"] = "True"
    assert reconcile_taints(n, T0)
    assert n["spec"]["taints"] == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]


def test_mark_unknown_sets_every_condition() -> None:
    n = node("True", MemoryPressure="False")
    assert mark_unknown(n, T0)
    by_type = {c["type"]: c for c in n["status"]["conditions"]}
    assert set(by_type) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    assert all(c["status"] == "Unknown" for c in by_type.values())
    assert by_type["Ready"]["reason"] == "NodeStatusUnknown"
    assert not mark_unknown(n, T0)


def test_eviction_delay_from_tolerations() -> None:
    taint = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
             "timeAdded": "2026-12-01T12:00:00Z"}
    default = {"spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable",
                                         "operator": "Exists", "effect": "NoExecute",
                                         "tolerationSeconds": 300}]}}
    assert eviction_delay(default, [taint], T0 + dt.timedelta(seconds=100)) == 200
    assert eviction_delay(default, [taint], T0 + dt.timedelta(seconds=400)) == 0
    assert eviction_delay({"spec": {}}, [taint], T0) == 0  # not tolerated: now
    forever = {"spec": {"tolerations": [{"operator": "Exists"}]}}
    assert eviction_delay(forever, [taint], T0) is None
    assert eviction_delay(default, [{**taint, "effect": "NoSchedule"}], T0) is None


def pods(n: int, ready: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        status = "True" if i < ready else "False"
        out.append({"metadata": {"name": f"p{i}"},
                    "status": {"conditions": [{"type": "Ready", "status": status}]}})
    return out


def test_pdb_status_with_integer_min_available() -> None:
    pdb = {"metadata": {"generation": 1}, "spec": {"minAvailable": 2}}
    status, unmanaged = pdb_status(pdb, pods(4, 3), T0)
    assert not unmanaged
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"],
            status["disruptionsAllowed"]) == (4, 2, 3, 1)
    cond = status["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionAllowed", "True",
                                                              "SufficientPods")
    assert status["observedGeneration"] == 1
    # a pod evicted a moment ago no longer counts as healthy
    pdb["status"] = {"disruptedPods": {"p0": "2026-12-01T11:59:30Z"}}
    status, _ = pdb_status(pdb, pods(4, 3), T0)
    assert status["currentHealthy"] == 2
    assert status["disruptionsAllowed"] == 0
    assert status["disruptedPods"] == {"p0": "2026-12-01T11:59:30Z"}
    status, _ = pdb_status(pdb, pods(4, 3), T0 + dt.timedelta(minutes=5))
    assert "disruptedPods" not in status
    assert status["currentHealthy"] == 3


def test_pdb_status_for_unmanaged_pods_allows_nothing() -> None:
    for spec in ({"maxUnavailable": 1}, {"minAvailable": "50%"}):
        status, unmanaged = pdb_status({"spec": spec}, pods(3, 3), T0)
        assert unmanaged
        assert status["expectedPods"] == 0
        assert status["disruptionsAllowed"] == 0
        assert status["conditions"][0]["reason"] == "InsufficientPods"
