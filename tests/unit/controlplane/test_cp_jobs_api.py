"""batch/v1 Jobs through the API: upstream's defaults, the generated selector and labels,
422s naming the field with nothing written, the immutable fields, discovery and the Table."""

from __future__ import annotations

import copy
from typing import Any

import pytest

NS = "default"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"


def job(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}],
                                       "restartPolicy": "Never"}}}}
    body["spec"].update(spec)
    return body


@pytest.fixture
def clean(api: Any) -> Any:
    names: list[str] = []
    yield names
    for n in names:
        api.call("DELETE", f"{JOBS}/{n}")


def test_defaults_and_generated_selector(api: Any, clean: list[str]) -> None:
    clean.append("defaults")
    r = api.call("POST", JOBS, job("defaults"))
    assert r.status == 201, r.body
    got = r.json()
    uid = got["metadata"]["uid"]
    spec = got["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
        "batch.kubernetes.io/job-name": "defaults", "job-name": "defaults"}
    assert spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    # SetDefaults_Job: a Job without labels takes its template's (upstream defaults them
    # again on every read from storage, where the generated ones are on the template)
    assert got["metadata"]["labels"] == spec["template"]["metadata"]["labels"]
    assert got["metadata"]["generation"] == 1
    clean.append("labelled")
    r = api.call("POST", JOBS, job("labelled") | {"metadata": {"name": "labelled",
                                                               "labels": {"team": "a"}}})
    assert r.status == 201, r.body
    assert r.json()["metadata"]["labels"] == {"team": "a"}
    assert "status" not in got or got["status"] == {}


def test_parallelism_alone_leaves_completions_unset(api: Any, clean: list[str]) -> None:
    clean.append("par")
    r = api.call("POST", JOBS, job("par", parallelism=3))
    assert r.status == 201, r.body
    assert "completions" not in r.json()["spec"]
    assert r.json()["spec"]["parallelism"] == 3


@pytest.mark.parametrize(("name", "spec", "field", "message"), [
    ("neg", {"completions": -1}, "spec.completions",
     "Invalid value: -1: must be greater than or equal to 0"),
    ("always", {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}],
                                      "restartPolicy": "Always"}}},
     "spec.template.spec.restartPolicy",
     'Unsupported value: "Always": supported values: "OnFailure", "Never"'),
    ("indexed", {"completionMode": "Indexed", "parallelism": 2},
     "spec.completions", "Required value: when completion mode is Indexed"),
    ("mode", {"completionMode": "Sometimes"}, "spec.completionMode",
     'Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"'),
    ("manual", {"manualSelector": True}, "spec.selector", "Required value"),
    # podFailurePolicy (validatePodFailurePolicy and its rules)
    ("pfp-restart", {"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {
        "operator": "In", "values": [1]}}]}, "template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "OnFailure"}}},
     "spec.template.spec.restartPolicy",
     'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is '
     "specified"),
    ("pfp-action", {"podFailurePolicy": {"rules": [{"action": "Retry", "onExitCodes": {
        "operator": "In", "values": [1]}}]}}, "spec.podFailurePolicy.rules[0].action",
     'Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", '
     '"Ignore"'),
    ("pfp-both", {"podFailurePolicy": {"rules": [{"action": "Ignore"}]}},
     "spec.podFailurePolicy.rules[0]",
     "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
    ("pfp-zero", {"podFailurePolicy": {"rules": [{"action": "Ignore", "onExitCodes": {
        "operator": "In", "values": [0, 2]}}]}},
     "spec.podFailurePolicy.rules[0].onExitCodes.values[0]",
     "Invalid value: 0: must not be 0 for the In operator"),
    ("pfp-order", {"podFailurePolicy": {"rules": [{"action": "Count", "onExitCodes": {
        "operator": "NotIn", "values": [3, 2]}}]}},
     "spec.podFailurePolicy.rules[0].onExitCodes.values",
     "Invalid value: []int32{3, 2}: must be ordered"),
    ("pfp-name", {"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {
        "containerName": "nope", "operator": "In", "values": [1]}}]}},
     "spec.podFailurePolicy.rules[0].onExitCodes.containerName",
     'Invalid value: "nope": must be one of the container or initContainer names in the pod '
     "template"),
    ("pfp-replace", {"podReplacementPolicy": "TerminatingOrFailed", "podFailurePolicy": {
        "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}},
     "spec.podReplacementPolicy",
     'Unsupported value: "TerminatingOrFailed": supported values: "Failed"'),
    ("pfp-status", {"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [
        {"type": "DisruptionTarget", "status": "Maybe"}]}]}},
     "spec.podFailurePolicy.rules[0].onPodConditions[0].status",
     'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
])
def test_bad_jobs_are_422_naming_the_field(api: Any, name: str, spec: dict[str, Any],
                                           field: str, message: str) -> None:
    body = job(name)
    body["spec"].update(spec)
    r = api.call("POST", JOBS, body)
    assert r.status == 422, r.body
    status = r.json()
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "Job"
    assert status["details"]["group"] == "batch"
    causes = {c["field"]: c["message"] for c in status["details"]["causes"]}
    assert causes.get(field) == message, causes
    assert api.call("GET", f"{JOBS}/{name}").status == 404


