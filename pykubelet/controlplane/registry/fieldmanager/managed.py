"""``metadata.managedFields`` decoded into managers and encoded back
(managedfields/internal/managedfields.go): one entry per manager identity (manager,
operation, subresource, and for Update the apiVersion), its fields as FieldsV1, the time of
its last change; entries sorted as upstream sorts them (Apply before Update, then time,
manager, apiVersion, subresource)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import orjson

from pykubelet.controlplane.registry.fieldmanager import fieldpath as fp
from pykubelet.controlplane.registry.fieldmanager.fieldpath import FieldSet

APPLY, UPDATE = "Apply", "Update"
FIELDS_V1 = "FieldsV1"

# (manager, operation, apiVersion ("" for Apply), subresource)
Key = tuple[str, str, str, str]


@dataclass(frozen=True)
class Managed:
    manager: str
    operation: str
    api_version: str
    fields: FieldSet
    time: str = ""
    subresource: str = ""

    @property
    def key(self) -> Key:
        return identity(self.manager, self.operation, self.api_version, self.subresource)

    def with_fields(self, fields: FieldSet) -> Managed:
        return replace(self, fields=fields)


Managers = dict[Key, Managed]


def identity(manager: str, operation: str, api_version: str, subresource: str = "") -> Key:
    """The manager identity (BuildManagerIdentifier): an Apply entry's is version-free."""
    return (manager, operation, "" if operation == APPLY else api_version, subresource)


def decode(entries: Any) -> Managers:
    """Managers from ``metadata.managedFields``; ValueError for entries that are not
    ManagedFieldsEntry objects with FieldsV1 (upstream then resets them)."""
    out: Managers = {}
    if not entries:
        return out
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for e in entries:
        if not isinstance(e, dict):
            raise ValueError("managedFields entries must be objects")
        ftype = e.get("fieldsType")
        if ftype not in (FIELDS_V1, None, ""):
            raise ValueError(f'unknown fieldsType "{ftype}"')
        op = e.get("operation") or ""
        if op not in (APPLY, UPDATE):
            raise ValueError(f'unknown operation "{op}"')
        m = Managed(str(e.get("manager") or ""), op, str(e.get("apiVersion") or ""),
                    fields_of(e.get("fieldsV1") or {}), str(e.get("time") or ""),
                    str(e.get("subresource") or ""))
        if m.key in out:
            m = m.with_fields(out[m.key].fields | m.fields)
        out[m.key] = m
    return out


def encode(managers: Managers) -> list[dict[str, Any]]:
    """``metadata.managedFields`` for the managers owning anything, in upstream's order."""
    entries = [m for m in managers.values() if m.fields]
    entries.sort(key=lambda m: (m.operation, m.time, m.manager, m.api_version, m.subresource))
    out = []
    for m in entries:
        e: dict[str, Any] = {"manager": m.manager, "operation": m.operation,
                             "apiVersion": m.api_version}
        if m.time:
            e["time"] = m.time
        e["fieldsType"] = FIELDS_V1
        e["fieldsV1"] = tree_of(m.fields)
        if m.subresource:
            e["subresource"] = m.subresource
        out.append(e)
    return out


# Every write decodes the live object's entries and encodes them back, most of them
# unchanged, and the pods of one workload have the same field sets: both ways are
# remembered for the last sets seen (a FieldSet is immutable and caches its hash).
CACHED_SETS = 256


def fields_of(tree: Any) -> FieldSet:
    """fp.from_fields_v1, remembered by the tree's JSON."""
    try:
        data = orjson.dumps(tree)
    except TypeError:
        return fp.from_fields_v1(tree)
    return _fields_of(data)


@lru_cache(maxsize=CACHED_SETS)
def _fields_of(data: bytes) -> FieldSet:
    return fp.from_fields_v1(orjson.loads(data))


def tree_of(fields: FieldSet) -> dict[str, Any]:
    """fp.to_fields_v1, remembered by the set; a new tree each call (its holder may
    change it)."""
    tree: dict[str, Any] = orjson.loads(_tree_of(fields))
    return tree


@lru_cache(maxsize=CACHED_SETS)
def _tree_of(fields: FieldSet) -> bytes:
    return orjson.dumps(fp.to_fields_v1(fields))


def describe(key: Key, managers: Managers) -> str:
    """A manager as a conflict names it (printManager): ``"kubectl"``, ``"m" with
    subresource "status"``, and for an Update ``... using apps/v1``."""
    manager, op, _version, sub = key
    text = f'"{manager}"'
    if sub:
        text += f' with subresource "{sub}"'
    if op == UPDATE:
        text += f" using {managers[key].api_version}"
    return text
