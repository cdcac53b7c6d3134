"""The CronJob controller's decisions (pkg/controller/cronjob, cronjob_controllerv2.go
syncCronJob), pure: from a CronJob, the Jobs it controls and the time, which finished jobs
leave ``status.active`` (``lastSuccessfulTime`` moves on), whether a job is due (the most
recent schedule time since the last one, within ``startingDeadlineSeconds``; more than 100
missed times is reported), what ``concurrencyPolicy`` says about the running ones, the job
to create (named ``NAME-<scheduled time in minutes>``), the finished jobs beyond the history
limits, and when to look again."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api import cronschedule
from pykubelet.api.batch import (
    CRONJOB_SCHEDULED_TIMESTAMP,
    FORBID_CONCURRENT,
    JOB_COMPLETE,
    JOB_FAILED,
    REPLACE_CONCURRENT,
)
from pykubelet.api.machinery.timeutil import parse_time_or_none, rfc3339
from pykubelet.controlplane.controllers.controller_ref import new_controller_ref

Obj = dict[str, Any]
MAX_MISSED = 100
NEXT_SYNC_SLACK_S = 0.1  # nextScheduleTimeDuration's 100 ms


@dataclass
class CronActions:
    status: Obj
    create: Obj | None = None  # the Job to create
    delete: list[Obj] = field(default_factory=list)  # (active jobs replaced, old history)
    delete_reasons: list[str] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    requeue_after: float | None = None


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


def finished_condition(job: Obj) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in (JOB_COMPLETE, JOB_FAILED) and c.get("status") == "True":
            return str(c["type"])
    return None


def job_name(cj: Obj, scheduled: dt.datetime) -> str:
    """getJobName: the CronJob's name and the scheduled time in minutes since the epoch."""
    return f"{_meta(cj).get('name', '')}-{int(scheduled.timestamp()) // 60}"


def job_ref(job: Obj) -> Obj:
    meta = _meta(job)
    return {"kind": "Job", "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
            "uid": meta.get("uid", ""), "apiVersion": "batch/v1",
            "resourceVersion": meta.get("resourceVersion", "")}


def job_from_template(cj: Obj, scheduled: dt.datetime, tz: dt.tzinfo) -> Obj:
    """getJobFromTemplate2: the template's labels, annotations (and the scheduled time), the
    CronJob as controller."""
    meta = _meta(cj)
    tmpl = (cj.get("spec") or {}).get("jobTemplate") or {}
    tmeta = tmpl.get("metadata") or {}
    annotations = dict(tmeta.get("annotations") or {})
    annotations[CRONJOB_SCHEDULED_TIMESTAMP] = scheduled.astimezone(tz).isoformat().replace(
        "+00:00", "Z")
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": job_name(cj, scheduled), "namespace": meta.get("namespace", ""),
        "labels": dict(tmeta.get("labels") or {}), "annotations": annotations,
        "ownerReferences": [new_controller_ref(cj, "batch/v1", "CronJob")]},
        "spec": dict(tmpl.get("spec") or {})}


def _time_zone(cj: Obj) -> dt.tzinfo:
    tz = (cj.get("spec") or {}).get("timeZone")
    return zoneinfo.ZoneInfo(tz) if tz else dt.UTC


