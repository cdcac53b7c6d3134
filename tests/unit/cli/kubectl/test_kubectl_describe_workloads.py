"""The workload describers as pure functions of their objects: lines kubectl 1.32 prints
only for some objects (a finished Job's Completed At and Duration, an Indexed Job's capped
index list, Ready counts, a ReplicaSet whose pods could not be read, a CronJob's unset
fields), which the integration test's objects do not all reach."""

from __future__ import annotations

from pykubelet.cli.kubectl.describe_workloads import (
    describe_cronjob,
    describe_daemonset,
    describe_deployment,
    describe_job,
    describe_replicaset,
    describe_statefulset,
)


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines()]


def test_finished_indexed_job() -> None:
    job = {"metadata": {"name": "j", "namespace": "ns",
                        "ownerReferences": [{"kind": "CronJob", "name": "c",
                                             "controller": True}]},
           "spec": {"completions": 60, "completionMode": "Indexed",
                    "selector": {"matchLabels": {"x": "1"}}, "template": {}},
           "status": {"startTime": "2026-01-01T00:00:00Z",
                      "completionTime": "2026-01-01T00:01:30Z", "succeeded": 60, "ready": 0,
                      "completedIndexes": ",".join(str(i) for i in range(60))}}
    lines = _lines(describe_job(job, None))
    assert "Controlled By: CronJob/c" in lines
    assert "Duration: 90s" in lines
    assert any(line.startswith("Completed At: ") for line in lines)
    assert "Pods Statuses: 0 Active (0 Ready) / 60 Succeeded / 0 Failed" in lines
    indexes = next(line for line in lines if line.startswith("Completed Indexes: "))
    assert indexes.endswith(",...")  # kubectl cuts the list after 50 characters
    assert len(indexes) < len("Completed Indexes: ") + 60
    assert "Events" not in " ".join(lines)


def test_replicaset_whose_pods_could_not_be_read() -> None:
    rs = {"metadata": {"name": "r", "namespace": "ns"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "template": {}},
          "status": {"replicas": 1,
                     "conditions": [{"type": "ReplicaFailure", "status": "True",
                                     "reason": "FailedCreate"}]}}
    lines = _lines(describe_replicaset(rs, "forbidden", []))
    assert "Replicas: 1 current / 2 desired" in lines
    assert "Pods Status: error in fetching pods: forbidden" in lines
    assert "ReplicaFailure True FailedCreate" in lines
    assert lines[-1] == "Events: <none>"


def test_cronjob_unset_fields() -> None:
    cj = {"metadata": {"name": "c", "namespace": "ns"},
          "spec": {"schedule": "@hourly", "concurrencyPolicy": "Forbid",
                   "jobTemplate": {"spec": {"template": {}}}},
          "status": {"active": [{"name": "c-1"}, {"name": "c-2"}]}}
    lines = _lines(describe_cronjob(cj, None))
    for line in ("Suspend: <unset>", "Successful Job History Limit: <unset>",
                 "Starting Deadline Seconds: <unset>", "Selector: <unset>",
                 "Parallelism: <unset>", "Last Schedule Time: <unset>",
                 "Active Jobs: c-1, c-2", "Concurrency Policy: Forbid"):
        assert line in lines


def test_recreate_deployment_without_replica_sets() -> None:
    d = {"metadata": {"name": "d", "namespace": "ns", "creationTimestamp": None},
         "spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "minReadySeconds": 5,
                  "selector": {"matchLabels": {"a": "b"}}, "template": {}},
         "status": {}}
    lines = _lines(describe_deployment(d, [], [], None))
    assert "StrategyType: Recreate" in lines
    assert "MinReadySeconds: 5" in lines
    assert not any(line.startswith(("RollingUpdateStrategy", "OldReplicaSets", "Conditions"))
                   for line in lines)
    assert "Replicas: 1 desired | 0 updated | 0 total | 0 available | 0 unavailable" in lines


def test_statefulset_strategies() -> None:
    """A partition with maxUnavailable prints both under the strategy; OnDelete neither;
    claim templates are listed (the API here refuses them, other servers need not)."""
    sts = {"metadata": {"name": "s", "namespace": "ns"},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "1"}},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                        "partition": 2, "maxUnavailable": "50%"}},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}}]},
           "status": {"replicas": 1}}
    lines = _lines(describe_statefulset(sts, (1, 0, 0, 0), None))
    at = lines.index("Update Strategy: RollingUpdate")
    assert lines[at + 1:at + 3] == ["Partition: 2", "MaxUnavailable: 50%"]
    assert "Replicas: 3 desired | 1 total" in lines
    assert lines[lines.index("Volume Claims:") + 1] == "Name: data"
    sts["spec"]["updateStrategy"] = {"type": "OnDelete"}
    lines = _lines(describe_statefulset(sts, (0, 0, 0, 0), None))
    assert lines[lines.index("Update Strategy: OnDelete") + 1] == (
        "Pods Status: 0 Running / 0 Waiting / 0 Succeeded / 0 Failed")


def test_daemonset_without_node_selector_or_status() -> None:
    ds = {"metadata": {"name": "d", "namespace": "ns"},
          "spec": {"selector": {"matchLabels": {"a": "1"}}, "template": {}}}
    lines = _lines(describe_daemonset(ds, (0, 1, 0, 2), []))
    assert lines[:3] == ["Name: d", "Selector: a=1", "Node-Selector: <none>"]
    assert "Desired Number of Nodes Scheduled: 0" in lines
    assert "Pods Status: 0 Running / 1 Waiting / 0 Succeeded / 2 Failed" in lines
    assert lines[-1] == "Events: <none>"
