"""ReplicaSets and Deployments (apps/v1, pkg/registry/apps/{replicaset,deployment}): the
generation moves with the spec, status is the controller's (written through ``status``),
and ``scale`` reads and writes spec.replicas as an autoscaling/v1 Scale."""

from __future__ import annotations

from typing import Any

from pykubelet.controlplane.registry.resources import DEPLOYMENTS, REPLICA_SETS
from pykubelet.controlplane.registry.strategy import Obj, Strategy


class ReplicaSetStrategy(Strategy):
    info = REPLICA_SETS
    has_status = True

    def prepare_for_create(self, obj: Obj, typed: Any = None) -> None:
        super().prepare_for_create(obj, typed)
        obj.setdefault("metadata", {})["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        gen = (old.get("metadata") or {}).get("generation", 1)
        if new.get("spec") != old.get("spec"):
            gen += 1
        new.setdefault("metadata", {})["generation"] = gen


class DeploymentStrategy(ReplicaSetStrategy):
    info = DEPLOYMENTS
