"""OpenAPI v3 schemas of custom resources: validation with kube-openapi's messages,
defaulting and pruning (apiextensions-apiserver's pkg/apiserver/schema and
pkg/apiserver/validation).

Validation walks a value and its schema as kube-openapi's SchemaValidator does, naming a
place as it does (``spec.replicas``, an item ``spec.ports.0``), and turns each failure
into the field error apiextensions' ``kubeOpenAPIResultToFieldErrors`` makes of it:
``spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
"string"``. Pruning drops what the schema does not name unless
``x-kubernetes-preserve-unknown-fields`` keeps it; defaulting fills ``default`` values of
missing properties. All three are pure functions of JSON values.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pykubelet.api.machinery import field
from pykubelet.api.machinery.field import FieldError

Schema = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
EMBEDDED = "x-kubernetes-embedded-resource"
# what an embedded resource's metadata keeps when pruned (ObjectMeta's fields)
_META_FIELDS = frozenset((
    "name", "generateName", "namespace", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields", "selfLink"))


def json_type(value: Any) -> str:
    """kube-openapi's name of a JSON value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def go_value(value: Any) -> str:
    """A number as Go's %v prints a float64 (1, 1.5)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _where(path: str) -> str:
    return path if path else "body"


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ---------------------------------------------------------------------------- validation


def validate(value: Any, schema: Schema, path: str = "") -> list[FieldError]:
    """The field errors of ``value`` against ``schema``, in kube-openapi's words."""
    errs: list[FieldError] = []
    _validate(value, schema, path, errs)
    return errs


def _type_ok(value: Any, schema: Schema) -> tuple[bool, str]:
    """(does the value have the schema's type, the type the message names)."""
    if schema.get(INT_OR_STRING):
        return json_type(value) in ("integer", "string"), "integer,string"
    want = schema.get("type")
    if not want:
        return True, ""
    got = json_type(value)
    if got == want or (want == "number" and got == "integer"):
        return True, want
    return False, str(want)


def _validate(value: Any, schema: Schema, path: str, errs: list[FieldError]) -> None:
    name = path or "."
    if value is None:
        if schema.get("nullable") or not (schema.get("type") or schema.get(INT_OR_STRING)):
            return
        want = "integer,string" if schema.get(INT_OR_STRING) else schema["type"]
        errs.append(field.type_invalid(path, "null",
                                       f'{_where(name)} in body must be of type {want}: "null"'))
        return
    ok, want = _type_ok(value, schema)
    if not ok:
        got = json_type(value)
        errs.append(field.type_invalid(
            path, got, f'{_where(name)} in body must be of type {want}: "{got}"'))
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = [v if isinstance(v, str) else json.dumps(v) for v in schema["enum"]]
        errs.append(field.not_supported(path, value, allowed))
    if isinstance(value, str):
        _validate_string(value, schema, name, path, errs)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(value, schema, name, path, errs)
    elif isinstance(value, list):
        _validate_array(value, schema, name, path, errs)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, errs)


def _validate_string(value: str, schema: Schema, name: str, path: str,
                     errs: list[FieldError]) -> None:
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        errs.append(field.too_long_max_length(path, value, int(max_length)))
    min_length = schema.get("minLength")
    if min_length is not None and len(value) < min_length:
        errs.append(field.invalid(path, value, f"{name} in body should be at least "
                                               f"{min_length} chars long"))
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        errs.append(field.invalid(path, value, f"{name} in body should match '{pattern}'"))


def _validate_number(value: float, schema: Schema, name: str, path: str,
                     errs: list[FieldError]) -> None:
    minimum = schema.get("minimum")
    if minimum is not None:
        if schema.get("exclusiveMinimum") and value <= minimum:
            errs.append(field.invalid(path, value, f"{name} in body should be greater than "
                                                   f"{go_value(minimum)}"))
        elif value < minimum:
            errs.append(field.invalid(path, value, f"{name} in body should be greater than "
                                                   f"or equal to {go_value(minimum)}"))
    maximum = schema.get("maximum")
    if maximum is not None:
        if schema.get("exclusiveMaximum") and value >= maximum:
            errs.append(field.invalid(path, value, f"{name} in body should be less than "
                                                   f"{go_value(maximum)}"))
        elif value > maximum:
            errs.append(field.invalid(path, value, f"{name} in body should be less than or "
                                                   f"equal to {go_value(maximum)}"))
    multiple = schema.get("multipleOf")
    if multiple and (value / multiple) != int(value / multiple):
        errs.append(field.invalid(path, value, f"{name} in body should be a multiple of "
                                               f"{go_value(multiple)}"))


