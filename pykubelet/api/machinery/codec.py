"""The walker: Kubernetes JSON into typed dataclasses and back, strict in one way for everyone.

A model is a dataclass whose attributes are snake_case and whose wire names are camelCase
(`restart_policy` <-> `restartPolicy`, or the field's `json` metadata, `pod_ip` <-> `podIP`).
A class names the upstream type it views with a class attribute, `__k8s__ =
"io.k8s.api.core.v1.PodSpec"`; upstream's schema of that type (definitions.json, generated
from Kubernetes' OpenAPI) then says which other fields exist. A field upstream has and the
class does not model is still checked against that schema, then either kept verbatim in the
class's `unmodelled()` bucket (pykubelet.api's complete model: nothing is lost on the way back
out) or dropped (pysched's slim view). A key upstream does not have is an error naming its path
(`spec.containers[0].foo: unknown field`), as is a value of the wrong type
(`spec.containers[0].resources.limits.cpu: invalid quantity "abc"`). JSON null means unset, as
Go's decoder reads it.

Speed: each class is compiled once into a plan (a dict from wire name to a ready decoder), and
paths are only built when something fails: a failure travels up as an exception that each
level stamps with its segment, so a clean document pays nothing for error reporting.

Encoding follows Go's omitempty (see pykubelet/api/types.py): an Optional field is left out
when None, a plain one when it holds its zero value unless marked `keep`.

Field metadata understood here:
  json=<name>      the wire name when it is not the camelCase of the attribute
  keep=True        always encode, even when zero (fields Go prints without omitempty)
  decode=/encode=  a converter for this field instead of the one its type implies
  choice=(...)     an enumerated string; `default` replaces "" before the check
  required=True    the key must be present and not null (or a str: the problem to report)
  unmodelled=True  the bucket of upstream fields the class does not model (UNMODELLED)
A type may carry its own converters: a classmethod `__k8s_decode__(value)` and a method
`__k8s_encode__()` (machinery.quantity.Quantity does).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import Any, TypeVar

from pykubelet.api.machinery.errors import DecodeError, UnknownFieldError
from pykubelet.api.machinery.quantity import QuantityError, invalid_quantity, parse_quantity
from pykubelet.api.machinery.timeutil import parse_time

T = TypeVar("T")
Decoder = Callable[[Any], Any]
Encoder = Callable[[Any], Any]

_PRIMITIVE_NAMES = {str: "string", int: "integer", bool: "boolean", float: "number"}


# --------------------------------------------------------------------------- field helpers


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# Metadata of the bucket holding, verbatim, the upstream fields a class does not model:
#     unmodelled: dict[str, Any] = field(default_factory=dict, repr=False, metadata=UNMODELLED)
UNMODELLED: dict[str, Any] = {"unmodelled": True}


def choice(
    allowed: tuple[str, ...], default: str = "", **meta: Any
) -> dict[str, Any]:
    """Metadata of an enumerated string: "" takes `default`, anything else must be allowed."""
    return {"choice": allowed, "default": default, **meta}


def _base64_values(value: Any) -> dict[str, str]:
    """A map of base64 strings ([]byte values on the wire), checked as Go's decoder does."""
    if not isinstance(value, Mapping):
        raise DecodeError("", f"expected an object, got {describe(value)}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if v is None:
            v = ""
        if type(v) is not str:
            raise DecodeError(str(k), f"expected string, got {describe(v)}")
        try:
            base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise DecodeError(str(k), "illegal base64 data") from None
        out[str(k)] = v
    return out


# Metadata of a dict[str, str] whose values are base64 (Secret.data, ConfigMap.binaryData).
BASE64_VALUES: dict[str, Any] = {"decode": _base64_values}


# --------------------------------------------------------------------------- failures


class _Fail(Exception):
    """A decode failure travelling up; each level adds the segment it was decoding."""

    __slots__ = ("problem", "segments", "unknown")

    def __init__(self, problem: str, *, unknown: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.segments: list[str] = []
        self.unknown = unknown

    def at(self, segment: str) -> _Fail:
        self.segments.append(segment)
        return self

    def path(self, base: str = "") -> str:
        out = base
        for seg in reversed(self.segments):
            if seg.startswith("["):
                out += seg
            elif seg:
                out = f"{out}.{seg}" if out else seg
        return out

    def error(self, base: str = "") -> DecodeError:
        if self.unknown:
            return UnknownFieldError(self.path(base))
        return DecodeError(self.path(base), self.problem)


def describe(value: Any) -> str:
    """The JSON type of a value, as the errors name it."""
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


def _from_decode_error(exc: DecodeError) -> _Fail:
    fail = _Fail(exc.problem, unknown=isinstance(exc, UnknownFieldError))
    if exc.path:
        fail.segments.append(exc.path)
    return fail


# --------------------------------------------------------------------------- upstream schema


def _read_definitions_file() -> dict[str, Any]:
    text = resources.files("pykubelet.api.machinery").joinpath("definitions.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


_definitions_file = functools.cache(_read_definitions_file)


@functools.cache
def _field_facts() -> dict[str, dict[str, tuple[str | None, str | None]]]:
    """(the $ref, the format) of each property that has either, by definition: all that a
    decode Plan asks of the schema. Kept on their own, so a process that only decodes (a
    node's agent) does not hold the whole file's tree (~1.4 MiB) for them; the file is read
    once more here unless something already holds it."""
    doc = _definitions_file() if _definitions_file.cache_info().currsize else \
        _read_definitions_file()
    facts: dict[str, dict[str, tuple[str | None, str | None]]] = {}
    for name, node in doc["schemas"].items():
        props: dict[str, tuple[str | None, str | None]] = {}
        for wire, sub in (node.get("properties") or {}).items():
            ref, fmt = sub.get("$ref"), sub.get("format")
            ref = _ref_name(ref) if isinstance(ref, str) else None
            fmt = fmt if isinstance(fmt, str) else None
            if ref is not None or fmt is not None:
                props[wire] = (ref, fmt)
        if props:
            facts[name] = props
    return facts


def definitions() -> dict[str, Any]:
    """Upstream's schema of every served type, by definition name (see definitions.json)."""
    schemas: dict[str, Any] = _definitions_file()["schemas"]
    return schemas


def definitions_version() -> str:
    """The Kubernetes release the definitions come from (v1.37.0)."""
    return str(_definitions_file()["kubernetesVersion"])


def _upstream_ref(definition: str, wire: str) -> str | None:
    """The definition a field of a definition refers to (metav1.Time, ...), if any."""
    return _field_facts().get(definition, {}).get(wire, (None, None))[0]


def _upstream_format(definition: str, wire: str) -> str | None:
    """The OpenAPI format (int32, int64, ...) upstream gives a field of a definition."""
    return _field_facts().get(definition, {}).get(wire, (None, None))[1]


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


class _SchemaChecks:
    """Decoders built from upstream's schema for values no typed class models."""

    def __init__(self) -> None:
        self._objects: dict[str, Decoder] = {}

    def for_node(self, node: Mapping[str, Any]) -> Decoder:
        if "$ref" in node:
            return self.for_type(_ref_name(node["$ref"]))
        fmt = node.get("format")
        if fmt == "int-or-string":
            return _decode_int_or_string
        if fmt == "quantity":
            return _check_quantity
        kind = node.get("type")
        if kind == "string":
            return _PRIMITIVE_DECODERS[str]
        if kind == "integer":
            return _sized_int(fmt)
        if kind == "number":
            return _PRIMITIVE_DECODERS[float]
        if kind == "boolean":
            return _PRIMITIVE_DECODERS[bool]
        if kind == "array":
            return _list_decoder(self.for_node(node.get("items", {})))
        if kind == "object" and isinstance(node.get("additionalProperties"), Mapping):
            return _dict_decoder(self.for_node(node["additionalProperties"]))
        if kind == "object" and "properties" in node:
            return self._object(node)
        if kind == "object":
            return _decode_any_object
        return _identity  # no type: anything (RawExtension and the like)

    def for_type(self, name: str) -> Decoder:
        if name in _TIME_TYPES:
            return _decode_time
        found = self._objects.get(name)
        if found is None:
            # Recursive types (JSONSchemaProps) refer to themselves: resolve lazily.
            self._objects[name] = lambda v: self._objects[name](v)
            found = self.for_node(definitions()[name])
            self._objects[name] = found
        return found

    def _object(self, node: Mapping[str, Any]) -> Decoder:
        props = {name: self.for_node(sub) for name, sub in node.get("properties", {}).items()}

        def decode(value: Any) -> Any:
            if type(value) is not dict:
                if isinstance(value, Mapping):
                    value = dict(value)
                else:
                    raise _Fail(f"expected an object, got {describe(value)}")
            out = {}
            for k, v in value.items():
                dec = props.get(k)
                if dec is None:
                    raise _Fail("unknown field", unknown=True).at(str(k))
                if v is None:
                    continue
                try:
                    out[k] = dec(v)
                except _Fail as fail:
                    raise fail.at(k) from None
            return out

        return decode

    def fields_of(self, name: str) -> dict[str, Decoder]:
        node = definitions()[name]
        return {wire: self.for_node(sub) for wire, sub in node.get("properties", {}).items()}


_SCHEMA = _SchemaChecks()


# --------------------------------------------------------------------------- leaf decoders


def _identity(value: Any) -> Any:
    return value


def _decode_any_object(value: Any) -> Any:
    if isinstance(value, Mapping):
        return value
    raise _Fail(f"expected an object, got {describe(value)}")


def _make_primitive(tp: type) -> Decoder:
    name = _PRIMITIVE_NAMES[tp]
    if tp is int:

        def dec_int(value: Any) -> Any:
            if type(value) is int:
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise _Fail(f"expected {name}, got {describe(value)}")

        return dec_int
    if tp is float:

        def dec_float(value: Any) -> Any:
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
            raise _Fail(f"expected {name}, got {describe(value)}")

        return dec_float

    def dec_exact(value: Any) -> Any:  # str, bool: that type and no other
        if type(value) is tp:
            return value
        raise _Fail(f"expected {name}, got {describe(value)}")

    return dec_exact


_PRIMITIVE_DECODERS: dict[type, Decoder] = {tp: _make_primitive(tp) for tp in _PRIMITIVE_NAMES}
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


_TIME_TYPES = frozenset({"io.k8s.apimachinery.pkg.apis.meta.v1.Time",
                         "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"})


def _decode_time(value: Any) -> Any:
    """A metav1.Time or MicroTime: an RFC 3339 string ("yesterday" is refused as Go
    refuses it, never stored for the next reader to trip on)."""
    text = _PRIMITIVE_DECODERS[str](value)
    try:
        parse_time(text)
    except ValueError as e:
        raise _Fail(str(e)) from None
    return text


@functools.cache
def _sized_int(fmt: str | None) -> Decoder:
    """An integer field as Go's typed decoding reads it: one past its int32 or int64 is
    refused as encoding/json words it, never stored to break the next reader."""
    base = _PRIMITIVE_DECODERS[int]
    bounds = _INT_RANGES.get(fmt or "")
    if bounds is None:
        return base
    low, high = bounds

    def dec_sized(value: Any) -> Any:
        n = base(value)
        if not low <= n <= high:
            shown = str(value) if len(str(value)) <= 64 else str(value)[:64] + "..."
            raise _Fail(f"cannot unmarshal number {shown} into Go value of type {fmt}")
        return n

    return dec_sized


def _decode_int_or_string(value: Any) -> Any:
    if type(value) is str or type(value) is int:
        return value
    raise _Fail(f"expected an integer or a string, got {describe(value)}")


def _check_quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _Fail(invalid_quantity(value))
    try:
        parse_quantity(value)
    except QuantityError as exc:
        raise _Fail(invalid_quantity(value, str(exc))) from None
    return value


def _list_decoder(item: Decoder) -> Decoder:
    def dec_list(value: Any) -> Any:
        if type(value) is not list:
            if value is None:
                return []
            if not isinstance(value, tuple):
                raise _Fail(f"expected an array, got {describe(value)}")
        try:
            return [item(x) for x in value]
        except _Fail:
            pass
        for i, x in enumerate(value):  # again, slowly, to say which item failed
            try:
                item(x)
            except _Fail as fail:
                raise fail.at(f"[{i}]") from None
        raise AssertionError("unreachable")  # pragma: no cover

    return dec_list


def _dict_decoder(item: Decoder) -> Decoder:
    def dec_dict(value: Any) -> Any:
        if type(value) is not dict:
            if value is None:
                return {}
            if not isinstance(value, Mapping):
                raise _Fail(f"expected an object, got {describe(value)}")
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _Fail(f"expected string keys, got {k!r}")
            try:
                out[k] = item(v)
            except _Fail as fail:
                raise fail.at(k) from None
        return out

    return dec_dict


def _str_dict(value: Any) -> Any:
    """dict[str, str], the commonest map (labels, annotations, selectors): one loop."""
    if type(value) is not dict:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise _Fail(f"expected an object, got {describe(value)}")
    for k, v in value.items():
        if type(v) is not str or type(k) is not str:
            if type(k) is not str:
                raise _Fail(f"expected string keys, got {k!r}")
            raise _Fail(f"expected string, got {describe(v)}").at(k)
    return dict(value)


def _str_list(value: Any) -> Any:
    if type(value) is not list:
        if value is None:
            return []
        if not isinstance(value, tuple):
            raise _Fail(f"expected an array, got {describe(value)}")
    for i, v in enumerate(value):
        if type(v) is not str:
            raise _Fail(f"expected string, got {describe(v)}").at(f"[{i}]")
    return list(value)


def _choice_decoder(allowed: tuple[str, ...], default: str) -> Decoder:
    allowed_set = frozenset(allowed)

    def dec_choice(value: Any) -> Any:
        if type(value) is not str:
            raise _Fail(f"expected string, got {describe(value)}")
        value = value or default
        if value not in allowed_set:
            raise _Fail(f"unsupported value {value!r}: expected one of {list(allowed)}")
        return value

    return dec_choice


def _custom_decoder(fn: Callable[[Any], Any]) -> Decoder:
    def dec_custom(value: Any) -> Any:
        try:
            return fn(value)
        except DecodeError as exc:
            raise _from_decode_error(exc) from None

    return dec_custom


# --------------------------------------------------------------------------- type -> decoder


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


class View:
    """A reader's projection of the model: for the classes it names, the attributes it reads.

    Decoding through a view fills only those attributes (the others keep their defaults),
    checks every other field by upstream's schema, then drops it, and keeps nothing in the
    `unmodelled` buckets: a reader that never writes an object back (the scheduler) pays
    for what it reads. A class the view does not name is decoded whole. Compare by identity.

    With ``check_unread=False`` (an option, off by default) the fields it does not read are
    taken unchecked, though a key that is no field of the upstream type is still an error:
    for input an API server has already checked, where walking a node's addresses, images'
    names and every condition's timestamps only to drop them was a fifth to a quarter of
    the decode. The default keeps one set of rules: the same errors as the API's decode.
    """

    __slots__ = ("check_unread", "fields")

    def __init__(self, fields: Mapping[type, Iterable[str]] | None = None, *,
                 check_unread: bool = True) -> None:
        self.fields = {cls: frozenset(attrs) for cls, attrs in (fields or {}).items()}
        self.check_unread = check_unread


# The slim view: every modelled field typed, nothing unmodelled kept (keep_unmodelled=False).
SLIM = View()


@functools.cache
def _decoder_for(tp: Any, view: View | None = None) -> Decoder:
    """The decoder of a type (through `view`: see View)."""
    if tp is Any:
        return _identity
    if _is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _decoder_for(args[0], view)
        if set(args) == {int, str}:
            return _decode_int_or_string
        raise TypeError(f"unsupported union {tp}")  # pragma: no cover - a model bug
    if tp in _PRIMITIVE_DECODERS:
        return _PRIMITIVE_DECODERS[tp]
    own = getattr(tp, "__k8s_decode__", None)
    if own is not None:
        return _custom_decoder(own)
    origin = typing.get_origin(tp)
    if origin is list:
        (item_tp,) = typing.get_args(tp)
        if item_tp is str:
            return _str_list
        return _list_decoder(_decoder_for(item_tp, view))
    if origin is dict:
        _key_tp, item_tp = typing.get_args(tp)
        if item_tp is str:
            return _str_dict
        return _dict_decoder(_decoder_for(item_tp, view))
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _LazyPlan(tp, view)
    raise TypeError(f"unsupported type {tp}")  # pragma: no cover - a model bug


_EMPTY: Mapping[str, Any] = {}


class _LazyPlan:
    """A nested class's decoder, compiled on first use (classes may refer to each other)."""

    __slots__ = ("cls", "fn", "view")

    def __init__(self, cls: type, view: View | None = None) -> None:
        self.cls = cls
        self.view = view
        self.fn: Decoder | None = None

    def __call__(self, value: Any) -> Any:
        fn = self.fn
        if fn is None:
            fn = self.fn = plan(self.cls, self.view).decode
        return fn(value)


# --------------------------------------------------------------------------- plans


@dataclasses.dataclass(slots=True)
class FieldPlan:
    attr: str
    wire: str
    decode: Decoder
    encode: Encoder | None
    keep: bool
    optional: bool
    type: Any


class Plan:
    """How one class is read and written; built once per class by plan().

    A plan through a View checks the same but types only the attributes the view names
    (all of them for a class it does not name) and keeps nothing in the `unmodelled`
    bucket: for readers (the scheduler) that never write the object back."""

    def __init__(self, cls: type, view: View | None = None) -> None:
        self.cls = cls
        self.upstream: str | None = getattr(cls, "__k8s__", None)
        hints = typing.get_type_hints(cls)
        fields: list[FieldPlan] = []
        self.bucket: str | None = None
        reads = None if view is None else view.fields.get(cls)
        typed = [f for f in dataclasses.fields(cls) if reads is None or f.name in reads
                 or f.metadata.get("unmodelled")]
        for f in typed:
            if f.metadata.get("unmodelled"):
                self.bucket = None if view is not None else f.name
                continue
            tp = hints[f.name]
            meta = f.metadata
            if "decode" in meta:
                dec: Decoder = _custom_decoder(meta["decode"])
            elif "choice" in meta:
                dec = _choice_decoder(meta["choice"], meta.get("default", ""))
            else:
                dec = _decoder_for(tp, view)
                if dec is _PRIMITIVE_DECODERS[int] and self.upstream is not None:
                    wire = meta.get("json", camel(f.name))
                    dec = _sized_int(_upstream_format(self.upstream, wire))
                elif dec is _PRIMITIVE_DECODERS[str] and self.upstream is not None:
                    wire = meta.get("json", camel(f.name))
                    if _upstream_ref(self.upstream, wire) in _TIME_TYPES:
                        dec = _decode_time
            fields.append(
                FieldPlan(
                    attr=f.name,
                    wire=meta.get("json", camel(f.name)),
                    decode=dec,
                    encode=meta.get("encode") or _encoder_for(tp),
                    keep=bool(meta.get("keep")),
                    optional=_is_union(tp) and type(None) in typing.get_args(tp),
                    type=tp,
                )
            )
        self.fields = tuple(fields)
        # Fields that must be present and not null, and enumerations whose default (taken when
        # the field is absent) is not an allowed value: both checked once the keys are read.
        self.required: list[tuple[str, str]] = []
        self.absent_choices: list[tuple[str, str, str]] = []
        for f in typed:
            wire_name = f.metadata.get("json", camel(f.name))
            need = f.metadata.get("required")
            if need:
                self.required.append((wire_name, need if isinstance(need, str) else "required"))
            allowed = f.metadata.get("choice")
            if allowed is not None and f.default not in allowed and f.default is not None:
                detail = f"unsupported value {f.default!r}: expected one of {list(allowed)}"
                self.absent_choices.append((wire_name, f.name, detail))
        self.by_wire = {f.wire: f for f in fields}
        # Through a view, the fields it does not read (and the bucket) hold one shared empty
        # value each instead of a fresh one per object: a reader never writes them, and a
        # cluster's worth of objects is a lot of empty lists and structs (memory, and the
        # collector's time). A struct it reads but the document lacks is decoded from {}
        # through the view (so its own unread fields are shared too).
        self.unread: dict[str, Any] = {}
        self.absent_structs: list[tuple[str, Decoder]] = []
        if view is not None:
            for f in dataclasses.fields(cls):
                factory = f.default_factory
                if f.init is False or factory is dataclasses.MISSING:
                    continue
                is_struct = isinstance(factory, type) and dataclasses.is_dataclass(factory)
                if f in typed and not f.metadata.get("unmodelled"):
                    if isinstance(factory, type) and is_struct:
                        self.absent_structs.append((f.name, _LazyPlan(factory, view)))
                elif factory in (list, dict) or is_struct:
                    self.unread[f.name] = factory()
        # Upstream fields this class does not model (or the view does not read): checked by
        # upstream's schema, unless the view takes what it does not read unchecked.
        # Built at the first key the class does not model: their decoders come from the
        # whole definitions file, which a reader of modelled fields only (a node's agent
        # decoding its pods) then never loads (see _field_facts).
        self._others: dict[str, Decoder] | None = None if self.upstream is not None else {}
        self._unchecked = view is not None and not view.check_unread
        post = getattr(cls, "__post_decode__", None)
        self.post: Callable[[Any], None] | None = post

    @property
    def others(self) -> dict[str, Decoder]:
        """Upstream's fields this class does not model (or the view does not read), each
        checked by upstream's schema unless the view takes them unchecked."""
        if self._others is None:
            assert self.upstream is not None
            self._others = {
                wire: _identity if self._unchecked else dec
                for wire, dec in _SCHEMA.fields_of(self.upstream).items()
                if wire not in self.by_wire
            }
        return self._others

    def decode(self, value: Any) -> Any:
        if type(value) is not dict:
            if value is None:
                value = {}
            elif isinstance(value, Mapping):
                value = dict(value)
            else:
                raise _Fail(f"expected an object, got {describe(value)}")
        by_wire = self.by_wire
        kwargs: dict[str, Any] = dict(self.unread) if self.unread else {}
        extra: dict[str, Any] | None = None
        for k, v in value.items():
            f = by_wire.get(k)
            if f is None:
                other = self.others.get(k)
                if other is None:
                    if type(k) is not str:
                        raise _Fail(f"expected string keys, got {k!r}")
                    raise _Fail("unknown field", unknown=True).at(k)
                if v is None:
                    continue
                try:
                    checked = other(v)
                except _Fail as fail:
                    raise fail.at(k) from None
                if self.bucket is not None:
                    if extra is None:
                        extra = {}
                    extra[k] = checked
                continue
            if v is None:
                if f.optional:
                    kwargs[f.attr] = None
                continue  # null on a plain field: its default, as Go leaves it
            try:
                kwargs[f.attr] = f.decode(v)
            except _Fail as fail:
                raise fail.at(k) from None
        if extra is not None:
            kwargs[self.bucket] = extra  # type: ignore[index]
        for wire_name, problem in self.required:
            if value.get(wire_name) is None:
                raise _Fail(problem).at(wire_name)
        for wire_name, attr, problem in self.absent_choices:
            if attr not in kwargs:
                raise _Fail(problem).at(wire_name)
        for attr, struct in self.absent_structs:
            if attr not in kwargs:
                kwargs[attr] = struct(_EMPTY)
        obj = self.cls(**kwargs)
        if self.post is not None:
            try:
                self.post(obj)
            except DecodeError as exc:
                raise _from_decode_error(exc) from None
        return obj

    def encode(self, obj: Any) -> dict[str, Any]:
        """The object as plain JSON data: a function written for this class on first use
        (each field read by name, its encoder and the zero test inline), the same steps
        as a loop over the field plans without their per-field lookups (a pod's encode
        walks ~20 classes and ~400 fields: every write's encode is on this path)."""
        return self._compile_encoder()(obj)  # replaces this method on the plan

    def _compile_encoder(self) -> Callable[[Any], dict[str, Any]]:
        names: dict[str, Any] = {"_ZERO": _ZERO}
        lines = ["def encode(obj):", "    out = {}"]
        for i, f in enumerate(self.fields):
            if not f.attr.isidentifier():
                raise ValueError(f"field {f.attr!r} of {self.cls.__name__}")
            lines += [f"    v = obj.{f.attr}", "    if v is not None:"]
            if f.encode is not None:
                names[f"enc{i}"] = f.encode
                lines.append(f"        v = enc{i}(v)")
            if f.keep or f.optional:
                lines.append(f"        out[{f.wire!r}] = v")
            else:  # _is_zero, inline
                lines += ["        if not (v in _ZERO or v == [] or v == {}):",
                          f"            out[{f.wire!r}] = v"]
        if self.bucket is not None:
            lines += [f"    extra = obj.{self.bucket}", "    if extra:",
                      "        out.update(extra)"]
        lines.append("    return out")
        exec("\n".join(lines), names)  # the names are the dataclass's own fields
        compiled: Callable[[Any], dict[str, Any]] = names["encode"]
        self.encode = compiled  # type: ignore[method-assign,assignment]
        return compiled

    def unknown_paths(self, value: Any, path: str, out: list[str]) -> None:
        """Every key under `value` that neither this class nor upstream knows."""
        if not isinstance(value, Mapping):
            return
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            f = self.by_wire.get(k)
            if f is not None:
                _unknown_in_type(f.type, v, sub, out)
            elif k in self.others:
                _unknown_in_schema(self.upstream, k, v, sub, out)
            else:
                out.append(sub)


_PLANS: dict[tuple[type, View | None], Plan] = {}


def plan(cls: type, view: View | None = None) -> Plan:
    """The class's plan (through `view`), built on first use."""
    found = _PLANS.get((cls, view))
    if found is None:
        found = _PLANS[(cls, view)] = Plan(cls, view)
    return found


# --------------------------------------------------------------------------- encoders


_ZERO = ("", 0, False, None)


def _is_zero(value: Any) -> bool:
    return value in _ZERO or value == [] or value == {}


def _encoder_for(tp: Any) -> Encoder | None:
    """None means the decoded value is already plain JSON."""
    if tp is Any or tp in _PRIMITIVE_DECODERS:
        return None
    if _is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _encoder_for(args[0]) if len(args) == 1 else None
    if hasattr(tp, "__k8s_encode__"):
        return _encode_own
    origin = typing.get_origin(tp)
    if origin is list:
        item = _encoder_for(typing.get_args(tp)[0])
        return None if item is None else functools.partial(_encode_list, item)
    if origin is dict:
        item = _encoder_for(typing.get_args(tp)[1])
        return None if item is None else functools.partial(_encode_dict, item)
    if dataclasses.is_dataclass(tp):
        return encode
    return None


def _encode_own(value: Any) -> Any:
    return value.__k8s_encode__()


def _encode_list(item: Encoder, value: list[Any]) -> list[Any]:
    return [item(x) for x in value]


def _encode_dict(item: Encoder, value: dict[str, Any]) -> dict[str, Any]:
    return {k: item(v) for k, v in value.items()}


# --------------------------------------------------------------------------- unknown fields


def _unknown_in_type(tp: Any, value: Any, path: str, out: list[str]) -> None:
    if value is None or hasattr(tp, "__k8s_decode__"):
        return
    if _is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            _unknown_in_type(args[0], value, path, out)
        return
    origin = typing.get_origin(tp)
    if origin is list and isinstance(value, list):
        for i, item in enumerate(value):
            _unknown_in_type(typing.get_args(tp)[0], item, f"{path}[{i}]", out)
    elif origin is dict and isinstance(value, Mapping):
        for k, item in value.items():
            _unknown_in_type(typing.get_args(tp)[1], item, f"{path}.{k}", out)
    elif dataclasses.is_dataclass(tp) and isinstance(tp, type):
        plan(tp).unknown_paths(value, path, out)


def _unknown_in_node(node: Mapping[str, Any], value: Any, path: str, out: list[str]) -> None:
    if value is None:
        return
    if "$ref" in node:
        node = definitions()[_ref_name(node["$ref"])]
    kind = node.get("type")
    if kind == "array" and isinstance(value, list):
        for i, item in enumerate(value):
            _unknown_in_node(node.get("items", {}), item, f"{path}[{i}]", out)
    elif kind == "object" and isinstance(value, Mapping):
        if isinstance(node.get("additionalProperties"), Mapping):
            for k, item in value.items():
                _unknown_in_node(node["additionalProperties"], item, f"{path}.{k}", out)
        elif "properties" in node:
            props = node["properties"]
            for k, item in value.items():
                if k in props:
                    _unknown_in_node(props[k], item, f"{path}.{k}", out)
                else:
                    out.append(f"{path}.{k}")


def _unknown_in_schema(
    type_name: str | None, wire: str, value: Any, path: str, out: list[str]
) -> None:
    if type_name is None:
        return
    _unknown_in_node(definitions()[type_name]["properties"][wire], value, path, out)


def _without(value: Any, path: list[str | int]) -> Any:
    """A copy of `value` with the key at `path` removed."""
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        copy = dict(value)
        if not rest:
            copy.pop(head, None)
        elif head in copy:
            copy[head] = _without(copy[head], rest)
        return copy
    if isinstance(value, list) and isinstance(head, int):
        copy_list = list(value)
        copy_list[head] = _without(copy_list[head], rest)
        return copy_list
    return value


def _split(path: str) -> list[str | int]:
    parts: list[str | int] = []
    for dotted in path.split("."):
        name, *indices = dotted.split("[")
        if name:
            parts.append(name)
        parts.extend(int(i.rstrip("]")) for i in indices)
    return parts


# --------------------------------------------------------------------------- public API


def decode(
    cls: type[T],
    value: Any,
    path: str = "",
    *,
    unknown: list[str] | None = None,
    keep_unmodelled: bool = True,
    view: View | None = None,
) -> T:
    """Decode `value` into `cls`; raises DecodeError naming the field.

    With `unknown` (a list), unknown fields are not errors: their paths are appended to it
    and they are dropped (the API's fieldValidation=Warn/Ignore). Type errors still raise.
    With `keep_unmodelled=False` the upstream fields no class models are checked, then
    dropped instead of kept; with a `view`, so are the modelled fields it does not read
    (the scheduler's read-only decode: nothing goes back out).
    """
    p = plan(cls, view if view is not None else (None if keep_unmodelled else SLIM))
    try:
        return p.decode(value)  # type: ignore[no-any-return]
    except _Fail as fail:
        if not (fail.unknown and unknown is not None):
            raise fail.error(path) from None
    found: list[str] = []
    p.unknown_paths(value, "", found)
    pruned = value
    for rel in found:
        pruned = _without(pruned, _split(rel))
    unknown.extend(f"{path}.{rel}" if path else rel for rel in found)
    try:
        return p.decode(pruned)  # type: ignore[no-any-return]
    except _Fail as fail:
        raise fail.error(path) from None


def decode_value(tp: Any, value: Any, path: str = "") -> Any:
    """Decode `value` as the type `tp` (a dataclass, list[...], dict[...], a primitive)."""
    try:
        return _decoder_for(tp)(value)
    except _Fail as fail:
        raise fail.error(path) from None


def unknown_fields(cls: type, value: Any, path: str = "") -> list[str]:
    """The paths of every field in `value` that `cls` (and upstream) does not have."""
    out: list[str] = []
    plan(cls).unknown_paths(value, path, out)
    return out


def encode(obj: Any) -> Any:
    """A model (or list/dict of them) as plain camelCase JSON data."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return plan(type(obj)).encode(obj)
    if hasattr(obj, "__k8s_encode__"):
        return obj.__k8s_encode__()
    if isinstance(obj, list | tuple):
        return [encode(item) for item in obj]
    if isinstance(obj, Mapping):
        return {key: encode(item) for key, item in obj.items()}
    return obj


def check_definition(name: str, value: Any, path: str = "") -> Any:
    """Check `value` against upstream's schema of the definition `name` (a Binding, an
    Eviction, DeleteOptions: bodies no class models) as typed decoding would: a value of
    the wrong type (a string for an object, an int for a string, an int32 past its range)
    raises DecodeError naming the field; unknown fields are dropped, not errors."""
    check = _SCHEMA.for_type(name)
    try:
        return check(value)
    except _Fail as fail:
        if not fail.unknown:
            raise fail.error(path) from None
    found: list[str] = []
    _unknown_in_node(definitions()[name], value, "", found)
    pruned = value
    for rel in found:
        pruned = _without(pruned, _split(rel.lstrip(".")))
    try:
        return check(pruned)
    except _Fail as fail:
        raise fail.error(path) from None