def test_selector_must_match_template(api: Any) -> None:
    body = job("nomatch", manualSelector=True, selector={"matchLabels": {"app": "a"}})
    body["spec"]["template"]["metadata"] = {"labels": {"app": "b"}}
    r = api.call("POST", JOBS, body)
    assert r.status == 422
    causes = {c["field"]: c["message"] for c in r.json()["details"]["causes"]}
    assert "`selector` does not match template `labels`" in causes[
        "spec.template.metadata.labels"]


def test_selector_and_template_are_immutable(api: Any, clean: list[str]) -> None:
    clean.append("immutable")
    got = api.call("POST", JOBS, job("immutable")).json()
    changed = copy.deepcopy(got)
    changed["spec"]["selector"] = {"matchLabels": {"x": "y"}}
    changed["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    r = api.call("PUT", f"{JOBS}/immutable", changed)
    assert r.status == 422, r.body
    causes = {c["field"]: c["message"] for c in r.json()["details"]["causes"]}
    assert causes["spec.selector"].endswith("field is immutable")
    changed = copy.deepcopy(got)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    r = api.call("PUT", f"{JOBS}/immutable", changed)
    assert r.status == 422, r.body
    causes = {c["field"]: c["message"] for c in r.json()["details"]["causes"]}
    assert causes["spec.template"].endswith("field is immutable")
    changed = copy.deepcopy(got)
    changed["spec"]["completions"] = 4
    r = api.call("PUT", f"{JOBS}/immutable", changed)
    assert r.status == 422
    changed = copy.deepcopy(got)
    changed["spec"]["parallelism"] = 3  # parallelism may change
    r = api.call("PUT", f"{JOBS}/immutable", changed)
    assert r.status == 200, r.body
    assert r.json()["metadata"]["generation"] == 2


def test_discovery_names_jobs_in_all(api: Any) -> None:
    r = api.call("GET", "/apis/batch/v1")
    assert r.status == 200, r.body
    res = {x["name"]: x for x in r.json()["resources"]}
    assert res["jobs"]["kind"] == "Job"
    assert res["jobs"]["namespaced"] is True
    assert res["jobs"]["categories"] == ["all"]
    assert "jobs/status" in res


def test_table_columns_as_kubectl_prints_them(api: Any, clean: list[str]) -> None:
    clean.append("table")
    assert api.call("POST", JOBS, job("table", parallelism=3)).status == 201
    r = api.call("GET", f"{JOBS}/table", headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert r.status == 200, r.body
    t = r.json()
    cols = [(c["name"], c["priority"]) for c in t["columnDefinitions"]]
    assert cols == [("Name", 0), ("Status", 0), ("Completions", 0), ("Duration", 0),
                    ("Age", 0), ("Containers", 1), ("Images", 1), ("Selector", 1)]
    cells = t["rows"][0]["cells"]
    uid = t["rows"][0]["object"]["metadata"]["uid"]
    assert cells[:4] == ["table", "Running", "0/1 of 3", ""]
    assert cells[5:] == ["c", "busybox", f"batch.kubernetes.io/controller-uid={uid}"]


def test_pod_failure_policy_defaults(api: Any, clean: list[str]) -> None:
    """SetDefaults_Job: a pattern's status True, podReplacementPolicy Failed."""
    clean.append("pfp-defaults")
    body = job("pfp-defaults", podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In",
                                              "values": [42]}}]})
    r = api.call("POST", JOBS, body)
    assert r.status == 201, r.body
    spec = r.json()["spec"]
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}]
    assert spec["podReplacementPolicy"] == "Failed"
