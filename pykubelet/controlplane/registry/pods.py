"""Pods (pkg/registry/core/pod/strategy.go): status is the node's, the spec is immutable
but for images, activeDeadlineSeconds, tolerations additions and grace shortening (and
ephemeral containers, added through their own subresource); a bound pod is deleted
gracefully, an unbound or finished one at once."""

from __future__ import annotations

import copy
from typing import Any

from pykubelet import podtrace
from pykubelet.api import validation
from pykubelet.api.qos import qos_class
from pykubelet.api.types import PodStatus
from pykubelet.controlplane.registry.resources import PODS
from pykubelet.controlplane.registry.strategy import Obj, StatusStrategy, Strategy

TERMINAL_PHASES = ("Succeeded", "Failed")
DEFAULT_GRACE = 30


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

    def prepare_typed_for_create(self, typed: Any) -> None:
        typed.status = PodStatus(phase="Pending", qos_class=qos_class(typed))

    def after_create(self, typed: Any) -> None:
        # the burst's first stage (PYKUBE_POD_TRACE): the pod's write committed
        podtrace.stage("created", typed.metadata.uid)

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

    def subresource_strategy(self, name: str) -> Strategy | None:
        if name == "ephemeralcontainers":
            return EphemeralContainersStrategy(self)
        return super().subresource_strategy(name)


class EphemeralContainersStrategy(StatusStrategy):
    """``pods/ephemeralcontainers`` (podEphemeralContainersStrategy): a write keeps the old
    pod whole but for ``spec.ephemeralContainers`` (dropNonEphemeralContainerUpdates), and
    may only add to them (ValidatePodEphemeralContainersUpdate). ``kubectl debug`` sends a
    strategic merge patch of the pod adding its container."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        ephemeral = (new.get("spec") or {}).get("ephemeralContainers")
        new.clear()
        new.update(copy.deepcopy(old))
        spec = new.setdefault("spec", {})
        if ephemeral:
            spec["ephemeralContainers"] = ephemeral
        else:
            spec.pop("ephemeralContainers", None)

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        return list(validation.pod_ephemeral_containers_update_errors(
            self.typed(new), self.typed(old)))
