"""The DaemonSet controller (pkg/controller/daemon/daemon_controller.go and update.go):
one pod of each DaemonSet's template on every eligible node, placed by the scheduler
(the pod's required node affinity names the node), rolled out with RollingUpdate
(maxUnavailable, maxSurge) or OnDelete, each template snapshotted as a ControllerRevision
the pods point at through ``controller-revision-hash``.

Decisions live in :mod:`~pykubelet.controlplane.controllers.daemonset_decisions`; this
module carries them out. Watch-driven: the watch cache's events enqueue the DaemonSets
concerned (a pod's or revision's controller, every DaemonSet when a node comes, goes, or
changes its labels, taints, spec or condition statuses; heartbeats alone do not), one sync
per key at a time; a sync that fails is logged with the key and retried with back-off.
Expectations stop a sync from repeating creates and deletes not yet seen; failed daemon
pods are deleted under a per-node back-off so a kubelet that rejects them does not make
the controller hot-loop.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.timeutil import now as utc_now
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers import daemonset_decisions as dd
from pykubelet.controlplane.controllers.activepods import meta
from pykubelet.controlplane.controllers.controller_ref import (
    controller_ref,
    new_controller_ref,
)
from pykubelet.controlplane.controllers.controller_ref_manager import (
    ControllerRefManager,
    claim_pods,
)
from pykubelet.controlplane.controllers.deletes import delete_unless_gone
from pykubelet.controlplane.controllers.expectations import Expectations
from pykubelet.controlplane.controllers.history import compute_hash, max_revision
from pykubelet.controlplane.controllers.informer import InformerController, entry_key, object_key
from pykubelet.controlplane.controllers.pod_control import PodControl
from pykubelet.controlplane.controllers.pod_events import owner_event_key, pod_owner_keys
from pykubelet.controlplane.controllers.recorder import WARNING, EventRecorder
from pykubelet.controlplane.controllers.replicaset import (
    BURST_REPLICAS,
    RETRY_BASE_S,
    RETRY_MAX_S,
    slow_start_batches,
)
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import (
    CONTROLLER_REVISIONS,
    DAEMON_SETS,
    NODES,
    PODS,
)
from pykubelet.controlplane.registry.store import (
    Context,
    Entry,
    GenericStore,
    Registry,
)
from pykubelet.controlplane.registry.strategy import StatusStrategy
from pykubelet.controlplane.storage.cacher import DELETED, CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]
KIND = "DaemonSet"
API_VERSION = "apps/v1"
FAILED_DAEMON_POD = "FailedDaemonPod"
SUCCEEDED_DAEMON_POD = "SucceededDaemonPod"


def _obj(result: Entry | Obj) -> Obj:
    return result.obj() if isinstance(result, Entry) else result


def _node_signature(node: Obj | None) -> Any:
    """What a node change must touch to matter to a DaemonSet (shouldIgnoreNodeUpdate:
    everything but heartbeats; here labels, spec and the conditions' statuses)."""
    if node is None:
        return None
    conditions = [(c.get("type"), c.get("status"))
                  for c in (node.get("status") or {}).get("conditions") or []]
    return (meta(node).get("labels"), node.get("spec"), conditions)


class DaemonSetController(InformerController):
    def __init__(self, registry: Registry, clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.registry = registry
        self.ds_store: GenericStore = registry.store(DAEMON_SETS)
        self.primary = self.ds_store
        self.pods: GenericStore = registry.store(PODS)
        self.nodes: GenericStore = registry.store(NODES)
        self.revisions: GenericStore = registry.store(CONTROLLER_REVISIONS)
        self.claimer = ControllerRefManager(self.pods, self.ds_store, API_VERSION, KIND)
        self.revision_claimer = ControllerRefManager(self.revisions, self.ds_store,
                                                     API_VERSION, KIND)
        self.recorder = EventRecorder(registry, "daemonset-controller")
        self.pod_control = PodControl(self.pods, self.recorder)
        self.expectations = Expectations()
        self.backoff = dd.FailedPodsBackoff()
        self.queue: WorkQueue = WorkQueue(
            "daemonset", self.sync, base=RETRY_BASE_S, cap=RETRY_MAX_S, logger=log)
        self.clock = clock

    # -- event handlers: enqueue only
    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == DAEMON_SETS.storage_prefix:
            self.queue.add(owner_event_key(ev, self.expectations))
        elif cache.prefix == PODS.storage_prefix:
            self._on_pod(ev)
        elif cache.prefix == NODES.storage_prefix:
            prev = ev.prev.obj() if ev.prev is not None else None
            if ev.type == DELETED or prev is None or (
                    _node_signature(prev) != _node_signature(ev.entry.obj())):
                self._enqueue_all()
        elif cache.prefix == CONTROLLER_REVISIONS.storage_prefix:
            ref = controller_ref(ev.entry.obj())
            if ref is not None and ref.get("kind") == KIND:
                self.queue.add(f"{ev.entry.attrs.namespace}/{ref.get('name', '')}")

    def _enqueue_all(self) -> None:
        for entry in self.ds_store.select(None, None):
            self.queue.add(entry_key(entry))

    def _on_pod(self, ev: CachedEvent) -> None:
        for key in pod_owner_keys(ev, KIND, self.ds_store, self.expectations):
            self.queue.add(key)

    # -- the worker (run: InformerController's)
    async def sync(self, key: str) -> None:
        """syncDaemonSet."""
        ds = self.get_primary(key)
        if ds is None:
            self.expectations.forget(key)
            return
        if meta(ds).get("deletionTimestamp"):
            return  # its history may be going: no status can be trusted (as upstream)
        nodes = [e.obj() for e in self.nodes.select(None, None)]
        cur, old = await self._construct_history(ds)
        hash_ = (meta(cur).get("labels") or {}).get(dd.CONTROLLER_REVISION_HASH, "")
        if not self.expectations.satisfied(key):
            await self._update_status(ds, nodes, hash_, False)
            return
        error = await self._update_daemon_set(ds, nodes, hash_, key, old)
        await self._update_status(ds, nodes, hash_, True)
        if error is not None:
            raise errors.internal(error)

    # -- pods
    async def _daemon_pods(self, ds: Obj) -> list[Obj]:
        """getDaemonPods: the namespace's pods the DaemonSet controls after adopting
        matching orphans and releasing the ones it controls that no longer match."""
        ns = meta(ds).get("namespace", "")
        pods = [p.obj() for p in self.pods.select(ns, None)]
        return await self.claimer.claim(ds, claim_pods(ds, pods))

    async def _update_daemon_set(self, ds: Obj, nodes: list[Obj], hash_: str, key: str,
                                 old: list[Obj]) -> str | None:
        """updateDaemonSet: manage, then (expectations met) the rolling update, then the
        history's cleanup."""
        now = self.clock()
        node_to_pods = dd.nodes_to_daemon_pods(await self._daemon_pods(ds))
        plan = dd.manage_plan(ds, nodes, node_to_pods, hash_, now)
        for node_name, pod in plan.failed:
            backoff_key = f"{meta(ds).get('uid', '')}/{node_name}"
            if self.backoff.in_backoff_since_update(backoff_key, now):
                self.queue.add_after(key, self.backoff.get(backoff_key))
                continue
            self.backoff.next(backoff_key, now)
            pm = meta(pod)
            await self.recorder.event(
                ds, WARNING, FAILED_DAEMON_POD,
                f"Found failed daemon pod {pm.get('namespace', '')}/{pm.get('name', '')} "
                f"on node {node_name}, will try to kill it")
            plan.delete.append(pod)
        error = await self._sync_nodes(ds, plan.delete, plan.create_on, hash_)
        if error is not None:
            return error
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        if self.expectations.satisfied(key) and strategy.get("type") == "RollingUpdate":
            node_to_pods = dd.nodes_to_daemon_pods(await self._daemon_pods(ds))
            rolling = dd.rolling_update_plan(ds, nodes, node_to_pods, hash_, self.clock())
            error = await self._sync_nodes(ds, rolling.delete, rolling.create_on, hash_)
        node_to_pods = dd.nodes_to_daemon_pods(await self._daemon_pods(ds), True)
        for cr in dd.histories_to_delete(ds, old, node_to_pods):
            await self._delete_revision(cr)
        return error

    async def _sync_nodes(self, ds: Obj, to_delete: list[Obj], create_on: list[str],
                          hash_: str) -> str | None:
        """syncNodes: create a pod on each node of ``create_on`` (in slow-start batches)
        and delete ``to_delete``, at most BurstReplicas of each, under expectations;
        the first error's message."""
        key = object_key(ds)
        create_on = create_on[:BURST_REPLICAS]
        to_delete = to_delete[:BURST_REPLICAS]
        if not create_on and not to_delete:
            return None
        self.expectations.expect(key, len(create_on), [object_key(p) for p in to_delete])
        template = dd.create_pod_template((ds.get("spec") or {}).get("template") or {},
                                          dd.template_generation(ds), hash_)
        error: str | None = None
        pos = 0
        for batch in slow_start_batches(len(create_on)):
            results = await asyncio.gather(*(
                self._create_pod(ds, template, node) for node in create_on[pos:pos + batch]))
            pos += batch
            failed = [r for r in results if r is not None]
            for _ in failed:
                self.expectations.lower_creations(key, 1)
            if failed:
                error = failed[0]
                self.expectations.lower_creations(key, len(create_on) - pos)
                break
        deleted = await asyncio.gather(*(self._delete_pod(ds, p) for p in to_delete))
        for pod, result in zip(to_delete, deleted, strict=True):
            if result is not None:  # gone already, or failed: its event never comes
                self.expectations.deletion_observed(key, object_key(pod))
            if isinstance(result, str) and error is None:
                error = result
        return error

    async def _create_pod(self, ds: Obj, template: Obj, node: str) -> str | None:
        err = await self.pod_control.create_pod(ds, dd.pod_for_node(ds, template, node))
        return None if err is None else err.message

    async def _delete_pod(self, ds: Obj, pod: Obj) -> str | bool | None:
        """None when deleted; True when already gone; the error's message otherwise."""
        err = await self.pod_control.delete_pod(ds, pod)
        if err is None:
            return None
        return True if err.code == 404 else err.message

    # -- history
    async def _controlled_histories(self, ds: Obj) -> list[Obj]:
        """controlledHistories: ClaimControllerRevisions over the namespace's revisions."""
        ns = meta(ds).get("namespace", "")
        revisions = [e.obj() for e in self.revisions.select(ns, None)]
        return await self.revision_claimer.claim(ds, claim_pods(ds, revisions))

    async def _construct_history(self, ds: Obj) -> tuple[Obj, list[Obj]]:
        """constructHistory: the current revision (created, deduplicated or renumbered as
        needed) and the old ones."""
        current: list[Obj] = []
        old: list[Obj] = []
        for cr in await self._controlled_histories(ds):
            if dd.CONTROLLER_REVISION_HASH not in (meta(cr).get("labels") or {}):
                name = meta(cr).get("name", "")

                def label(c: Obj, name: str = name) -> Obj:
                    c.setdefault("metadata", {}).setdefault("labels", {})[
                        dd.CONTROLLER_REVISION_HASH] = name
                    return c

                cr = await self.revision_claimer.patch(cr, label) or cr
            (current if dd.revision_matches(ds, cr) else old).append(cr)
        revision = max_revision(old) + 1
        if not current:
            return await self._snapshot(ds, revision), old
        cur = await self._dedup(ds, current)
        if int(cur.get("revision", 0)) < revision:
            def renumber(c: Obj) -> Obj:
                c["revision"] = revision
                return c

            cur = await self.revision_claimer.patch(cur, renumber) or cur
        return cur, old

    async def _dedup(self, ds: Obj, current: list[Obj]) -> Obj:
        """dedupCurHistories: keep the highest revision, relabel its pods, delete the
        others."""
        keep = max(current, key=lambda c: int(c.get("revision", 0)))
        keep_hash = (meta(keep).get("labels") or {}).get(dd.CONTROLLER_REVISION_HASH, "")
        for cr in current:
            if meta(cr).get("name") == meta(keep).get("name"):
                continue
            for pod in await self._daemon_pods(ds):
                if (meta(pod).get("labels") or {}).get(dd.CONTROLLER_REVISION_HASH) != keep_hash:
                    def relabel(p: Obj) -> Obj:
                        p.setdefault("metadata", {}).setdefault("labels", {})[
                            dd.CONTROLLER_REVISION_HASH] = keep_hash
                        return p

                    await self.claimer.patch(pod, relabel)
            await self._delete_revision(cr)
        return keep

    async def _snapshot(self, ds: Obj, revision: int) -> Obj:
        """snapshot: the current template as a new revision named ``<ds>-<hash>``; a name
        taken by another template raises status.collisionCount and fails the sync (the
        next one hashes anew)."""
        dmeta = meta(ds)
        ns = dmeta.get("namespace", "")
        collision = (ds.get("status") or {}).get("collisionCount")
        template = (ds.get("spec") or {}).get("template") or {}
        hash_ = compute_hash(template, collision)
        name = f"{dmeta.get('name', '')}-{hash_}"
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels[dd.CONTROLLER_REVISION_HASH] = hash_
        body: Obj = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                     "metadata": {"name": name, "namespace": ns, "labels": labels,
                                  "ownerReferences": [new_controller_ref(ds, API_VERSION,
                                                                         KIND)]},
                     "data": dd.get_patch(ds), "revision": revision}
        if dmeta.get("annotations"):
            body["metadata"]["annotations"] = dict(dmeta["annotations"])
        try:
            return _obj(await self.revisions.create(Context(), ns, body))
        except errors.StatusError as exc:
            if exc.code != 409 or exc.reason != errors.ALREADY_EXISTS:
                raise
        existing = self.revisions.lookup(ns, name)
        if existing is not None and dd.revision_matches(ds, existing.obj()):
            return existing.obj()
        uid = dmeta.get("uid")

        def bump(cur: Obj) -> Obj | None:
            if meta(cur).get("uid") != uid:
                return None
            status = cur.setdefault("status", {})
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            return cur

        await self.ds_store.guaranteed_update(ns, dmeta.get("name", ""), bump,
                                              StatusStrategy(self.ds_store.strategy))
        raise errors.internal(f"hash collision on ControllerRevision {ns}/{name}: "
                              "collisionCount raised")

    async def _delete_revision(self, cr: Obj) -> None:
        m = meta(cr)
        await delete_unless_gone(self.revisions, m.get("namespace", ""), m.get("name", ""))

    # -- status
    async def _update_status(self, ds: Obj, nodes: list[Obj], hash_: str,
                             update_observed_generation: bool) -> None:
        """updateDaemonSetStatus (storeDaemonSetStatus through ``status``)."""
        uid = meta(ds).get("uid")
        pods = [p.obj() for p in self.pods.select(meta(ds).get("namespace", ""), None)]
        owned = [p for p in pods if (ref := controller_ref(p)) is not None
                 and ref.get("uid") == uid]
        counts = dd.calculate_status(ds, nodes, dd.nodes_to_daemon_pods(owned), hash_,
                                     self.clock())

        def write(cur: Obj) -> Obj | None:
            if meta(cur).get("uid") != uid:
                return None
            status = dd.next_status(cur, counts, update_observed_generation)
            if status is None:
                return None
            cur["status"] = status
            return cur

        try:
            await self.ds_store.guaranteed_update(meta(ds).get("namespace", ""),
                                                  meta(ds).get("name", ""), write,
                                                  StatusStrategy(self.ds_store.strategy))
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
        wait = dd.requeue_for_min_ready(ds, counts)
        if wait is not None:
            self.queue.add_after(object_key(ds), wait)


async def run_daemonset_controller(cp: ControlPlane) -> None:
    await DaemonSetController(cp.registry).run()
