"""A Job's podFailurePolicy (pkg/controller/job/pod_failure_policy.go) as table tests: which
rule a failed pod matches (exit codes In/NotIn of a named or any container, init containers
too, exit code 0 never; pod conditions by type and status), what its action does in the
Job's decisions: FailJob ends the Job with reason PodFailurePolicy and upstream's message,
Ignore keeps the failure out of the count (and the backoffLimit), Count counts it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.controlplane.controllers.job_decisions import BackoffRecord, decide
from pykubelet.controlplane.controllers.podfailurepolicy import match_pod_failure_policy

T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC)
FIN = "batch.kubernetes.io/job-tracking"


def failed(name: str, code: int = 1, container: str = "c", init_code: int | None = None,
           conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Failed", "containerStatuses": [
        {"name": container, "state": {"terminated": {"exitCode": code}}}],
        "conditions": conditions or []}
    if init_code is not None:
        status["initContainerStatuses"] = [
            {"name": "init", "state": {"terminated": {"exitCode": init_code}}}]
    return {"metadata": {"name": name, "namespace": "ns", "uid": "u-" + name,
                         "creationTimestamp": "2026-12-01T12:00:00Z", "finalizers": [FIN]},
            "status": status}


def running(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": "u-" + name,
                         "creationTimestamp": "2026-12-01T12:00:00Z", "finalizers": [FIN]},
            "status": {"phase": "Running"}}


def rule(action: str, **on: Any) -> dict[str, Any]:
    return {"action": action, **on}


EXIT_42 = {"onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}
NOT_0_1 = {"onExitCodes": {"operator": "NotIn", "values": [1]}}
DISRUPTED = {"onPodConditions": [{"type": "DisruptionTarget"}]}


@pytest.mark.parametrize(("rules", "pod", "want"), [
    ([], failed("p", 42), (None, True, None)),
    ([rule("FailJob", **EXIT_42)], failed("p", 42),
     ("Container c for pod ns/p failed with exit code 42 matching FailJob rule at index 0",
      True, "FailJob")),
    ([rule("FailJob", **EXIT_42)], failed("p", 41), (None, True, None)),
    ([rule("FailJob", **EXIT_42)], failed("p", 42, container="other"), (None, True, None)),
    ([rule("Ignore", **NOT_0_1), rule("FailJob", **EXIT_42)], failed("p", 42),
     (None, False, "Ignore")),
    ([rule("Count", **NOT_0_1)], failed("p", 3), (None, True, "Count")),
    ([rule("Ignore", **NOT_0_1)], failed("p", 1), (None, True, None)),
    ([rule("FailJob", onExitCodes={"operator": "In", "values": [7]})],
     failed("p", 0, init_code=7),
     ("Container init for pod ns/p failed with exit code 7 matching FailJob rule at index 0",
      True, "FailJob")),
    ([rule("FailJob", onExitCodes={"operator": "NotIn", "values": [5]})], failed("p", 0),
     (None, True, None)),  # exit code 0 never matches
    ([rule("Count", **EXIT_42), rule("Ignore", **DISRUPTED)],
     failed("p", 1, conditions=[{"type": "DisruptionTarget", "status": "True"}]),
     (None, False, "Ignore")),
    ([rule("FailJob", onPodConditions=[{"type": "DisruptionTarget", "status": "False"}])],
     failed("p", 1, conditions=[{"type": "DisruptionTarget", "status": "True"}]),
     (None, True, None)),
    ([rule("FailJob", onPodConditions=[{"type": "ConfigIssue", "status": "True"}])],
     failed("p", 1, conditions=[{"type": "ConfigIssue", "status": "True"}]),
     ("Pod ns/p has condition ConfigIssue matching FailJob rule at index 0", True, "FailJob")),
])
def test_match(rules: list[dict[str, Any]], pod: dict[str, Any],
               want: tuple[str | None, bool, str | None]) -> None:
    assert match_pod_failure_policy({"rules": rules}, pod) == want


def job(rules: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    s = {"parallelism": 2, "completions": 4, "backoffLimit": 6,
         "completionMode": "NonIndexed", "podReplacementPolicy": "Failed",
         "podFailurePolicy": {"rules": rules},
         "template": {"spec": {"containers": [{"name": "c", "image": "i"}],
                               "restartPolicy": "Never"}}}
    s.update(spec)
    return {"metadata": {"name": "j", "namespace": "ns", "uid": "juid"}, "spec": s,
            "status": {"startTime": "2026-12-01T12:00:00Z"}}


def test_fail_job_rule_ends_the_job_with_reason_pod_failure_policy() -> None:
    acts = decide(job([rule("FailJob", **EXIT_42)]), [failed("p", 42), running("r")], T0,
                  BackoffRecord())
    [target] = [c for c in acts.status["conditions"] if c["type"] == "FailureTarget"]
    assert (target["reason"], target["message"]) == (
        "PodFailurePolicy",
        "Container c for pod ns/p failed with exit code 42 matching FailJob rule at index 0")
    assert [p["metadata"]["name"] for p in acts.delete] == ["r"]  # the active pods go
    assert acts.create == 0


def test_ignored_failure_is_not_counted_and_the_pod_is_replaced() -> None:
    rules = [rule("Ignore", **EXIT_42)]
    later = T0 + dt.timedelta(minutes=10)  # the failure's back-off (as upstream's) is over
    acts = decide(job(rules, backoffLimit=0), [failed("p", 42)], later, BackoffRecord())
    assert not [c for c in acts.status.get("conditions") or [] if c["type"] in (
        "FailureTarget", "Failed")]
    assert [p["metadata"]["name"] for p in acts.strip_finalizer] == ["p"]
    assert not (acts.status.get("uncountedTerminatedPods") or {}).get("failed")
    assert acts.create == 2
    # with its finalizer gone it is not counted either
    gone = failed("p", 42)
    gone["metadata"]["finalizers"] = []
    again = decide(job(rules, backoffLimit=0), [gone], later, BackoffRecord())
    assert again.status["failed"] == 0


def test_counted_failure_counts_toward_the_backoff_limit() -> None:
    acts = decide(job([rule("Count", **EXIT_42)], backoffLimit=0), [failed("p", 42)], T0,
                  BackoffRecord())
    assert (acts.status["uncountedTerminatedPods"] or {}).get("failed") == ["u-p"]
    assert [(c["type"], c["reason"]) for c in acts.status["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded")]
