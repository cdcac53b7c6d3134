"""The disruption controller (pkg/controller/disruption): each PodDisruptionBudget's status
from the pods its selector picks.

For pods without a workload controller, as here: with an integer ``minAvailable`` the
expected count is the number of matching pods and the desired healthy count is
``minAvailable``; with ``maxUnavailable`` or a percentage the pods are "unmanaged", the
expected count is 0 and no disruption is allowed (with an ``UnmanagedPods`` warning event),
exactly as upstream. A pod counts as healthy when it is Ready and not being deleted or
recently evicted (``disruptedPods``, forgotten after two minutes).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.timeutil import now, parse_time, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.recorder import WARNING, EventRecorder
from pykubelet.controlplane.registry.eviction import selector_of
from pykubelet.controlplane.registry.resources import PDBS, PODS
from pykubelet.controlplane.registry.strategy import StatusStrategy

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

DELETION_TIMEOUT_S = 120.0
PERIOD_S = 1.0


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def pdb_status(pdb: dict[str, Any], pods: list[dict[str, Any]], at: dt.datetime
               ) -> tuple[dict[str, Any], bool]:
    """The status upstream computes, and whether the pods were unmanaged."""
    spec = pdb.get("spec") or {}
    old = pdb.get("status") or {}
    unmanaged = False
    expected = desired = 0
    if "maxUnavailable" in spec or isinstance(spec.get("minAvailable"), str):
        unmanaged = bool(pods)  # no pod here has a controller with a scale
        expected = 0
        if "maxUnavailable" in spec:
            mu = spec["maxUnavailable"]
            max_unavailable = _scaled(mu, expected)
            desired = max(0, expected - max_unavailable)
        else:
            desired = _scaled(spec["minAvailable"], expected)
    elif "minAvailable" in spec:
        desired = int(spec["minAvailable"])
        expected = len(pods)
    disrupted: dict[str, str] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        when = (old.get("disruptedPods") or {}).get(meta.get("name", ""))
        if when and parse_time(when) + dt.timedelta(seconds=DELETION_TIMEOUT_S) > at:
            disrupted[meta["name"]] = when
    healthy = sum(1 for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")
                  and (p.get("metadata") or {}).get("name") not in disrupted and _ready(p))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    generation = (pdb.get("metadata") or {}).get("generation", 0)
    conds = [c for c in old.get("conditions") or [] if c.get("type") != "DisruptionAllowed"]
    prev = next((c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"),
                None)
    want_status = "True" if allowed > 0 else "False"
    cond = {"type": "DisruptionAllowed", "status": want_status,
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods", "message": "",
            "observedGeneration": generation,
            "lastTransitionTime": (prev.get("lastTransitionTime") if prev and
                                   prev.get("status") == want_status else rfc3339(at))}
    status: dict[str, Any] = {"observedGeneration": generation}
    if disrupted:
        status["disruptedPods"] = disrupted
    status.update({"disruptionsAllowed": allowed, "currentHealthy": healthy,
                   "desiredHealthy": desired, "expectedPods": expected,
                   "conditions": [*conds, cond]})
    return status, unmanaged


def _scaled(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent, rounding up."""
    if isinstance(value, str) and value.endswith("%"):
        pct = int(value[:-1])
        return -(-pct * total // 100)
    return int(value)


async def run_disruption_controller(cp: ControlPlane) -> None:
    registry = cp.registry
    pdbs = registry.store(PDBS)
    pods = registry.store(PODS)
    recorder = EventRecorder(registry, "controllermanager")
    warned: set[str] = set()
    while True:
        await asyncio.sleep(PERIOD_S)
        at = now()
        for entry in list(pdbs.select(None, None)):
            pdb = entry.obj()
            sel = selector_of(pdb)
            ns = entry.attrs.namespace
            matching = [] if sel is None or sel.empty else [
                p.obj() for p in pods.select(ns, None) if sel.matches(p.attrs.labels)]
            status, unmanaged = pdb_status(pdb, matching, at)
            key = f"{ns}/{entry.attrs.name}/{(pdb.get('metadata') or {}).get('uid')}"
            if unmanaged and key not in warned:
                warned.add(key)
                await recorder.event(pdb, WARNING, "UnmanagedPods",
                                     "Pods selected by this PodDisruptionBudget (selector: "
                                     f"{(pdb.get('spec') or {}).get('selector')}) were found to "
                                     "be unmanaged. As a result, the status of the PDB cannot "
                                     "be calculated correctly, which may result in undefined "
                                     "behavior. To account for these pods please set "
                                     "\".spec.minAvailable\" field of the PDB to an integer "
                                     "value.")
            if status == (pdb.get("status") or {}):
                continue

            def write(obj: dict[str, Any], status: dict[str, Any] = status) -> dict[str, Any]:
                obj["status"] = status
                return obj

            try:
                await pdbs.guaranteed_update(ns, entry.attrs.name, write,
                                             StatusStrategy(pdbs.strategy))
            except errors.StatusError as exc:
                if exc.code != 404:
                    log.warning("pdb %s/%s status: %s", ns, entry.attrs.name, exc.message)
