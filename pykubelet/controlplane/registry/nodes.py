"""Nodes (pkg/registry/core/node/strategy.go): cluster-scoped, status written by the node
through ``nodes/status``; ``spec.unschedulable`` is what cordon flips."""

from __future__ import annotations

from typing import Any

from pykubelet.controlplane.registry.resources import NODES
from pykubelet.controlplane.registry.strategy import Obj, Strategy


class NodeStrategy(Strategy):
    info = NODES
    has_status = True
    selectable_fields = ("spec.unschedulable",)

    def prepare_typed_for_create(self, typed: Any) -> None:
        """A node registers itself with its status (kubelet's registerWithAPIServer)."""

    def fields(self, obj: Obj) -> dict[str, str]:
        spec = obj.get("spec") or {}
        return {"spec.unschedulable": "true" if spec.get("unschedulable") else "false"}
