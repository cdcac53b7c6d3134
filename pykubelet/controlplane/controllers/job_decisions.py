"""The Job controller's decisions (pkg/controller/job/job_controller.go syncJob), pure:
from a Job, the pods it owns and the time, what to do: which finished pods to count (their
uids go through ``status.uncountedTerminatedPods`` before their tracking finalizer is
removed, so no pod is counted twice or lost), how many pods to create (and for an Indexed
job which indexes) or delete, when the next pod may be created after failures (10 s
doubling, at most 6 minutes, counted from the last failure), and the conditions: the
``SuccessCriteriaMet``/``FailureTarget`` intermediate conditions first, the terminal
``Complete``/``Failed`` once no pod of the job is still terminating, as upstream. A
``podFailurePolicy`` (podfailurepolicy.py) can end the job at a failed pod (FailJob, reason
``PodFailurePolicy``) or keep a failure out of the count (Ignore)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.batch import (
    INDEXED,
    JOB_COMPLETE,
    JOB_COMPLETION_INDEX,
    JOB_FAILED,
    JOB_FAILURE_TARGET,
    JOB_SUCCESS_CRITERIA_MET,
    JOB_SUSPENDED,
    JOB_TRACKING_FINALIZER,
    REASON_BACKOFF_LIMIT_EXCEEDED,
    REASON_COMPLETIONS_REACHED,
    REASON_DEADLINE_EXCEEDED,
)
from pykubelet.api.machinery.timeutil import parse_time_or_none, rfc3339
from pykubelet.controlplane.controllers.podfailurepolicy import (
    REASON_POD_FAILURE_POLICY,
    match_pod_failure_policy,
)

Obj = dict[str, Any]

POD_FAILURE_BACKOFF = dt.timedelta(seconds=10)  # DefaultJobPodFailureBackOff
MAX_POD_FAILURE_BACKOFF = dt.timedelta(minutes=6)  # as the Job documentation states
MSG_BACKOFF = "Job has reached the specified backoff limit"
MSG_DEADLINE = "Job was active longer than specified deadline"
MSG_COMPLETIONS = "Reached expected number of succeeded pods"


@dataclass
class Actions:
    """What syncJob decided; ``status`` is the status to write (None: unchanged)."""

    status: Obj
    create: int = 0
    create_indexes: list[int] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)  # active pods to remove
    strip_finalizer: list[Obj] = field(default_factory=list)  # counted (or uncounted) pods
    requeue_after: float | None = None  # seconds until something is due (back-off, deadline)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # type, reason, message


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def is_finished(job: Obj) -> bool:
    return any(c.get("type") in (JOB_COMPLETE, JOB_FAILED) and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _has(status: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or [])


def _condition(kind: str, reason: str, message: str, at: str) -> Obj:
    return {"type": kind, "status": "True", "lastProbeTime": at, "lastTransitionTime": at,
            "reason": reason, "message": message}


def pod_index(pod: Obj) -> int | None:
    """The completion index a pod of an Indexed job carries (annotation, else label)."""
    meta = _meta(pod)
    raw = (meta.get("annotations") or {}).get(JOB_COMPLETION_INDEX) or (
        meta.get("labels") or {}).get(JOB_COMPLETION_INDEX)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def finished_at(pod: Obj) -> dt.datetime | None:
    """When a pod finished: its containers' latest finishedAt, else its deletion or
    creation time (getFinishedTime)."""
    status = pod.get("status") or {}
    latest: dt.datetime | None = None
    for cs in status.get("containerStatuses") or []:
        t = parse_time_or_none(((cs.get("state") or {}).get("terminated") or {}).get(
            "finishedAt"))
        if t is not None and (latest is None or t > latest):
            latest = t
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "False" and latest is None:
            latest = parse_time_or_none(cond.get("lastTransitionTime"))
    return latest or parse_time_or_none(_meta(pod).get("deletionTimestamp")) or (
        parse_time_or_none(_meta(pod).get("creationTimestamp")))


def backoff_delay(failures: int) -> dt.timedelta:
    """10 s for the first failure after the last success, doubling, at most 6 minutes."""
    if failures <= 0:
        return dt.timedelta(0)
    delay: dt.timedelta = POD_FAILURE_BACKOFF * (2 ** min(failures - 1, 20))
    return min(delay, MAX_POD_FAILURE_BACKOFF)


def format_indexes(indexes: set[int]) -> str:
    """completedIndexes' form: "0-2,4,6-7"."""
    out: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_indexes(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@dataclass
class BackoffRecord:
    """backoffRecord: failures since the last success and when the last one happened."""

    failures: int = 0
    last_failure: dt.datetime | None = None

    def update(self, new_succeeded: list[Obj], new_failed: list[Obj]) -> None:
        if new_succeeded:
            last_success = max((finished_at(p) or dt.datetime.min.replace(tzinfo=dt.UTC))
                               for p in new_succeeded)
            after = [p for p in new_failed if (finished_at(p) or last_success) > last_success]
            self.failures = len(after)
            self.last_failure = max((finished_at(p) for p in after), default=None,
                                    key=lambda t: t or last_success)
            return
        if new_failed:
            self.failures += len(new_failed)
            times = [t for p in new_failed if (t := finished_at(p)) is not None]
            if times:
                latest = max(times)
                if self.last_failure is None or latest > self.last_failure:
                    self.last_failure = latest


def decide(job: Obj, pods: list[Obj], now: dt.datetime, backoff: BackoffRecord) -> Actions:
    """syncJob's decisions for ``job`` over the pods it controls. ``backoff`` is updated
    with the pods newly counted (it is the controller's in-memory record, as upstream's)."""
    spec, old = job.get("spec") or {}, job.get("status") or {}
    status: Obj = {k: v for k, v in old.items()}
    status["conditions"] = [dict(c) for c in old.get("conditions") or []]
    at = rfc3339(now)
    acts = Actions(status=status)
    uncounted = old.get("uncountedTerminatedPods") or {}
    unc_succ: list[str] = list(uncounted.get("succeeded") or [])
    unc_fail: list[str] = list(uncounted.get("failed") or [])
    indexed = spec.get("completionMode") == INDEXED
    completions = spec.get("completions")
    by_uid = {_meta(p).get("uid"): p for p in pods}

    # 1. count what has finished: uids noted as uncounted whose finalizer is gone (or
    #    whose pod is gone) move to the counters; newly finished pods join the uncounted
    succeeded, failed = int(old.get("succeeded", 0)), int(old.get("failed", 0))
    completed = parse_indexes(old.get("completedIndexes", ""))
    still_succ, still_fail = [], []
    for uid in unc_succ:
        pod = by_uid.get(uid)
        if pod is None or JOB_TRACKING_FINALIZER not in (_meta(pod).get("finalizers") or []):
            succeeded += 1
            idx = pod_index(pod) if pod is not None and indexed else None
            if idx is not None:
                completed.add(idx)
        else:
            still_succ.append(uid)
            acts.strip_finalizer.append(pod)
    for uid in unc_fail:
        pod = by_uid.get(uid)
        if pod is None or JOB_TRACKING_FINALIZER not in (_meta(pod).get("finalizers") or []):
            failed += 1
        else:
            still_fail.append(uid)
            acts.strip_finalizer.append(pod)
    new_succ: list[Obj] = []
    new_fail: list[Obj] = []
    active: list[Obj] = []
    terminating = 0
    for pod in pods:
        meta = _meta(pod)
        uid = str(meta.get("uid", ""))
        tracked = JOB_TRACKING_FINALIZER in (meta.get("finalizers") or [])
        phase = _phase(pod)
        if phase == "Succeeded":
            if tracked and uid not in still_succ:
                new_succ.append(pod)
        elif phase == "Failed" or (meta.get("deletionTimestamp") and tracked):
            if tracked and uid not in still_fail:
                new_fail.append(pod)
            if phase != "Failed":
                terminating += 1
        elif meta.get("deletionTimestamp"):
            terminating += 1
        else:
            active.append(pod)
    backoff.update(new_succ, new_fail)
    for pod in new_succ:  # a second success of one index counts once, in completedIndexes
        still_succ.append(str(_meta(pod).get("uid")))
        acts.strip_finalizer.append(pod)
    policy = spec.get("podFailurePolicy")
    for pod in new_fail:
        if match_pod_failure_policy(policy, pod)[1]:  # an Ignore rule: never counted
            still_fail.append(str(_meta(pod).get("uid")))
        acts.strip_finalizer.append(pod)
    # the counts once the finalizers just scheduled for removal are gone (the decision
    # about the job uses them, as upstream's counts include the uncounted pods)
    succ_total = succeeded + len(still_succ)
    fail_total = failed + len(still_fail)
    done_indexes = set(completed)
    if indexed:
        for uid in still_succ:
            pod = by_uid.get(uid)
            idx = pod_index(pod) if pod is not None else None
            if idx is not None and completions is not None and idx < completions:
                done_indexes.add(idx)
        if completions is not None:
            succ_total = len(done_indexes)
    status["uncountedTerminatedPods"] = {k: v for k, v in (
        ("succeeded", still_succ), ("failed", still_fail)) if v}
    status["succeeded"], status["failed"] = succeeded, failed
    if indexed:
        status["completedIndexes"] = format_indexes(completed)

    if is_finished(job):
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if _ready(p))
        status["terminating"] = terminating
        return acts

    _suspension(spec, status, at, acts)
    if status.get("startTime") is None and not spec.get("suspend"):
        status["startTime"] = at
    start = parse_time_or_none(status.get("startTime"))

    # 2. is the job done?
    finished: tuple[str, str, str] | None = None  # (FailureTarget|SuccessCriteriaMet, reason, msg)
    backoff_limit = spec.get("backoffLimit", 6)
    deadline = spec.get("activeDeadlineSeconds")
    if _has(status, JOB_FAILURE_TARGET):
        cond = next(c for c in status["conditions"] if c.get("type") == JOB_FAILURE_TARGET)
        finished = (JOB_FAILURE_TARGET, cond.get("reason", ""), cond.get("message", ""))
    elif _has(status, JOB_SUCCESS_CRITERIA_MET):
        finished = (JOB_SUCCESS_CRITERIA_MET, REASON_COMPLETIONS_REACHED, MSG_COMPLETIONS)
    elif (fail_job := _fail_job_message(policy, pods)) is not None:
        finished = (JOB_FAILURE_TARGET, REASON_POD_FAILURE_POLICY, fail_job)
    elif fail_total > backoff_limit:
        finished = (JOB_FAILURE_TARGET, REASON_BACKOFF_LIMIT_EXCEEDED, MSG_BACKOFF)
    elif deadline is not None and start is not None and not spec.get("suspend") and (
            now - start).total_seconds() >= deadline:
        finished = (JOB_FAILURE_TARGET, REASON_DEADLINE_EXCEEDED, MSG_DEADLINE)
    elif (completions is not None and succ_total >= completions) or (
            completions is None and succ_total > 0 and not active):
        finished = (JOB_SUCCESS_CRITERIA_MET, REASON_COMPLETIONS_REACHED, MSG_COMPLETIONS)

    if finished is not None:
        kind, reason, message = finished
        if not _has(status, kind):
            status["conditions"].append(_condition(kind, reason, message, at))
        if kind == JOB_FAILURE_TARGET:
            acts.delete = list(active)  # upstream deletes the active pods of a failed job
            terminating += len(active)
            active = []
        # the terminal condition waits for the job's pods to be gone and counted
        if not active and terminating == 0 and not still_succ and not still_fail:
            terminal = JOB_FAILED if kind == JOB_FAILURE_TARGET else JOB_COMPLETE
            status["conditions"].append(_condition(terminal, reason, message, at))
            if terminal == JOB_COMPLETE:
                status["completionTime"] = at
                acts.events.append(("Normal", "Completed", "Job completed"))
            else:
                acts.events.append(("Warning", reason, message))
        elif still_succ or still_fail:
            acts.requeue_after = 0.0  # count them once their finalizers are gone
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if _ready(p))
        status["terminating"] = terminating
        return acts

    # 3. how many pods should run?
    parallelism = int(spec.get("parallelism", 1))
    if spec.get("suspend"):
        want = 0
    elif completions is None:
        want = len(active) if succ_total > 0 else parallelism
    else:
        want = max(0, min(parallelism, completions - succ_total))
    if len(active) > want:
        # newest first: the least progress lost (upstream ranks with controller.ActivePods)
        ranked = sorted(active, key=lambda p: (_phase(p) == "Running", _ready(p),
                                               _meta(p).get("creationTimestamp", "")))
        acts.delete = ranked[: len(active) - want]
        active = [p for p in active if p not in acts.delete]
        terminating += len(acts.delete)
    elif len(active) < want:
        ready_at = (backoff.last_failure + backoff_delay(backoff.failures)
                    if backoff.last_failure is not None and backoff.failures > 0 else None)
        if ready_at is not None and ready_at > now:
            acts.requeue_after = (ready_at - now).total_seconds()
        else:
            n = want - len(active)
            if indexed and completions is not None:
                running = {pod_index(p) for p in active}
                missing = [i for i in range(completions)
                           if i not in done_indexes and i not in running]
                acts.create_indexes = missing[:n]
                acts.create = len(acts.create_indexes)
            else:
                acts.create = n
    if deadline is not None and start is not None and not spec.get("suspend"):
        left = deadline - (now - start).total_seconds()
        acts.requeue_after = left if acts.requeue_after is None else min(
            acts.requeue_after, left)
    if still_succ or still_fail:
        acts.requeue_after = 0.0
    status["active"] = len(active) + acts.create
    status["ready"] = sum(1 for p in active if _ready(p))
    status["terminating"] = terminating
    return acts


