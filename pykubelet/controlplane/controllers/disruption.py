"""The disruption controller (pkg/controller/disruption): each PodDisruptionBudget's status
from the pods its selector picks.

For pods without a workload controller, as here: with an integer ``minAvailable`` the
expected count is the number of matching pods and the desired healthy count is
``minAvailable``; with ``maxUnavailable`` or a percentage the pods are "unmanaged", the
expected count is 0 and no disruption is allowed (with an ``UnmanagedPods`` warning event),
exactly as upstream. A pod counts as healthy when it is Ready and not being deleted or
recently evicted (``disruptedPods``, forgotten after two minutes).

Watch-driven (:class:`DisruptionController`): budgets are synced when they or the pods they
pick change, never on a timer, so an idle cluster costs it nothing; it used to recompute
every budget over every pod each second.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.labels import Selector
from pykubelet.api.machinery.timeutil import now, parse_time, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.informer import InformerController, entry_key, split_key
from pykubelet.controlplane.controllers.recorder import WARNING, EventRecorder
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.eviction import selector_of
from pykubelet.controlplane.registry.resources import PDBS, PODS
from pykubelet.controlplane.registry.store import Entry, Registry
from pykubelet.controlplane.registry.strategy import StatusStrategy
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

DELETION_TIMEOUT_S = 120.0
RECHECK_SLACK_S = 0.1  # past the expiry, so the recheck finds the entry expired
SELECTOR_VIEW = "disruption.selector"  # a budget's parsed selector, kept on its entry


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


class DisruptionController(InformerController):
    """Watch-driven, as upstream's: a budget's change queues it, a pod's change queues the
    budgets whose selectors pick it (before or after the change), and a budget with
    ``disruptedPods`` is queued again for when the oldest entry expires. Nothing runs while
    nothing changes."""

    def __init__(self, registry: Registry, clock: Callable[[], dt.datetime] = now) -> None:
        self.registry = registry
        self.pdbs = self.primary = registry.store(PDBS)
        self.pods = registry.store(PODS)
        self.recorder = EventRecorder(registry, "controllermanager")
        self.queue: WorkQueue = WorkQueue("disruption", self.sync)
        self.clock = clock
        self.warned: set[str] = set()

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == PDBS.storage_prefix:
            self.queue.add(entry_key(ev.entry))
        elif cache.prefix == PODS.storage_prefix:
            labels = [ev.entry.attrs.labels]
            if ev.prev is not None and ev.prev.attrs.labels != ev.entry.attrs.labels:
                labels.append(ev.prev.attrs.labels)
            for entry in self.pdbs.select(ev.entry.attrs.namespace, None):
                sel = _selector(entry)
                if sel is not None and not sel.empty and any(sel.matches(lb) for lb in labels):
                    self.queue.add(entry_key(entry))

    async def sync(self, key: str) -> None:
        pdb = self.get_primary(key)
        if pdb is None:
            return
        ns, name = split_key(key)
        sel = selector_of(pdb)
        matching = [] if sel is None or sel.empty else [
            p.obj() for p in self.pods.select(ns, None) if sel.matches(p.attrs.labels)]
        at = self.clock()
        status, unmanaged = pdb_status(pdb, matching, at)
        warn_key = f"{key}/{(pdb.get('metadata') or {}).get('uid')}"
        if unmanaged and warn_key not in self.warned:
            self.warned.add(warn_key)
            await self.recorder.event(pdb, WARNING, "UnmanagedPods",
                                      "Pods selected by this PodDisruptionBudget (selector: "
                                      f"{(pdb.get('spec') or {}).get('selector')}) were found "
                                      "to be unmanaged. As a result, the status of the PDB "
                                      "cannot be calculated correctly, which may result in "
                                      "undefined behavior. To account for these pods please "
                                      "set \".spec.minAvailable\" field of the PDB to an "
                                      "integer value.")
        recheck = next_recheck(status, at)
        if recheck is not None:
            self.queue.add_after(key, recheck)
        if status == (pdb.get("status") or {}):
            return

        def write(obj: dict[str, Any]) -> dict[str, Any]:
            obj["status"] = status
            return obj

        try:
            await self.pdbs.guaranteed_update(ns, name, write, StatusStrategy(self.pdbs.strategy))
        except errors.StatusError as exc:
            if exc.code != 404:
                raise


def _selector(entry: Entry) -> Selector | None:
    """The budget's selector, parsed once per stored version (kept on the entry)."""
    sel: Selector | None = entry.derived(SELECTOR_VIEW, lambda: selector_of(entry.obj()))
    return sel


def next_recheck(status: dict[str, Any], at: dt.datetime) -> float | None:
    """Seconds until the oldest ``disruptedPods`` entry expires (upstream's recheck
    queue), or None when there is none."""
    times = [parse_time(t) for t in (status.get("disruptedPods") or {}).values()]
    if not times:
        return None
    expiry = min(times) + dt.timedelta(seconds=DELETION_TIMEOUT_S)
    return max((expiry - at).total_seconds(), 0.0) + RECHECK_SLACK_S


async def run_disruption_controller(cp: ControlPlane) -> None:
    await DisruptionController(cp.registry).run()
