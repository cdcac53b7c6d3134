"""Nodes (pkg/registry/core/node/strategy.go): cluster-scoped, status written by the node
through ``nodes/status``; ``spec.unschedulable`` is what cordon flips."""

from __future__ import annotations

import ipaddress
from typing import Any

from pykubelet.controlplane.registry.resources import NODES
from pykubelet.controlplane.registry.strategy import Obj, Strategy, invalid

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class NodeStrategy(Strategy):
    info = NODES
    has_status = True
    selectable_fields = ("spec.unschedulable",)

    def prepare_for_create(self, obj: Obj) -> None:
        """A node registers itself with its status (kubelet's registerWithAPIServer)."""

    def validate(self, obj: Obj) -> list[Any]:
        return super().validate(obj) + node_spec_errors(obj.get("spec") or {})

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        errs = super().validate_update(new, old) + node_spec_errors(new.get("spec") or {})
        old_cidr = (old.get("spec") or {}).get("podCIDR")
        new_cidr = (new.get("spec") or {}).get("podCIDR")
        if old_cidr and new_cidr != old_cidr:
            errs.append("spec.podCIDR: Forbidden: node updates may not change podCIDR except "
                        "from \"\" to valid")
        return errs

    def fields(self, obj: Obj) -> dict[str, str]:
        spec = obj.get("spec") or {}
        return {"spec.unschedulable": "true" if spec.get("unschedulable") else "false"}


def node_spec_errors(spec: Obj) -> list[str]:
    errs = []
    for i, cidr in enumerate(spec.get("podCIDRs") or []):
        try:
            ipaddress.ip_network(cidr)
        except ValueError:
            errs.append(invalid(f"spec.podCIDRs[{i}]", cidr, "must be a valid CIDR"))
    if spec.get("podCIDR"):
        try:
            ipaddress.ip_network(spec["podCIDR"])
        except ValueError:
            errs.append(invalid("spec.podCIDR", spec["podCIDR"], "must be a valid CIDR"))
    for i, taint in enumerate(spec.get("taints") or []):
        if not taint.get("key"):
            errs.append(f"spec.taints[{i}].key: Required value")
        effect = taint.get("effect", "")
        if effect not in TAINT_EFFECTS:
            errs.append(f'spec.taints[{i}].effect: Unsupported value: "{effect}": supported '
                        'values: "NoSchedule", "PreferNoSchedule", "NoExecute"')
    return errs
