"""Request bodies in Kubernetes' protobuf encoding, read into the JSON shape.

kubectl's typed clients (``kubectl create namespace|configmap|secret|priorityclass|pdb``,
``kubectl drain``'s evictions) send ``application/vnd.kubernetes.protobuf`` bodies: the
magic ``k8s\\0`` and a ``runtime.Unknown`` envelope whose ``raw`` is the typed message.
Responses stay JSON (those clients accept it). The messages below are the kinds those
commands create, with upstream's field numbers (k8s.io/api and apimachinery's
generated.proto); the reader is the protobuf wire format, nothing more.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

MAGIC = b"k8s\x00"

# message -> field number -> (JSON name, type); a type in [] is repeated
Schema = dict[int, tuple[str, Any]]
MESSAGES: dict[str, Schema] = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes"),
                3: ("contentEncoding", "string"), 4: ("contentType", "string")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "ObjectMeta": {
        1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
        4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
        7: ("generation", "int"), 8: ("creationTimestamp", "Time"),
        9: ("deletionTimestamp", "Time"), 10: ("deletionGracePeriodSeconds", "int"),
        11: ("labels", "map<string>"), 12: ("annotations", "map<string>"),
        13: ("ownerReferences", ["OwnerReference"]), 14: ("finalizers", ["string"]),
        17: ("managedFields", ["skip"]),
    },
    "OwnerReference": {5: ("apiVersion", "string"), 1: ("kind", "string"),
                       3: ("name", "string"), 4: ("uid", "string"),
                       6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")},
    "DeleteOptions": {1: ("gracePeriodSeconds", "int"), 2: ("preconditions", "Preconditions"),
                      3: ("orphanDependents", "bool"), 4: ("propagationPolicy", "string"),
                      5: ("dryRun", ["string"])},
    "Preconditions": {1: ("uid", "string"), 2: ("resourceVersion", "string")},
    "LabelSelector": {1: ("matchLabels", "map<string>"),
                      2: ("matchExpressions", ["LabelSelectorRequirement"])},
    "LabelSelectorRequirement": {1: ("key", "string"), 2: ("operator", "string"),
                                 3: ("values", ["string"])},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec"),
                  3: ("status", "NamespaceStatus")},
    "NamespaceSpec": {1: ("finalizers", ["string"])},
    "NamespaceStatus": {1: ("phase", "string"), 2: ("conditions", ["skip"])},
    "ConfigMap": {1: ("metadata", "ObjectMeta"), 4: ("immutable", "bool"),
                  2: ("data", "map<string>"), 3: ("binaryData", "map<bytes>")},
    "Secret": {1: ("metadata", "ObjectMeta"), 5: ("immutable", "bool"),
               2: ("data", "map<bytes>"), 4: ("stringData", "map<string>"),
               3: ("type", "string")},
    "Eviction": {1: ("metadata", "ObjectMeta"), 2: ("deleteOptions", "DeleteOptions")},
    "PriorityClass": {1: ("metadata", "ObjectMeta"), 2: ("value", "int"),
                      3: ("globalDefault", "bool"), 4: ("description", "string"),
                      5: ("preemptionPolicy", "string")},
    "PodDisruptionBudget": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodDisruptionBudgetSpec"),
                            3: ("status", ["skip"])},
    "PodDisruptionBudgetSpec": {1: ("minAvailable", "IntOrString"),
                                2: ("selector", "LabelSelector"),
                                3: ("maxUnavailable", "IntOrString"),
                                4: ("unhealthyPodEvictionPolicy", "string")},
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "IntOrString": {1: ("type", "int"), 2: ("intVal", "int"), 3: ("strVal", "string")},
}


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf message we can read."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        num, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos:pos + size], pos + size
            if pos > len(data):
                raise ProtobufError("truncated field")
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((num, wire, value))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _scalar(typ: str, wire: int, value: Any) -> Any:
    if typ == "string":
        return bytes(value).decode()
    if typ == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if typ == "bool":
        return bool(value)
    if typ == "int":
        return _signed(value)
    raise ProtobufError(f"unknown scalar type {typ}")


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    schema = MESSAGES[name]
    out: dict[str, Any] = {}
    for num, wire, value in _fields(data):
        if num not in schema:
            continue
        json_name, typ = schema[num]
        if isinstance(typ, list):
            (item,) = typ
            if item == "skip":
                continue
            out.setdefault(json_name, []).append(_value(item, wire, value))
        elif typ.startswith("map<"):
            entry = {n: v for n, _, v in _fields(bytes(value))}
            key = bytes(entry.get(1, b"")).decode()
            out.setdefault(json_name, {})[key] = _scalar(typ[4:-1], 2, entry.get(2, b""))
        else:
            out[json_name] = _value(typ, wire, value)
    return out


def _value(typ: str, wire: int, value: Any) -> Any:
    if typ == "Time":
        t = decode_message("Time", bytes(value))
        return dt.datetime.fromtimestamp(t.get("seconds", 0), dt.UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
    if typ == "IntOrString":
        v = decode_message("IntOrString", bytes(value))
        return v.get("strVal", "") if v.get("type") == 1 else v.get("intVal", 0)
    if typ in MESSAGES:
        return decode_message(typ, bytes(value))
    return _scalar(typ, wire, value)


def decode_object(body: bytes) -> dict[str, Any]:
    """A protobuf request body as the object's JSON form (kind and apiVersion included)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    unknown = decode_message("Unknown", body[len(MAGIC):])
    type_meta = unknown.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    if kind not in MESSAGES or kind in ("Unknown", "TypeMeta", "Time", "IntOrString"):
        raise ProtobufError(f"cannot read kind {kind!r} from protobuf; send JSON")
    raw = base64.b64decode(unknown.get("raw", ""))
    obj = {"kind": kind, "apiVersion": type_meta.get("apiVersion", "")}
    obj.update(decode_message(kind, raw))
    meta = obj.get("metadata") or {}
    if meta.get("generation") == 0:
        meta.pop("generation")
    pruned: dict[str, Any] = _prune(obj)
    return pruned


def _prune(value: Any) -> Any:
    """Go's omitempty, which the protobuf encoding does not carry: drop "", false and
    empty lists and maps."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            v = _prune(v)
            if v == "" or v is False or v == [] or v == {}:
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value
