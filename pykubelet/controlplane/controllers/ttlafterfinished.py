"""The TTL-after-finished controller (pkg/controller/ttlafterfinished): a Job that has
finished (``Complete`` or ``Failed``) and sets ``spec.ttlSecondsAfterFinished`` is deleted
that many seconds after it finished, with propagation Background (its pods go through the
garbage collector). Watch-driven: a job's change queues it, a job not yet due is queued
again for when it is."""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

from pykubelet.api.batch import JOB_COMPLETE, JOB_FAILED
from pykubelet.api.machinery.timeutil import now, parse_time_or_none
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.informer import InformerController, entry_key, split_key
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import JOBS
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Registry
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)
Obj = dict[str, Any]


def finish_time(job: Obj) -> dt.datetime | None:
    """jobFinishTime: the lastTransitionTime of the True Complete or Failed condition."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in (JOB_COMPLETE, JOB_FAILED) and c.get("status") == "True":
            return parse_time_or_none(c.get("lastTransitionTime"))
    return None


def time_left(job: Obj, at: dt.datetime) -> float | None:
    """Seconds until the job expires (<= 0: due); None when it never does (no TTL, not
    finished, or being deleted)."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or (job.get("metadata") or {}).get("deletionTimestamp"):
        return None
    done = finish_time(job)
    if done is None:
        return None
    return (done + dt.timedelta(seconds=ttl) - at).total_seconds()


class TTLAfterFinished(InformerController):
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.jobs = self.primary = registry.store(JOBS)
        self.queue: WorkQueue = WorkQueue("ttl-after-finished-controller", self.sync)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == JOBS.storage_prefix and ev.type != "DELETED":
            self.queue.add(entry_key(ev.entry))

    async def sync(self, key: str) -> None:
        job = self.get_primary(key)
        if job is None:
            return
        ns, name = split_key(key)
        left = time_left(job, now())
        if left is None:
            return
        if left > 0:
            self.queue.add_after(key, left)
            return
        uid = (job.get("metadata") or {}).get("uid")
        log.info("ttl-after-finished: deleting job %s", key)
        try:
            await self.jobs.delete(Context(), ns, name, DeleteOptions(
                uid=uid, propagation_policy="Background"))
        except errors.StatusError as exc:
            if exc.code not in (404, 409):
                raise


async def run_ttl_after_finished(cp: ControlPlane) -> None:
    await TTLAfterFinished(cp.registry).run()
