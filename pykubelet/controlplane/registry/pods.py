"""Pods (pkg/registry/core/pod/strategy.go): status is the node's, the spec is immutable
but for images, activeDeadlineSeconds, tolerations additions and grace shortening; a
bound pod is deleted gracefully, an unbound or finished one at once."""

from __future__ import annotations

import copy
from typing import Any

from pykubelet.api.quantity import Quantity
from pykubelet.controlplane.registry import model
from pykubelet.controlplane.registry.resources import PODS
from pykubelet.controlplane.registry.strategy import (
    Obj,
    Strategy,
    forbidden,
    validate_object_meta,
    validate_object_meta_update,
)

TERMINAL_PHASES = ("Succeeded", "Failed")
DEFAULT_GRACE = 30

POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it "
    "to be set to 1 if it was previously negative)"
)


def node_name(obj: Obj) -> str:
    return str((obj.get("spec") or {}).get("nodeName") or "")


def phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


class PodStrategy(Strategy):
    info = PODS
    has_status = True
    return_deleted_object = True
    selectable_fields = (
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
        "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
        "status.podIPs", "status.nominatedNodeName",
    )
    indexed_fields = ("spec.nodeName",)

    def decode(self, body: Obj, unknown: str = model.STRICT) -> tuple[Obj, list[str]]:
        return model.decode_pod(body, unknown)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}

    def validate(self, obj: Obj) -> list[Any]:
        return validate_object_meta(obj, self.info) + [
            e for e in model.pod_field_errors(obj) if not str(e).startswith("metadata.")
        ]

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        errs = self.validate(new) + validate_object_meta_update(new, old)
        errs += pod_spec_update_errors(new.get("spec") or {}, old.get("spec") or {})
        return errs

    def fields(self, obj: Obj) -> dict[str, str]:
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        ips = [p.get("ip", "") for p in status.get("podIPs") or []]
        return {
            "spec.nodeName": spec.get("nodeName") or "",
            "spec.restartPolicy": spec.get("restartPolicy") or "",
            "spec.schedulerName": spec.get("schedulerName") or "",
            "spec.serviceAccountName": spec.get("serviceAccountName") or "",
            "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
            "status.phase": status.get("phase") or "",
            "status.podIP": status.get("podIP") or "",
            "status.podIPs": ips[0] if ips else "",
            "status.nominatedNodeName": status.get("nominatedNodeName") or "",
        }

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        spec = obj.get("spec") or {}
        if requested is not None:
            period = requested
        else:
            tgps = spec.get("terminationGracePeriodSeconds")
            period = DEFAULT_GRACE if tgps is None else int(tgps)
        if not spec.get("nodeName") or phase(obj) in TERMINAL_PHASES:
            period = 0
        return 1 if period < 0 else period


def qos_class(spec: Obj) -> str:
    """v1qos.GetPodQOS over cpu and memory, on a decoded (valid) pod spec."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        res = c.get("resources") or {}
        for name, text in (res.get("requests") or {}).items():
            q = Quantity.parse(text)
            if name in ("cpu", "memory") and not q.is_zero():
                requests[name] = requests.get(name, 0) + q.milli_value()
        found = set()
        for name, text in (res.get("limits") or {}).items():
            q = Quantity.parse(text)
            if name in ("cpu", "memory") and not q.is_zero():
                found.add(name)
                limits[name] = limits.get(name, 0) + q.milli_value()
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"


def pod_spec_update_errors(new: Obj, old: Obj) -> list[str]:
    """ValidatePodUpdate's spec rule: everything but the mutable fields stays as it was."""
    munged = copy.deepcopy(new)
    for field in ("containers", "initContainers"):
        olds = old.get(field) or []
        news = munged.get(field) or []
        if len(olds) == len(news):
            for o, n in zip(olds, news, strict=True):
                if "image" in o:
                    n["image"] = o["image"]
                else:
                    n.pop("image", None)
    errs: list[str] = []
    # activeDeadlineSeconds: may be set, or lowered, never removed or raised
    new_ads, old_ads = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if old_ads is not None and (new_ads is None or new_ads > old_ads):
        errs.append("spec.activeDeadlineSeconds: Invalid value: "
                    f"{new_ads if new_ads is not None else 'null'}: must be less than or equal "
                    "to previous value")
    _restore(munged, old, "activeDeadlineSeconds")
    # tolerations: additions only
    old_tol = old.get("tolerations") or []
    new_tol = new.get("tolerations") or []
    missing = [t for t in old_tol if t not in new_tol]
    if missing:
        errs.append(forbidden("spec.tolerations", "existing toleration can not be modified "
                              "except its tolerationSeconds"))
    _restore(munged, old, "tolerations")
    old_tgps = old.get("terminationGracePeriodSeconds")
    if old_tgps is not None and old_tgps < 0 and new.get("terminationGracePeriodSeconds") == 1:
        _restore(munged, old, "terminationGracePeriodSeconds")
    # scheduling gates may only be removed
    old_gates = old.get("schedulingGates") or []
    new_gates = new.get("schedulingGates") or []
    if all(g in old_gates for g in new_gates):
        _restore(munged, old, "schedulingGates")
    if munged != old:
        errs.append(forbidden("spec", POD_UPDATE_FORBIDDEN))
    return errs


def _restore(munged: Obj, old: Obj, field: str) -> None:
    if field in old:
        munged[field] = copy.deepcopy(old[field])
    else:
        munged.pop(field, None)