def _validate_array(value: list[Any], schema: Schema, name: str, path: str,
                    errs: list[FieldError]) -> None:
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        errs.append(field.too_many(path, len(value), int(max_items)))
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        errs.append(field.invalid(path, len(value), f"{name} in body should have at least "
                                                    f"{min_items} items"))
    if schema.get("uniqueItems"):
        seen: list[Any] = []
        for item in value:
            if item in seen:
                errs.append(field.invalid(path, value, f"{name} in body shouldn't contain "
                                                       "duplicates"))
                break
            seen.append(item)
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _validate(item, items, f"{path}.{i}" if path else str(i), errs)


def _validate_object(value: dict[str, Any], schema: Schema, path: str,
                     errs: list[FieldError]) -> None:
    for req in schema.get("required") or []:
        if req not in value:
            errs.append(field.required(_child(path, req), ""))
    props: dict[str, Schema] = schema.get("properties") or {}
    for key, sub in props.items():
        if key in value:
            _validate(value[key], sub, _child(path, key), errs)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key, item in value.items():
            if key not in props:
                _validate(item, extra, _child(path, key), errs)
    elif extra is False:
        for key in value:
            if key not in props:
                errs.append(field.forbidden(_child(path, key), f'{_child(path, key)} in body '
                                                               "is a forbidden property"))
    max_props = schema.get("maxProperties")
    if max_props is not None and len(value) > max_props:
        errs.append(field.too_many(path, len(value), int(max_props)))
    if schema.get(EMBEDDED):
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                errs.append(field.required(_child(path, key), "must not be empty"))


# ---------------------------------------------------------------------------- pruning


def prune(value: Any, schema: Schema | None, root: bool = True) -> list[str]:
    """Drop, in place, what ``schema`` does not name (structuralpruning.PruneWithOptions);
    the paths dropped, for strict decoding's ``unknown field`` errors. At the root
    ``apiVersion``, ``kind`` and ``metadata`` are always kept."""
    dropped: list[str] = []
    _prune(value, schema or {}, "", dropped, root)
    return dropped


def _prune(value: Any, schema: Schema, path: str, dropped: list[str], root: bool) -> None:
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        embedded = bool(schema.get(EMBEDDED))
        for key in list(value):
            sub = props.get(key)
            if sub is None and isinstance(extra, dict):
                sub = extra
            if sub is None:
                if (root or embedded) and key in ("apiVersion", "kind"):
                    continue
                if (root or embedded) and key == "metadata":
                    if embedded and isinstance(value[key], dict):
                        for mk in list(value[key]):
                            if mk not in _META_FIELDS:
                                del value[key][mk]
                                dropped.append(_child(_child(path, "metadata"), mk))
                    continue
                if schema.get(PRESERVE) or extra is True:
                    continue
                del value[key]
                dropped.append(_child(path, key))
                continue
            if root and key == "metadata":
                continue  # ObjectMeta is the API server's, whatever the schema says
            _prune(value[key], sub, _child(path, key), dropped, False)
    elif isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            _prune(item, items if isinstance(items, dict) else {}, f"{path}[{i}]", dropped,
                   False)


# ---------------------------------------------------------------------------- defaulting


def default(value: Any, schema: Schema | None) -> None:
    """Fill, in place, the ``default`` of every property missing from an object (and of
    items), as structuraldefaulting.Default does; a default is copied, never shared."""
    if schema is None:
        return
    if isinstance(value, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            found = props.get(key)
            if found is None and isinstance(schema.get("additionalProperties"), dict):
                found = schema["additionalProperties"]
            if found is not None:
                default(item, found)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            default(item, schema["items"])


__all__ = ["Schema", "default", "json_type", "prune", "validate"]
