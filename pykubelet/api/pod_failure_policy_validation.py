"""A Job's ``spec.podFailurePolicy`` checked as pkg/apis/batch/validation does
(validatePodFailurePolicy and its rules), with upstream's field paths and words: at most 20
rules; an action of Count, FailIndex (only with backoffLimitPerIndex), FailJob or Ignore;
exactly one of onExitCodes (operator In or NotIn, a container of the template, 1 to 255
values, ordered, unique, no 0 for In) and onPodConditions (at most 20 patterns, a qualified
condition type, status True, False or Unknown); the template's restartPolicy Never and the
podReplacementPolicy Failed. The policy is kept as it came (``unmodelled``), so this reads
it as the wire dict."""

from __future__ import annotations

import itertools
from typing import Any

from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.field import (
    OMIT,
    duplicate,
    invalid,
    not_supported,
    required,
    too_many,
)
from pykubelet.api.machinery.validation import is_qualified_name

MAX_RULES = 20
MAX_ON_PODS_CONDITIONS = 20
MAX_EXIT_CODE_VALUES = 255
ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
OPERATORS = ("In", "NotIn")
STATUSES = ("False", "True", "Unknown")


class Int32Slice:
    """A []int32 bad value, shown as Go's %#v shows it (``[]int32{3, 2}``)."""

    def __init__(self, values: list[int]) -> None:
        self.values = tuple(values)

    def __str__(self) -> str:
        return "[]int32{" + ", ".join(str(v) for v in self.values) + "}"


def pod_failure_policy_errors(policy: dict[str, Any], container_names: set[str],
                              restart_policy: str, replacement: str | None,
                              backoff_limit_per_index: Any = None) -> list[FieldError]:
    """The errors of ``policy`` for a Job whose template has ``container_names`` (app and
    init) and ``restart_policy``, with ``replacement`` as its podReplacementPolicy."""
    errs: list[FieldError] = []
    if restart_policy == "OnFailure":  # another one is refused already (Always, "")
        errs.append(invalid("spec.template.spec.restartPolicy", restart_policy,
                            'only "Never" is supported when podFailurePolicy is specified'))
    if replacement is not None and replacement != "Failed":
        errs.append(not_supported("spec.podReplacementPolicy", replacement, ("Failed",)))
    rules = policy.get("rules") or []
    path = "spec.podFailurePolicy.rules"
    if len(rules) > MAX_RULES:
        errs.append(too_many(path, len(rules), MAX_RULES))
    for i, rule in enumerate(rules):
        errs += _rule_errors(rule, f"{path}[{i}]", container_names, backoff_limit_per_index)
    return errs


def _rule_errors(rule: dict[str, Any], path: str, names: set[str],
                 backoff_limit_per_index: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    action = rule.get("action") or ""
    if not action:
        errs.append(required(f"{path}.action", "valid values: " + _go_list(ACTIONS)))
    elif action == "FailIndex":
        if backoff_limit_per_index is None:
            errs.append(invalid(f"{path}.action", action,
                                "requires the backoffLimitPerIndex to be set"))
    elif action not in ACTIONS:
        errs.append(not_supported(f"{path}.action", action, ACTIONS))
    on_codes, on_conds = rule.get("onExitCodes"), rule.get("onPodConditions") or []
    if on_codes is not None:
        errs += _exit_code_errors(on_codes, f"{path}.onExitCodes", names)
    if on_conds:
        errs += _condition_errors(on_conds, f"{path}.onPodConditions")
    if on_codes is not None and on_conds:
        errs.append(invalid(path, OMIT, "specifying both OnExitCodes and OnPodConditions is "
                                        "not supported"))
    if on_codes is None and not on_conds:
        errs.append(invalid(path, OMIT, "specifying one of OnExitCodes and OnPodConditions is "
                                        "required"))
    return errs


def _exit_code_errors(req: dict[str, Any], path: str, names: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    op = req.get("operator") or ""
    if not op:
        errs.append(required(f"{path}.operator", "valid values: " + _go_list(OPERATORS)))
    elif op not in OPERATORS:
        errs.append(not_supported(f"{path}.operator", op, OPERATORS))
    name = req.get("containerName")
    if name is not None and name not in names:
        errs.append(invalid(f"{path}.containerName", name, "must be one of the container or "
                                                          "initContainer names in the pod "
                                                          "template"))
    values = list(req.get("values") or [])
    if not values:
        errs.append(invalid(f"{path}.values", Int32Slice(values),
                            "at least one value is required"))
    elif len(values) > MAX_EXIT_CODE_VALUES:
        errs.append(too_many(f"{path}.values", len(values), MAX_EXIT_CODE_VALUES))
    seen: set[int] = set()
    for j, value in enumerate(values):
        if op == "In" and value == 0:
            errs.append(invalid(f"{path}.values[{j}]", value, "must not be 0 for the In "
                                                              "operator"))
        if value in seen:
            errs.append(duplicate(f"{path}.values[{j}]", value))
        seen.add(value)
    if any(a > b for a, b in itertools.pairwise(values)):
        errs.append(invalid(f"{path}.values", Int32Slice(values), "must be ordered"))
    return errs


def _condition_errors(patterns: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(patterns) > MAX_ON_PODS_CONDITIONS:
        errs.append(too_many(path, len(patterns), MAX_ON_PODS_CONDITIONS))
    for j, pattern in enumerate(patterns):
        kind = pattern.get("type") or ""
        errs += [invalid(f"{path}[{j}].type", kind, msg) for msg in is_qualified_name(kind)]
        status = pattern.get("status") or ""
        if not status:
            errs.append(required(f"{path}[{j}].status", "valid values: " + _go_list(STATUSES)))
        elif status not in STATUSES:
            errs.append(not_supported(f"{path}[{j}].status", status, STATUSES))
    return errs


def _go_list(values: tuple[str, ...]) -> str:
    """fmt's %q of a []string: ["a" "b"]."""
    return "[" + " ".join(f'"{v}"' for v in values) + "]"
