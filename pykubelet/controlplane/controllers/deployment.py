"""The Deployment controller (pkg/controller/deployment): each Deployment's ReplicaSets,
one per pod template (named ``<deployment>-<pod-template-hash>``, the hash in its labels
and selector), rolled from the old to the new by the strategy: RollingUpdate within
maxSurge/maxUnavailable, or Recreate (old to zero, pods gone, then the new). Revisions
are the ``deployment.kubernetes.io/revision`` annotation; a template that returns to an
old ReplicaSet's (``kubectl rollout undo``, done by kubectl itself) takes that ReplicaSet
back at the next revision. Paused Deployments only scale. Old revisions beyond
revisionHistoryLimit are deleted; the status carries the Available and Progressing
conditions (ProgressDeadlineExceeded after progressDeadlineSeconds) that ``kubectl
rollout status`` reads.

Watch-driven as the ReplicaSet controller (whose work queue it shares): Deployment events
enqueue their key, ReplicaSet events their owner's (an orphan: every Deployment whose
selector picks it), a deleted pod its ReplicaSet's owner (Recreate waits for old pods).
Decisions are in :mod:`.deploymentutil`; scaling a ReplicaSet records the
``ScalingReplicaSet`` event with upstream's message.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.timeutil import now as utc_now
from pykubelet.api.machinery.timeutil import parse_time_or_none
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers import deploymentutil as du
from pykubelet.controlplane.controllers.activepods import labels_match
from pykubelet.controlplane.controllers.controller_ref import controller_ref, new_controller_ref
from pykubelet.controlplane.controllers.controller_ref_manager import (
    ControllerRefManager,
    claim_pods,
)
from pykubelet.controlplane.controllers.deletes import delete_unless_gone
from pykubelet.controlplane.controllers.informer import InformerController, entry_key, object_key
from pykubelet.controlplane.controllers.recorder import NORMAL, EventRecorder
from pykubelet.controlplane.controllers.replicaset import RETRY_BASE_S, RETRY_MAX_S
from pykubelet.controlplane.controllers.status_writer import write_status
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import DEPLOYMENTS, PODS, REPLICA_SETS
from pykubelet.controlplane.registry.store import Context, Entry, GenericStore
from pykubelet.controlplane.storage.cacher import DELETED, CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]
meta, spec, status = du.meta, du.spec, du.status


class DeploymentController(InformerController):
    def __init__(self, cp: ControlPlane, clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.registry = cp.registry
        self.deployments: GenericStore = self.registry.store(DEPLOYMENTS)
        self.primary = self.deployments
        self.rss: GenericStore = self.registry.store(REPLICA_SETS)
        self.pods: GenericStore = self.registry.store(PODS)
        self.claimer = ControllerRefManager(self.rss, self.deployments, "apps/v1", "Deployment")
        self.recorder = EventRecorder(self.registry, "deployment-controller")
        self.queue: WorkQueue = WorkQueue(
            "deployment", self.sync, base=RETRY_BASE_S, cap=RETRY_MAX_S, logger=log)
        self.clock = clock

    # -- event handlers: enqueue only
    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == DEPLOYMENTS.storage_prefix:
            self.queue.add(entry_key(ev.entry))
        elif cache.prefix == REPLICA_SETS.storage_prefix:
            for obj in (ev.prev, ev.entry):
                if obj is not None:
                    self._enqueue_owner(obj.obj(), ev.type == DELETED)
        elif cache.prefix == PODS.storage_prefix and ev.type == DELETED:
            ref = controller_ref(ev.entry.obj())
            ns = ev.entry.attrs.namespace
            if ref is not None and ref.get("kind") == "ReplicaSet":
                rs = self.rss.lookup(ns, ref.get("name", ""))
                if rs is not None:
                    self._enqueue_owner(rs.obj(), False)

    def _enqueue_owner(self, rs: Obj, deleted: bool) -> None:
        ns = meta(rs).get("namespace", "")
        ref = controller_ref(rs)
        if ref is not None:
            if ref.get("kind") == "Deployment":
                self.queue.add(f"{ns}/{ref.get('name', '')}")
            return
        if deleted:
            return
        labels = meta(rs).get("labels") or {}
        for entry in self.deployments.select(ns, None):
            if labels_match(spec(entry.obj()).get("selector"), labels):
                self.queue.add(f"{ns}/{entry.attrs.name}")

    # -- the worker (run: InformerController's)
    async def sync(self, key: str) -> None:
        """syncDeployment."""
        d = self.get_primary(key)
        if d is None:
            return
        rss = await self._claim(d)
        if meta(d).get("deletionTimestamp"):
            await self._sync_status(d, rss, self._find_new(d, rss))
            return
        paused = du.paused_conditions(d, self.clock())
        if paused is not None:
            d = await self._write_status(d, paused)
        if spec(d).get("paused") or self._scaling_event(d, rss):
            await self._sync_only(d, rss)
            return
        if (spec(d).get("strategy") or {}).get("type") == "Recreate":
            await self._recreate(d, rss)
        else:
            await self._rolling(d, rss)

    # -- ownership
    async def _claim(self, d: Obj) -> list[Obj]:
        """getReplicaSetsForDeployment: ClaimReplicaSets over the namespace's sets."""
        rss = [e.obj() for e in self.rss.select(meta(d).get("namespace", ""), None)]
        return await self.claimer.claim(d, claim_pods(d, rss))

    def _find_new(self, d: Obj, rss: list[Obj]) -> Obj | None:
        return du.find_new_rs(d, rss)

    def _scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        """isScalingEvent: an active ReplicaSet was sized for another replica count."""
        for rs in rss:
            if du.replicas(rs) <= 0:
                continue
            desired = (meta(rs).get("annotations") or {}).get(du.DESIRED_REPLICAS)
            if desired is not None and desired != str(du.replicas(d)):
                return True
        return False

    async def _new_rs(self, d: Obj, rss: list[Obj], create: bool) -> tuple[Obj | None,
                                                                         list[Obj]]:
        """getAllReplicaSetsAndSyncRevision: the new ReplicaSet (made when ``create``),
        the old ones; the revision annotations brought up to date."""
        new = self._find_new(d, rss)
        old = [rs for rs in rss if rs is not new]
        next_rev = str(du.max_revision(old) + 1)
        if new is not None:
            # SetNewReplicaSetAnnotations: the Deployment's annotations copied on every
            # sync (a change-cause set after the rollout), the revision raised if behind
            annotations = meta(new).get("annotations") or {}
            want = {k: v for k, v in du.copied_annotations(d).items()
                    if annotations.get(k) != v}
            if du.revision(new) < int(next_rev):
                want[du.REVISION] = next_rev
            if spec(new).get("minReadySeconds", 0) != spec(d).get("minReadySeconds", 0) or want:
                def update(o: Obj) -> Obj:
                    o.setdefault("metadata", {}).setdefault("annotations", {}).update(want)
                    o.setdefault("spec", {})["minReadySeconds"] = spec(d).get(
                        "minReadySeconds", 0)
                    return o
                new = await self._update_rs(new, update) or new
        elif create:
            new = await self._create_new_rs(d, rss, old)
        if new is not None:
            await self._set_deployment_revision(d, du.revision(new))
        return new, old

    async def _create_new_rs(self, d: Obj, rss: list[Obj], old: list[Obj]) -> Obj | None:
        ns = meta(d).get("namespace", "")
        collisions = status(d).get("collisionCount")
        h = du.template_hash(spec(d).get("template") or {}, collisions)
        body = du.new_rs_body(d, old, h, 0, new_controller_ref(d, "apps/v1", "Deployment"))
        body["spec"]["replicas"] = du.new_rs_new_replicas(d, rss, body)
        try:
            result = await self.rss.create(Context(), ns, body)
        except errors.StatusError as exc:
            if exc.code != 409:
                raise
            existing = self.rss.lookup(ns, body["metadata"]["name"])
            if existing is not None and du.equal_ignore_hash(
                    spec(existing.obj()).get("template") or {}, spec(d).get("template") or {}):
                return existing.obj()
            # a hash collision: count it, the next sync makes another name
            st = dict(status(d))
            st["collisionCount"] = (collisions or 0) + 1
            await self._write_status(d, st)
            raise
        new = result.obj() if isinstance(result, Entry) else result
        if du.replicas(new) > 0:
            await self._scaled_event(d, new, 0, du.replicas(new))
        return new

    async def _set_deployment_revision(self, d: Obj, rev: int) -> None:
        if (meta(d).get("annotations") or {}).get(du.REVISION) == str(rev):
            return

        def update(o: Obj) -> Obj:
            o.setdefault("metadata", {}).setdefault("annotations", {})[du.REVISION] = str(rev)
            return o

        m = meta(d)
        await self.deployments.guaranteed_update(m.get("namespace", ""), m.get("name", ""),
                                                 update)

    # -- scaling
    async def _scale_rs(self, d: Obj, rs: Obj, size: int) -> bool:
        """scaleReplicaSetAndRecordEvent (with the replica annotations)."""
        old = du.replicas(rs)
        desired, maximum = str(du.replicas(d)), str(du.replicas(d) + du.max_surge(d))
        annotations = meta(rs).get("annotations") or {}
        if old == size and annotations.get(du.DESIRED_REPLICAS) == desired and annotations.get(
                du.MAX_REPLICAS) == maximum:
            return False

        def update(o: Obj) -> Obj:
            o.setdefault("spec", {})["replicas"] = size
            o.setdefault("metadata", {}).setdefault("annotations", {}).update(
                {du.DESIRED_REPLICAS: desired, du.MAX_REPLICAS: maximum})
            return o

        await self._update_rs(rs, update)
        if old != size:
            await self._scaled_event(d, rs, old, size)
        return old != size

    async def _scaled_event(self, d: Obj, rs: Obj, old: int, new: int) -> None:
        op = "up" if new > old else "down"
        await self.recorder.event(d, NORMAL, "ScalingReplicaSet",
                                  f"Scaled {op} replica set {meta(rs).get('name', '')} "
                                  f"from {old} to {new}")

    async def _sync_only(self, d: Obj, rss: list[Obj]) -> None:
        """sync: for a paused Deployment or a scaling event, scale (no new template)."""
        new, old = await self._new_rs(d, rss, False)
        for rs, size in du.scale_plan(d, new, old):
            await self._scale_rs(d, rs, size)
        if spec(d).get("paused"):  # a paused Deployment's history is trimmed here
            await self._cleanup(d, old)
        await self._sync_status(d, rss, new)

    async def _rolling(self, d: Obj, rss: list[Obj]) -> None:
        """rolloutRolling."""
        new, old = await self._new_rs(d, rss, True)
        assert new is not None
        all_rss = [*old, new]
        changed = False
        if du.replicas(new) != du.replicas(d):
            size = du.replicas(d) if du.replicas(new) > du.replicas(d) else (
                du.new_rs_new_replicas(d, all_rss, new))
            changed = await self._scale_rs(d, new, size)
        if not changed:
            for rs, size in du.old_scale_down(d, all_rss, [r for r in old if du.replicas(r)],
                                              new):
                changed = await self._scale_rs(d, rs, size) or changed
        if not changed and du.complete(d, status(d)):
            await self._cleanup(d, old)
        await self._rollout_status(d, new)

    async def _recreate(self, d: Obj, rss: list[Obj]) -> None:
        """rolloutRecreate: old ReplicaSets to zero, their pods gone, then the new one."""
        new, old = await self._new_rs(d, rss, False)
        changed = False
        for rs in old:
            if du.replicas(rs) > 0:
                changed = await self._scale_rs(d, rs, 0) or changed
        if changed or self._old_pods_running(d, old):
            await self._rollout_status(d, new)
            return
        if new is None:
            new, old = await self._new_rs(d, rss, True)
        if new is not None:
            await self._scale_rs(d, new, du.replicas(d))
            if du.complete(d, status(d)):
                await self._cleanup(d, old)
        await self._rollout_status(d, new)

    def _old_pods_running(self, d: Obj, old: list[Obj]) -> bool:
        if any(status(rs).get("replicas", 0) > 0 for rs in old):
            return True
        uids = {meta(rs).get("uid") for rs in old}
        for entry in self.pods.select(meta(d).get("namespace", ""), None):
            pod = entry.obj()
            ref = controller_ref(pod)
            if ref is not None and ref.get("uid") in uids and status(pod).get(
                    "phase") not in ("Succeeded", "Failed"):
                return True
        return False

    async def _cleanup(self, d: Obj, old: list[Obj]) -> None:
        for rs in du.history_to_delete(d, old):
            m = meta(rs)
            await delete_unless_gone(self.rss, m.get("namespace", ""), m.get("name", ""))

    # -- status
    def _current_rss(self, d: Obj) -> list[Obj]:
        uid = meta(d).get("uid")
        return [e.obj() for e in self.rss.select(meta(d).get("namespace", ""), None)
                if (ref := controller_ref(e.obj())) is not None and ref.get("uid") == uid]

    async def _rollout_status(self, d: Obj, new: Obj | None) -> None:
        rss = self._current_rss(d)
        new_now = next((rs for rs in rss if new is not None and meta(rs).get("uid") == meta(
            new).get("uid")), new)
        now = self.clock()
        st = du.rollout_status(self._fresh(d), rss, new_now, now)
        await self._write_status(d, st)
        cond = du.get_condition(st, du.PROGRESSING)
        deadline = spec(d).get("progressDeadlineSeconds")
        if (deadline is not None and cond is not None and cond.get("reason") == du.RS_UPDATED
                and not du.complete(d, st)):  # requeueStuckDeployment
            since = parse_time_or_none(cond.get("lastUpdateTime"))
            if since is not None:
                wait = (since + dt.timedelta(seconds=deadline) - now).total_seconds()
                self.queue.add_after(object_key(d), max(wait, 0.0) + 1.0)

    async def _sync_status(self, d: Obj, rss: list[Obj], new: Obj | None) -> None:
        st = du.calculate_status(self._current_rss(d), new, self._fresh(d), self.clock())
        await self._write_status(d, st)

    def _fresh(self, d: Obj) -> Obj:
        """The deployment as the cache holds it now (an earlier write of this sync may have
        changed it); ``d`` itself when gone or replaced by another of that name."""
        entry = self.deployments.lookup(meta(d).get("namespace", ""), meta(d).get("name", ""))
        if entry is None:
            return d
        current = entry.obj()
        return current if meta(current).get("uid") == meta(d).get("uid") else d

    async def _write_status(self, d: Obj, st: Obj) -> Obj:
        return await write_status(self.deployments, self._fresh(d), st)

    async def _update_rs(self, rs: Obj, mutate: Callable[[Obj], Obj | None]) -> Obj | None:
        m = meta(rs)
        try:
            result = await self.rss.guaranteed_update(m.get("namespace", ""),
                                                      m.get("name", ""), mutate)
        except errors.StatusError as exc:
            if exc.code in (404, 409, 422):
                return None
            raise
        return result.obj() if isinstance(result, Entry) else result


async def run_deployment_controller(cp: ControlPlane) -> None:
    await DeploymentController(cp).run()
