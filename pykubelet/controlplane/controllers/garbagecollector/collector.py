"""The garbage collector's effects: the graph fed by the watch cache, the attemptToDelete
and attemptToOrphan queues, and the writes through the registry.

Watch-driven as upstream's: the cache's events for every served resource (whatever
``registry/resources.py`` declares, so a new kind is covered without a change here) keep
the graph and enqueue only what an event concerns: an object whose owners changed, the
dependents of an object that went, an owner deleting in the foreground or orphaning. An
idle cluster costs nothing. An object whose handling fails is logged with its key and
retried with exponential back-off (the workqueue's 5 ms doubling to 1000 s), never
stopping the others."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.field import go_quote as quote
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.garbagecollector import decisions as gc
from pykubelet.controlplane.controllers.garbagecollector.graph import Graph, Node
from pykubelet.controlplane.controllers.recorder import WARNING, EventRecorder
from pykubelet.controlplane.controllers.workqueue import (
    CONTROLLER_BASE_S,
    CONTROLLER_MAX_S,
    WorkQueue,
)
from pykubelet.controlplane.metrics import WorkqueueMetrics
from pykubelet.controlplane.registry.gcpolicy import FINALIZER_ORPHAN
from pykubelet.controlplane.registry.store import Context, DeleteOptions, GenericStore
from pykubelet.controlplane.storage.cacher import DELETED, CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.registry.store import Registry
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT = "garbage-collector-controller"
# what an update must mention for the collector to look at it (the rest, most status
# updates, pass without being decoded)
_MARKERS = (b'"ownerReferences"', b'"deletionTimestamp"')


class RetryError(Exception):
    """An object that cannot be handled now (an owner of a kind not served, a write
    that failed): retried with back-off."""


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


class GarbageCollector:
    def __init__(self, registry: Registry, base_delay: float = CONTROLLER_BASE_S,
                 metrics: WorkqueueMetrics | None = None) -> None:
        self.registry = registry
        self.graph = Graph()
        self.attempt_to_delete = WorkQueue(
            "garbage_collector_attempt_to_delete", lambda uid: self.process_delete(uid),
            base=base_delay,
            cap=CONTROLLER_MAX_S, logger=log, metrics=metrics, describe=self._describe,
            expected=(RetryError,))
        self.attempt_to_orphan = WorkQueue(
            "garbage_collector_attempt_to_orphan", lambda uid: self.process_orphan(uid),
            base=base_delay,
            cap=CONTROLLER_MAX_S, logger=log, metrics=metrics, describe=self._describe,
            expected=(RetryError,))
        self.recorder = EventRecorder(registry, COMPONENT)
        self._reported: set[tuple[str, str]] = set()
        self._by_prefix: dict[str, GenericStore] = {}
        self._by_kind: dict[tuple[str, str], GenericStore] = {}

    # ------------------------------------------------------------------ the graph
    def _stores(self) -> None:
        """Every served resource, read when the collector starts (and for an owner's kind
        on each lookup), so resources added to the registry are covered."""
        for store in self.registry.stores.values():
            self._by_prefix[store.info.storage_prefix] = store
            self._by_kind[(store.info.group, store.info.kind)] = store

    def start(self) -> None:
        """The initial list (every object of every resource), then the cache's events."""
        self._stores()
        for prefix, store in self._by_prefix.items():
            for entry in store.cache.select(None, None):
                self._observe(prefix, entry.obj(), None, initial=True)
        self.registry.cacher.listeners.append(self._on_event)

    def stop(self) -> None:
        if self._on_event in self.registry.cacher.listeners:
            self.registry.cacher.listeners.remove(self._on_event)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix not in self._by_prefix:
            self._stores()
            if cache.prefix not in self._by_prefix:
                return
        if ev.type != DELETED and ev.prev is not None and not any(
                marker in e.data for e in (ev.entry, ev.prev) for marker in _MARKERS):
            return  # an update that names no owner and deletes nothing: the graph holds
        obj = ev.entry.obj()
        if ev.type == DELETED:
            self._gone(obj)
        else:
            self._observe(cache.prefix, obj, ev.prev.obj() if ev.prev is not None else None)

    def _observe(self, prefix: str, obj: Obj, prev: Obj | None, initial: bool = False
                 ) -> None:
        m = gc.meta(obj)
        uid = str(m.get("uid") or "")
        if not uid:
            return
        refs = gc.owner_refs(obj)
        node = Node(prefix, m.get("namespace") or "", m.get("name") or "",
                    frozenset(str(r.get("uid")) for r in refs))
        existed = uid in self.graph.nodes
        removed = self.graph.observe(uid, node)
        prev_refs = gc.owner_refs(prev) if prev is not None else []
        if refs and (initial or not existed or refs != prev_refs):
            self.attempt_to_delete.add(uid)  # its owners may be gone (dangling)
        # owners it stopped naming (or stopped blocking) may wait for no one now
        for owner in removed | {str(r.get("uid")) for r in prev_refs if r not in refs}:
            self._wake_owner(owner)
        if gc.orphaning(obj):
            self.attempt_to_orphan.add(uid)
        if gc.deleting_dependents(obj):
            if initial or prev is None or not gc.deleting_dependents(prev):
                for dep in self.graph.dependents(uid):
                    self.attempt_to_delete.add(dep)
            self.attempt_to_delete.add(uid)

    def _gone(self, obj: Obj) -> None:
        uid = str(gc.meta(obj).get("uid") or "")
        node = self.graph.forget(uid)
        for dep in self.graph.dependents(uid):
            self.attempt_to_delete.add(dep)  # their owner went: perhaps dangling now
        for owner in node.owners if node is not None else ():
            self._wake_owner(owner)

    def _wake_owner(self, uid: str) -> None:
        """An owner deleting in the foreground looks again at what still blocks it."""
        obj = self._object(uid)
        if obj is not None and gc.deleting_dependents(obj):
            self.attempt_to_delete.add(uid)

    # ------------------------------------------------------------------ lookups
    def _object(self, uid: str) -> Obj | None:
        node = self.graph.nodes.get(uid)
        if node is None:
            return None
        store = self._by_prefix.get(node.prefix)
        entry = store.lookup(node.namespace, node.name) if store is not None else None
        if entry is None:
            return None
        obj = entry.obj()
        return obj if gc.meta(obj).get("uid") == uid else None

    def _store_of(self, uid: str) -> GenericStore:
        return self._by_prefix[self.graph.nodes[uid].prefix]

    def _dependents(self, uid: str) -> list[Obj]:
        return [o for o in (self._object(d) for d in sorted(self.graph.dependents(uid)))
                if o is not None]

    async def _owner_states(self, item: Obj) -> dict[str, str]:
        m = gc.meta(item)
        ns = m.get("namespace") or ""
        states: dict[str, str] = {}
        for ref in gc.owner_refs(item):
            store = self._by_kind.get((_group(str(ref.get("apiVersion") or "")),
                                       str(ref.get("kind") or "")))
            if store is None:
                self._stores()
                store = self._by_kind.get((_group(str(ref.get("apiVersion") or "")),
                                           str(ref.get("kind") or "")))
            if store is None:
                raise RetryError(f"unable to get REST mapping for "
                                 f"{ref.get('apiVersion')}/{ref.get('kind')}")
            namespaced = store.info.namespaced
            owner = None
            if not (namespaced and not ns):
                entry = store.lookup(ns if namespaced else "", str(ref.get("name") or ""))
                owner = entry.obj() if entry is not None else None
            state = gc.owner_state(ref, owner, namespaced, ns)
            if state == gc.INVALID or (state == gc.DANGLING and namespaced
                                       and self._elsewhere(str(ref.get("uid")), ns)):
                await self._report_invalid_namespace(item, ref)
            states[str(ref.get("uid"))] = state
        return states

    def _elsewhere(self, uid: str, namespace: str) -> bool:
        """The uid is an object the graph saw in another namespace."""
        node = self.graph.nodes.get(uid)
        return node is not None and bool(node.namespace) and node.namespace != namespace

    async def _report_invalid_namespace(self, item: Obj, ref: Obj) -> None:
        """reportInvalidNamespaceOwnerRef, once per dependent and owner."""
        m = gc.meta(item)
        key = (str(m.get("uid")), str(ref.get("uid")))
        if key in self._reported:
            return
        self._reported.add(key)
        ns = m.get("namespace") or ""
        ident = (f"[{ref.get('apiVersion')}/{ref.get('kind')}, namespace: {ns}, name: "
                 f"{ref.get('name')}, uid: {ref.get('uid')}]")
        await self.recorder.event(item, WARNING, "OwnerRefInvalidNamespace",
                                  f"ownerRef {ident} does not exist in namespace {quote(ns)}")

    # ------------------------------------------------------------------ workers
    async def run(self) -> None:
        await asyncio.gather(self.attempt_to_delete.run(), self.attempt_to_orphan.run())

    def _describe(self, uid: str) -> str:
        """An object's uid as log lines name it: namespace/name (uid ...)."""
        node = self.graph.nodes.get(uid)
        if node is None:
            return uid
        key = f"{node.namespace}/{node.name}" if node.namespace else node.name
        return f"{key} (uid {uid})"

    async def process_delete(self, uid: str) -> None:
        """attemptToDeleteItem for one object."""
        item = self._object(uid)
        if item is None:
            return  # gone, or another object by now
        action = gc.attempt_to_delete(item, await self._owner_states(item),
                                      self._dependents(uid))
        await self.apply(uid, item, action)

    async def apply(self, uid: str, item: Obj, action: gc.Action) -> None:
        store = self._store_of(uid)
        m = gc.meta(item)
        ns, name = m.get("namespace") or "", str(m.get("name"))
        if action.verb in ("none", "forget"):
            return
        if action.verb == "enqueue":
            for dep in action.uids:
                self.attempt_to_delete.add(dep)
            return
        if action.verb == "delete":
            log.info("garbage collector: deleting %s %s (uid %s), propagation %s",
                     store.info.kind, f"{ns}/{name}" if ns else name, uid, action.policy)
            await self._delete(store, ns, name, uid, action.policy)
            return
        if action.verb == "unblock-then-delete":
            await self._update(store, ns, name, uid, gc.unblocked)
            await self._delete(store, ns, name, uid, action.policy)
            return
        if action.verb == "patch-owners":
            await self._update(store, ns, name, uid,
                               lambda o: gc.without_owners(o, action.uids))
            return
        if action.verb == "remove-finalizer":
            await self._update(store, ns, name, uid,
                               lambda o: gc.without_finalizer(o, action.finalizer))
            return
        raise RetryError(f"unknown action {action.verb}")

    async def process_orphan(self, uid: str) -> None:
        """attemptToOrphanWorker: every dependent forgets the owner, then the owner's
        orphan finalizer goes (and the owner with it, if it was the last)."""
        owner = self._object(uid)
        if owner is None or not gc.orphaning(owner):
            return
        failed: list[str] = []
        for dep_uid in sorted(self.graph.dependents(uid)):
            dep = self._object(dep_uid)
            if dep is None:
                continue
            dm = gc.meta(dep)
            try:
                await self._update(self._store_of(dep_uid), dm.get("namespace") or "",
                                   str(dm.get("name")), dep_uid,
                                   lambda o: gc.without_owner(o, uid))
            except errors.StatusError as exc:
                failed.append(f"{dm.get('name')}: {exc.message}")
        if failed:
            raise RetryError("orphaning dependents: " + "; ".join(failed))
        m = gc.meta(owner)
        await self._update(self._store_of(uid), m.get("namespace") or "", str(m.get("name")),
                           uid, lambda o: gc.without_finalizer(o, FINALIZER_ORPHAN))

    # ------------------------------------------------------------------ writes
    async def _delete(self, store: GenericStore, ns: str, name: str, uid: str,
                      policy: str) -> None:
        try:
            await store.delete(Context(), ns, name,
                               DeleteOptions(uid=uid, propagation_policy=policy))
        except errors.StatusError as exc:
            if exc.code not in (404, 409):  # gone, or another object of that name now
                raise

    async def _update(self, store: GenericStore, ns: str, name: str, uid: str,
                      mutate: Callable[[Obj], Obj | None]) -> None:
        def guarded(obj: Obj) -> Obj | None:
            if gc.meta(obj).get("uid") != uid:
                return None  # another object of that name: not ours to change
            return mutate(obj)

        try:
            await store.guaranteed_update(ns, name, guarded)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise


async def run_garbage_collector(cp: ControlPlane) -> None:
    collector = GarbageCollector(cp.registry, metrics=cp.metrics.workqueue)
    collector.start()
    try:
        await collector.run()
    finally:
        collector.stop()