def _fail_job_message(policy: Obj | None, pods: list[Obj]) -> str | None:
    """getFailJobMessage: the message of the first failed pod a FailJob rule matches."""
    if not policy:
        return None
    for pod in pods:
        if _phase(pod) == "Failed":
            message = match_pod_failure_policy(policy, pod)[0]
            if message is not None:
                return message
    return None


def _suspension(spec: Obj, status: Obj, at: str, acts: Actions) -> None:
    """The Suspended condition: True when spec.suspend is set (startTime cleared, so the
    deadline counts again from the resume), False again once it is not."""
    conds = status["conditions"]
    prev = next((c for c in conds if c.get("type") == JOB_SUSPENDED), None)
    if spec.get("suspend"):
        if prev is not None and prev.get("status") == "True":
            return
        new = _condition(JOB_SUSPENDED, "JobSuspended", "Job suspended", at)
        status.pop("startTime", None)
        acts.events.append(("Normal", "Suspended", "Job suspended"))
    elif prev is not None and prev.get("status") == "True":
        new = _condition(JOB_SUSPENDED, "JobResumed", "Job resumed", at)
        new["status"] = "False"
        status.pop("startTime", None)
        acts.events.append(("Normal", "Resumed", "Job resumed"))
    else:
        return
    status["conditions"] = [new if c is prev else c for c in conds] if prev else [*conds, new]


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])
