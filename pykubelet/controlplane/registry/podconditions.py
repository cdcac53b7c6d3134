"""A pod's conditions as upstream's podutil.UpdatePodCondition writes them: the binding,
the node lifecycle controller, pod GC and the scheduler all set conditions this one way."""

from __future__ import annotations

from pykubelet.controlplane.registry.strategy import Obj


def set_condition(status: Obj, cond: Obj) -> None:
    """podutil.UpdatePodCondition: replace the condition of that type, keeping its
    lastTransitionTime when the status did not change."""
    conds = status.setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            if c.get("status") == cond.get("status"):
                cond["lastTransitionTime"] = c.get("lastTransitionTime",
                                                   cond.get("lastTransitionTime"))
            conds[i] = cond
            return
    conds.append(cond)
