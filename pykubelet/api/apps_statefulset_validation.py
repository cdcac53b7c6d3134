"""apps/v1 StatefulSet defaults and validation, as pkg/apis/apps/v1/defaults.go
(SetDefaults_StatefulSet) and pkg/apis/apps/validation (ValidateStatefulSet,
ValidateStatefulSetUpdate, ValidateStatefulSetStatus) say them.

One rule is ours: ``spec.volumeClaimTemplates`` is refused (422, naming the field) while the
cluster serves no PersistentVolumeClaims; a set created with them would never get its
storage, so it is better refused than stored and stuck.
"""

from __future__ import annotations

import copy

from pykubelet.api.apps_statefulset import (
    DEFAULT_REVISION_HISTORY_LIMIT,
    DELETE,
    ON_DELETE,
    ORDERED_READY,
    PARALLEL,
    RETAIN,
    ROLLING_UPDATE,
    RollingUpdateStatefulSetStrategy,
    StatefulSet,
    StatefulSetPersistentVolumeClaimRetentionPolicy,
    StatefulSetSpec,
)
from pykubelet.api.apps_validation import (
    counts_at_most,
    pod_template_errors,
    selector_errors,
    set_defaults_pod_template,
)
from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.codec import encode
from pykubelet.api.machinery.field import forbidden, invalid, not_supported, required
from pykubelet.api.machinery.validation import name_is_dns_label, validate_non_negative
from pykubelet.api.meta_validation import (
    validate_object_meta,
    validate_object_meta_update,
    validate_positive_int_or_percent,
)

VOLUME_CLAIM_TEMPLATES_UNSUPPORTED = (
    "volumeClaimTemplates are not supported yet: this cluster has no storage "
    "(PersistentVolumeClaims); use volumes in spec.template.spec instead")
IMMUTABLE_SPEC = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
    "'minReadySeconds' are forbidden")

def set_defaults_stateful_set(sts: StatefulSet) -> StatefulSet:
    """SetDefaults_StatefulSet: OrderedReady, RollingUpdate with partition 0, Retain/Retain,
    one replica, ten revisions of history."""
    if sts.metadata.namespace == "":
        sts.metadata.namespace = "default"
    spec = sts.spec
    if spec.pod_management_policy == "":
        spec.pod_management_policy = ORDERED_READY
    strategy = spec.update_strategy
    if strategy.type == "":
        strategy.type = ROLLING_UPDATE
        if strategy.rolling_update is None:
            strategy.rolling_update = RollingUpdateStatefulSetStrategy()
    ru = strategy.rolling_update
    if strategy.type == ROLLING_UPDATE and ru is not None and ru.partition is None:
        ru.partition = 0
    if spec.persistent_volume_claim_retention_policy is None:
        spec.persistent_volume_claim_retention_policy = (
            StatefulSetPersistentVolumeClaimRetentionPolicy())
    policy = spec.persistent_volume_claim_retention_policy
    if policy.when_deleted == "":
        policy.when_deleted = RETAIN
    if policy.when_scaled == "":
        policy.when_scaled = RETAIN
    if spec.replicas is None:
        spec.replicas = 1
    if spec.revision_history_limit is None:
        spec.revision_history_limit = DEFAULT_REVISION_HISTORY_LIMIT
    set_defaults_pod_template(spec.template)
    return sts


def _strategy_errors(spec: StatefulSetSpec) -> list[FieldError]:
    strategy = spec.update_strategy
    path = "spec.updateStrategy"
    if strategy.type == "":
        return [required(path, "")]
    if strategy.type == ON_DELETE:
        if strategy.rolling_update is not None:
            return [invalid(f"{path}.rollingUpdate", encode(strategy.rolling_update),
                            f"only allowed for updateStrategy '{ROLLING_UPDATE}'")]
        return []
    if strategy.type == ROLLING_UPDATE:
        ru = strategy.rolling_update
        if ru is None:
            return []
        errs: list[FieldError] = []
        if ru.partition is not None:
            errs += validate_non_negative(ru.partition, f"{path}.rollingUpdate.partition")
        if ru.max_unavailable is not None:
            mpath = f"{path}.rollingUpdate.maxUnavailable"
            errs += validate_positive_int_or_percent(ru.max_unavailable, mpath)
            if ru.max_unavailable in (0, "0%"):
                errs.append(invalid(mpath, ru.max_unavailable, "cannot be 0"))
        return errs
    return [invalid(path, encode(strategy),
                    f"must be '{ROLLING_UPDATE}' or '{ON_DELETE}'")]


