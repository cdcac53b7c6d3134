"""PriorityClasses (scheduling.k8s.io/v1): the two system classes exist from the start and
cannot change; a value is immutable; values above one billion are reserved."""

from __future__ import annotations

from typing import Any

from pykubelet.controlplane.registry.resources import PRIORITY_CLASSES
from pykubelet.controlplane.registry.strategy import Obj, Strategy, forbidden, invalid

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_CLASSES = {
    "system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
    "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY,
}
PREEMPT_LOWER = "PreemptLowerPriority"
PREEMPTION_POLICIES = (PREEMPT_LOWER, "Never")


def system_class(name: str) -> Obj:
    return {
        "kind": "PriorityClass",
        "apiVersion": "scheduling.k8s.io/v1",
        "metadata": {"name": name},
        "value": SYSTEM_CLASSES[name],
        "description": ("Used for system critical pods that must run in the cluster, but can "
                        "be moved to another node if necessary." if name ==
                        "system-cluster-critical" else
                        "Used for system critical pods that must not be moved from their "
                        "current node."),
        "preemptionPolicy": PREEMPT_LOWER,
    }


class PriorityClassStrategy(Strategy):
    info = PRIORITY_CLASSES

    def decode(self, body: Obj, unknown: str = "Strict") -> tuple[Obj, list[str]]:
        obj, warnings = super().decode(body, unknown)
        obj.setdefault("preemptionPolicy", PREEMPT_LOWER)
        return obj, warnings

    def validate(self, obj: Obj) -> list[Any]:
        errs = super().validate(obj)
        name = (obj.get("metadata") or {}).get("name", "")
        value = obj.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            errs.append("value: Required value")
        elif name in SYSTEM_CLASSES:
            if value != SYSTEM_CLASSES[name]:
                errs.append(forbidden("metadata.name", f"{name!r} is a reserved system "
                                      "priority class name"))
        else:
            if name.startswith("system-"):
                errs.append(forbidden("metadata.name", "priority class names with "
                                      "'system-' prefix are reserved."))
            if value > HIGHEST_USER_PRIORITY:
                errs.append(forbidden("value", "maximum allowed value of a user defined "
                                      f"priority is {HIGHEST_USER_PRIORITY}"))
        if obj.get("preemptionPolicy") not in PREEMPTION_POLICIES:
            errs.append(f'preemptionPolicy: Unsupported value: "{obj.get("preemptionPolicy")}"'
                        ': supported values: "Never", "PreemptLowerPriority"')
        return errs

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        errs = super().validate_update(new, old)
        if new.get("value") != old.get("value"):
            errs.append(forbidden("value", "may not be changed in an update."))
        if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
            errs.append(invalid("preemptionPolicy", new.get("preemptionPolicy"),
                                "field is immutable"))
        return errs
