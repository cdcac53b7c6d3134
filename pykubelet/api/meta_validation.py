"""ObjectMeta rules every kind shares, on create and on update (upstream's
apimachinery/pkg/api/validation/objectmeta.go), plus label selectors and int-or-percent values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from pykubelet.api.machinery.field import (
    FieldError,
    forbidden,
    go_quote,
    invalid,
    required,
)
from pykubelet.api.machinery.labels import (
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_IN,
    OP_NOT_IN,
    RequirementError,
    label_selector_as_selector,
)
from pykubelet.api.machinery.validation import (
    is_dns1123_label,
    is_valid_label_value,
    regex_error,
    validate_annotations,
    validate_finalizers,
    validate_label_name,
    validate_labels,
    validate_non_negative,
)
from pykubelet.api.types import LabelSelector, ObjectMeta, OwnerReference

NameFn = Callable[[str, bool], list[str]]
FIELD_IMMUTABLE = "field is immutable"
_BANNED_OWNER = "/v1, Kind=Event is disallowed from being an owner"
_RV_FOR_UPDATE = "must be specified for an update"

_PERCENT_FMT = "[0-9]+%"
_PERCENT_RE = re.compile(f"^{_PERCENT_FMT}$")
_PERCENT_ERROR = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'",
    _PERCENT_FMT,
    "1%",
    "93%",
)


def validate_owner_references(refs: list[OwnerReference], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    controller = ""
    for ref in refs:
        version = ref.api_version.rsplit("/", 1)[-1] if ref.api_version else ""
        if not version:
            errs.append(invalid(f"{path}.apiVersion", ref.api_version, "version must not be empty"))
        if not ref.kind:
            errs.append(invalid(f"{path}.kind", ref.kind, "must not be empty"))
        if not ref.name:
            errs.append(invalid(f"{path}.name", ref.name, "must not be empty"))
        if not ref.uid:
            errs.append(invalid(f"{path}.uid", ref.uid, "must not be empty"))
        if ref.api_version == "v1" and ref.kind == "Event":
            errs.append(invalid(path, ref.name, _BANNED_OWNER))
        if ref.controller:
            current = f"{ref.kind}/{ref.name}"
            if controller:
                errs.append(
                    invalid(
                        path,
                        [r.name for r in refs],
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {controller} and {current}",
                    )
                )
            else:
                controller = current
    return errs


def validate_object_meta(
    meta: ObjectMeta, *, namespaced: bool, name_fn: NameFn, path: str = "metadata"
) -> list[FieldError]:
    """ValidateObjectMeta: a create's metadata (name generation already done)."""
    errs: list[FieldError] = []
    if meta.generate_name:
        errs += [
            invalid(f"{path}.generateName", meta.generate_name, m)
            for m in name_fn(meta.generate_name, True)
        ]
    if not meta.name:
        errs.append(required(f"{path}.name", "name or generateName is required"))
    else:
        errs += [invalid(f"{path}.name", meta.name, m) for m in name_fn(meta.name, False)]
    errs += _common(meta, namespaced=namespaced, path=path)
    return errs


