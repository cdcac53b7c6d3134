"""apps/v1 ReplicaSet and Deployment defaults and validation, as pkg/apis/apps/v1/defaults.go
and pkg/apis/apps/validation say them: replicas default to 1 (a Deployment's strategy to
RollingUpdate 25%/25%, revisionHistoryLimit to 10, progressDeadlineSeconds to 600), the
selector is required, not empty, immutable and must match the template's labels, the
template's pods restart Always."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from pykubelet.api.apps import (
    DEFAULT_MAX_SURGE,
    DEFAULT_MAX_UNAVAILABLE,
    DEFAULT_PROGRESS_DEADLINE_SECONDS,
    DEFAULT_REVISION_HISTORY_LIMIT,
    RECREATE,
    ROLLING_UPDATE,
    Deployment,
    PodTemplateSpec,
    ReplicaSet,
    RollingUpdateDeployment,
)
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.codec import encode
from pykubelet.api.machinery.field import forbidden, invalid, not_supported, required
from pykubelet.api.machinery.validation import (
    name_is_dns_subdomain,
    validate_annotations,
    validate_labels,
    validate_non_negative,
)
from pykubelet.api.meta_validation import (
    selector_matches,
    validate_immutable,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
    validate_positive_int_or_percent,
)
from pykubelet.api.types import LabelSelector, ObjectMeta, Pod
from pykubelet.api.validation import pod_template_spec_errors


def set_defaults_pod_template(template: PodTemplateSpec) -> None:
    """The pod defaults applied to a template's spec (the generated defaulters walk it)."""
    set_defaults_pod(Pod(metadata=ObjectMeta(), spec=template.spec))


def set_defaults_replica_set(rs: ReplicaSet) -> ReplicaSet:
    """SetDefaults_ReplicaSet: one replica when none is said."""
    if rs.metadata.namespace == "":
        rs.metadata.namespace = "default"
    if rs.spec.replicas is None:
        rs.spec.replicas = 1
    set_defaults_pod_template(rs.spec.template)
    return rs


def selector_errors(selector: LabelSelector | None, path: str,
                    kind: str = "deployment") -> list[FieldError]:
    """The workload specs' selector rule: required, valid and not empty (upstream's
    message says "deployment" for a ReplicaSet too)."""
    if selector is None:
        return [required(path, "")]
    errs = validate_label_selector(selector, path)
    if not selector.match_labels and not selector.match_expressions:
        errs.append(invalid(path, encode(selector), f"empty selector is invalid for {kind}"))
    return errs


def immutable_selector_errors(new: LabelSelector | None,
                              old: LabelSelector | None) -> list[FieldError]:
    """apps/v1's immutable selector (the strategies' ValidateUpdate)."""
    old_sel = encode(old) if old is not None else None
    new_sel = encode(new) if new is not None else None
    if old_sel == new_sel:
        return []
    return validate_immutable(new_sel, old_sel, "spec.selector")


W = TypeVar("W", bound=Any)


def workload_errors(obj: W, spec_errors: Callable[[W], list[FieldError]]) -> list[FieldError]:
    """ValidateReplicaSet, ValidateDeployment, ValidateDaemonSet: a namespaced object with a
    DNS-subdomain name, then its spec by the kind's rule."""
    errs = validate_object_meta(obj.metadata, namespaced=True, name_fn=name_is_dns_subdomain)
    return errs + spec_errors(obj)


def workload_update_errors(new: W, old: W,
                           spec_errors: Callable[[W], list[FieldError]]) -> list[FieldError]:
    """Their Validate*Update: the metadata update, the new spec by the kind's rule, and
    apps/v1's immutable selector (the strategies' ValidateUpdate)."""
    errs = validate_object_meta_update(new.metadata, old.metadata) + spec_errors(new)
    return errs + immutable_selector_errors(new.spec.selector, old.spec.selector)


