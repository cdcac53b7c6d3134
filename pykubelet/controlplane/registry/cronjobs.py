"""CronJobs (batch/v1, pkg/registry/batch/cronjob): a create starts with no status and
generation 1; the CronJob controller writes the status subresource."""

from __future__ import annotations

from typing import Any

from pykubelet.controlplane.registry.resources import CRONJOBS
from pykubelet.controlplane.registry.strategy import Obj, Strategy


class CronJobStrategy(Strategy):
    info = CRONJOBS
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
