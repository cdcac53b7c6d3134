"""Validation rules written once (issue 25): the In/NotIn/Exists/DoesNotExist values rule of
a label selector's and a node selector's requirements (metav1validation and core validation
say the same), and "a unique DNS label" of volume and container names."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from real_objects import REAL_POD

from pykubelet.api import kinds
from pykubelet.api.machinery.field import FieldError
from pykubelet.api.meta_validation import set_operator_errors
from pykubelet.api.validation import unique_dns_label

IN_EMPTY = "must be specified when `operator` is 'In' or 'NotIn'"
EXISTS_VALUES = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
_NA = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_TSC = "spec.topologySpreadConstraints[0].labelSelector"


@pytest.mark.parametrize(("operator", "values", "expected"), [
    ("In", [], [f"p.values: Required value: {IN_EMPTY}"]),
    ("NotIn", [], [f"p.values: Required value: {IN_EMPTY}"]),
    ("In", ["a"], []),
    ("Exists", ["a"], [f"p.values: Forbidden: {EXISTS_VALUES}"]),
    ("DoesNotExist", [], [])])
def test_set_operator_errors(operator: str, values: list[str], expected: list[str]) -> None:
    assert [str(e) for e in set_operator_errors(operator, values, "p")] == expected


def _pod_errors(path: list[Any], value: Any) -> list[str]:
    doc = copy.deepcopy(REAL_POD)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    pod = kinds.POD.set_defaults(kinds.POD.decode(doc))
    return [str(e) for e in kinds.POD.validate(pod)]


@pytest.mark.parametrize(("operator", "values", "detail"), [
    ("In", [], f"Required value: {IN_EMPTY}"), ("Exists", ["a"], f"Forbidden: {EXISTS_VALUES}")])
def test_label_and_node_selectors_say_the_same(operator: str, values: list[str],
                                               detail: str) -> None:
    expr = {"key": "zone", "operator": operator, "values": values}
    node = _pod_errors(["spec", "affinity", "nodeAffinity"], {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [expr]}]}})
    label = _pod_errors(["spec", "topologySpreadConstraints", 0, "labelSelector"],
                        {"matchExpressions": [expr]})
    assert f"{_NA}.nodeSelectorTerms[0].matchExpressions[0].values: {detail}" in node
    assert f"{_TSC}.matchExpressions[0].values: {detail}" in label


def test_unique_dns_label() -> None:
    seen: set[str] = set()
    assert unique_dns_label("a", "x[0].name", seen) == []
    assert [str(e) for e in unique_dns_label("a", "x[1].name", seen)] == [
        'x[1].name: Duplicate value: "a"']
    assert [str(e) for e in unique_dns_label("", "x[2].name", seen)] == [
        "x[2].name: Required value"]
    errs: list[FieldError] = unique_dns_label("B", "x[3].name", seen)
    assert [e.field for e in errs] == ["x[3].name"]
    assert seen == {"a", "B"}


def test_volume_and_container_names() -> None:
    vol = REAL_POD["spec"]["volumes"][0]["name"]
    errs = _pod_errors(["spec", "volumes"], [*REAL_POD["spec"]["volumes"],
                                             {"name": vol, "emptyDir": {}}])
    n = len(REAL_POD["spec"]["volumes"])
    assert f'spec.volumes[{n}].name: Duplicate value: "{vol}"' in errs
    c = REAL_POD["spec"]["containers"][0]
    errs = _pod_errors(["spec", "containers"], [*REAL_POD["spec"]["containers"], c])
    n = len(REAL_POD["spec"]["containers"])
    assert f'spec.containers[{n}].name: Duplicate value: "{c["name"]}"' in errs