def pod_template_errors(template: PodTemplateSpec, selector: LabelSelector | None,
                        path: str, kind: str = "ReplicaSet") -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet (and ForStatefulSet): labels that the selector
    matches, then :func:`workload_template_errors`."""
    errs: list[FieldError] = []
    labels = template.metadata.labels
    if (selector is not None and (selector.match_labels or selector.match_expressions)
            and not selector_matches(selector, labels)):
        errs.append(invalid(f"{path}.metadata.labels", labels,
                                "`selector` does not match template `labels`"))
    return errs + workload_template_errors(template, path, kind)


def workload_template_errors(template: PodTemplateSpec, path: str,
                             kind: str) -> list[FieldError]:
    """What every workload asks of its template beyond the selector: the template's labels
    and annotations, the pod rules, restartPolicy Always, no activeDeadlineSeconds."""
    labels = template.metadata.labels
    errs = validate_labels(labels, f"{path}.metadata.labels")
    errs += validate_annotations(template.metadata.annotations, f"{path}.metadata.annotations")
    errs += pod_template_spec_errors(template.spec, f"{path}.spec")
    policy = template.spec.restart_policy
    if policy != "Always":
        errs.append(not_supported(f"{path}.spec.restartPolicy", policy, ("Always",)))
    if template.spec.active_deadline_seconds is not None:
        errs.append(forbidden(f"{path}.spec.activeDeadlineSeconds",
                              f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


def _spec_errors(rs: ReplicaSet) -> list[FieldError]:
    spec = rs.spec
    errs = validate_non_negative(spec.replicas or 0, "spec.replicas")
    errs += validate_non_negative(spec.min_ready_seconds, "spec.minReadySeconds")
    errs += selector_errors(spec.selector, "spec.selector")
    errs += pod_template_errors(spec.template, spec.selector, "spec.template")
    return errs


def replica_set_errors(rs: ReplicaSet) -> list[FieldError]:
    """ValidateReplicaSet."""
    return workload_errors(rs, _spec_errors)


def replica_set_update_errors(new: ReplicaSet, old: ReplicaSet) -> list[FieldError]:
    """ValidateReplicaSetUpdate, and apps/v1's immutable selector (the strategy's)."""
    return workload_update_errors(new, old, _spec_errors)


def replica_set_status_update_errors(new: ReplicaSet, old: ReplicaSet) -> list[FieldError]:
    """ValidateReplicaSetStatusUpdate: counts non-negative and within their bounds."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    st = new.status
    for name, value in (("replicas", st.replicas),
                        ("fullyLabeledReplicas", st.fully_labeled_replicas),
                        ("readyReplicas", st.ready_replicas),
                        ("availableReplicas", st.available_replicas),
                        ("observedGeneration", st.observed_generation)):
        errs += validate_non_negative(value, f"status.{name}")
    errs += counts_at_most((("fullyLabeledReplicas", st.fully_labeled_replicas),
                            ("readyReplicas", st.ready_replicas),
                            ("availableReplicas", st.available_replicas)),
                           st.replicas, "status.replicas")
    errs += counts_at_most((("availableReplicas", st.available_replicas),),
                           st.ready_replicas, "readyReplicas")
    return errs


def counts_at_most(
    counts: tuple[tuple[str, int], ...], bound: int, bound_name: str
) -> list[FieldError]:
    """A workload status's counts (``(field, value)`` under ``status``) that exceed ``bound``:
    upstream's `cannot be greater than <bound_name>` (each kind names its bound its own way:
    the ReplicaSet says ``readyReplicas``, the StatefulSet ``status.readyReplicas``)."""
    return [invalid(f"status.{name}", value, f"cannot be greater than {bound_name}")
            for name, value in counts if value > bound]


def set_defaults_deployment(d: Deployment) -> Deployment:
    """SetDefaults_Deployment."""
    if d.metadata.namespace == "":
        d.metadata.namespace = "default"
    spec = d.spec
    if spec.replicas is None:
        spec.replicas = 1
    if spec.strategy.type == "":
        spec.strategy.type = ROLLING_UPDATE
    if spec.strategy.type == ROLLING_UPDATE:
        if spec.strategy.rolling_update is None:
            spec.strategy.rolling_update = RollingUpdateDeployment()
        ru = spec.strategy.rolling_update
        if ru.max_unavailable is None:
            ru.max_unavailable = DEFAULT_MAX_UNAVAILABLE
        if ru.max_surge is None:
            ru.max_surge = DEFAULT_MAX_SURGE
    if spec.revision_history_limit is None:
        spec.revision_history_limit = DEFAULT_REVISION_HISTORY_LIMIT
    if spec.progress_deadline_seconds is None:
        spec.progress_deadline_seconds = DEFAULT_PROGRESS_DEADLINE_SECONDS
    set_defaults_pod_template(spec.template)
    return d


