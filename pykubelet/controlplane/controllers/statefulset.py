"""The StatefulSet controller (pkg/controller/statefulset: stateful_set.go's sync and
stateful_set_control.go's UpdateStatefulSet), watch-driven: a change to a StatefulSet, or
to a pod whose controller is one (for an orphan: every set whose selector and name pick
it), queues the set's key; one sync per key at a time, a failed sync logged with the key
and retried with back-off.

A sync adopts orphan ControllerRevisions and claims its pods, finds or makes the update
revision (the set's template, a ControllerRevision named NAME-HASH), asks
:func:`statefulset_decisions.plan` what to create, delete or relabel, does it (in order for
OrderedReady, in slow-start batches for Parallel), writes the status through ``status``
(observedGeneration, replicas, readyReplicas, currentReplicas, updatedReplicas,
availableReplicas, currentRevision, updateRevision, collisionCount) and deletes the
history beyond revisionHistoryLimit. Events as upstream's StatefulPodControl records them
(``SuccessfulCreate``: "create Pod web-0 in StatefulSet web successful").
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykubelet.api.apps_statefulset import POD_INDEX_LABEL, POD_NAME_LABEL
from pykubelet.api.machinery.timeutil import now as utc_now
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers import statefulset_decisions as sd
from pykubelet.controlplane.controllers.activepods import labels_match, meta
from pykubelet.controlplane.controllers.controller_ref import controller_ref
from pykubelet.controlplane.controllers.controller_ref_manager import ControllerRefManager
from pykubelet.controlplane.controllers.history import History
from pykubelet.controlplane.controllers.informer import InformerController, entry_key
from pykubelet.controlplane.controllers.pod_events import controller_keys
from pykubelet.controlplane.controllers.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.controlplane.controllers.replicaset import slow_start_batches
from pykubelet.controlplane.controllers.status_writer import write_status
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import CONTROLLER_REVISIONS, PODS, STATEFUL_SETS
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Registry
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT = "statefulset-controller"


class StatefulSetController(InformerController):
    def __init__(self, registry: Registry,
                 clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.registry = registry
        self.sets = self.primary = registry.store(STATEFUL_SETS)
        self.pods = registry.store(PODS)
        self.claimer = ControllerRefManager(self.pods, self.sets, sd.API_VERSION, sd.KIND)
        self.history = History(registry.store(CONTROLLER_REVISIONS))
        self.recorder = EventRecorder(registry, COMPONENT)
        self.queue: WorkQueue = WorkQueue(COMPONENT, self.sync)
        self.clock = clock

    # -- event handlers: enqueue only
    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == STATEFUL_SETS.storage_prefix:
            self.queue.add(entry_key(ev.entry))
        elif cache.prefix == PODS.storage_prefix:
            self._on_pod(ev)

    def _on_pod(self, ev: CachedEvent) -> None:
        new = ev.entry.view()
        ns = meta(new).get("namespace", "")
        keys = controller_keys(ev, sd.KIND)
        if controller_ref(new) is None and not meta(new).get("deletionTimestamp"):
            labels = meta(new).get("labels") or {}
            for entry in self.sets.select(ns, None):
                sts = entry.obj()
                if sd.is_member_of(sts, new) and labels_match(
                        sd.spec(sts).get("selector"), labels):
                    keys.add(entry_key(entry))
        for key in keys:
            self.queue.add(key)

    # -- the worker (run: InformerController's)
    async def sync(self, key: str) -> None:
        """sync: adopt revisions, claim pods, then UpdateStatefulSet."""
        sts = self.get_primary(key)
        if sts is None:
            return
        if not sd.spec(sts).get("selector"):
            return  # a non-transient error upstream does not retry
        revisions = await self._adopt_revisions(sts)
        pods = await self._claim_pods(sts)
        await self._update(sts, pods, revisions)

    async def _adopt_revisions(self, sts: Obj) -> list[Obj]:
        """adoptOrphanRevisions, then ListRevisions: the set's revisions."""
        selector = sd.spec(sts).get("selector")
        revisions = self.history.list_controller_revisions(sts, selector)
        orphans = [r for r in revisions if controller_ref(r) is None]
        if orphans and not meta(sts).get("deletionTimestamp") and self.claimer.can_adopt(sts):
            for rev in orphans:
                await self.history.adopt_controller_revision(sts, sd.API_VERSION, sd.KIND, rev)
            revisions = self.history.list_controller_revisions(sts, selector)
        return [r for r in revisions if controller_ref(r) is not None]

    async def _claim_pods(self, sts: Obj) -> list[Obj]:
        pods = [e.obj() for e in self.pods.select(meta(sts).get("namespace", ""), None)]
        return await self.claimer.claim(sts, sd.claim_pods(sts, pods))

    # -- UpdateStatefulSet
    async def _update(self, sts: Obj, pods: list[Obj], revisions: list[Obj]) -> None:
        chosen = sd.choose_revisions(sts, revisions)
        collision = sd.status(sts).get("collisionCount") or 0
        update = chosen.update
        if chosen.create:
            update, collision = await self.history.create_controller_revision(
                sts, update, collision)
        elif chosen.renumber is not None:
            update = await self.history.update_controller_revision(update, chosen.renumber)
        current = chosen.current or update
        current_name, update_name = meta(current).get("name", ""), meta(update).get("name", "")
        current_set = sd.apply_revision(sts, current)
        update_set = sd.apply_revision(sts, update)
        now = self.clock()
        decided = sd.plan(sts, pods, current_set, update_set, current_name, update_name,
                          collision, now)
        error = await self._act(sts, decided)
        st = decided.status
        sd.complete_rolling_update(sts, st)
        await write_status(self.sets, sts, sd.status_body(sts, st))
        wait = sd.requeue_after(sts, pods, now)
        if wait is not None:
            self.queue.add_after(f"{meta(sts).get('namespace')}/{meta(sts).get('name')}", wait)
        all_revisions = revisions if not chosen.create else [*revisions, update]
        for rev in sd.history_to_delete(sts, pods, all_revisions, current_name, update_name):
            try:
                await self.history.delete_controller_revision(rev)
            except errors.StatusError as exc:
                if exc.code != 404:
                    raise
        if error is not None:
            raise errors.internal(error)

    async def _act(self, sts: Obj, decided: sd.Plan) -> str | None:
        """The plan's writes: in order (OrderedReady: a failure stops the rest) or in
        slow-start batches (Parallel). The first error's message, if any."""
        if decided.monotonic:
            for action in decided.actions:
                error = await self._do(sts, action)
                if error is not None:
                    return error
            return None
        todo = list(decided.actions)
        for batch in slow_start_batches(len(todo)):
            results = await asyncio.gather(*(self._do(sts, a) for a in todo[:batch]))
            todo = todo[batch:]
            failed = [r for r in results if r is not None]
            if failed:
                return failed[0]
        return None

    async def _do(self, sts: Obj, action: sd.Action) -> str | None:
        ns = meta(sts).get("namespace", "")
        try:
            if action.verb == sd.CREATE:
                await self.pods.create(Context(), ns, action.pod)
            elif action.verb == sd.DELETE:
                await self.pods.delete(Context(), ns, action.name, DeleteOptions())
            else:
                labels = meta(action.pod).get("labels") or {}

                def relabel(obj: Obj) -> Obj:
                    obj.setdefault("metadata", {}).setdefault("labels", {}).update(
                        {k: labels[k] for k in (POD_NAME_LABEL, POD_INDEX_LABEL)})
                    return obj

                await self.pods.guaranteed_update(ns, action.name, relabel)
        except errors.StatusError as exc:
            if action.verb == sd.DELETE and exc.code == 404:
                return None
            if action.verb == sd.CREATE and exc.reason == errors.ALREADY_EXISTS:
                return exc.message  # sunk upstream: no event, retried
            await self._event(sts, action, exc.message)
            return exc.message
        await self._event(sts, action, None)
        return None

    async def _event(self, sts: Obj, action: sd.Action, error: str | None) -> None:
        """recordPodEvent: SuccessfulCreate/FailedDelete/... with upstream's sentence."""
        verb, name = action.verb, meta(sts).get("name", "")
        if error is None:
            await self.recorder.event(
                sts, NORMAL, f"Successful{verb.title()}",
                f"{verb} Pod {action.name} in StatefulSet {name} successful")
        else:
            await self.recorder.event(
                sts, WARNING, f"Failed{verb.title()}",
                f"{verb} Pod {action.name} in StatefulSet {name} failed error: {error}")


async def run_statefulset_controller(cp: ControlPlane) -> None:
    await StatefulSetController(cp.registry).run()
