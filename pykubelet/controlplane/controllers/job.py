"""The Job controller (pkg/controller/job): watch-driven. A change to a Job, or to a pod
whose controller is a Job, queues the job's key; a sync reads the job and its pods from the
watch cache, asks :func:`job_decisions.decide` what to do, then does it in upstream's
order: the status with newly finished pods' uids in ``uncountedTerminatedPods`` first,
then their ``batch.kubernetes.io/job-tracking`` finalizers removed (the next sync moves
them to the counters), then pods created or deleted, then the events. Pods get the job as
their controlling owner (``controller`` and ``blockOwnerDeletion`` true); deleting a
job's pods when the job goes is the garbage collector's job.

The pods a sync works on are claimed as getPodsForJob does (ClaimPods with the tracking
finalizer): an orphan the job's selector picks is adopted, the job as its controller and
the finalizer added, so it is counted like a pod the job made; a pod the job controls whose
labels no longer match is released, its reference and the finalizer dropped. A pod with no
controller queues the jobs that select it when it appears or its labels change.

A pod left with the tracking finalizer and no job to count it (its job deleted with
``--cascade=orphan``, or gone or finished while the pod is being deleted) goes to a second
queue of pod keys whose sync removes the finalizer (syncOrphanPod), or deleting the pod
would hang on it."""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import TYPE_CHECKING, Any

from pykubelet.api.batch import (
    INDEXED,
    JOB_COMPLETION_INDEX,
    JOB_COMPLETION_INDEX_ENV,
    JOB_TRACKING_FINALIZER,
)
from pykubelet.api.machinery.timeutil import now
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.activepods import labels_match
from pykubelet.controlplane.controllers.controller_ref import (
    controller_of,
    controller_ref,
    new_controller_ref,
)
from pykubelet.controlplane.controllers.controller_ref_manager import (
    ControllerRefManager,
    claim_pods,
)
from pykubelet.controlplane.controllers.informer import (
    InformerController,
    entry_key,
    get_by_key,
    split_key,
)
from pykubelet.controlplane.controllers.job_decisions import (
    Actions,
    BackoffRecord,
    decide,
    is_finished,
)
from pykubelet.controlplane.controllers.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import JOBS, PODS
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Entry, Registry
from pykubelet.controlplane.registry.strategy import StatusStrategy
from pykubelet.controlplane.storage.cacher import ADDED, DELETED, CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT = "job-controller"


def pod_from_template(job: Obj, index: int | None) -> Obj:
    """The pod a job creates: its template with the job as controller, the tracking
    finalizer, and for an Indexed job the index (annotation, label, hostname, env)."""
    meta = job.get("metadata") or {}
    name = meta.get("name", "")
    tmpl = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    tmeta = tmpl.get("metadata") or {}
    spec = tmpl.get("spec") or {}
    pod_meta: Obj = {
        "generateName": f"{name}-" if index is None else f"{name}-{index}-",
        "labels": dict(tmeta.get("labels") or {}),
        "ownerReferences": [new_controller_ref(job, "batch/v1", "Job")],
        "finalizers": [JOB_TRACKING_FINALIZER],
    }
    annotations = dict(tmeta.get("annotations") or {})
    if index is not None:
        annotations[JOB_COMPLETION_INDEX] = str(index)
        pod_meta["labels"][JOB_COMPLETION_INDEX] = str(index)
        spec.setdefault("hostname", f"{name}-{index}")
        env = {"name": JOB_COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
            "apiVersion": "v1",
            "fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX}']"}}}
        for c in (*(spec.get("initContainers") or []), *(spec.get("containers") or [])):
            if not any(e.get("name") == JOB_COMPLETION_INDEX_ENV for e in c.get("env") or []):
                c.setdefault("env", []).append(dict(env))
    if annotations:
        pod_meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


