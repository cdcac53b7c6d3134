"""A CustomResourceDefinition's own rules in upstream's words (pure: no API), its
defaults, and the printer columns' JSONPath."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from pykubelet.api.types import ObjectMeta
from pykubelet.controlplane.apiextensions.customresources import json_path, printer
from pykubelet.controlplane.apiextensions.validation import set_defaults, validate

GOOD: dict[str, Any] = {
    "spec": {
        "group": "stable.example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                          "spec": {"type": "object", "properties": {
                              "n": {"type": "integer"},
                              "list": {"type": "array", "items": {"type": "string"}},
                              "port": {"x-kubernetes-int-or-string": True}}}}}}}],
    },
}


def errors_of(change: Any, name: str = "") -> list[str]:
    """The errors of GOOD once changed, named plural.group unless ``name`` is given."""
    crd = copy.deepcopy(GOOD)
    change(crd)
    set_defaults(crd)
    spec = crd["spec"]
    name = name or f"{spec['names']['plural']}.{spec['group'] or 'stable.example.com'}"
    return [str(e) for e in validate(crd, ObjectMeta(name=name))]


def test_a_good_definition_and_its_defaults() -> None:
    crd = copy.deepcopy(GOOD)
    set_defaults(crd)
    assert crd["spec"]["names"]["singular"] == "widget"
    assert crd["spec"]["names"]["listKind"] == "WidgetList"
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert validate(crd, ObjectMeta(name="widgets.stable.example.com")) == []


@pytest.mark.parametrize(("change", "want"), [
    (lambda c: None, []),
    (lambda c: c["spec"].update(group="example"),
     ['spec.group: Invalid value: "example": should be a domain with at least one dot']),
    (lambda c: c["spec"].update(group=""),
     ['metadata.name: Invalid value: "widgets.stable.example.com": must be '
      'spec.names.plural+"."+spec.group', "spec.group: Required value"]),
    (lambda c: c["spec"]["names"].update(plural="Widgets"),
     ['spec.names.plural: Invalid value: "Widgets": a DNS-1035 label must consist of lower '
      "case alphanumeric characters or '-', start with an alphabetic character, and end "
      "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
      "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    (lambda c: c["spec"]["versions"].append(copy.deepcopy(c["spec"]["versions"][0])),
     ['spec.versions: Invalid value: ["v1", "v1"]: must have exactly one version '
      "marked as storage version",
      'spec.versions[1].name: Invalid value: "v1": must be unique']),
    (lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"].update(type="string"),
     ['spec.versions[0].schema.openAPIV3Schema.type: Invalid value: "string": must be '
      "object at the root"]),
    (lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["list"].pop("items"),
     ["spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list].items: "
      "Required value: must be specified"]),
    (lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["port"].update(type="string"),
     ['spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[port].type: '
      'Invalid value: "string": must be empty if x-kubernetes-int-or-string is true']),
    (lambda c: c["spec"]["versions"][0].update(additionalPrinterColumns=[
        {"name": "X", "type": "float", "jsonPath": ".spec.n"}]),
     ['spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "float": '
      'supported values: "integer", "number", "string", "boolean", "date"']),
])
def test_definition_errors(change: Any, want: list[str]) -> None:
    assert [e for e in errors_of(change) if not e.startswith("metadata.name: Invalid value: "
                                                             '"Widgets')] == want


def test_the_name_must_be_plural_dot_group() -> None:
    assert errors_of(lambda c: None, "gadgets.stable.example.com") == [
        'metadata.name: Invalid value: "gadgets.stable.example.com": must be '
        'spec.names.plural+"."+spec.group']


OBJ = {"metadata": {"name": "w", "creationTimestamp": "2026-12-04T00:00:00Z"},
       "spec": {"n": 3, "list": ["a", "b"]},
       "status": {"conditions": [{"type": "Ready", "status": "True"},
                                 {"type": "Synced", "status": "False"}]}}


@pytest.mark.parametrize(("path", "want"), [
    (".spec.n", [3]),
    ("{.spec.n}", [3]),
    (".spec.list[1]", ["b"]),
    (".spec.missing", []),
    ('.status.conditions[?(@.type=="Synced")].status', ["False"]),
])
def test_json_path(path: str, want: list[Any]) -> None:
    assert json_path(OBJ, path) == want


def test_printer_cells_by_type() -> None:
    columns, cells = printer([
        {"name": "N", "type": "integer", "jsonPath": ".spec.n"},
        {"name": "List", "type": "string", "jsonPath": ".spec.list"},
        {"name": "Ready", "type": "string",
         "jsonPath": '.status.conditions[?(@.type=="Ready")].status', "priority": 1},
        {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ])
    assert [c["name"] for c in columns] == ["Name", "N", "List", "Ready", "Missing", "Age"]
    assert columns[3]["priority"] == 1
    now = dt.datetime(2026, 12, 4, 0, 5, tzinfo=dt.UTC)
    assert cells(OBJ, now) == ["w", 3, '["a","b"]', "True", None, "5m"]
    default_columns, _ = printer([])
    assert [c["name"] for c in default_columns] == ["Name", "Age"]
