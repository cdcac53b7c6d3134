"""Custom resources' schemas: validation in kube-openapi's words (as apiextensions turns
them into field errors), pruning of unknown fields, defaulting."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.controlplane.apiextensions.schema import default, prune, validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
                "size": {"type": "string", "enum": ["small", "large"]},
                "name": {"type": "string", "maxLength": 5, "minLength": 2,
                         "pattern": "^[a-z]+$"},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "ports": {"type": "array", "maxItems": 2, "minItems": 1,
                          "items": {"type": "integer"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
                "mode": {"type": "object", "default": {},
                         "properties": {"kind": {"type": "string", "default": "auto"}}},
            },
        },
    },
}


def messages(value: Any) -> list[str]:
    return [str(e) for e in validate(value, SCHEMA)]


@pytest.mark.parametrize(("spec", "want"), [
    ({"size": "small", "replicas": 3}, []),
    ({"size": "small", "replicas": "three"},
     ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
      'integer: "string"']),
    ({"size": "small", "replicas": 0},
     ["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or "
      "equal to 1"]),
    ({"size": "small", "replicas": 6},
     ["spec.replicas: Invalid value: 6: spec.replicas in body should be less than or equal "
      "to 5"]),
    ({}, ["spec.size: Required value"]),
    ({"size": "medium"},
     ['spec.size: Unsupported value: "medium": supported values: "small", "large"']),
    ({"size": "small", "name": "abcdef"},
     ['spec.name: Too long: may not be longer than 5']),
    ({"size": "small", "name": "a"},
     ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long']),
    ({"size": "small", "name": "AB"},
     ["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"]),
    ({"size": "small", "ratio": 0},
     ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]),
    ({"size": "small", "ports": [1, 2, 3]},
     ["spec.ports: Too many: 3: must have at most 2 items"]),
    ({"size": "small", "ports": []},
     ["spec.ports: Invalid value: 0: spec.ports in body should have at least 1 items"]),
    ({"size": "small", "ports": [1, "x"]},
     ['spec.ports.1: Invalid value: "string": spec.ports.1 in body must be of type integer: '
      '"string"']),
    ({"size": "small", "labels": {"a": 1}},
     ['spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: '
      '"integer"']),
    ({"size": "small", "port": 80}, []),
    ({"size": "small", "port": "http"}, []),
    ({"size": "small", "port": True},
     ['spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: '
      '"boolean"']),
    ({"size": "small", "note": None}, []),
    ({"size": None},
     ['spec.size: Invalid value: "null": spec.size in body must be of type string: "null"']),
    ({"size": "small", "template": {"spec": {}}},
     ["spec.template.apiVersion: Required value: must not be empty",
      "spec.template.kind: Required value: must not be empty"]),
])
def test_validation_messages(spec: dict[str, Any], want: list[str]) -> None:
    assert messages({"spec": spec}) == want


def test_a_float_that_is_whole_is_an_integer() -> None:
    assert messages({"spec": {"size": "small", "replicas": 2.0}}) == []


def test_pruning_drops_what_the_schema_does_not_name() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": "small", "colour": "red", "free": {"any": {"thing": 1}},
                 "labels": {"x": "y"},
                 "template": {"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": "p", "bogus": 1}, "spec": {"a": 1}}},
        "extra": True,
    }
    dropped = prune(obj, SCHEMA)
    assert sorted(dropped) == ["extra", "spec.colour", "spec.template.metadata.bogus"]
    assert obj["spec"]["free"] == {"any": {"thing": 1}}
    assert obj["spec"]["labels"] == {"x": "y"}
    assert obj["spec"]["template"] == {"apiVersion": "v1", "kind": "Pod",
                                       "metadata": {"name": "p"}, "spec": {"a": 1}}
    assert obj["metadata"] == {"name": "w"}
    assert "extra" not in obj


def test_pruning_inside_array_items() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"a": {"type": "string"}}}}}}
    obj: dict[str, Any] = {"items": [{"a": "x", "b": 1}]}
    assert prune(obj, schema) == ["items[0].b"]
    assert obj == {"items": [{"a": "x"}]}


def test_defaulting_fills_missing_properties_at_every_depth() -> None:
    obj: dict[str, Any] = {"spec": {"size": "small"}}
    default(obj, SCHEMA)
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["mode"] == {"kind": "auto"}
    kept: dict[str, Any] = {"spec": {"size": "small", "replicas": 4, "mode": {"kind": "x"}}}
    default(kept, SCHEMA)
    assert kept["spec"]["replicas"] == 4
    assert kept["spec"]["mode"] == {"kind": "x"}


def test_defaults_are_copies() -> None:
    a: dict[str, Any] = {"spec": {}}
    b: dict[str, Any] = {"spec": {}}
    default(a, SCHEMA)
    default(b, SCHEMA)
    a["spec"]["mode"]["kind"] = "changed"
    assert b["spec"]["mode"] == {"kind": "auto"}