_PERCENT = re.compile(r"[0-9]+%")
_ATOI = re.compile(r"[+-]?[0-9]+")


def int_or_percent_value(value: int | str | None) -> int:
    """getIntOrPercentValue, the Deployment's and the DaemonSet's: a valid percentage's
    number, else IntOrString.IntValue() (strconv.Atoi's value, 0 for no integer)."""
    if value is None:
        return 0
    if isinstance(value, str):
        if _PERCENT.fullmatch(value):
            return int(value[:-1])
        return int(value) if _ATOI.fullmatch(value) else 0
    return value


def _strategy_errors(d: Deployment) -> list[FieldError]:
    strategy = d.spec.strategy
    path = "spec.strategy"
    errs: list[FieldError] = []
    if strategy.type == RECREATE:
        if strategy.rolling_update is not None:
            errs.append(forbidden(f"{path}.rollingUpdate",
                                  "may not be specified when strategy `type` is 'Recreate'"))
    elif strategy.type == ROLLING_UPDATE:
        ru = strategy.rolling_update
        if ru is None:
            errs.append(required(f"{path}.rollingUpdate",
                                 "this should be defaulted and never be nil"))
        else:
            rpath = f"{path}.rollingUpdate"
            if ru.max_unavailable is not None:
                errs += validate_positive_int_or_percent(ru.max_unavailable,
                                                         f"{rpath}.maxUnavailable")
            if ru.max_surge is not None:
                errs += validate_positive_int_or_percent(ru.max_surge, f"{rpath}.maxSurge")
            if (int_or_percent_value(ru.max_unavailable) == 0
                    and int_or_percent_value(ru.max_surge) == 0):
                errs.append(invalid(f"{rpath}.maxUnavailable", ru.max_unavailable,
                                    "may not be 0 when `maxSurge` is 0"))
    else:
        errs.append(not_supported(f"{path}.type", strategy.type, (RECREATE, ROLLING_UPDATE)))
    return errs


def _deployment_spec_errors(d: Deployment) -> list[FieldError]:
    spec = d.spec
    errs = validate_non_negative(spec.replicas or 0, "spec.replicas")
    errs += selector_errors(spec.selector, "spec.selector")
    errs += pod_template_errors(spec.template, spec.selector, "spec.template")
    errs += _strategy_errors(d)
    errs += validate_non_negative(spec.min_ready_seconds, "spec.minReadySeconds")
    if spec.revision_history_limit is not None:
        errs += validate_non_negative(spec.revision_history_limit,
                                      "spec.revisionHistoryLimit")
    pds = spec.progress_deadline_seconds
    if pds is not None:
        errs += validate_non_negative(pds, "spec.progressDeadlineSeconds")
        if pds <= spec.min_ready_seconds:
            errs.append(invalid("spec.progressDeadlineSeconds", pds,
                                "must be greater than minReadySeconds"))
    return errs


def deployment_errors(d: Deployment) -> list[FieldError]:
    """ValidateDeployment."""
    return workload_errors(d, _deployment_spec_errors)


def deployment_update_errors(new: Deployment, old: Deployment) -> list[FieldError]:
    """ValidateDeploymentUpdate, and apps/v1's immutable selector (the strategy's)."""
    return workload_update_errors(new, old, _deployment_spec_errors)


def deployment_status_update_errors(new: Deployment, old: Deployment) -> list[FieldError]:
    """ValidateDeploymentStatus: counts non-negative."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    st = new.status
    for name, value in (("observedGeneration", st.observed_generation),
                        ("replicas", st.replicas), ("updatedReplicas", st.updated_replicas),
                        ("readyReplicas", st.ready_replicas),
                        ("availableReplicas", st.available_replicas),
                        ("unavailableReplicas", st.unavailable_replicas)):
        errs += validate_non_negative(value, f"status.{name}")
    return errs
