"""The Job controller's decisions as table tests (no server): pods to create or delete,
counting through uncountedTerminatedPods and the tracking finalizer, back-off after
failures, the intermediate and terminal conditions with upstream's reasons, Indexed jobs."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.controlplane.controllers.job import pod_from_template
from pykubelet.controlplane.controllers.job_decisions import (
    BackoffRecord,
    backoff_delay,
    decide,
    format_indexes,
    parse_indexes,
)
from pykubelet.controlplane.controllers.ttlafterfinished import time_left

T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC)
FIN = "batch.kubernetes.io/job-tracking"


def ts(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def job(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    s = {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
         "template": {"metadata": {"labels": {"a": "b"}},
                      "spec": {"containers": [{"name": "c", "image": "i"}],
                               "restartPolicy": "Never"}}}
    s.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "juid"},
            "spec": s, "status": status or {}}


def pod(name: str, phase: str = "Running", tracked: bool = True, index: int | None = None,
        finished: dt.datetime | None = None, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": "u-" + name, "creationTimestamp": ts(T0),
                            "finalizers": [FIN] if tracked else []}
    if index is not None:
        meta["annotations"] = {"batch.kubernetes.io/job-completion-index": str(index)}
    if deleting:
        meta["deletionTimestamp"] = ts(T0)
    status: dict[str, Any] = {"phase": phase}
    if finished is not None:
        status["containerStatuses"] = [{"state": {"terminated": {"finishedAt": ts(finished)}}}]
    return {"metadata": meta, "status": status}


def conds(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in status.get("conditions") or []]


@pytest.mark.parametrize(("spec", "pods", "create", "active"), [
    ({"parallelism": 2, "completions": 3}, [], 2, 2),
    ({"parallelism": 2, "completions": 3}, [pod("a")], 1, 2),
    ({"parallelism": 5, "completions": 3}, [], 3, 3),
    ({"parallelism": 3, "completions": None}, [], 3, 3),
    ({"parallelism": 0, "completions": 3}, [], 0, 0),
    ({"parallelism": 2, "completions": 3, "suspend": True}, [], 0, 0),
])
def test_pods_to_create(spec: dict[str, Any], pods: list[dict[str, Any]], create: int,
                        active: int) -> None:
    acts = decide(job(**spec), pods, T0, BackoffRecord())
    assert acts.create == create
    assert acts.status["active"] == active
    assert acts.status["startTime"] if not spec.get("suspend") else "startTime" not in (
        acts.status)


def test_extra_pods_are_deleted_when_parallelism_shrinks() -> None:
    acts = decide(job(parallelism=1, completions=5), [pod("a"), pod("b"), pod("c")], T0,
                  BackoffRecord())
    assert acts.create == 0
    assert len(acts.delete) == 2
    assert acts.status["active"] == 1


def test_finished_pods_are_counted_through_uncounted_then_finalizer() -> None:
    # a pod finished: its uid joins uncountedTerminatedPods, its finalizer is to be removed
    j = job(parallelism=2, completions=3, status={"startTime": ts(T0)})
    acts = decide(j, [pod("a", "Succeeded"), pod("b")], T0, BackoffRecord())
    assert acts.status["uncountedTerminatedPods"] == {"succeeded": ["u-a"]}
    assert acts.status["succeeded"] == 0
    assert [p["metadata"]["name"] for p in acts.strip_finalizer] == ["a"]
    assert acts.create == 1  # a counts toward completions already: 2 left, b and one more
    assert acts.requeue_after == 0.0
    # its finalizer is gone: it moves to the counter, and a second pod is wanted
    j["status"] = acts.status
    acts = decide(j, [pod("a", "Succeeded", tracked=False), pod("b")], T0, BackoffRecord())
    assert acts.status["succeeded"] == 1
    assert acts.status["uncountedTerminatedPods"] == {}
    assert acts.create == 1
    assert acts.strip_finalizer == []


def test_completions_reached_sets_success_criteria_then_complete() -> None:
    j = job(parallelism=2, completions=2, status={"startTime": ts(T0), "succeeded": 2})
    acts = decide(j, [pod("a", "Succeeded", tracked=False),
                      pod("b", "Succeeded", tracked=False)], T0, BackoffRecord())
    assert conds(acts.status) == [("SuccessCriteriaMet", "CompletionsReached"),
                                  ("Complete", "CompletionsReached")]
    assert acts.status["conditions"][1]["message"] == "Reached expected number of succeeded pods"
    assert acts.status["completionTime"] == ts(T0)
    assert ("Normal", "Completed", "Job completed") in acts.events
    assert acts.create == 0


def test_complete_waits_for_uncounted_pods() -> None:
    j = job(completions=1, status={"startTime": ts(T0)})
    acts = decide(j, [pod("a", "Succeeded")], T0, BackoffRecord())
    assert conds(acts.status) == [("SuccessCriteriaMet", "CompletionsReached")]
    j["status"] = acts.status
    acts = decide(j, [pod("a", "Succeeded", tracked=False)], T0, BackoffRecord())
    assert conds(acts.status)[-1] == ("Complete", "CompletionsReached")
    assert acts.status["succeeded"] == 1


def test_backoff_limit_exceeded_fails_the_job_and_deletes_active_pods() -> None:
    j = job(backoffLimit=1, parallelism=2, completions=4,
            status={"startTime": ts(T0), "failed": 1})
    acts = decide(j, [pod("f", "Failed", finished=T0), pod("r")], T0, BackoffRecord())
    assert conds(acts.status) == [("FailureTarget", "BackoffLimitExceeded")]
    assert acts.status["conditions"][0]["message"] == (
        "Job has reached the specified backoff limit")
    assert [p["metadata"]["name"] for p in acts.delete] == ["r"]
    assert acts.create == 0
    # the failed pod counted, the deleted one gone: Failed, with the same reason
    j["status"] = acts.status
    acts = decide(j, [pod("f", "Failed", tracked=False)], T0, BackoffRecord())
    assert conds(acts.status) == [("FailureTarget", "BackoffLimitExceeded"),
                                  ("Failed", "BackoffLimitExceeded")]
    assert acts.status["failed"] == 2
    assert ("Warning", "BackoffLimitExceeded",
            "Job has reached the specified backoff limit") in acts.events
    assert "completionTime" not in acts.status


def test_backoff_limit_zero_fails_on_the_first_failure() -> None:
    j = job(backoffLimit=0, status={"startTime": ts(T0)})
    acts = decide(j, [pod("f", "Failed", tracked=False)], T0, BackoffRecord())
    assert conds(acts.status) == []  # not counted: tracked=False means counted earlier
    j["status"]["failed"] = 1
    acts = decide(j, [], T0, BackoffRecord())
    assert conds(acts.status) == [("FailureTarget", "BackoffLimitExceeded"),
                                  ("Failed", "BackoffLimitExceeded")]


@pytest.mark.parametrize(("failures", "seconds"), [
    (0, 0), (1, 10), (2, 20), (3, 40), (4, 80), (5, 160), (6, 320), (7, 360), (30, 360)])
def test_backoff_doubles_from_ten_seconds_to_six_minutes(failures: int, seconds: int) -> None:
    assert backoff_delay(failures) == dt.timedelta(seconds=seconds)


def test_replacement_waits_for_the_backoff_from_the_last_failure() -> None:
    record = BackoffRecord()
    j = job(completions=1, status={"startTime": ts(T0)})
    failed_at = T0 - dt.timedelta(seconds=4)
    acts = decide(j, [pod("f", "Failed", finished=failed_at)], T0, record)
    assert (record.failures, record.last_failure) == (1, failed_at)
    assert acts.create == 0
    assert acts.requeue_after == 0.0  # the uncounted pod first
    j["status"] = acts.status
    acts = decide(j, [pod("f", "Failed", tracked=False)], T0, record)
    assert acts.create == 0
    assert acts.requeue_after == pytest.approx(6.0)
    acts = decide(j, [pod("f", "Failed", tracked=False)], T0 + dt.timedelta(seconds=6), record)
    assert acts.create == 1


def test_a_success_resets_the_backoff() -> None:
    record = BackoffRecord(failures=3, last_failure=T0)
    record.update([pod("s", "Succeeded", finished=T0 + dt.timedelta(seconds=1))], [])
    assert record.failures == 0


def test_active_deadline_exceeded() -> None:
    start = T0 - dt.timedelta(seconds=30)
    j = job(activeDeadlineSeconds=30, status={"startTime": ts(start)})
    acts = decide(j, [pod("r")], T0, BackoffRecord())
    assert conds(acts.status) == [("FailureTarget", "DeadlineExceeded")]
    assert acts.status["conditions"][0]["message"] == (
        "Job was active longer than specified deadline")
    assert [p["metadata"]["name"] for p in acts.delete] == ["r"]
    # not yet: a requeue for when it is due
    acts = decide(job(activeDeadlineSeconds=30, status={"startTime": ts(T0)}), [pod("r")], T0,
                  BackoffRecord())
    assert conds(acts.status) == []
    assert acts.requeue_after == pytest.approx(30.0)


def test_no_completions_completes_after_a_success_and_no_active_pods() -> None:
    j = job(completions=None, parallelism=2, status={"startTime": ts(T0), "succeeded": 1})
    acts = decide(j, [pod("r")], T0, BackoffRecord())
    assert conds(acts.status) == []
    assert acts.create == 0
    acts = decide(j, [], T0, BackoffRecord())
    assert conds(acts.status)[-1] == ("Complete", "CompletionsReached")


def test_indexed_creates_the_missing_indexes() -> None:
    j = job(completionMode="Indexed", completions=4, parallelism=2,
            status={"startTime": ts(T0), "succeeded": 1, "completedIndexes": "0"})
    acts = decide(j, [pod("p1", index=1)], T0, BackoffRecord())
    assert acts.create_indexes == [2]
    j["status"]["completedIndexes"] = "0,2"
    acts = decide(j, [pod("p1", "Succeeded", index=1), pod("p3", index=3)], T0, BackoffRecord())
    assert acts.create_indexes == []
    j["status"] = acts.status
    acts = decide(j, [pod("p1", "Succeeded", index=1, tracked=False), pod("p3", index=3)], T0,
                  BackoffRecord())
    assert acts.status["completedIndexes"] == "0-2"


def test_indexed_pod_carries_its_index() -> None:
    p = pod_from_template(job(completionMode="Indexed", completions=3), 2)
    meta = p["metadata"]
    assert meta["generateName"] == "j-2-"
    assert meta["annotations"]["batch.kubernetes.io/job-completion-index"] == "2"
    assert meta["labels"]["batch.kubernetes.io/job-completion-index"] == "2"
    assert meta["finalizers"] == [FIN]
    assert meta["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "j",
                                        "uid": "juid", "controller": True,
                                        "blockOwnerDeletion": True}]
    assert p["spec"]["hostname"] == "j-2"
    path = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert p["spec"]["containers"][0]["env"] == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {
        "fieldRef": {"apiVersion": "v1", "fieldPath": path}}}]


@pytest.mark.parametrize(("text", "indexes"), [
    ("", set()), ("0", {0}), ("0-2,4,6-7", {0, 1, 2, 4, 6, 7})])
def test_completed_indexes_round_trip(text: str, indexes: set[int]) -> None:
    assert parse_indexes(text) == indexes
    assert format_indexes(indexes) == text


def test_ttl_after_finished() -> None:
    done = {"type": "Complete", "status": "True", "lastTransitionTime": ts(T0)}
    j = job(ttlSecondsAfterFinished=100, status={"conditions": [done]})
    assert time_left(j, T0 + dt.timedelta(seconds=40)) == 60
    assert time_left(j, T0 + dt.timedelta(seconds=100)) == 0
    assert time_left(job(status={"conditions": [done]}), T0) is None
    assert time_left(job(ttlSecondsAfterFinished=0), T0) is None


def test_suspend_deletes_active_pods_and_says_suspended() -> None:
    j = job(parallelism=2, completions=4, suspend=True, status={"startTime": ts(T0)})
    acts = decide(j, [pod("a"), pod("b")], T0, BackoffRecord())
    assert len(acts.delete) == 2
    assert acts.create == 0
    cond = acts.status["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "Suspended", "True", "JobSuspended", "Job suspended")
    assert "startTime" not in acts.status  # suspending resets the deadline's clock
    assert ("Normal", "Suspended", "Job suspended") in acts.events
    # resumed: the condition turns False, the clock starts again, pods are created
    j["spec"]["suspend"] = False
    j["status"] = acts.status
    later = T0 + dt.timedelta(minutes=1)
    acts = decide(j, [], later, BackoffRecord())
    cond = acts.status["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "Suspended", "False", "JobResumed", "Job resumed")
    assert acts.status["startTime"] == ts(later)
    assert acts.create == 2
    assert ("Normal", "Resumed", "Job resumed") in acts.events
