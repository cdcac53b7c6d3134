"""Table columns of the apps/v1 workloads, as printers.go's replicaSetColumnDefinitions
and printReplicaSet: NAME DESIRED CURRENT READY AGE, and with ``-o wide`` the template's
CONTAINERS and IMAGES and the SELECTOR."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pykubelet.api.machinery.swaggerdoc import swagger_doc
from pykubelet.controlplane.registry.scale import selector_string

Obj = dict[str, Any]
Printer = tuple[list[Obj], Callable[[Obj, dt.datetime], list[Any]]]


def _doc(definition: str, prop: str) -> str:
    """A field's description as upstream's SwaggerDoc() gives it (the column's)."""
    return swagger_doc(f"io.k8s.api.apps.v1.{definition}", prop)


def format_selector(selector: Obj | None) -> str:
    """metav1.FormatLabelSelector: ``<none>`` for no requirement."""
    text = selector_string(selector)
    return text or "<none>"


def template_cells(obj: Obj) -> list[str]:
    """CONTAINERS and IMAGES of the pod template (layoutContainerCells), then SELECTOR."""
    spec = obj.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers),
            format_selector(spec.get("selector"))]


def template_columns(col: Callable[..., Obj], selector_desc: str) -> list[Obj]:
    """The ``-o wide`` columns of a workload with a pod template, for template_cells:
    CONTAINERS, IMAGES and the SELECTOR (described as the kind's spec.selector)."""
    return [col("Containers", desc="Names of each container in the template.", priority=1),
            col("Images", desc="Images referenced by each container in the template.",
                priority=1),
            col("Selector", desc=selector_desc, priority=1)]


def replica_set_printer(col: Callable[..., Obj], name: Obj, age: Obj,
                        age_of: Callable[[str | None, dt.datetime], str]) -> Printer:
    columns = [
        name,
        col("Desired", "integer", _doc("ReplicaSetSpec", "replicas")),
        col("Current", "integer", _doc("ReplicaSetStatus", "replicas")),
        col("Ready", "integer", _doc("ReplicaSetStatus", "readyReplicas")),
        age,
        *template_columns(col, _doc("ReplicaSetSpec", "selector")),
    ]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        status = obj.get("status") or {}
        return [meta.get("name", ""), spec.get("replicas", 0), status.get("replicas", 0),
                status.get("readyReplicas", 0), age_of(meta.get("creationTimestamp"), now),
                *template_cells(obj)]

    return columns, cells


def deployment_printer(col: Callable[..., Obj], name: Obj, age: Obj,
                       age_of: Callable[[str | None, dt.datetime], str]) -> Printer:
    """deploymentColumnDefinitions and printDeployment: READY is ready/desired."""
    columns = [
        name,
        col("Ready", desc="Number of the pod with ready state"),
        col("Up-to-date", desc=_doc("DeploymentStatus", "updatedReplicas")),
        col("Available", desc=_doc("DeploymentStatus", "availableReplicas")),
        age,
        *template_columns(col, _doc("DeploymentSpec", "selector")),
    ]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        status = obj.get("status") or {}
        ready = f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}"
        return [meta.get("name", ""), ready, status.get("updatedReplicas", 0),
                status.get("availableReplicas", 0), age_of(meta.get("creationTimestamp"), now),
                *template_cells(obj)]

    return columns, cells


def stateful_set_printer(col: Callable[..., Obj], name: Obj, age: Obj,
                         age_of: Callable[[str | None, dt.datetime], str]) -> Printer:
    """statefulSetColumnDefinitions and printStatefulSet: READY is ready/desired; wide adds
    the template's CONTAINERS and IMAGES (no SELECTOR)."""
    columns = [
        name,
        col("Ready", desc="Number of the pod with ready state"),
        age,
        col("Containers", desc="Names of each container in the template.", priority=1),
        col("Images", desc="Images referenced by each container in the template.",
            priority=1),
    ]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        status = obj.get("status") or {}
        ready = f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}"
        return [meta.get("name", ""), ready, age_of(meta.get("creationTimestamp"), now),
                *template_cells(obj)[:2]]

    return columns, cells
