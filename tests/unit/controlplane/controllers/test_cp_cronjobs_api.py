"""batch/v1 CronJobs through the API: defaults, a malformed schedule or time zone is a 422
naming the field with robfig/cron's words and nothing written, the Table; and the CronJob
controller over the live registry with a clock the test drives, so a job fires without
waiting a minute."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.controlplane.controllers.cronjob import CronJobController

NS = "default"
CRONJOBS = f"/apis/batch/v1/namespaces/{NS}/cronjobs"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"


def cronjob(name: str, schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}}}}
    body["spec"].update(spec)
    return body


@pytest.fixture
def clean(api: Any) -> Any:
    names: list[str] = []
    yield names
    for n in names:
        api.call("DELETE", f"{CRONJOBS}/{n}")
    for j in api.call("GET", JOBS).json()["items"]:
        api.call("DELETE", f"{JOBS}/{j['metadata']['name']}")


def test_defaults(api: Any, clean: list[str]) -> None:
    clean.append("defaults")
    r = api.call("POST", CRONJOBS, cronjob("defaults"))
    assert r.status == 201, r.body
    spec = r.json()["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)


@pytest.mark.parametrize(("name", "spec", "field", "message"), [
    ("sched", {"schedule": "61 * * * *"}, "spec.schedule",
     'Invalid value: "61 * * * *": end of range (61) above maximum (59): 61'),
    ("fields", {"schedule": "bad"}, "spec.schedule",
     'Invalid value: "bad": expected exactly 5 fields, found 1: [bad]'),
    ("empty", {"schedule": ""}, "spec.schedule", "Required value"),
    ("tz", {"timeZone": "Mars/Olympus"}, "spec.timeZone",
     'Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'),
    ("policy", {"concurrencyPolicy": "Sometimes"}, "spec.concurrencyPolicy",
     'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"'),
    ("deadline", {"startingDeadlineSeconds": -1}, "spec.startingDeadlineSeconds",
     "Invalid value: -1: must be greater than or equal to 0"),
])
def test_bad_cronjobs_are_422_naming_the_field(api: Any, name: str, spec: dict[str, Any],
                                               field: str, message: str) -> None:
    r = api.call("POST", CRONJOBS, cronjob(name, **spec))
    assert r.status == 422, r.body
    status = r.json()
    assert status["details"]["kind"] == "CronJob"
    causes = {c["field"]: c["message"] for c in status["details"]["causes"]}
    assert causes.get(field) == message, causes
    assert api.call("GET", f"{CRONJOBS}/{name}").status == 404


def test_table_columns(api: Any, clean: list[str]) -> None:
    clean.append("table")
    assert api.call("POST", CRONJOBS, cronjob("table")).status == 201
    r = api.call("GET", f"{CRONJOBS}/table", headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    t = r.json()
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age",
        "Containers", "Images", "Selector"]
    cells = t["rows"][0]["cells"]
    assert cells[:6] == ["table", "*/5 * * * *", "<none>", "False", 0, "<none>"]
    assert cells[7:] == ["c", "busybox", "<none>"]


def test_controller_fires_on_a_driven_clock(api: Any, clean: list[str]) -> None:
    clean.append("tick")
    created = api.call("POST", CRONJOBS, cronjob("tick", "* * * * *")).json()
    t0 = dt.datetime.fromisoformat(created["metadata"]["creationTimestamp"])
    clock = {"now": t0 + dt.timedelta(seconds=1)}

    async def make() -> CronJobController:
        return CronJobController(api.cp.registry, clock=lambda: clock["now"])

    ctl: CronJobController = api._run(make())
    api._run(ctl.sync(f"{NS}/tick"))
    assert api.call("GET", JOBS).json()["items"] == []  # not due yet
    due = (t0.replace(second=0) + dt.timedelta(minutes=1))
    clock["now"] = due + dt.timedelta(seconds=2)
    api._run(ctl.sync(f"{NS}/tick"))
    jobs = api.call("GET", JOBS).json()["items"]
    assert [j["metadata"]["name"] for j in jobs] == [f"tick-{int(due.timestamp()) // 60}"]
    owner = jobs[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "CronJob", "tick", True, True)
    got = api.call("GET", f"{CRONJOBS}/tick").json()
    assert got["status"]["lastScheduleTime"] == due.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [a["name"] for a in got["status"]["active"]] == [jobs[0]["metadata"]["name"]]
    api._run(ctl.sync(f"{NS}/tick"))  # the same time again: nothing more
    assert len(api.call("GET", JOBS).json()["items"]) == 1
