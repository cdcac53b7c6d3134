"""The disruption controller over the in-process registry: watch-driven as upstream's (a
PodDisruptionBudget's change, or a change to a pod its selector picks, queues it), so an
idle cluster costs it nothing: no pass over the budgets while nothing changes. A pod
turning Ready moves currentHealthy; a disruptedPods entry is dropped when it expires
(requeued for that moment, with no event to wake it)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cp_wait import wait_for

from pykubelet.api.machinery.timeutil import rfc3339
from pykubelet.controlplane.controllers.disruption import (
    DELETION_TIMEOUT_S,
    run_disruption_controller,
)
from pykubelet.controlplane.registry.resources import PDBS

NS = "default"
PDB_PATH = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
PODS = f"/api/v1/namespaces/{NS}/pods"


def pdb(name: str, app: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}}


def pod(name: str, app: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def status_of(api: Any, name: str) -> dict[str, Any]:
    return dict(api.call("GET", f"{PDB_PATH}/{name}").json().get("status") or {})


@pytest.fixture
def running(api: Any) -> Iterator[dict[str, int]]:
    """The controller running on the control plane's loop; how often it listed budgets."""
    store = api.cp.registry.store(PDBS)
    calls = {"select": 0}
    real = store.select

    def counting(*args: Any, **kw: Any) -> Any:
        calls["select"] += 1
        return real(*args, **kw)

    store.select = counting
    task = asyncio.run_coroutine_threadsafe(run_disruption_controller(api.cp), api.loop)
    try:
        yield calls
    finally:
        task.cancel()
        time.sleep(0.1)
        del store.select
        for p in api.call("GET", PODS).json()["items"]:
            api.call("DELETE", f"{PODS}/{p['metadata']['name']}?gracePeriodSeconds=0")
        for b in api.call("GET", PDB_PATH).json()["items"]:
            api.call("DELETE", f"{PDB_PATH}/{b['metadata']['name']}")


def test_idle_controller_makes_no_pass_over_the_budgets(api: Any,
                                                       running: dict[str, int]) -> None:
    assert api.call("POST", PDB_PATH, pdb("idle", "idle")).status == 201
    assert api.call("POST", PODS, pod("idle-1", "idle")).status == 201
    wait_for(lambda: status_of(api, "idle").get("expectedPods") == 1)
    time.sleep(0.5)  # the last write's own event passes
    before = running["select"]
    time.sleep(2.5)
    assert running["select"] == before, "the controller polled while nothing changed"


def test_pod_turning_ready_moves_current_healthy(api: Any, running: dict[str, int]) -> None:
    assert api.call("POST", PDB_PATH, pdb("web", "web")).status == 201
    for name in ("web-1", "web-2"):
        assert api.call("POST", PODS, pod(name, "web")).status == 201
    wait_for(lambda: status_of(api, "web").get("expectedPods") == 2)
    assert status_of(api, "web")["currentHealthy"] == 0
    ready = {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}]}}
    r = api.call("PATCH", f"{PODS}/web-1/status", ready,
                 content_type="application/merge-patch+json")
    assert r.status == 200, r.body
    got = wait_for(lambda: (s := status_of(api, "web")).get("currentHealthy") == 1 and s)
    assert (got["desiredHealthy"], got["disruptionsAllowed"]) == (1, 0)


def test_disrupted_pod_entry_dropped_when_it_expires(api: Any,
                                                    running: dict[str, int]) -> None:
    assert api.call("POST", PDB_PATH, pdb("ev", "ev")).status == 201
    assert api.call("POST", PODS, pod("ev-1", "ev")).status == 201
    wait_for(lambda: status_of(api, "ev").get("expectedPods") == 1)
    almost = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=DELETION_TIMEOUT_S - 1.5)
    body = api.call("GET", f"{PDB_PATH}/ev").json()
    body["status"]["disruptedPods"] = {"ev-1": rfc3339(almost)}
    r = api.call("PUT", f"{PDB_PATH}/ev/status", body)
    assert r.status == 200, r.body
    wait_for(lambda: "disruptedPods" in status_of(api, "ev"), timeout=2)
    wait_for(lambda: "disruptedPods" not in status_of(api, "ev"), timeout=5)
