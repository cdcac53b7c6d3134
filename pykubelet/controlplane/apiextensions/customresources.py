"""The resource one version of an Established CustomResourceDefinition declares
(customresource_handler.go's crdInfo and pkg/registry/customresource): its ResourceInfo
for discovery and request paths, and a strategy that prunes, defaults and validates
objects by the version's schema, keeps status apart when the status subresource is on,
and prints Table rows from additionalPrinterColumns."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import orjson

from pykubelet.api.kinds import Kind
from pykubelet.api.machinery.duration import human_duration
from pykubelet.api.machinery.field import FieldError
from pykubelet.api.machinery.timeutil import parse_time_or_none
from pykubelet.controlplane import errors
from pykubelet.controlplane.apiextensions import schema as schemas
from pykubelet.controlplane.apiextensions.unstructured import Unstructured, UnstructuredStrategy
from pykubelet.controlplane.apiserver.tables import AGE_DESC, NAME_DESC
from pykubelet.controlplane.registry.model import IGNORE
from pykubelet.controlplane.registry.resources import ALL_VERBS, ResourceInfo, Subresource
from pykubelet.controlplane.registry.strategy import (
    STATUS_KEEPS_METADATA,
    Obj,
    keep_all_but_status,
)

# serveDefaultColumnsIfEmpty: a version without printer columns shows its age
DEFAULT_COLUMNS = [{"name": "Age", "type": "date", "description": AGE_DESC,
                    "jsonPath": ".metadata.creationTimestamp"}]


def version_of(crd: Obj, name: str) -> Obj | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == name:
            return dict(v)
    return None


def resource_info(crd: Obj, version: str) -> ResourceInfo:
    """Discovery's and the request path's view of one served version."""
    spec = crd["spec"]
    names = spec["names"]
    group, plural = spec["group"], names["plural"]
    kind: Kind[Any] = Kind(group, version, names["kind"], plural,
                           spec.get("scope") == "Namespaced", Unstructured)
    subs = (version_of(crd, version) or {}).get("subresources") or {}
    subresources: list[Subresource] = []
    if "scale" in subs:
        subresources.append(Subresource("scale", "Scale", ("get", "patch", "update"),
                                        "autoscaling", "v1"))
    if "status" in subs:
        subresources.append(Subresource("status", names["kind"], ("get", "patch", "update"),
                                        group, version))
    return ResourceInfo(kind, names.get("singular") or names["kind"].lower(),
                        f"/registry/{group}/{plural}/", tuple(names.get("shortNames") or ()),
                        tuple(names.get("categories") or ()), ALL_VERBS, tuple(subresources))


# ---------------------------------------------------------------------------- JSONPath


_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[\?\(@\.([\w.]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]")


def json_path(obj: Any, path: str) -> list[Any]:
    """The values a printer column's JSONPath (``.spec.replicas``, ``.items[0]``,
    ``.status.conditions[?(@.type=="Ready")].status``) finds: the subset of k8s.io's
    jsonpath printer columns use."""
    current = [obj]
    pos = 0
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            return []
        pos = m.end()
        nxt: list[Any] = []
        for value in current:
            if m.group(1) is not None and isinstance(value, dict) and m.group(1) in value:
                nxt.append(value[m.group(1)])
            elif m.group(2) is not None and isinstance(value, list):
                i = int(m.group(2))
                if i < len(value):
                    nxt.append(value[i])
            elif m.group(3) is not None and isinstance(value, list):
                for item in value:
                    found = json_path(item, "." + m.group(3))
                    if found and str(found[0]) == m.group(4):
                        nxt.append(item)
        current = nxt
    return current


def _cell(ctype: str, value: Any, now: dt.datetime) -> Any:
    """cellForJSONValue: a date shows as an age; numbers as numbers; strings as text."""
    if ctype == "date":
        t = parse_time_or_none(value) if isinstance(value, str) else None
        return "<unknown>" if t is None else human_duration(now - t)
    if ctype == "integer":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) \
            else None
    if ctype == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if ctype == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode() if isinstance(value, dict | list) else str(value)


def printer(columns: list[Obj]) -> tuple[list[Obj], Any]:
    """The Table columns and the cells function of a version's printer columns
    (tableconvertor.New: Name first, then each column with its type and priority)."""
    columns = columns or DEFAULT_COLUMNS
    defs = [{"name": "Name", "type": "string", "format": "name", "description": NAME_DESC,
             "priority": 0}]
    for c in columns:
        defs.append({"name": c["name"], "type": c["type"], "format": c.get("format", ""),
                     "description": c.get("description", ""),
                     "priority": int(c.get("priority", 0))})

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        out: list[Any] = [(obj.get("metadata") or {}).get("name", "")]
        for c in columns:
            found = json_path(obj, c["jsonPath"])
            out.append(_cell(c["type"], found[0], now) if found else None)
        return out

    return defs, cells


# ---------------------------------------------------------------------------- strategy

CUSTOM_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                      "application/apply-patch+yaml")


def unsupported_media_type(content_type: str) -> errors.StatusError:
    """415 for a strategic merge patch of a custom resource, in upstream's words (the
    patch types customresource_handler.go accepts)."""
    return errors.StatusError(415, errors.UNSUPPORTED_MEDIA_TYPE,
                              "the body of the request was in an unknown format - accepted "
                              "media types include: " + ", ".join(CUSTOM_PATCH_TYPES))



class CustomResourceStrategy(UnstructuredStrategy):
    """One served version of a definition's resource."""

    tracks_generation = True
    refuses_strategic_merge = True  # no patch strategy without Go types: 415 as upstream

    def __init__(self, crd: Obj, version: str) -> None:
        self.crd = crd
        self.info = resource_info(crd, version)
        v = version_of(crd, version) or {}
        self.schema: schemas.Schema = (v.get("schema") or {}).get("openAPIV3Schema") or {}
        self.has_status = "status" in (v.get("subresources") or {})
        self.scale: Obj | None = (v.get("subresources") or {}).get("scale")
        self.printer = printer(v.get("additionalPrinterColumns") or [])

    def decode_content(self, content: Obj, unknown: str) -> list[str]:
        dropped = schemas.prune(content, self.schema)
        schemas.default(content, self.schema)
        return [] if unknown == IGNORE else dropped

    def content_errors(self, obj: Unstructured) -> list[FieldError]:
        body = {k: v for k, v in obj.content.items() if k not in ("apiVersion", "kind")}
        checked = dict(self.schema)
        props = dict(checked.get("properties") or {})
        for k in ("apiVersion", "kind", "metadata"):
            props.pop(k, None)
        checked["properties"] = props
        checked["required"] = [r for r in checked.get("required") or []
                               if r not in ("apiVersion", "kind", "metadata")]
        return schemas.validate(body, checked)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """The custom resource strategy's PrepareForUpdate: with a status subresource the
        main resource keeps the old status and generation moves with the spec; without
        one, with any change besides metadata."""
        if self.has_status:
            super().prepare_for_update(new, old)
            return
        gen = (old.get("metadata") or {}).get("generation", 1)
        strip = ("metadata",)
        if {k: v for k, v in new.items() if k not in strip} != {
                k: v for k, v in old.items() if k not in strip}:
            gen += 1
        new.setdefault("metadata", {})["generation"] = gen

    def subresource_strategy(self, name: str) -> Any:
        if name == "status" and self.has_status:
            return CustomResourceStatusStrategy(self)
        return None


class CustomResourceStatusStrategy(CustomResourceStrategy):
    """``<plural>/status``: writes change status and metadata, never the rest."""

    def __init__(self, base: CustomResourceStrategy) -> None:
        self.__dict__.update(base.__dict__)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep_all_but_status(new, old, (*STATUS_KEEPS_METADATA, "generation"))


__all__ = ["CustomResourceStrategy", "json_path", "printer", "resource_info"]
