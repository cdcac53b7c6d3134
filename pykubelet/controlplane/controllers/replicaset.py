"""The ReplicaSet controller (pkg/controller/replicaset/replica_set.go): keeps
spec.replicas pods matching each ReplicaSet's selector, owned through a controller
ownerReference.

Decisions are pure (:func:`compute_actions`, :func:`calculate_status`, and ClaimPods in
:mod:`controller_ref_manager`, tested as tables); :class:`ReplicaSetController` carries
them out. It is watch-driven: the
watch cache's events enqueue the key of the ReplicaSet concerned (a pod's controller, or
for an orphan every ReplicaSet whose selector picks it), one sync per key at a time; a sync
that fails is logged with the key and retried with exponential back-off (5 ms doubling to
1000 s, as the workqueue's default rate limiter). Creates go in slow-start batches (1, 2,
4, ...: a quota or admission failure costs one call, not hundreds); expectations stop a
sync from repeating creates and deletes its watch has not shown yet. Deleting a ReplicaSet
leaves its pods to the garbage collector (the ownerReferences say so, blockOwnerDeletion
set), as upstream.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.timeutil import now as utc_now
from pykubelet.api.machinery.timeutil import rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.activepods import (
    is_active,
    is_available,
    is_ready,
    meta,
    pods_to_delete,
    ready_since,
)
from pykubelet.controlplane.controllers.controller_ref import controller_ref, new_controller_ref
from pykubelet.controlplane.controllers.controller_ref_manager import (
    ControllerRefManager,
    claim_pods,
)
from pykubelet.controlplane.controllers.expectations import Expectations
from pykubelet.controlplane.controllers.informer import (
    InformerController,
    object_key,
    split_key,
)
from pykubelet.controlplane.controllers.pod_control import PodControl, get_pod_from_template
from pykubelet.controlplane.controllers.pod_events import owner_event_key, pod_owner_keys
from pykubelet.controlplane.controllers.recorder import EventRecorder
from pykubelet.controlplane.controllers.status_writer import write_status
from pykubelet.controlplane.controllers.workqueue import (
    CONTROLLER_BASE_S,
    CONTROLLER_MAX_S,
    WorkQueue,
)
from pykubelet.controlplane.registry.resources import PODS, REPLICA_SETS
from pykubelet.controlplane.registry.store import GenericStore
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]

BURST_REPLICAS = 500  # upstream's BurstReplicas: at most this many creates/deletes a sync
SLOW_START_INITIAL_BATCH = 1
# workqueue.DefaultControllerRateLimiter's per-key back-off, as the ReplicaSet, Deployment
# and DaemonSet controllers use it
RETRY_BASE_S = CONTROLLER_BASE_S
RETRY_MAX_S = CONTROLLER_MAX_S
REPLICA_FAILURE = "ReplicaFailure"


# ---------------------------------------------------------------------------- decisions


def pod_from_template(rs: Obj) -> Obj:
    """The ReplicaSet's pod: its template, owned by it (GetPodFromTemplate)."""
    return get_pod_from_template((rs.get("spec") or {}).get("template") or {}, rs,
                                 new_controller_ref(rs, "apps/v1", "ReplicaSet"))


@dataclass
class Actions:
    create: int = 0
    delete: list[Obj] = field(default_factory=list)


def compute_actions(rs: Obj, owned: list[Obj], related: list[Obj],
                    now: dt.datetime | None) -> Actions:
    """manageReplicas' decision: how many pods to create (at most BURST_REPLICAS), or
    which to delete (the least valuable first, ranked against the related pods)."""
    want = (rs.get("spec") or {}).get("replicas", 1)
    diff = len(owned) - want
    if diff < 0:
        return Actions(create=min(-diff, BURST_REPLICAS))
    if diff > 0:
        return Actions(delete=pods_to_delete(owned, related, min(diff, BURST_REPLICAS), now))
    return Actions()


