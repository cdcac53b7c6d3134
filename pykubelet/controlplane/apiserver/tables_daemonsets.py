"""Table columns of apps/v1 DaemonSets, as printers.go's daemonSetColumnDefinitions and
printDaemonSet: NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE, and
with ``-o wide`` the template's CONTAINERS and IMAGES and the SELECTOR."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pykubelet.api.machinery.swaggerdoc import swagger_doc
from pykubelet.controlplane.apiserver.tables_apps import template_cells, template_columns

Obj = dict[str, Any]
Printer = tuple[list[Obj], Callable[[Obj, dt.datetime], list[Any]]]


def format_labels(labels: dict[str, str] | None) -> str:
    """labels.FormatLabels: ``k=v`` sorted by key and joined by commas, ``<none>`` if none."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def daemon_set_printer(col: Callable[..., Obj], name: Obj, age: Obj,
                       age_of: Callable[[str | None, dt.datetime], str]) -> Printer:
    status_doc = "io.k8s.api.apps.v1.DaemonSetStatus"
    spec_doc = "io.k8s.api.apps.v1.DaemonSetSpec"
    pod_doc = "io.k8s.api.core.v1.PodSpec"
    columns = [
        name,
        col("Desired", "integer", swagger_doc(status_doc, "desiredNumberScheduled")),
        col("Current", "integer", swagger_doc(status_doc, "currentNumberScheduled")),
        col("Ready", "integer", swagger_doc(status_doc, "numberReady")),
        col("Up-to-date", "integer", swagger_doc(status_doc, "updatedNumberScheduled")),
        col("Available", "integer", swagger_doc(status_doc, "numberAvailable")),
        col("Node Selector", desc=swagger_doc(pod_doc, "nodeSelector")),
        age,
        *template_columns(col, swagger_doc(spec_doc, "selector")),
    ]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        status = obj.get("status") or {}
        pod_spec = (spec.get("template") or {}).get("spec") or {}
        return [meta.get("name", ""), status.get("desiredNumberScheduled", 0),
                status.get("currentNumberScheduled", 0), status.get("numberReady", 0),
                status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0),
                format_labels(pod_spec.get("nodeSelector")),
                age_of(meta.get("creationTimestamp"), now), *template_cells(obj)]

    return columns, cells