def _common(meta: ObjectMeta, *, namespaced: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if namespaced:
        if not meta.namespace:
            errs.append(required(f"{path}.namespace"))
        else:
            errs += [
                invalid(f"{path}.namespace", meta.namespace, m)
                for m in is_dns1123_label(meta.namespace)
            ]
    elif meta.namespace:
        errs.append(forbidden(f"{path}.namespace", "not allowed on this type"))
    errs += validate_non_negative(meta.generation, f"{path}.generation")
    errs += validate_labels(meta.labels, f"{path}.labels")
    errs += validate_annotations(meta.annotations, f"{path}.annotations")
    errs += validate_owner_references(meta.owner_references, f"{path}.ownerReferences")
    errs += validate_finalizers(meta.finalizers, f"{path}.finalizers")
    if "orphan" in meta.finalizers and "foregroundDeletion" in meta.finalizers:
        errs.append(
            invalid(
                f"{path}.finalizers",
                meta.finalizers,
                "finalizer orphan and foregroundDeletion cannot be both set",
            )
        )
    return errs


def validate_immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    """ValidateImmutableField: `field is immutable` when the value changed."""
    return [] if new == old else [invalid(path, new, FIELD_IMMUTABLE)]


def _go_strings(values: list[str]) -> str:
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def validate_object_meta_update(
    new: ObjectMeta, old: ObjectMeta, path: str = "metadata"
) -> list[FieldError]:
    """ValidateObjectMetaUpdate: identity fields are immutable; labels and the rest valid."""
    errs: list[FieldError] = []
    if old.deletion_timestamp is not None:
        added = sorted(set(new.finalizers) - set(old.finalizers))
        if added:
            errs.append(
                forbidden(
                    f"{path}.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {_go_strings(added)}",
                )
            )
    if not new.resource_version:
        errs.append(
            invalid(f"{path}.resourceVersion", new.resource_version, _RV_FOR_UPDATE)
        )
    if new.generation < old.generation:
        errs.append(invalid(f"{path}.generation", new.generation, "must not be decremented"))
    for attr, wire in (
        ("name", "name"),
        ("namespace", "namespace"),
        ("uid", "uid"),
        ("creation_timestamp", "creationTimestamp"),
        ("deletion_timestamp", "deletionTimestamp"),
        ("deletion_grace_period_seconds", "deletionGracePeriodSeconds"),
    ):
        errs += validate_immutable(getattr(new, attr), getattr(old, attr), f"{path}.{wire}")
    errs += validate_labels(new.labels, f"{path}.labels")
    errs += validate_annotations(new.annotations, f"{path}.annotations")
    errs += validate_owner_references(new.owner_references, f"{path}.ownerReferences")
    errs += validate_finalizers(new.finalizers, f"{path}.finalizers")
    return errs


# --------------------------------------------------------------------------- selectors


SET_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def set_operator_errors(operator: str, values: Sequence[str], path: str) -> list[FieldError]:
    """The values rule of a set-based requirement, a label selector's as a node selector's
    (ValidateLabelSelectorRequirement, ValidateNodeSelectorRequirement): In and NotIn need
    values, Exists and DoesNotExist take none. ``path`` is the requirement's."""
    if operator in ("In", "NotIn") and not values:
        return [required(f"{path}.values",
                         "must be specified when `operator` is 'In' or 'NotIn'")]
    if operator in ("Exists", "DoesNotExist") and values:
        return [forbidden(f"{path}.values",
                          "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")]
    return []


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """metav1validation.ValidateLabelSelector (any object with match_labels and
    match_expressions of key/operator/values)."""
    if selector is None:
        return []
    errs = validate_labels(selector.match_labels, f"{path}.matchLabels")
    for i, expr in enumerate(selector.match_expressions):
        p = f"{path}.matchExpressions[{i}]"
        if expr.operator in SET_OPERATORS:
            errs += set_operator_errors(expr.operator, expr.values, p)
        else:
            errs.append(invalid(f"{p}.operator", expr.operator, "not a valid selector operator"))
        errs += validate_label_name(expr.key, f"{p}.key")
        for j, value in enumerate(expr.values):
            errs += [invalid(f"{p}.values[{j}]", value, m) for m in is_valid_label_value(value)]
    return errs


def selector_matches(selector: LabelSelector, labels: dict[str, str]) -> bool:
    """``err == nil && selector.Matches(labels)`` of metav1.LabelSelectorAsSelector, as the
    workload validators ask it: a selector that does not convert (an operator of no label
    selector, In without values) is the selector's own error, not a mismatch."""
    exprs = [(e.key, e.operator, e.values) for e in selector.match_expressions]
    if any(op not in (OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST) for _, op, _ in exprs):
        return True
    try:
        return label_selector_as_selector(selector.match_labels, exprs).matches(labels)
    except RequirementError:
        return True


class _Shown:
    """An IntOrString as Go prints it (its String(): no quotes)."""

    def __init__(self, value: int | str) -> None:
        self.value = value

    def __str__(self) -> str:
        return str(self.value)


def validate_positive_int_or_percent(value: int | str, path: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent plus IsNotMoreThan100Percent."""
    if isinstance(value, str):
        if not _PERCENT_RE.match(value):
            return [invalid(path, _Shown(value), _PERCENT_ERROR)]
        if int(value[:-1]) > 100:
            return [invalid(path, _Shown(value), "must not be greater than 100%")]
        return []
    return validate_non_negative(value, path)
