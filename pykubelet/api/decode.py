"""Strict decoding of API objects from plain dicts (JSON/YAML) and encoding back.

The decoder walks the dataclasses of `types.py` by their type hints. Every unknown
or ill-typed field is an error naming its path the way kubectl prints it
(`spec.containers[0].resources.limits.cpu: invalid quantity "abc"`). A JSON null is
read as "unset", as Go's decoder does. Encoding produces camelCase dicts fit for
json.dumps / yaml.safe_dump, leaving out empty fields (see types.py for the rule).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pykubelet.api.errors import DecodeError
from pykubelet.api.quantity import Quantity, QuantityError
from pykubelet.api.types import Pod

T = TypeVar("T")

_PRIMITIVE_NAMES = {str: "string", int: "integer", bool: "boolean", float: "number"}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclasses.dataclass(frozen=True)
class _FieldInfo:
    attr: str
    wire: str
    type: Any
    keep: bool
    optional: bool


@functools.cache
def _fields(cls: type) -> tuple[_FieldInfo, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        out.append(
            _FieldInfo(
                attr=f.name,
                wire=f.metadata.get("json", camel(f.name)),
                type=tp,
                keep=bool(f.metadata.get("keep")),
                optional=_is_optional(tp),
            )
        )
    return tuple(out)


@functools.cache
def _wire_index(cls: type) -> dict[str, _FieldInfo]:
    return {f.wire: f for f in _fields(cls)}


def _is_optional(tp: Any) -> bool:
    return _is_union(tp) and type(None) in typing.get_args(tp)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def decode_value(tp: Any, value: Any, path: str) -> Any:
    """Decode `value` as type `tp`, raising DecodeError naming `path`."""
    if tp is Any:
        return value
    if _is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            if len(args) != len(typing.get_args(tp)):
                return None
            raise DecodeError(path, "must not be null")
        if len(args) == 1:
            return decode_value(args[0], value, path)
        # IntOrString
        if set(args) == {int, str}:
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                return value
            raise DecodeError(path, f"expected an integer or a string, got {_describe(value)}")
        raise TypeError(f"unsupported union {tp}")  # pragma: no cover - a types.py bug
    if tp is Quantity:
        try:
            return Quantity.parse(value)
        except QuantityError as exc:
            raise DecodeError(path, str(exc)) from None
    if tp in _PRIMITIVE_NAMES:
        return _decode_primitive(tp, value, path)
    origin = typing.get_origin(tp)
    if origin is list:
        (item_tp,) = typing.get_args(tp)
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise DecodeError(path, f"expected an array, got {_describe(value)}")
        return [decode_value(item_tp, item, f"{path}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        _key_tp, item_tp = typing.get_args(tp)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise DecodeError(path, f"expected an object, got {_describe(value)}")
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise DecodeError(path, f"expected string keys, got {key!r}")
            out[key] = decode_value(item_tp, item, _join(path, key))
        return out
    if dataclasses.is_dataclass(tp):
        return decode_object(tp, value, path)
    raise TypeError(f"unsupported type {tp}")  # pragma: no cover - a types.py bug


def _decode_primitive(tp: type, value: Any, path: str) -> Any:
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif isinstance(value, tp):
        return value
    raise DecodeError(path, f"expected {_PRIMITIVE_NAMES[tp]}, got {_describe(value)}")


def decode_object(cls: type[T], value: Any, path: str = "") -> T:
    """Decode a mapping into the dataclass `cls`; unknown keys are errors."""
    if value is None:
        return cls()
    if not isinstance(value, Mapping):
        raise DecodeError(path, f"expected an object, got {_describe(value)}")
    index = _wire_index(cls)
    kwargs = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise DecodeError(path, f"expected string keys, got {key!r}")
        info = index.get(key)
        if info is None:
            raise DecodeError(_join(path, key), "unknown field")
        decoded = decode_value(info.type, item, _join(path, key))
        if decoded is None and not info.optional:
            continue  # null on a plain field: leave the default, as Go does
        kwargs[info.attr] = decoded
    return cls(**kwargs)


def decode_pod(value: Any) -> Pod:
    """Decode a v1 Pod. `apiVersion`/`kind`, when given, must be `v1`/`Pod`."""
    if not isinstance(value, Mapping):
        raise DecodeError("", f"expected a Pod object, got {_describe(value)}")
    kind = value.get("kind", "Pod")
    if kind != "Pod":
        raise DecodeError("kind", f'expected "Pod", got {kind!r}')
    api_version = value.get("apiVersion", "v1")
    if api_version != "v1":
        raise DecodeError("apiVersion", f'expected "v1", got {api_version!r}')
    return decode_object(Pod, value)


# --------------------------------------------------------------------------- encoding


def encode(obj: Any) -> Any:
    """Encode a dataclass (or list/dict of them) to plain camelCase data."""
    if isinstance(obj, Quantity):
        return obj.text
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for info in _fields(type(obj)):
            value = getattr(obj, info.attr)
            if value is None:
                continue
            encoded = encode(value)
            if not info.keep and not info.optional and _is_zero(encoded):
                continue
            out[info.wire] = encoded
        return out
    if isinstance(obj, list | tuple):
        return [encode(item) for item in obj]
    if isinstance(obj, Mapping):
        return {key: encode(item) for key, item in obj.items()}
    return obj


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False, None) or value == [] or value == {}


def encode_pod(pod: Pod) -> dict[str, Any]:
    encoded = encode(pod)
    if not encoded.get("status"):
        encoded.pop("status", None)
    return encoded
