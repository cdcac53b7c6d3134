"""PodDisruptionBudgets (policy/v1): minAvailable or maxUnavailable over a label selector;
the disruption controller keeps their status, the eviction subresource consumes it."""

from __future__ import annotations

import re
from typing import Any

from pykubelet.controlplane.registry.resources import PDBS
from pykubelet.controlplane.registry.strategy import Obj, Strategy, invalid

_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent_errors(path: str, value: Any) -> list[str]:
    if isinstance(value, bool):
        return [invalid(path, value, "must be an integer or percentage (e.g '5%')")]
    if isinstance(value, int):
        return [invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [invalid(path, value, "a valid percent string must be a numeric string "
                            "followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                            "validation is '[0-9]+%')")]
        if int(value[:-1]) > 100:
            return [invalid(path, value, "must not be greater than 100%")]
        return []
    return [invalid(path, value, "must be an integer or percentage (e.g '5%')")]


class PDBStrategy(Strategy):
    info = PDBS
    has_status = True

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj.setdefault("metadata", {})["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        gen = (old.get("metadata") or {}).get("generation", 1)
        if new.get("spec") != old.get("spec"):
            gen += 1
        new.setdefault("metadata", {})["generation"] = gen

    def validate(self, obj: Obj) -> list[Any]:
        errs = super().validate(obj)
        spec = obj.get("spec") or {}
        if "minAvailable" in spec and "maxUnavailable" in spec:
            errs.append("spec: Invalid value: \"...\": minAvailable and maxUnavailable cannot "
                        "be both set")
        for f in ("minAvailable", "maxUnavailable"):
            if f in spec:
                errs += _int_or_percent_errors(f"spec.{f}", spec[f])
        policy = spec.get("unhealthyPodEvictionPolicy")
        if policy is not None and policy not in ("IfHealthyBudget", "AlwaysAllow"):
            errs.append(f'spec.unhealthyPodEvictionPolicy: Unsupported value: "{policy}": '
                        'supported values: "AlwaysAllow", "IfHealthyBudget"')
        return errs
