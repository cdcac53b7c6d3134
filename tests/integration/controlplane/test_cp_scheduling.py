"""The scheduler loop inside the control plane, through the API: binding, kube-scheduler's
FailedScheduling messages, priority from PriorityClasses, preemption, evictions that
respect PodDisruptionBudgets, and the recorded decision behind each placement."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, FakeNode, wait_for
from test_cp_semantics import Raw


@pytest.fixture
def node_a(cp: ControlPlaneProcess, request: pytest.FixtureRequest) -> Iterator[FakeNode]:
    n = FakeNode(cp, "sc-" + request.node.name[5:20].replace("_", "-").strip("-"), cpu="1",
                 memory="1Gi")
    yield n
    n.delete()


def pod(name: str, cpu: str, priority_class: str = "", labels: dict[str, str] | None = None
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox", "resources": {
        "requests": {"cpu": cpu}}}], "terminationGracePeriodSeconds": 30}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def get(raw: Raw, ns: str, name: str) -> dict[str, Any]:
    code, body = raw("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    assert code == 200, body
    return body  # type: ignore[no-any-return]


def condition(p: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in p.get("status", {}).get("conditions", [])
                 if c["type"] == type_), {})


def test_unschedulable_pod_says_why_then_schedules_when_room_is_made(
        cp: ControlPlaneProcess, ns: str, node_a: FakeNode) -> None:
    raw = Raw(cp)
    raw("POST", f"/api/v1/namespaces/{ns}/pods", pod("huge", "3"))
    wait_for(lambda: condition(get(raw, ns, "huge"), "PodScheduled").get("status") == "False",
             what="PodScheduled=False")
    cond = condition(get(raw, ns, "huge"), "PodScheduled")
    assert cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/")
    assert "Insufficient cpu" in cond["message"]
    events = cp.kubectl("get", "events", "-n", ns, "--field-selector",
                        "reason=FailedScheduling,involvedObject.name=huge").stdout
    assert "Insufficient cpu" in events
    # the recorded decision says, per node, what rejected it
    code, decision = raw("GET", f"/api/v1/namespaces/{ns}/pods/huge/scheduling")
    assert code == 200, decision
    assert decision["decision"]["node"] is None
    assert decision["decision"]["filtered"][node_a.name]["plugin"] == "NodeResourcesFit"
    # room appears: a bigger node
    big = FakeNode(cp, node_a.name + "-big", cpu="8")
    try:
        wait_for(lambda: get(raw, ns, "huge")["spec"].get("nodeName") == big.name,
                 what="scheduled on the new node", timeout=30)
        assert condition(get(raw, ns, "huge"), "PodScheduled")["status"] == "True"
    finally:
        raw("DELETE", f"/api/v1/namespaces/{ns}/pods/huge", {"gracePeriodSeconds": 0})
        big.delete()


def test_priority_class_sets_priority_and_unknown_class_is_refused(cp: ControlPlaneProcess,
                                                                    ns: str) -> None:
    raw = Raw(cp)
    code, _ = raw("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                  {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": "sc-high"}, "value": 1000})
    assert code in (201, 409)
    code, body = raw("POST", f"/api/v1/namespaces/{ns}/pods", pod("pri", "1m", "sc-high"))
    assert code == 201, body
    assert body["spec"]["priority"] == 1000
    assert body["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    code, body = raw("POST", f"/api/v1/namespaces/{ns}/pods", pod("nopc", "1m", "no-such"))
    assert code == 403
    assert body["message"].endswith("no PriorityClass with name no-such was found")
    code, body = raw("POST", f"/api/v1/namespaces/{ns}/pods",
                     pod("sys", "1m", "system-cluster-critical"))
    assert body["spec"]["priority"] == 2_000_000_000


def test_preemption_nominates_and_evicts_the_lower_priority_pod(
        cp: ControlPlaneProcess, ns: str, node_a: FakeNode) -> None:
    raw = Raw(cp)
    raw("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": "sc-urgent"}, "value": 5000})
    raw("POST", f"/api/v1/namespaces/{ns}/pods", pod("low", "800m"))
    wait_for(lambda: get(raw, ns, "low")["spec"].get("nodeName") == node_a.name,
             what="low bound")
    raw("POST", f"/api/v1/namespaces/{ns}/pods", pod("high", "800m", "sc-urgent"))
    wait_for(lambda: get(raw, ns, "high").get("status", {}).get("nominatedNodeName")
             == node_a.name, what="nominatedNodeName", timeout=30)
    victim = get(raw, ns, "low")
    assert victim["metadata"]["deletionTimestamp"]  # deleted with its grace period
    assert victim["metadata"]["deletionGracePeriodSeconds"] == 30
    assert condition(victim, "DisruptionTarget")["reason"] == "PreemptionByScheduler"
    events = cp.kubectl("get", "events", "-n", ns, "--field-selector", "reason=Preempted",
                        "-o", "json").stdout
    assert json.loads(events)["items"][0]["involvedObject"]["name"] == "low"
    # the node confirms the victim is gone (grace 0, as kubelet does); the preemptor lands
    raw("DELETE", f"/api/v1/namespaces/{ns}/pods/low", {"gracePeriodSeconds": 0})
    wait_for(lambda: get(raw, ns, "high")["spec"].get("nodeName") == node_a.name,
             what="the preemptor bound", timeout=30)
    raw("DELETE", f"/api/v1/namespaces/{ns}/pods/high", {"gracePeriodSeconds": 0})


def _make_ready(raw: Raw, ns: str, name: str) -> None:
    t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    code, body = raw("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status",
                     {"status": {"phase": "Running", "conditions": [
                         {"type": "Ready", "status": "True", "lastTransitionTime": t}]}},
                     ctype="application/strategic-merge-patch+json")
    assert code == 200, body


def test_eviction_respects_the_disruption_budget(cp: ControlPlaneProcess, ns: str,
                                                 node_a: FakeNode) -> None:
    raw = Raw(cp)
    for i in range(2):
        raw("POST", f"/api/v1/namespaces/{ns}/pods", pod(f"e{i}", "10m", labels={"app": "e"}))
    wait_for(lambda: all(get(raw, ns, f"e{i}")["spec"].get("nodeName") for i in range(2)),
             what="both bound")
    for i in range(2):
        _make_ready(raw, ns, f"e{i}")
    raw("POST", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "e"}}}})

    def pdb() -> dict[str, Any]:
        return raw("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/b")[1]

    wait_for(lambda: pdb().get("status", {}).get("disruptionsAllowed") == 1,
             what="the disruption controller's status")
    st = pdb()["status"]
    assert (st["currentHealthy"], st["desiredHealthy"], st["expectedPods"]) == (2, 1, 2)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "e0", "namespace": ns}}
    code, body = raw("POST", f"/api/v1/namespaces/{ns}/pods/e0/eviction", eviction)
    assert code == 201, body
    assert get(raw, ns, "e0")["metadata"]["deletionTimestamp"]
    code, body = raw("POST", f"/api/v1/namespaces/{ns}/pods/e1/eviction",
                     {**eviction, "metadata": {"name": "e1", "namespace": ns}})
    assert code == 429
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert "deletionTimestamp" not in get(raw, ns, "e1")["metadata"]
    # kubectl drain uses the same subresource (with protobuf bodies)
    out = cp.kubectl("drain", node_a.name, "--pod-selector=app=e", "--timeout=3s", "--force",
                     check=False)
    assert "Cannot evict pod as it would violate the pod's disruption budget" in (
        out.stdout + out.stderr)
    cp.kubectl("uncordon", node_a.name)
    for i in range(2):
        raw("DELETE", f"/api/v1/namespaces/{ns}/pods/e{i}", {"gracePeriodSeconds": 0})
