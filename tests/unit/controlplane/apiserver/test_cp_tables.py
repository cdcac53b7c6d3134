"""Table cells as kube-apiserver's printers compute them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.controlplane.apiserver.tables import node_cells, pod_cells

NOW = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC)


def pod(status: dict[str, Any], spec: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "p", "creationTimestamp": "2026-12-01T11:59:00Z",
                         **(meta or {})},
            "spec": spec or {"containers": [{"name": "c"}]}, "status": status}


def cs(name: str, **state: Any) -> dict[str, Any]:
    ready = state.pop("ready", False)
    restarts = state.pop("restartCount", 0)
    return {"name": name, "state": state, "ready": ready, "restartCount": restarts}


@pytest.mark.parametrize(
    ("p", "ready", "status"),
    [
        (pod({"phase": "Pending"}), "0/1", "Pending"),
        (pod({"phase": "Running", "containerStatuses": [cs("c", running={}, ready=True)]}),
         "1/1", "Running"),
        (pod({"phase": "Running", "containerStatuses": [
            cs("c", waiting={"reason": "CrashLoopBackOff"}, restartCount=3)]}),
         "0/1", "CrashLoopBackOff"),
        (pod({"phase": "Succeeded", "containerStatuses": [
            cs("c", terminated={"exitCode": 0, "reason": "Completed"})]}), "0/1", "Completed"),
        (pod({"phase": "Failed", "containerStatuses": [cs("c", terminated={"exitCode": 2})]}),
         "0/1", "ExitCode:2"),
        (pod({"phase": "Pending", "initContainerStatuses": [
            cs("i", waiting={"reason": "PodInitializing"})]},
             {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}),
         "0/1", "Init:0/1"),
        (pod({"phase": "Pending", "initContainerStatuses": [
            cs("i", terminated={"exitCode": 1, "reason": "Error"})]},
             {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}),
         "0/1", "Init:Error"),
        (pod({"phase": "Running", "containerStatuses": [cs("c", running={}, ready=True)]},
             meta={"deletionTimestamp": "2026-12-01T12:00:30Z"}), "1/1", "Terminating"),
        (pod({"phase": "Running", "initContainerStatuses": [
            cs("side", running={}, ready=True) | {"started": True}],
              "containerStatuses": [cs("c", running={}, ready=True)],
              "conditions": [{"type": "Initialized", "status": "True"}]},
             {"initContainers": [{"name": "side", "restartPolicy": "Always"}],
              "containers": [{"name": "c"}]}), "2/2", "Running"),
    ],
)
def test_pod_ready_and_status_cells(p: dict[str, Any], ready: str, status: str) -> None:
    cells = pod_cells(p, NOW)
    assert cells[1:3] == [ready, status]
    assert cells[4] == "60s"


def test_restarts_cell_says_when() -> None:
    p = pod({"phase": "Running", "containerStatuses": [
        {**cs("c", running={}, ready=True, restartCount=2),
         "lastState": {"terminated": {"exitCode": 1,
                                      "finishedAt": "2026-12-01T11:55:00Z"}}}]})
    assert pod_cells(p, NOW)[3] == "2 (5m ago)"


def test_node_status_roles_and_wide_cells() -> None:
    node = {"metadata": {"name": "n1", "creationTimestamp": "2026-11-30T12:00:00Z",
                         "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "False"}],
                       "addresses": [{"type": "InternalIP", "address": "10.250.0.2"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0"}}}
    assert node_cells(node, NOW) == ["n1", "NotReady,SchedulingDisabled", "control-plane",
                                     "24h", "v1.32.0", "10.250.0.2", "<none>", "<unknown>",
                                     "<unknown>", "<unknown>"]
