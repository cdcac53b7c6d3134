"""The CronJob controller's decisions as table tests (no server, the time given): next
schedule times, missed runs and startingDeadlineSeconds, concurrencyPolicy, the history
limits, the active list and lastSuccessfulTime, suspend and time zones."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.api.cronschedule import ScheduleError, next_time, standard, times_between
from pykubelet.controlplane.controllers.cronjob_decisions import decide, job_name

T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC)


def ts(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def cron(schedule: str = "* * * * *", status: dict[str, Any] | None = None,
         created: dt.datetime = T0, **spec: Any) -> dict[str, Any]:
    s = {"schedule": schedule, "concurrencyPolicy": "Allow", "suspend": False,
         "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
         "jobTemplate": {"metadata": {"labels": {"app": "x"}}, "spec": {"template": {
             "spec": {"containers": [{"name": "c", "image": "i"}],
                      "restartPolicy": "Never"}}}}}
    s.update(spec)
    return {"metadata": {"name": "cj", "namespace": "ns", "uid": "cuid",
                         "creationTimestamp": ts(created)}, "spec": s, "status": status or {}}


def job(name: str, cond: str | None = None, start: dt.datetime = T0,
        done: dt.datetime | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"startTime": ts(start)}
    if cond:
        status["conditions"] = [{"type": cond, "status": "True"}]
    if done:
        status["completionTime"] = ts(done)
    return {"metadata": {"name": name, "namespace": "ns", "uid": "u-" + name}, "status": status}


def ref(name: str) -> dict[str, Any]:
    return {"kind": "Job", "name": name, "namespace": "ns", "uid": "u-" + name,
            "apiVersion": "batch/v1"}


@pytest.mark.parametrize(("schedule", "after", "expected"), [
    ("* * * * *", T0, T0 + dt.timedelta(minutes=1)),
    ("*/15 * * * *", T0 + dt.timedelta(minutes=1), T0 + dt.timedelta(minutes=15)),
    ("@hourly", T0 + dt.timedelta(minutes=1), T0 + dt.timedelta(hours=1)),
    ("@daily", T0, dt.datetime(2026, 12, 2, tzinfo=dt.UTC)),
    ("0 9 * * mon", T0, dt.datetime(2026, 12, 7, 9, tzinfo=dt.UTC)),
])
def test_next_schedule_times(schedule: str, after: dt.datetime, expected: dt.datetime) -> None:
    assert next_time(schedule, after) == expected


@pytest.mark.parametrize(("schedule", "message"), [
    ("", "empty spec string"),
    ("bad", "expected exactly 5 fields, found 1: [bad]"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("@often", "unrecognized descriptor: @often"),
])
def test_bad_schedules_say_what_robfig_cron_says(schedule: str, message: str) -> None:
    with pytest.raises(ScheduleError) as exc:
        standard(schedule)
    assert str(exc.value) == message


def test_nothing_due_before_the_first_time() -> None:
    acts = decide(cron(), [], T0 + dt.timedelta(seconds=30))
    assert acts.create is None
    assert acts.requeue_after == pytest.approx(30.1)


def test_due_job_is_created_named_by_its_minute() -> None:
    at = T0 + dt.timedelta(minutes=1, seconds=5)
    acts = decide(cron(), [], at)
    assert acts.create is not None
    scheduled = T0 + dt.timedelta(minutes=1)
    assert acts.create["metadata"]["name"] == f"cj-{int(scheduled.timestamp()) // 60}"
    assert acts.create["metadata"]["labels"] == {"app": "x"}
    assert acts.create["metadata"]["annotations"] == {
        "batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-12-01T12:01:00Z"}
    assert acts.create["metadata"]["ownerReferences"] == [{
        "apiVersion": "batch/v1", "kind": "CronJob", "name": "cj", "uid": "cuid",
        "controller": True, "blockOwnerDeletion": True}]
    assert acts.status["lastScheduleTime"] == ts(scheduled)
    assert acts.requeue_after == pytest.approx(55.1)


def test_missed_runs_start_only_the_most_recent() -> None:
    at = T0 + dt.timedelta(minutes=5, seconds=1)
    acts = decide(cron(), [], at)
    assert acts.create is not None
    assert acts.create["metadata"]["name"] == job_name(cron(), T0 + dt.timedelta(minutes=5))
    assert acts.events == []


def test_too_many_missed_times_is_reported() -> None:
    acts = decide(cron(), [], T0 + dt.timedelta(hours=3))
    assert acts.create is not None
    assert acts.events[0][1] == "TooManyMissedTimes"
    assert acts.events[0][2].startswith("too many missed start times: 101. Set or decrease "
                                        ".spec.startingDeadlineSeconds or check clock skew")


def test_starting_deadline_bounds_the_missed_window() -> None:
    # due at 12:01, seen at 12:01:50 with a 30 s deadline: too late, not started
    acts = decide(cron(startingDeadlineSeconds=30), [], T0 + dt.timedelta(minutes=1,
                                                                          seconds=50))
    assert acts.create is None
    # seen at 12:01:20: within the deadline
    acts = decide(cron(startingDeadlineSeconds=30), [], T0 + dt.timedelta(minutes=1,
                                                                          seconds=20))
    assert acts.create is not None


def test_an_already_scheduled_time_is_not_started_twice() -> None:
    at = T0 + dt.timedelta(minutes=1, seconds=5)
    first = decide(cron(), [], at)
    acts = decide(cron(status=first.status), [], at)
    assert acts.create is None


@pytest.mark.parametrize(("policy", "create", "deleted"), [
    ("Allow", True, []), ("Forbid", False, []), ("Replace", True, ["old"])])
def test_concurrency_policy(policy: str, create: bool, deleted: list[str]) -> None:
    status = {"active": [ref("old")], "lastScheduleTime": ts(T0)}
    acts = decide(cron(concurrencyPolicy=policy, status=status), [job("old")],
                  T0 + dt.timedelta(minutes=1))
    assert (acts.create is not None) == create
    assert [j["metadata"]["name"] for j in acts.delete] == deleted
    if policy == "Forbid":
        assert acts.events == [("Normal", "JobAlreadyActive", "Not starting job because prior "
                                "execution is running and concurrency policy is Forbid")]


def test_suspended_starts_nothing() -> None:
    assert decide(cron(suspend=True), [], T0 + dt.timedelta(minutes=3)).create is None


def test_finished_jobs_leave_active_and_set_last_successful_time() -> None:
    done = T0 + dt.timedelta(seconds=40)
    status = {"active": [ref("a"), ref("b")], "lastScheduleTime": ts(T0)}
    acts = decide(cron(status=status), [job("a", "Complete", done=done), job("b")],
                  T0 + dt.timedelta(seconds=50))
    assert [r["name"] for r in acts.status["active"]] == ["b"]
    assert acts.status["lastSuccessfulTime"] == ts(done)
    assert ("Normal", "SawCompletedJob", "Saw completed job: a, condition: Complete") in (
        acts.events)


def test_a_job_it_did_not_create_is_not_taken_as_active() -> None:
    """syncCronJob: a running child missing from status.active (kubectl create job
    --from=cronjob/..., or a status write lost) is an UnexpectedJob warning, not added to
    the active list; once finished it is no SawCompletedJob (it never was active), but a
    success still moves lastSuccessfulTime."""
    status = {"active": [ref("a")], "lastScheduleTime": ts(T0)}
    at = T0 + dt.timedelta(seconds=30)
    acts = decide(cron(status=status), [job("a"), job("manual")], at)
    assert [r["name"] for r in acts.status["active"]] == ["a"]
    assert acts.events == [("Warning", "UnexpectedJob",
                            "Saw a job that the controller did not create or forgot: manual")]
    done = T0 + dt.timedelta(seconds=40)
    acts = decide(cron(status=status), [job("a"), job("manual", "Complete", done=done)], at)
    assert [r["name"] for r in acts.status["active"]] == ["a"]
    assert acts.events == []
    assert acts.status["lastSuccessfulTime"] == ts(done)


def test_an_active_job_gone_missing_leaves_the_list_with_an_event() -> None:
    status = {"active": [ref("gone"), ref("b")], "lastScheduleTime": ts(T0)}
    acts = decide(cron(status=status), [job("b")], T0 + dt.timedelta(seconds=30))
    assert [r["name"] for r in acts.status["active"]] == ["b"]
    assert acts.events == [("Normal", "MissingJob", "Active job went missing: gone")]


def test_history_limits_delete_the_oldest_finished_jobs() -> None:
    jobs = [job(f"s{i}", "Complete", start=T0 + dt.timedelta(minutes=i)) for i in range(5)]
    jobs += [job(f"f{i}", "Failed", start=T0 + dt.timedelta(minutes=i)) for i in range(3)]
    acts = decide(cron(status={"lastScheduleTime": ts(T0)}), jobs, T0 + dt.timedelta(
        seconds=30))
    assert sorted(j["metadata"]["name"] for j in acts.delete) == ["f0", "f1", "s0", "s1"]


def test_time_zone_moves_the_schedule() -> None:
    # 09:00 in Tokyo is 00:00 UTC
    cj = cron("0 9 * * *", timeZone="Asia/Tokyo", created=dt.datetime(2026, 11, 30, 23, 0,
                                                                        tzinfo=dt.UTC))
    acts = decide(cj, [], dt.datetime(2026, 12, 1, 0, 0, 30, tzinfo=dt.UTC))
    assert acts.create is not None
    assert acts.status["lastScheduleTime"] == "2026-12-01T00:00:00Z"
    assert acts.create["metadata"]["annotations"][
        "batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2026-12-01T09:00:00+09:00"


def test_times_between_caps_the_count() -> None:
    got = times_between("* * * * *", T0, T0 + dt.timedelta(hours=5), 100)
    assert len(got) == 101
