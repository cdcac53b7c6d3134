"""The object model against upstream's schema: every typed field is upstream's, with a wire
type upstream agrees with; nothing upstream has is lost (pykubelet.api keeps what it does not
type), and pysched's few workload views (pysched.workloads) view real upstream types."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from types import ModuleType
from typing import Any

import pytest

import pysched.workloads
from pykubelet.api import objects, types
from pykubelet.api.machinery.codec import camel, definitions

_JSON_TYPES = {str: "string", int: "integer", bool: "boolean", float: "number"}


def _models(module: ModuleType) -> list[type]:
    return [
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__
        and dataclasses.is_dataclass(cls)
        and "__k8s__" in vars(cls)
    ]


def _wire(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("json", camel(f.name)))


def _upstream_kind(node: dict[str, Any]) -> str:
    if "$ref" in node:
        node = definitions()[node["$ref"].rsplit("/", 1)[-1]]
    if node.get("format") in ("int-or-string", "quantity"):
        return node["format"]
    return str(node.get("type", "object"))


def _our_kind(tp: Any) -> str:
    if typing.get_origin(tp) in (typing.Union, __import__("types").UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if set(args) == {int, str}:
            return "int-or-string"
        tp = args[0]
    if tp in _JSON_TYPES:
        return _JSON_TYPES[tp]
    if hasattr(tp, "__k8s_decode__"):
        return "quantity"
    origin = typing.get_origin(tp)
    if origin is list:
        return "array"
    if origin is dict or dataclasses.is_dataclass(tp):
        return "object"
    return "any"


@pytest.mark.parametrize(
    "cls", [*_models(types), *_models(objects)], ids=lambda c: c.__name__
)
def test_pykubelet_models_are_complete_and_agree_with_upstream(cls: type) -> None:
    upstream = definitions()[vars(cls)["__k8s__"]]
    props = upstream.get("properties", {})
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    bucket = [f for f in fields if f.metadata.get("unmodelled")]
    assert bucket, f"{cls.__name__} keeps no unmodelled fields: it would lose them"
    for f in fields:
        if f.metadata.get("unmodelled"):
            continue
        wire = _wire(f)
        assert wire in props, f"{cls.__name__}.{f.name}: upstream has no field {wire!r}"
        ours, theirs = _our_kind(hints[f.name]), _upstream_kind(props[wire])
        if ours == "any" or "decode" in f.metadata:
            continue
        if theirs == "int-or-string" and ours in ("integer", "string"):
            continue
        assert ours == theirs, f"{cls.__name__}.{f.name}: {ours} here, {theirs} upstream"


@pytest.mark.parametrize("cls", _models(pysched.workloads), ids=lambda c: c.__name__)
def test_pysched_view_names_only_upstream_fields(cls: type) -> None:
    props = definitions()[vars(cls)["__k8s__"]].get("properties", {})
    for f in dataclasses.fields(cls):
        if f.metadata.get("unmodelled"):
            continue  # the bucket (empty: pysched decodes slim)
        assert _wire(f) in props, f"{cls.__name__}.{f.name}: not an upstream field"
