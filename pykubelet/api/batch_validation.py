"""batch/v1 Job and CronJob defaults (pkg/apis/batch/v1/defaults.go), the selector the API server
generates (pkg/registry/batch/job/strategy.go generateSelector) and validation
(pkg/apis/batch/validation/validation.go), for the fields we model."""

from __future__ import annotations

import copy
import dataclasses
import zoneinfo

from pykubelet.api import cronschedule
from pykubelet.api import defaults as core_defaults
from pykubelet.api import validation as core_validation
from pykubelet.api.batch import (
    ALLOW_CONCURRENT,
    COMPLETION_MODES,
    CONCURRENCY_POLICIES,
    CONTROLLER_UID_LABEL,
    DEFAULT_BACKOFF_LIMIT,
    FAILED,
    INDEXED,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
    NON_INDEXED,
    POD_REPLACEMENT_POLICIES,
    TERMINATING_OR_FAILED,
    CronJob,
    Job,
)
from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.field import OMIT, invalid, not_supported, required
from pykubelet.api.machinery.validation import name_is_dns_subdomain
from pykubelet.api.meta_validation import (
    selector_matches,
    validate_immutable,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from pykubelet.api.pod_failure_policy_validation import pod_failure_policy_errors
from pykubelet.api.types import RESTART_NEVER, RESTART_ON_FAILURE, LabelSelector, Pod

_NON_NEGATIVE = "must be greater than or equal to 0"


def set_defaults_job(job: Job) -> Job:
    """SetDefaults_Job, then the pod template's defaults (SetDefaults_PodSpec)."""
    spec = job.spec
    if spec.completions is None and spec.parallelism is None:
        spec.completions = 1
        spec.parallelism = 1
    if spec.parallelism is None:
        spec.parallelism = 1
    if spec.backoff_limit is None:
        spec.backoff_limit = DEFAULT_BACKOFF_LIMIT
    if not job.metadata.labels and spec.template.metadata.labels:
        job.metadata.labels = dict(spec.template.metadata.labels)
    if spec.completion_mode is None:
        spec.completion_mode = NON_INDEXED
    if spec.suspend is None:
        spec.suspend = False
    if spec.pod_replacement_policy is None:
        spec.pod_replacement_policy = (FAILED if "podFailurePolicy" in spec.unmodelled
                                       else TERMINATING_OR_FAILED)
    for rule in (spec.unmodelled.get("podFailurePolicy") or {}).get("rules") or []:
        for pattern in rule.get("onPodConditions") or []:
            pattern.setdefault("status", "True")  # a pattern's status defaults to True
    if job.metadata.namespace == "":
        job.metadata.namespace = core_defaults.DEFAULT_NAMESPACE
    template_pod = Pod(metadata=copy.copy(spec.template.metadata), spec=spec.template.spec)
    core_defaults.set_defaults_pod(template_pod)  # the spec's defaults, not the namespace
    return job


def generate_selector(job: Job) -> None:
    """generateSelector: unless spec.manualSelector, the selector is the job's uid and the
    template carries the uid and name labels (both the batch.kubernetes.io and the legacy
    keys), as the API server sets them on create."""
    if job.spec.manual_selector:
        return
    uid, name = job.metadata.uid, job.metadata.name
    labels = job.spec.template.metadata.labels
    for key, value in ((CONTROLLER_UID_LABEL, uid), (LEGACY_CONTROLLER_UID_LABEL, uid),
                       (JOB_NAME_LABEL, name), (LEGACY_JOB_NAME_LABEL, name)):
        labels.setdefault(key, value)
    if job.spec.selector is None:
        job.spec.selector = LabelSelector(match_labels={CONTROLLER_UID_LABEL: uid})


def _non_negative(value: int | None, path: str) -> list[FieldError]:
    return [invalid(path, value, _NON_NEGATIVE)] if value is not None and value < 0 else []


def job_errors(job: Job) -> list[FieldError]:
    """ValidateJob: metadata, then the spec."""
    meta = job.metadata
    errs = validate_object_meta(meta, namespaced=True, name_fn=name_is_dns_subdomain)
    if not meta.name and meta.generate_name:
        errs = [e for e in errs if e.field != "metadata.name"]
    return errs + _spec_errors(job)


def _spec_errors(job: Job) -> list[FieldError]:
    spec = job.spec
    errs: list[FieldError] = []
    errs += _non_negative(spec.parallelism, "spec.parallelism")
    errs += _non_negative(spec.completions, "spec.completions")
    errs += _non_negative(spec.active_deadline_seconds, "spec.activeDeadlineSeconds")
    errs += _non_negative(spec.backoff_limit, "spec.backoffLimit")
    errs += _non_negative(spec.ttl_seconds_after_finished, "spec.ttlSecondsAfterFinished")
    mode = spec.completion_mode
    if mode is not None and mode not in COMPLETION_MODES:
        errs.append(not_supported("spec.completionMode", mode, COMPLETION_MODES))
    if mode == INDEXED and spec.completions is None:
        errs.append(required("spec.completions", f"when completion mode is {INDEXED}"))
    policy = spec.pod_replacement_policy
    if policy is not None and policy not in POD_REPLACEMENT_POLICIES:
        errs.append(not_supported("spec.podReplacementPolicy", policy, POD_REPLACEMENT_POLICIES))
    if spec.selector is None:
        errs.append(required("spec.selector"))
    else:
        errs += validate_label_selector(spec.selector, "spec.selector")
        labels = spec.template.metadata.labels
        if not selector_matches(spec.selector, labels):
            errs.append(invalid("spec.template.metadata.labels", labels,
                                "`selector` does not match template `labels`"))
    errs += _template_errors(job)
    policy = spec.unmodelled.get("podFailurePolicy")
    if policy is not None:
        tmpl = spec.template.spec
        errs += pod_failure_policy_errors(
            policy, {c.name for c in (*tmpl.containers, *tmpl.init_containers)},
            tmpl.restart_policy, spec.pod_replacement_policy,
            spec.unmodelled.get("backoffLimitPerIndex"))
    return errs


def _template_errors(job: Job) -> list[FieldError]:
    """ValidatePodTemplateSpec under spec.template, and the restart policy a job allows."""
    tmpl = job.spec.template
    pod = Pod(metadata=dataclasses.replace(tmpl.metadata, name="x", namespace="x"),
              spec=tmpl.spec)
    errs = [dataclasses.replace(e, field="spec.template." + e.field)
            for e in core_validation.pod_errors(pod)
            if e.field.startswith("spec.") or e.field.startswith("metadata.labels")
            or e.field.startswith("metadata.annotations")]
    allowed = (RESTART_ON_FAILURE, RESTART_NEVER)
    if tmpl.spec.restart_policy not in allowed:
        errs.append(not_supported("spec.template.spec.restartPolicy", tmpl.spec.restart_policy,
                                  allowed))
    return errs


def job_update_errors(new: Job, old: Job) -> list[FieldError]:
    """ValidateJobUpdate: the spec's rules again, and what may not change."""
    errs = validate_object_meta_update(new.metadata, old.metadata) + _spec_errors(new)
    ns, os_ = new.spec, old.spec
    elastic = (ns.completion_mode == INDEXED and ns.completions == ns.parallelism
               and os_.completions == os_.parallelism)
    if not elastic:
        errs += validate_immutable(ns.completions, os_.completions, "spec.completions")
    errs += validate_immutable(ns.selector, os_.selector, "spec.selector")
    errs += validate_immutable(ns.completion_mode, os_.completion_mode, "spec.completionMode")
    errs += _template_update_errors(new, old)
    return errs


def _template_update_errors(new: Job, old: Job) -> list[FieldError]:
    """The template is immutable, except the scheduling directives of a suspended job that
    never started (validatePodTemplateUpdate with AllowMutableSchedulingDirectives)."""
    nt, ot = new.spec.template, old.spec.template
    if nt == ot:
        return []
    if old.spec.suspend and old.status.start_time is None:
        def scrub(t: object) -> object:
            c = copy.deepcopy(t)
            c.metadata.labels, c.metadata.annotations = {}, {}  # type: ignore[attr-defined]
            s = c.spec  # type: ignore[attr-defined]
            s.node_selector, s.tolerations, s.affinity = {}, [], None
            s.unmodelled.pop("schedulingGates", None)
            return c
        if scrub(nt) == scrub(ot):
            return []
    return [invalid("spec.template", OMIT, "field is immutable")]


# --------------------------------------------------------------------------- CronJob

# a CronJob's name leaves room for the "-<minutes>" of its jobs' names (validation.go)
CRONJOB_NAME_MAX = 52


def set_defaults_cron_job(cj: CronJob) -> CronJob:
    """SetDefaults_CronJob, and the job template's pod spec defaults."""
    spec = cj.spec
    if spec.concurrency_policy == "":
        spec.concurrency_policy = ALLOW_CONCURRENT
    if spec.suspend is None:
        spec.suspend = False
    if spec.successful_jobs_history_limit is None:
        spec.successful_jobs_history_limit = 3
    if spec.failed_jobs_history_limit is None:
        spec.failed_jobs_history_limit = 1
    if cj.metadata.namespace == "":
        cj.metadata.namespace = core_defaults.DEFAULT_NAMESPACE
    tmpl = spec.job_template.spec.template
    core_defaults.set_defaults_pod(Pod(metadata=copy.copy(tmpl.metadata), spec=tmpl.spec))
    return cj


def _time_zone_errors(tz: str | None) -> list[FieldError]:
    path = "spec.timeZone"
    if tz is None:
        return []
    if tz == "":
        return [invalid(path, tz, "timeZone must be nil or non-empty string")]
    if tz.lower() == "local":
        return [invalid(path, tz, "timeZone must be an explicit time zone as defined in "
                        "https://www.iana.org/time-zones")]
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return [invalid(path, tz, f"unknown time zone {tz}")]
    return []


def _cron_spec_errors(cj: CronJob) -> list[FieldError]:
    spec = cj.spec
    errs: list[FieldError] = []
    if not spec.schedule:
        errs.append(required("spec.schedule"))
    else:
        try:
            cronschedule.standard(spec.schedule)
        except cronschedule.ScheduleError as exc:
            errs.append(invalid("spec.schedule", spec.schedule, str(exc)))
        if "TZ" in spec.schedule:
            errs.append(invalid("spec.schedule", spec.schedule, "cannot use TZ or CRON_TZ in "
                                "schedule, use timeZone field instead"))
    errs += _time_zone_errors(spec.time_zone)
    errs += _non_negative(spec.starting_deadline_seconds, "spec.startingDeadlineSeconds")
    if spec.concurrency_policy not in CONCURRENCY_POLICIES:
        errs.append(not_supported("spec.concurrencyPolicy", spec.concurrency_policy,
                                  CONCURRENCY_POLICIES))
    errs += _non_negative(spec.successful_jobs_history_limit,
                          "spec.successfulJobsHistoryLimit")
    errs += _non_negative(spec.failed_jobs_history_limit, "spec.failedJobsHistoryLimit")
    errs += _job_template_errors(cj)
    return errs


def _job_template_errors(cj: CronJob) -> list[FieldError]:
    """ValidateJobTemplateSpec: the job spec's rules; the selector is generated later."""
    tmpl = cj.spec.job_template
    base = "spec.jobTemplate."
    errs: list[FieldError] = []
    if tmpl.spec.selector is not None:
        errs.append(invalid(base + "spec.selector", OMIT, "`selector` will be auto-generated"))
    if tmpl.spec.manual_selector:
        errs.append(not_supported(base + "spec.manualSelector", True, ("nil", "false")))
    job = Job(metadata=dataclasses.replace(tmpl.metadata, uid="x", name="x"),
              spec=copy.deepcopy(tmpl.spec))
    job.spec.selector, job.spec.manual_selector = None, None
    job.spec.template.metadata.labels = dict(job.spec.template.metadata.labels)
    generate_selector(job)
    for e in _spec_errors(job):
        errs.append(dataclasses.replace(e, field=base + e.field))
    return errs


def cron_job_errors(cj: CronJob) -> list[FieldError]:
    meta = cj.metadata
    errs = validate_object_meta(meta, namespaced=True, name_fn=name_is_dns_subdomain)
    if len(meta.name) > CRONJOB_NAME_MAX:
        errs.append(invalid("metadata.name", meta.name,
                            f"must be no more than {CRONJOB_NAME_MAX} characters"))
    return errs + _cron_spec_errors(cj)


def cron_job_update_errors(new: CronJob, old: CronJob) -> list[FieldError]:
    return validate_object_meta_update(new.metadata, old.metadata) + _cron_spec_errors(new)
