"""apps/v1 DaemonSet defaults and validation, as pkg/apis/apps/v1/defaults.go
(SetDefaults_DaemonSet: RollingUpdate with maxUnavailable 1 and maxSurge 0,
revisionHistoryLimit 10) and pkg/apis/apps/validation (ValidateDaemonSet,
ValidateDaemonSetUpdate, ValidateDaemonSetStatusUpdate) say them, plus apps/v1's immutable
selector (daemonSetStrategy.ValidateUpdate)."""

from __future__ import annotations

from pykubelet.api.apps_validation import (
    int_or_percent_value,
    set_defaults_pod_template,
    workload_errors,
    workload_template_errors,
    workload_update_errors,
)
from pykubelet.api.daemonset import (
    DEFAULT_MAX_SURGE,
    DEFAULT_MAX_UNAVAILABLE,
    DEFAULT_REVISION_HISTORY_LIMIT,
    ON_DELETE,
    ROLLING_UPDATE,
    DaemonSet,
    DaemonSetUpdateStrategy,
    RollingUpdateDaemonSet,
)
from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.codec import encode
from pykubelet.api.machinery.field import invalid, not_supported, required
from pykubelet.api.machinery.validation import validate_non_negative
from pykubelet.api.meta_validation import (
    selector_matches,
    validate_label_selector,
    validate_object_meta_update,
    validate_positive_int_or_percent,
)


def set_defaults_daemon_set(ds: DaemonSet) -> DaemonSet:
    """SetDefaults_DaemonSet (and the pod template's defaults)."""
    if ds.metadata.namespace == "":
        ds.metadata.namespace = "default"
    strategy = ds.spec.update_strategy
    if strategy.type == "":
        strategy.type = ROLLING_UPDATE
    if strategy.type == ROLLING_UPDATE:
        if strategy.rolling_update is None:
            strategy.rolling_update = RollingUpdateDaemonSet()
        if strategy.rolling_update.max_unavailable is None:
            strategy.rolling_update.max_unavailable = DEFAULT_MAX_UNAVAILABLE
        if strategy.rolling_update.max_surge is None:
            strategy.rolling_update.max_surge = DEFAULT_MAX_SURGE
    if ds.spec.revision_history_limit is None:
        ds.spec.revision_history_limit = DEFAULT_REVISION_HISTORY_LIMIT
    set_defaults_pod_template(ds.spec.template)
    return ds


def _rolling_update_errors(ru: RollingUpdateDaemonSet, path: str) -> list[FieldError]:
    """ValidateRollingUpdateDaemonSet: each an int or percent, at most 100%, and exactly
    one of the two non-zero."""
    unavailable = ru.max_unavailable if ru.max_unavailable is not None else 0
    surge = ru.max_surge if ru.max_surge is not None else 0
    errs = validate_positive_int_or_percent(unavailable, f"{path}.maxUnavailable")
    errs += validate_positive_int_or_percent(surge, f"{path}.maxSurge")
    has_unavailable = int_or_percent_value(unavailable) != 0
    has_surge = int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        errs.append(invalid(f"{path}.maxSurge", surge,
                            "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        errs.append(required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return errs


def _update_strategy_errors(strategy: DaemonSetUpdateStrategy, path: str) -> list[FieldError]:
    """ValidateDaemonSetUpdateStrategy."""
    if strategy.type == ON_DELETE:
        return []
    if strategy.type == ROLLING_UPDATE:
        if strategy.rolling_update is None:
            return [required(f"{path}.rollingUpdate", "")]
        return _rolling_update_errors(strategy.rolling_update, f"{path}.rollingUpdate")
    return [not_supported(f"{path}.type", strategy.type, (ROLLING_UPDATE, ON_DELETE))]


def _spec_errors(ds: DaemonSet) -> list[FieldError]:
    """ValidateDaemonSetSpec."""
    spec = ds.spec
    errs: list[FieldError] = []
    selector = spec.selector
    if selector is None:
        errs.append(required("spec.selector", ""))
    else:
        errs += validate_label_selector(selector, "spec.selector")
    labels = spec.template.metadata.labels
    # LabelSelectorAsSelector: no selector selects nothing, an empty one everything
    if selector is None or ((selector.match_labels or selector.match_expressions)
                            and not selector_matches(selector, labels)):
        errs.append(invalid("spec.template.metadata.labels", labels,
                            "`selector` does not match template `labels`"))
    if selector is not None and not (selector.match_labels or selector.match_expressions):
        errs.append(invalid("spec.selector", encode(selector),
                            "empty selector is invalid for daemonset"))
    errs += workload_template_errors(spec.template, "spec.template", "DaemonSet")
    errs += validate_non_negative(spec.min_ready_seconds, "spec.minReadySeconds")
    errs += _update_strategy_errors(spec.update_strategy, "spec.updateStrategy")
    if spec.revision_history_limit is not None:
        errs += validate_non_negative(spec.revision_history_limit, "spec.revisionHistoryLimit")
    return errs


def daemon_set_errors(ds: DaemonSet) -> list[FieldError]:
    """ValidateDaemonSet."""
    return workload_errors(ds, _spec_errors)


def daemon_set_update_errors(new: DaemonSet, old: DaemonSet) -> list[FieldError]:
    """ValidateDaemonSetUpdate, and apps/v1's immutable selector."""
    return workload_update_errors(new, old, _spec_errors)


def daemon_set_status_update_errors(new: DaemonSet, old: DaemonSet) -> list[FieldError]:
    """ValidateDaemonSetStatusUpdate: counts non-negative, collisionCount never lowered."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    st = new.status
    for name, value in (("currentNumberScheduled", st.current_number_scheduled),
                        ("numberMisscheduled", st.number_misscheduled),
                        ("desiredNumberScheduled", st.desired_number_scheduled),
                        ("numberReady", st.number_ready),
                        ("observedGeneration", st.observed_generation),
                        ("updatedNumberScheduled", st.updated_number_scheduled),
                        ("numberAvailable", st.number_available),
                        ("numberUnavailable", st.number_unavailable)):
        errs += validate_non_negative(value, f"status.{name}")
    if st.collision_count is not None:
        errs += validate_non_negative(st.collision_count, "status.collisionCount")
    old_count = old.status.collision_count
    if old_count is not None and (st.collision_count is None or st.collision_count < old_count):
        errs.append(invalid("status.collisionCount", st.collision_count or 0,
                            "cannot be decremented"))
    return errs
