"""The CronJob controller (pkg/controller/cronjob, v2): watch-driven. A change to a
CronJob, or to a Job whose controller is a CronJob, queues the CronJob's key; a sync reads
it and its jobs from the watch cache, asks :func:`cronjob_decisions.decide`, creates the
due Job (the CronJob as its controller), deletes replaced jobs and those beyond the
history limits (propagation Background: their pods go through the garbage collector),
writes the status and queues the key again for the next schedule time. ``clock`` is the
controller's now: tests drive it instead of waiting for minutes to pass."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.timeutil import now as wall_now
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.controller_ref import controller_of
from pykubelet.controlplane.controllers.cronjob_decisions import CronActions, decide, job_ref
from pykubelet.controlplane.controllers.informer import InformerController, entry_key, split_key
from pykubelet.controlplane.controllers.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import CRONJOBS, JOBS
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Registry
from pykubelet.controlplane.registry.strategy import StatusStrategy
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)
Obj = dict[str, Any]
COMPONENT = "cronjob-controller"


class CronJobController(InformerController):
    def __init__(self, registry: Registry,
                 clock: Callable[[], dt.datetime] = wall_now) -> None:
        self.registry = registry
        self.clock = clock
        self.cronjobs = self.primary = registry.store(CRONJOBS)
        self.jobs = registry.store(JOBS)
        self.recorder = EventRecorder(registry, COMPONENT)
        self.queue: WorkQueue = WorkQueue("cronjob-controller", self.sync)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == CRONJOBS.storage_prefix:
            self.queue.add(entry_key(ev.entry))
        elif cache.prefix == JOBS.storage_prefix and b'"kind":"CronJob"' in ev.entry.data:
            ref = controller_of(ev.entry.obj(), "CronJob", "batch/v1")
            if ref is not None:
                self.queue.add(f"{ev.entry.attrs.namespace}/{ref.get('name', '')}")

    async def sync(self, key: str) -> None:
        cj = self.get_primary(key)
        if cj is None:
            return
        ns, _ = split_key(key)
        uid = (cj.get("metadata") or {}).get("uid")
        jobs = []
        for j in self.jobs.select(ns, None):
            job = j.obj()
            ref = controller_of(job, "CronJob", "batch/v1")
            if ref is not None and ref.get("uid") == uid:
                jobs.append(job)
        acts = decide(cj, jobs, self.clock())
        await self._apply(cj, acts)
        if acts.requeue_after is not None:
            self.queue.add_after(key, acts.requeue_after)

    async def _apply(self, cj: Obj, acts: CronActions) -> None:
        meta = cj.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        for job in acts.delete:
            jname = (job.get("metadata") or {}).get("name", "")
            try:
                await self.jobs.delete(Context(), ns, jname,
                                       DeleteOptions(propagation_policy="Background"))
            except errors.StatusError as exc:
                if exc.code != 404:
                    await self.recorder.event(cj, WARNING, "FailedDelete",
                                              f"Deleted job: {exc.message}")
                    raise
            await self.recorder.event(cj, NORMAL, "SuccessfulDelete", f"Deleted job {jname}")
        if acts.create is not None:
            jname = acts.create["metadata"]["name"]
            try:
                created = await self.jobs.create(Context(), ns, acts.create)
                obj = created.obj() if hasattr(created, "obj") else created
                acts.status["active"] = [*acts.status.get("active", []), job_ref(obj)]
                await self.recorder.event(cj, NORMAL, "SuccessfulCreate", f"Created job {jname}")
            except errors.StatusError as exc:
                if exc.code != 409:
                    await self.recorder.event(cj, WARNING, "FailedCreate",
                                              f"Error creating job: {exc.message}")
                    raise
                existing = self.jobs.lookup(ns, jname)
                if existing is not None and not any(
                        r.get("name") == jname for r in acts.status.get("active", [])):
                    acts.status["active"] = [*acts.status.get("active", []),
                                             job_ref(existing.obj())]
        status = {k: v for k, v in acts.status.items() if v not in (None, [], {})}
        if status != (cj.get("status") or {}):
            def write(obj: Obj) -> Obj | None:
                if (obj.get("metadata") or {}).get("uid") != meta.get("uid"):
                    return None
                obj["status"] = status
                return obj

            await self.cronjobs.guaranteed_update(ns, name, write,
                                                  StatusStrategy(self.cronjobs.strategy))
        for type_, reason, message in acts.events:
            await self.recorder.event(cj, type_, reason, message)


async def run_cronjob_controller(cp: ControlPlane) -> None:
    await CronJobController(cp.registry).run()
