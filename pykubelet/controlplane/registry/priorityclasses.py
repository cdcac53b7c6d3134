"""PriorityClasses (scheduling.k8s.io/v1): the two system classes exist from the start and
cannot change; a value is immutable; values above one billion are reserved."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import PRIORITY_CLASSES
from pykubelet.controlplane.registry.strategy import Obj, Strategy

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
    """The model checks values (reserved above one billion, immutable) and system names."""

    info = PRIORITY_CLASSES