def calculate_status(rs: Obj, owned: list[Obj], manage_error: str | None,
                     now: dt.datetime) -> Obj:
    """calculateStatus: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas
    (minReadySeconds), observedGeneration, and ReplicaFailure while creates or deletes fail."""
    spec = rs.get("spec") or {}
    old = rs.get("status") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = spec.get("minReadySeconds", 0)
    fully = sum(1 for p in owned if all((meta(p).get("labels") or {}).get(k) == v
                                        for k, v in template_labels.items()))
    ready = sum(1 for p in owned if is_ready(p))
    available = sum(1 for p in owned if is_available(p, min_ready, now))
    conditions = [c for c in old.get("conditions") or [] if c.get("type") != REPLICA_FAILURE]
    failure = next((c for c in old.get("conditions") or []
                    if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None:
        if failure is None:
            diff = len(owned) - spec.get("replicas", 1)
            reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
            failure = {"type": REPLICA_FAILURE, "status": "True",
                       "lastTransitionTime": rfc3339(now), "reason": reason,
                       "message": manage_error}
        conditions.append(failure)
    status: Obj = {"replicas": len(owned)}
    if fully:
        status["fullyLabeledReplicas"] = fully
    if ready:
        status["readyReplicas"] = ready
    if available:
        status["availableReplicas"] = available
    status["observedGeneration"] = meta(rs).get("generation", 0)
    if conditions:
        status["conditions"] = conditions
    return status


def requeue_after(rs: Obj, owned: list[Obj], now: dt.datetime) -> float | None:
    """Seconds until a ready pod turns available (minReadySeconds), to sync again then."""
    min_ready = (rs.get("spec") or {}).get("minReadySeconds", 0)
    if not min_ready:
        return None
    waits = []
    for p in owned:
        since = ready_since(p)
        if since is not None and not is_available(p, min_ready, now):
            waits.append((since + dt.timedelta(seconds=min_ready) - now).total_seconds())
    return max(0.0, min(waits)) + 0.05 if waits else None


def slow_start_batches(count: int, initial: int = SLOW_START_INITIAL_BATCH) -> list[int]:
    """slowStartBatch's batch sizes: 1, 2, 4, ... until ``count`` are asked for."""
    out, batch, left = [], min(initial, count), count
    while left > 0:
        out.append(batch)
        left -= batch
        batch = min(2 * batch, left)
    return out


# ---------------------------------------------------------------------------- effects


class ReplicaSetController(InformerController):
    def __init__(self, cp: ControlPlane, clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.registry = cp.registry
        self.rs_store: GenericStore = self.registry.store(REPLICA_SETS)
        self.primary = self.rs_store
        self.pods: GenericStore = self.registry.store(PODS)
        self.claimer = ControllerRefManager(self.pods, self.rs_store, "apps/v1", "ReplicaSet")
        self.recorder = EventRecorder(self.registry, "replicaset-controller")
        self.pod_control = PodControl(self.pods, self.recorder)
        self.expectations = Expectations()
        self.queue: WorkQueue = WorkQueue(
            "replicaset", self.sync, base=RETRY_BASE_S, cap=RETRY_MAX_S, logger=log)
        self.clock = clock

    # -- event handlers: enqueue only
    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == REPLICA_SETS.storage_prefix:
            self.queue.add(owner_event_key(ev, self.expectations))
        elif cache.prefix == PODS.storage_prefix:
            self._on_pod(ev)

    def _on_pod(self, ev: CachedEvent) -> None:
        for key in pod_owner_keys(ev, "ReplicaSet", self.rs_store, self.expectations):
            self.queue.add(key)

    # -- the worker (run: InformerController's)
    async def sync(self, key: str) -> None:
        """syncReplicaSet."""
        rs = self.get_primary(key)
        if rs is None:
            self.expectations.forget(key)
            return
        ns, _ = split_key(key)
        needs_sync = self.expectations.satisfied(key)
        all_pods = [p.obj() for p in self.pods.select(ns, None)]
        active = [p for p in all_pods if is_active(p)]
        claim = claim_pods(rs, active)
        owned = await self.claimer.claim(rs, claim)
        manage_error: str | None = None
        if needs_sync and not meta(rs).get("deletionTimestamp"):
            related = [p for p in all_pods if (ref := controller_ref(p)) is not None
                       and ref.get("kind") == "ReplicaSet"]
            manage_error = await self._manage(rs, owned, related)
        now = self.clock()
        await write_status(self.rs_store, rs, calculate_status(rs, owned, manage_error, now))
        wait = requeue_after(rs, owned, now)
        if wait is not None:
            self.queue.add_after(key, wait)
        if manage_error is not None:
            raise errors.internal(manage_error)

    async def _manage(self, rs: Obj, owned: list[Obj], related: list[Obj]) -> str | None:
        """manageReplicas: create or delete, returning the first error's message."""
        key = object_key(rs)
        actions = compute_actions(rs, owned, related, self.clock())
        if actions.create:
            self.expectations.expect_creations(key, actions.create)
            created, error = 0, None
            for batch in slow_start_batches(actions.create):
                results = await asyncio.gather(*(self._create_pod(rs) for _ in range(batch)))
                failed = [r for r in results if r is not None]
                created += batch - len(failed)
                if failed:
                    error = failed[0]
                    break
            skipped = actions.create - created
            if skipped:
                self.expectations.lower_creations(key, skipped)
            return error
        if actions.delete:
            pod_keys = [object_key(p) for p in actions.delete]
            self.expectations.expect_deletions(key, pod_keys)
            results = await asyncio.gather(*(self._delete_pod(rs, p) for p in actions.delete))
            for pod, result in zip(actions.delete, results, strict=True):
                if result is not None:
                    self.expectations.deletion_observed(key, object_key(pod))
            failed = [r for r in results if r is not None]
            return failed[0] if failed else None
        return None

    async def _create_pod(self, rs: Obj) -> str | None:
        err = await self.pod_control.create_pod(rs, pod_from_template(rs))
        if err is None or (err.code == 409 and err.reason == errors.ALREADY_EXISTS):
            return None
        return err.message

    async def _delete_pod(self, rs: Obj, pod: Obj) -> str | None:
        err = await self.pod_control.delete_pod(rs, pod)
        return None if err is None or err.code == 404 else err.message


async def run_replicaset_controller(cp: ControlPlane) -> None:
    await ReplicaSetController(cp).run()
