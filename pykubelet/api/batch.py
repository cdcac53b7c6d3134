"""batch/v1 Job (k8s.io/api/batch/v1): the types, with upstream's wire names and the label,
annotation, finalizer, condition and reason names the Job controller and kubectl share.

Same rules as types.py: snake_case attributes, camelCase on the wire, Go's omitempty on the
way out; what a class does not type is kept verbatim in ``unmodelled`` (podFailurePolicy,
successPolicy, ...), checked against upstream's schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykubelet.api.types import KEEP, LabelSelector, Model, ObjectMeta, PodTemplateSpec

_BATCH = "io.k8s.api.batch.v1."

# labels and annotations (k8s.io/api/batch/v1 types.go)
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"

NON_INDEXED = "NonIndexed"
INDEXED = "Indexed"
COMPLETION_MODES = (NON_INDEXED, INDEXED)
TERMINATING_OR_FAILED = "TerminatingOrFailed"
FAILED = "Failed"
POD_REPLACEMENT_POLICIES = (TERMINATING_OR_FAILED, FAILED)

# JobConditionType and the reasons the controller writes
JOB_COMPLETE = "Complete"
JOB_FAILED = "Failed"
JOB_SUSPENDED = "Suspended"
JOB_FAILURE_TARGET = "FailureTarget"
JOB_SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
REASON_COMPLETIONS_REACHED = "CompletionsReached"

DEFAULT_BACKOFF_LIMIT = 6
MAX_INT32 = 2**31 - 1


@dataclass(kw_only=True)
class JobSpec(Model):
    __k8s__ = _BATCH + "JobSpec"

    parallelism: int | None = None
    completions: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    template: PodTemplateSpec = field(default_factory=PodTemplateSpec, metadata=KEEP)
    ttl_seconds_after_finished: int | None = None
    completion_mode: str | None = None
    suspend: bool | None = None
    pod_replacement_policy: str | None = None


@dataclass(kw_only=True)
class JobCondition(Model):
    __k8s__ = _BATCH + "JobCondition"

    type: str = field(default="", metadata=KEEP)
    status: str = field(default="", metadata=KEEP)
    last_probe_time: str | None = None
    last_transition_time: str | None = None
    reason: str = ""
    message: str = ""


@dataclass(kw_only=True)
class UncountedTerminatedPods(Model):
    __k8s__ = _BATCH + "UncountedTerminatedPods"

    succeeded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class JobStatus(Model):
    __k8s__ = _BATCH + "JobStatus"

    conditions: list[JobCondition] = field(default_factory=list)
    start_time: str | None = None
    completion_time: str | None = None
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int | None = None
    completed_indexes: str = ""
    failed_indexes: str | None = None
    uncounted_terminated_pods: UncountedTerminatedPods | None = None
    ready: int | None = None


@dataclass(kw_only=True)
class Job(Model):
    __k8s__ = _BATCH + "Job"

    api_version: str = field(default="batch/v1", metadata=KEEP)
    kind: str = field(default="Job", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: JobSpec = field(default_factory=JobSpec)
    status: JobStatus = field(default_factory=JobStatus)


__all__ = [
    "Job", "JobCondition", "JobSpec", "JobStatus", "PodTemplateSpec",
    "UncountedTerminatedPods",
]


# --------------------------------------------------------------------------- CronJob

ALLOW_CONCURRENT = "Allow"
FORBID_CONCURRENT = "Forbid"
REPLACE_CONCURRENT = "Replace"
CONCURRENCY_POLICIES = (ALLOW_CONCURRENT, FORBID_CONCURRENT, REPLACE_CONCURRENT)
CRONJOB_SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"


@dataclass(kw_only=True)
class JobTemplateSpec(Model):
    __k8s__ = _BATCH + "JobTemplateSpec"

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: JobSpec = field(default_factory=JobSpec)


@dataclass(kw_only=True)
class CronJobSpec(Model):
    __k8s__ = _BATCH + "CronJobSpec"

    schedule: str = field(default="", metadata=KEEP)
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: str = ""
    suspend: bool | None = None
    job_template: JobTemplateSpec = field(default_factory=JobTemplateSpec, metadata=KEEP)
    successful_jobs_history_limit: int | None = None
    failed_jobs_history_limit: int | None = None


@dataclass(kw_only=True)
class CronJobStatus(Model):
    __k8s__ = _BATCH + "CronJobStatus"

    last_schedule_time: str | None = None
    last_successful_time: str | None = None


@dataclass(kw_only=True)
class CronJob(Model):
    __k8s__ = _BATCH + "CronJob"

    api_version: str = field(default="batch/v1", metadata=KEEP)
    kind: str = field(default="CronJob", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: CronJobSpec = field(default_factory=CronJobSpec)
    status: CronJobStatus = field(default_factory=CronJobStatus)
