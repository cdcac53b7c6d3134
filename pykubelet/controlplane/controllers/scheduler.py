"""The scheduler loop: pysched's EmbeddedScheduler fed from the watch cache the way
kube-scheduler's informers feed it (seed 003: eventhandlers.go), binding through
``pods/binding``.

Informer side (on the API's event loop): every change to a node, pod, PodDisruptionBudget
or namespace is handed, as it happens, to one feeder thread that decodes it (into the one
model, through pysched.decode) and calls the scheduler's handlers: assigned, non-terminal
pods go into the scheduler's cache, unassigned pods of its scheduler names into its queue,
node and pod changes move unschedulable pods back (the scheduler does that part). The
handlers never block the API.

Scheduler side (pysched's threads): a binding is the binding subresource's write, done on
the loop and waited for (a failed bind makes pysched retry the pod); a failed attempt
writes ``PodScheduled=False`` with kube-scheduler's reason and message and records a
``FailedScheduling`` event; preemption sets ``nominatedNodeName`` and deletes victims with
their own grace period, recording ``Preempted``.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from pykubelet import podtrace
from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.controlplane.registry.binding import bind_pod
from pykubelet.controlplane.registry.podconditions import set_condition
from pykubelet.controlplane.registry.resources import NAMESPACES, NODES, PDBS, PODS
from pykubelet.controlplane.registry.store import Context, DeleteOptions
from pykubelet.controlplane.registry.strategy import StatusStrategy
from pykubelet.controlplane.storage.cacher import DELETED, CachedEvent, Entry, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

SCHEDULER_NAME = "default-scheduler"
TERMINAL = ("Succeeded", "Failed")
BIND_TIMEOUT_S = 30.0


def _terminal_or_deleted(entry: Entry | None) -> bool:
    return entry is None or entry.attrs.fields.get("status.phase") in TERMINAL


def decode_informed(obj: dict[str, Any]) -> Any:
    """An object of the watch cache in the scheduler's model. The API server checked it on
    its write, so the fields kube-scheduler never reads go unchecked (pysched.decode's
    ``check_unread=False``): their walk was a fifth to a quarter of the decode."""
    from pysched.decode import from_dict

    return from_dict(obj, check_unread=False)


class InformedObjects:
    """The informer's decoded objects, one per key at its last revision (client-go's
    indexer): an update's old object is the one decoded at the key's previous event, not a
    second parse and decode of the same bytes (a pod's binding, a kubelet's status write,
    a node's heartbeat each decoded their old object again). The objects are the ones the
    scheduler keeps anyway (its pods, its cache's nodes); handlers must not change them."""

    def __init__(self, decode: Callable[[dict[str, Any]], Any]) -> None:
        self._decode = decode
        self._known: dict[str, tuple[int, Any]] = {}

    def get(self, entry: Entry) -> Any:
        known = self._known.get(entry.key)
        if known is not None and known[0] == entry.rev:
            return known[1]
        value = self._decode(entry.obj())
        if known is None or known[0] < entry.rev:
            self._known[entry.key] = (entry.rev, value)
        return value

    def forget(self, key: str) -> None:
        self._known.pop(key, None)

    def __len__(self) -> int:
        return len(self._known)


class SchedulerRunner:
    """kube-scheduler inside the control plane."""

    def __init__(self, cp: ControlPlane) -> None:
        from pysched.api import EmbeddedScheduler

        self.cp = cp
        self.loop = asyncio.get_running_loop()
        self.registry = cp.registry
        # events name the profile's schedulerName as their source, as upstream's per-profile
        # recorders do
        self.recorders: dict[str, EventRecorder] = {}
        self.scheduler = EmbeddedScheduler(self, config=getattr(cp, "scheduler_config", None),
                                           status_writer=self, async_binding=True,
                                           metrics=cp.metrics.scheduler)
        self.events: queue.SimpleQueue[tuple[str, CachedEvent | Entry | None] | None] = (
            queue.SimpleQueue())
        self._feeder = threading.Thread(target=self._feed, name="scheduler-informer",
                                        daemon=True)
        self.synced = threading.Event()
        self.informed = InformedObjects(decode_informed)  # the feeder thread's only
        self._pending: set[asyncio.Future[Any]] = set()  # events sent after their bindings

    def recorder(self, scheduler_name: str) -> EventRecorder:
        name = scheduler_name or SCHEDULER_NAME
        rec = self.recorders.get(name)
        if rec is None:
            rec = self.recorders[name] = EventRecorder(self.registry, name)
        return rec

    # ------------------------------------------------------------------ informers
    def start(self) -> None:
        watched = {NODES.storage_prefix: "node", PODS.storage_prefix: "pod",
                   PDBS.storage_prefix: "pdb", NAMESPACES.storage_prefix: "namespace"}
        self._kinds = watched
        # the initial list, in an order that lets pods find their nodes
        for prefix in (NAMESPACES.storage_prefix, NODES.storage_prefix,
                       PDBS.storage_prefix, PODS.storage_prefix):
            cache = self.registry.cacher.resources[prefix]
            for entry in cache.select(None, None):
                self.events.put((watched[prefix], entry))
        self.events.put(("synced", None))
        self.registry.cacher.listeners.append(self._on_event)
        self._feeder.start()
        self.scheduler.start()

    def stop(self) -> None:
        if self._on_event in self.registry.cacher.listeners:
            self.registry.cacher.listeners.remove(self._on_event)
        self.events.put(None)
        self.scheduler.stop()
        self._feeder.join(5)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        kind = self._kinds.get(cache.prefix)
        if kind is not None:
            self.events.put((kind, ev))

    def _feed(self) -> None:
        while True:
            item = self.events.get()
            if item is None:
                return
            kind, what = item
            if kind == "synced":
                self.synced.set()
                continue
            try:
                if what is None:
                    continue
                if isinstance(what, Entry):
                    self._apply(kind, None, what)
                else:
                    new = None if what.type == DELETED else what.entry
                    self._apply(kind, what.prev, new)
                    if new is None:
                        self.informed.forget(what.entry.key)
            except Exception:
                log.exception("scheduler informer: cannot apply a %s event", kind)

    def _apply(self, kind: str, old: Entry | None, new: Entry | None) -> None:
        s = self.scheduler

        def decode(entry: Entry | None) -> Any:
            assert entry is not None  # the branches below decode only what they were given
            return self.informed.get(entry)

        if kind == "namespace":
            entry = new or old
            assert entry is not None
            meta = entry.obj().get("metadata") or {}
            s.on_namespace(meta.get("name", ""), meta.get("labels") or {}, deleted=new is None)
        elif kind == "pdb":
            obj = new or old
            assert obj is not None
            s.on_pdb(decode(obj), deleted=new is None)
        elif kind == "node":
            if new is None:
                s.on_node_delete(decode(old))
            elif old is None:
                s.on_node_add(decode(new))
            else:
                s.on_node_update(decode(old), decode(new))
        elif kind == "pod":
            # terminal pods leave the scheduler (their resources are free), as upstream's
            # informer filters do
            gone_old = _terminal_or_deleted(old)
            gone_new = _terminal_or_deleted(new)
            if gone_new:
                if not gone_old:
                    s.on_pod_delete(decode(old))
            elif gone_old:
                s.on_pod_add(decode(new))
            else:
                s.on_pod_update(decode(old), decode(new))

    # ------------------------------------------------------------------ from pysched's threads
    def _run(self, coro: Coroutine[Any, Any, Any], wait: bool = False) -> Any:
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        if wait:
            return fut.result(BIND_TIMEOUT_S)
        fut.add_done_callback(_log_failure)
        return None

    def bind(self, pod: Any, node_name: str) -> None:
        """Binder: raises when the binding fails (pysched then retries the pod)."""
        podtrace.stage("binding", pod.metadata.uid, node=node_name)
        self._run(self._bind(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid,
                             node_name, pod.spec.scheduler_name), wait=True)

    async def _bind(self, ns: str, name: str, uid: str, node: str,
                    scheduler_name: str = SCHEDULER_NAME) -> None:
        store = self.registry.store(PODS)
        entry = store.lookup(ns, name)
        if entry is None or (uid and entry.obj().get("metadata", {}).get("uid") != uid):
            raise errors.not_found("pods", "", name)
        result = await bind_pod(store, ns, name, node, {}, Context())
        obj = result.obj() if isinstance(result, Entry) else result
        # the event follows the binding on its own, as kube-scheduler's recorder sends it
        # through its broadcaster after bind returned: a binding waits for one write only
        self._background(self.recorder(scheduler_name).event(
            obj, NORMAL, "Scheduled", f"Successfully assigned {ns}/{name} to {node}"))

    def _background(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` on the loop without waiting for it; a failure is logged."""
        task = asyncio.ensure_future(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        task.add_done_callback(_log_failure)

    def extender_bound(self, pod: Any, node_name: str) -> None:
        """A scheduler extender bound the pod: the Scheduled event, as after any binding."""
        self._run(self._scheduled(pod.metadata.namespace, pod.metadata.name, node_name,
                                  pod.spec.scheduler_name))

    async def _scheduled(self, ns: str, name: str, node: str, scheduler_name: str) -> None:
        entry = self.registry.store(PODS).lookup(ns, name)
        if entry is not None:
            await self.recorder(scheduler_name).event(
                entry.obj(), NORMAL, "Scheduled", f"Successfully assigned {ns}/{name} to {node}")

    def set_pod_condition(self, pod: Any, reason: str, message: str) -> None:
        self._run(self._unschedulable(pod.metadata.namespace, pod.metadata.name,
                                      pod.metadata.uid, reason, message,
                                      pod.spec.scheduler_name))

    async def _unschedulable(self, ns: str, name: str, uid: str, reason: str,
                             message: str, scheduler_name: str = SCHEDULER_NAME) -> None:
        store = self.registry.store(PODS)

        def mark(pod: dict[str, Any]) -> dict[str, Any] | None:
            meta = pod.get("metadata") or {}
            if meta.get("uid") != uid or (pod.get("spec") or {}).get("nodeName"):
                return None
            status = pod.setdefault("status", {})
            set_condition(status, {"type": "PodScheduled", "status": "False",
                                   "lastProbeTime": None,
                                   "lastTransitionTime": rfc3339(now()),
                                   "reason": reason, "message": message})
            return pod

        try:
            result = await store.guaranteed_update(ns, name, mark, StatusStrategy(store.strategy))
        except errors.StatusError as exc:
            if exc.code == 404:
                return
            raise
        obj = result.obj() if isinstance(result, Entry) else result
        await self.recorder(scheduler_name).event(obj, WARNING, "FailedScheduling", message)

    def set_nominated_node_name(self, pod: Any, node_name: str) -> None:
        self._run(self._nominate(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid,
                                 node_name))

    async def _nominate(self, ns: str, name: str, uid: str, node: str) -> None:
        store = self.registry.store(PODS)

        def nominate(pod: dict[str, Any]) -> dict[str, Any] | None:
            if (pod.get("metadata") or {}).get("uid") != uid:
                return None
            status = pod.setdefault("status", {})
            if node:
                status["nominatedNodeName"] = node
            else:
                status.pop("nominatedNodeName", None)
            return pod

        try:
            await store.guaranteed_update(ns, name, nominate, StatusStrategy(store.strategy))
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    def evict(self, victim: Any, preemptor: Any, node_name: str) -> None:
        self._run(self._preempt(victim.metadata.namespace, victim.metadata.name,
                                victim.metadata.uid, preemptor.metadata.uid, node_name,
                                preemptor.spec.scheduler_name))

    async def _preempt(self, ns: str, name: str, uid: str, preemptor_uid: str, node: str,
                       scheduler_name: str = SCHEDULER_NAME) -> None:
        store = self.registry.store(PODS)
        entry = store.lookup(ns, name)
        if entry is None:
            return
        pod = entry.obj()
        if (pod.get("metadata") or {}).get("uid") != uid:
            return

        def target(p: dict[str, Any]) -> dict[str, Any]:
            set_condition(p.setdefault("status", {}), {
                "type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                "lastTransitionTime": rfc3339(now()), "reason": "PreemptionByScheduler",
                "message": f"{scheduler_name}: preempting to accommodate a higher priority pod"})
            return p

        try:
            await store.guaranteed_update(ns, name, target, StatusStrategy(store.strategy))
            await store.delete(Context(), ns, name, DeleteOptions())
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
            return
        await self.recorder(scheduler_name).event(pod, NORMAL, "Preempted",
                                  f"Preempted by pod {preemptor_uid} on node {node}")


def _log_failure(fut: Any) -> None:
    if fut.cancelled():
        return
    exc = fut.exception()
    if exc is not None:
        log.warning("scheduler write failed: %s", exc)


async def run_scheduler(cp: ControlPlane) -> None:
    """The controller: start the runner and keep it until cancelled."""
    runner = SchedulerRunner(cp)
    cp.scheduler = runner
    runner.start()
    try:
        await asyncio.Event().wait()
    finally:
        await asyncio.to_thread(runner.stop)