class JobController(InformerController):
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.jobs = self.primary = registry.store(JOBS)
        self.pods = registry.store(PODS)
        self.claimer = ControllerRefManager(self.pods, self.jobs, "batch/v1", "Job",
                                            on_adopt=_with_finalizer,
                                            on_release=_without_finalizer)
        self.recorder = EventRecorder(registry, COMPONENT)
        self.queue: WorkQueue = WorkQueue("job-controller", self.sync)
        self.orphans: WorkQueue = WorkQueue("job-orphan-pods", self.sync_orphan_pod)
        self.backoff: dict[str, BackoffRecord] = {}

    # ------------------------------------------------------------------ informers
    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == JOBS.storage_prefix:
            self.queue.add(entry_key(ev.entry))
        elif cache.prefix == PODS.storage_prefix:
            for entry in (ev.entry, ev.prev):
                # most pods have no Job for a controller: not parsed at all
                if entry is None or b'"kind":"Job"' not in entry.data:
                    continue
                ref = controller_of(entry.obj(), "Job", "batch/v1")
                if ref is not None:
                    self.queue.add(f"{entry.attrs.namespace}/{ref.get('name', '')}")
            self._on_orphan(ev)
            self._on_tracked(ev)

    def _on_tracked(self, ev: CachedEvent) -> None:
        """addPod/updatePod/deletePod's enqueueOrphanPod: a pod still carrying the tracking
        finalizer with no controller, or being deleted with no unfinished job of its own."""
        pod = ev.entry
        if ev.type == DELETED or JOB_TRACKING_FINALIZER.encode() not in pod.data:
            return
        obj = pod.obj()
        ref = controller_ref(obj)
        if ref is None:
            self.orphans.add(entry_key(pod))
        elif (obj.get("metadata") or {}).get("deletionTimestamp"):
            job = self._resolve(pod.attrs.namespace, ref)
            if job is None or is_finished(job):
                self.orphans.add(entry_key(pod))

    def _resolve(self, ns: str, ref: Obj) -> Obj | None:
        """resolveControllerRef: the Job the reference names, if it is that one (uid)."""
        if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
            return None
        entry = self.jobs.lookup(ns, ref.get("name", ""))
        job = entry.obj() if entry is not None else None
        if job is None or (job.get("metadata") or {}).get("uid") != ref.get("uid"):
            return None
        return job

    async def sync_orphan_pod(self, key: str) -> None:
        """syncOrphanPod: the tracking finalizer off a pod no unfinished Job controls (one
        with another kind of controller keeps it)."""
        pod = get_by_key(self.pods, key)
        if pod is None:
            return
        ns, _ = split_key(key)
        ref = controller_ref(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
                return
            job = self._resolve(ns, ref)
            if job is not None and not is_finished(job):
                return  # adopted: the job counts it
        await self._strip_finalizer(pod)

    def _on_orphan(self, ev: CachedEvent) -> None:
        """addPod/updatePod for a pod with no controller: when it appears, its labels
        change or it lost its controller, every job whose selector picks it is queued."""
        pod, prev = ev.entry, ev.prev
        if ev.type == DELETED or _has_controller(pod):
            return
        if not (ev.type == ADDED or prev is None or prev.attrs.labels != pod.attrs.labels
                or _has_controller(prev)):
            return
        ns = pod.attrs.namespace
        for entry in self.jobs.select(ns, None):
            selector = (entry.obj().get("spec") or {}).get("selector")
            if labels_match(selector, pod.attrs.labels):
                self.queue.add(entry_key(entry))

    # ------------------------------------------------------------------ sync
    async def sync(self, key: str) -> None:
        job = self.get_primary(key)
        ns, name = split_key(key)
        uid = ((job or {}).get("metadata") or {}).get("uid")
        owned: list[Obj] = []
        orphans: list[Obj] = []
        for p in self.pods.select(ns, None):
            pod = p.obj()
            if controller_ref(pod) is None:
                orphans.append(pod)
                continue
            ref = controller_of(pod, "Job", "batch/v1")
            if ref is None or ref.get("name") != name:
                continue
            if ref.get("uid") == uid:
                owned.append(pod)
            elif JOB_TRACKING_FINALIZER in (pod.get("metadata") or {}).get("finalizers", []):
                await self._strip_finalizer(pod)  # its job is gone: nothing will count it
        if job is None:
            self.backoff.pop(key, None)
            return
        if (job.get("metadata") or {}).get("deletionTimestamp"):
            return
        if not is_finished(job):  # a finished job takes no more pods (and gives none back)
            owned = await self.claimer.claim(job, claim_pods(job, owned + orphans))
        record = self.backoff.setdefault(f"{key}/{uid}", BackoffRecord())
        acts = decide(job, owned, now(), record)
        await self._apply(job, acts)
        if acts.requeue_after is not None:
            self.queue.add_after(key, max(acts.requeue_after, 0.0))

    async def _apply(self, job: Obj, acts: Actions) -> None:
        meta = job.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        if acts.status != (job.get("status") or {}):
            def write(obj: Obj, status: Obj = acts.status) -> Obj | None:
                if (obj.get("metadata") or {}).get("uid") != meta.get("uid"):
                    return None
                obj["status"] = {k: v for k, v in status.items()
                                 if v not in ({}, None, [], "")}
                return obj

            await self.jobs.guaranteed_update(ns, name, write, StatusStrategy(self.jobs.strategy))
        for pod in acts.strip_finalizer:
            await self._strip_finalizer(pod)
        spec = job.get("spec") or {}
        indexes: list[int | None] = (list(acts.create_indexes)
                                     if spec.get("completionMode") == INDEXED
                                     else [None] * acts.create)
        for index in indexes:
            try:
                created = await self.pods.create(Context(), ns, pod_from_template(job, index))
            except errors.StatusError as exc:
                await self.recorder.event(job, WARNING, "FailedCreate",
                                          f"Error creating: {exc.message}")
                raise
            pod_name = _name_of(created)
            await self.recorder.event(job, NORMAL, "SuccessfulCreate", f"Created pod: {pod_name}")
        for pod in acts.delete:
            pod_name = (pod.get("metadata") or {}).get("name", "")
            try:
                await self.pods.delete(Context(), ns, pod_name, DeleteOptions())
            except errors.StatusError as exc:
                if exc.code == 404:
                    continue
                await self.recorder.event(job, WARNING, "FailedDelete",
                                          f"Error deleting: {exc.message}")
                raise
            await self.recorder.event(job, NORMAL, "SuccessfulDelete", f"Deleted pod: {pod_name}")
        for type_, reason, message in acts.events:
            await self.recorder.event(job, type_, reason, message)

    async def _strip_finalizer(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}

        def strip(obj: Obj) -> Obj | None:
            fins = (obj.get("metadata") or {}).get("finalizers") or []
            if JOB_TRACKING_FINALIZER not in fins:
                return None
            obj["metadata"]["finalizers"] = [f for f in fins if f != JOB_TRACKING_FINALIZER]
            return obj

        try:
            await self.pods.guaranteed_update(meta.get("namespace", ""), meta.get("name", ""),
                                              strip)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise


def _has_controller(entry: Entry) -> bool:
    """Whether a stored pod has a controller (most have none: those are not parsed)."""
    return b'"controller":true' in entry.data and controller_ref(entry.obj()) is not None


def _with_finalizer(pod: Obj | None) -> Obj | None:
    """The adoption's patch also adds the tracking finalizer (AdoptPod's finalizers)."""
    if pod is not None:
        fins = pod["metadata"].setdefault("finalizers", [])
        if JOB_TRACKING_FINALIZER not in fins:
            fins.append(JOB_TRACKING_FINALIZER)
    return pod


def _without_finalizer(pod: Obj | None) -> Obj | None:
    """The release's patch also drops it ($deleteFromPrimitiveList/finalizers)."""
    if pod is not None:
        fins = [f for f in pod["metadata"].get("finalizers") or []
                if f != JOB_TRACKING_FINALIZER]
        if fins:
            pod["metadata"]["finalizers"] = fins
        else:
            pod["metadata"].pop("finalizers", None)
    return pod


def _name_of(created: Any) -> str:
    obj = created.obj() if hasattr(created, "obj") else created
    return str((obj.get("metadata") or {}).get("name", ""))


async def run_job_controller(cp: ControlPlane) -> None:
    controller = JobController(cp.registry)
    with controller.informing():
        await asyncio.gather(controller.queue.run(), controller.orphans.run())