def decide(cj: Obj, jobs: list[Obj], now: dt.datetime) -> CronActions:
    spec, old = cj.get("spec") or {}, cj.get("status") or {}
    status: Obj = dict(old)
    acts = CronActions(status=status)
    by_name = {_meta(j).get("name"): j for j in jobs}
    active: list[Obj] = []
    for ref in old.get("active") or []:
        job = by_name.get(ref.get("name"))
        if job is None or _meta(job).get("uid") != ref.get("uid"):
            acts.events.append(("Normal", "MissingJob",
                                f"Active job went missing: {ref.get('name')}"))
            continue
        cond = finished_condition(job)
        if cond is None:
            active.append(ref)
            continue
        acts.events.append(("Normal", "SawCompletedJob",
                            f"Saw completed job: {ref.get('name')}, condition: {cond}"))
    listed = {r.get("uid") for r in old.get("active") or []}
    for job in jobs:  # a running child it did not create (or forgot): warned, not taken
        if finished_condition(job) is None and _meta(job).get("uid") not in listed:
            acts.events.append(("Warning", "UnexpectedJob", "Saw a job that the controller "
                                f"did not create or forgot: {_meta(job).get('name')}"))
    for job in jobs:
        if finished_condition(job) == JOB_COMPLETE:
            done = parse_time_or_none((job.get("status") or {}).get("completionTime"))
            last = parse_time_or_none(status.get("lastSuccessfulTime"))
            if done is not None and (last is None or done > last):
                status["lastSuccessfulTime"] = rfc3339(done)
    status["active"] = active
    acts.delete, acts.delete_reasons = _history_to_delete(spec, jobs)

    if _meta(cj).get("deletionTimestamp"):
        return acts
    try:
        tz = _time_zone(cj)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        acts.events.append(("Warning", "UnknownTimeZone",
                            f"invalid timeZone: {spec.get('timeZone')!r}"))
        return acts
    if spec.get("suspend"):
        return acts
    schedule = spec.get("schedule", "")
    try:
        cronschedule.standard(schedule)
    except cronschedule.ScheduleError as exc:
        acts.events.append(("Warning", "UnparseableSchedule",
                            f"unparseable schedule: {schedule!r} : {exc}"))
        return acts
    local_now = now.astimezone(tz)
    nxt = cronschedule.next_time(schedule, local_now)
    acts.requeue_after = (nxt - local_now).total_seconds() + NEXT_SYNC_SLACK_S

    earliest = parse_time_or_none(status.get("lastScheduleTime")) or parse_time_or_none(
        _meta(cj).get("creationTimestamp")) or now
    deadline = spec.get("startingDeadlineSeconds")
    if deadline is not None:
        earliest = max(earliest, now - dt.timedelta(seconds=deadline))
    missed = cronschedule.times_between(schedule, earliest.astimezone(tz), local_now,
                                        MAX_MISSED)
    if not missed:
        return acts
    if len(missed) > MAX_MISSED:
        acts.events.append(("Warning", "TooManyMissedTimes",
                            f"too many missed start times: {len(missed)}. Set or decrease "
                            ".spec.startingDeadlineSeconds or check clock skew"))
    scheduled = missed[-1].astimezone(dt.UTC)
    if deadline is not None and scheduled + dt.timedelta(seconds=deadline) < now:
        acts.events.append(("Warning", "MissSchedule", "Missed scheduled time to start a "
                            f"job: {scheduled.strftime('%a, %d %b %Y %H:%M:%S %z')}"))
        return acts
    name = job_name(cj, scheduled)
    if any(r.get("name") == name for r in active) or status.get("lastScheduleTime") == rfc3339(
            scheduled):
        return acts
    policy = spec.get("concurrencyPolicy", "Allow")
    if policy == FORBID_CONCURRENT and active:
        acts.events.append(("Normal", "JobAlreadyActive", "Not starting job because prior "
                            "execution is running and concurrency policy is Forbid"))
        return acts
    if policy == REPLACE_CONCURRENT:
        for ref in active:
            job = by_name.get(ref.get("name"))
            if job is not None:
                acts.delete.append(job)
                acts.delete_reasons.append("replaced")
        status["active"] = []
    acts.create = job_from_template(cj, scheduled, tz)
    status["lastScheduleTime"] = rfc3339(scheduled)
    return acts


def _history_to_delete(spec: Obj, jobs: list[Obj]) -> tuple[list[Obj], list[str]]:
    """cleanupFinishedJobs: the oldest finished jobs beyond each history limit."""
    out: list[Obj] = []
    for cond, limit_key, default in ((JOB_COMPLETE, "successfulJobsHistoryLimit", 3),
                                     (JOB_FAILED, "failedJobsHistoryLimit", 1)):
        limit = spec.get(limit_key, default)
        if limit is None:
            continue
        done = [j for j in jobs if finished_condition(j) == cond]
        done.sort(key=lambda j: ((j.get("status") or {}).get("startTime")
                                 or _meta(j).get("creationTimestamp") or ""))
        out += done[: max(0, len(done) - limit)]
    return out, ["history"] * len(out)