def _retention_errors(spec: StatefulSetSpec) -> list[FieldError]:
    """ValidatePersistentVolumeClaimRetentionPolicy."""
    policy = spec.persistent_volume_claim_retention_policy
    if policy is None:
        return []
    path = "spec.persistentVolumeClaimRetentionPolicy"
    errs: list[FieldError] = []
    for name, value in (("whenDeleted", policy.when_deleted),
                        ("whenScaled", policy.when_scaled)):
        if value not in (RETAIN, DELETE):
            errs.append(not_supported(f"{path}.{name}", value, (RETAIN, DELETE)))
    return errs


def _spec_errors(spec: StatefulSetSpec) -> list[FieldError]:
    """ValidateStatefulSetSpec, then the refusal of volumeClaimTemplates."""
    errs: list[FieldError] = []
    policy = spec.pod_management_policy
    if policy == "":
        errs.append(required("spec.podManagementPolicy", ""))
    elif policy not in (ORDERED_READY, PARALLEL):
        errs.append(invalid("spec.podManagementPolicy", policy,
                            f"must be '{ORDERED_READY}' or '{PARALLEL}'"))
    errs += _strategy_errors(spec)
    errs += _retention_errors(spec)
    errs += validate_non_negative(spec.replicas or 0, "spec.replicas")
    errs += validate_non_negative(spec.min_ready_seconds, "spec.minReadySeconds")
    if spec.ordinals is not None:
        errs += validate_non_negative(spec.ordinals.start, "spec.ordinals.start")
    errs += selector_errors(spec.selector, "spec.selector", "statefulset")
    errs += pod_template_errors(spec.template, spec.selector, "spec.template", "StatefulSet")
    if spec.unmodelled.get("volumeClaimTemplates"):
        errs.append(forbidden("spec.volumeClaimTemplates", VOLUME_CLAIM_TEMPLATES_UNSUPPORTED))
    return errs


def stateful_set_errors(sts: StatefulSet) -> list[FieldError]:
    """ValidateStatefulSet: the name is a DNS label (it prefixes pod host names)."""
    errs = validate_object_meta(sts.metadata, namespaced=True, name_fn=name_is_dns_label)
    return errs + _spec_errors(sts.spec)


def stateful_set_update_errors(new: StatefulSet, old: StatefulSet) -> list[FieldError]:
    """ValidateStatefulSetUpdate: the spec's rules, and only replicas, ordinals, template,
    updateStrategy, revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and
    minReadySeconds may change."""
    errs = validate_object_meta_update(new.metadata, old.metadata) + _spec_errors(new.spec)
    clone = copy.deepcopy(new.spec)
    for name in ("replicas", "template", "update_strategy", "min_ready_seconds", "ordinals",
                 "revision_history_limit", "persistent_volume_claim_retention_policy"):
        setattr(clone, name, copy.deepcopy(getattr(old.spec, name)))
    if encode(clone) != encode(old.spec):
        errs.append(forbidden("spec", IMMUTABLE_SPEC))
    return errs


def stateful_set_status_update_errors(new: StatefulSet, old: StatefulSet) -> list[FieldError]:
    """ValidateStatefulSetStatusUpdate: counts non-negative, ready/current/updated/available
    within replicas, available within ready, collisionCount never decreasing."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    st = new.status
    counts = (("replicas", st.replicas), ("readyReplicas", st.ready_replicas),
              ("currentReplicas", st.current_replicas),
              ("updatedReplicas", st.updated_replicas),
              ("availableReplicas", st.available_replicas))
    for name, value in (*counts, ("observedGeneration", st.observed_generation)):
        errs += validate_non_negative(value, f"status.{name}")
    if st.collision_count is not None:
        errs += validate_non_negative(st.collision_count, "status.collisionCount")
    errs += counts_at_most(counts[1:], st.replicas, "status.replicas")
    errs += counts_at_most((("availableReplicas", st.available_replicas),),
                           st.ready_replicas, "status.readyReplicas")
    old_count = old.status.collision_count or 0
    if (st.collision_count or 0) < old_count:
        errs.append(invalid("status.collisionCount", st.collision_count,
                            "cannot be decremented"))
    return errs
