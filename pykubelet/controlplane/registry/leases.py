"""Leases (coordination.k8s.io/v1): node heartbeats in kube-node-lease and leader
election; created on update, as client-go's lease lock does."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import LEASES
from pykubelet.controlplane.registry.strategy import Obj, Strategy, canonical_time


class LeaseStrategy(Strategy):
    info = LEASES
    allow_create_on_update = True

    def decode(self, body: Obj, unknown: str = "Strict") -> tuple[Obj, list[str]]:
        obj, warnings = super().decode(body, unknown)
        spec = obj.get("spec") or {}
        for f in ("acquireTime", "renewTime"):
            if spec.get(f) is not None:
                spec[f] = canonical_time(spec[f], f"spec.{f}", micro=True)
        return obj, warnings
