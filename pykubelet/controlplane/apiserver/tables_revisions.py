"""Table columns of apps/v1 ControllerRevisions, as printers.go's
controllerRevisionColumnDefinition and printControllerRevision: NAME CONTROLLER REVISION
AGE, the controller written ``<kind>.<group>/<name>`` (formatResourceName) or ``<none>``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pykubelet.api.machinery.swaggerdoc import swagger_doc

Obj = dict[str, Any]
Printer = tuple[list[Obj], Callable[[Obj, dt.datetime], list[Any]]]


def controller_name(obj: Obj) -> str:
    """The controller's group kind and name, lower-cased as formatResourceName does
    (``daemonset.apps/web``), or ``<none>`` without a controller reference."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            api_version = str(ref.get("apiVersion", ""))
            group = api_version.split("/", 1)[0] if "/" in api_version else ""
            kind = str(ref.get("kind", ""))
            group_kind = f"{kind}.{group}" if group else kind
            return f"{group_kind.lower()}/{ref.get('name', '')}"
    return "<none>"


def controller_revision_printer(col: Callable[..., Obj], name: Obj, age: Obj,
                                age_of: Callable[[str | None, dt.datetime], str]) -> Printer:
    columns = [
        name,
        col("Controller", desc="Controller of the object"),
        col("Revision", desc=swagger_doc("io.k8s.api.apps.v1.ControllerRevision", "revision")),
        age,
    ]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), controller_name(obj), obj.get("revision", 0),
                age_of(meta.get("creationTimestamp"), now)]

    return columns, cells
