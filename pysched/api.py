"""The embedding API: a scheduler fed with node/pod events that binds through a Binder.

A control plane (pykubelet's, in a later issue) owns the objects; it calls the ``on_*`` methods
as its store changes (the informer handlers of eventhandlers.go) and receives decisions through
the ``Binder`` (``bind``), plus ``PodStatusWriter`` calls for PodScheduled=False conditions,
nominated node names and preemption evictions. Metrics (attempt durations, pending pods per
queue) are in ``metrics`` with upstream names; ``metrics.listeners`` get every observation.

Threading: ``run()`` loops in the calling thread; ``start()`` runs that loop on a daemon thread
(plus the queue's periodic flushes). Event methods are safe to call from other threads. With
``async_binding=True`` PreBind/Bind/PostBind run on worker threads, off the scheduling path, as
kube-scheduler's binding goroutine does; the default binds inline (deterministic for tests).

Use::

    sched = EmbeddedScheduler(binder, status_writer=writer, async_binding=True)
    sched.on_node_add(node)          # node informer: add / update / delete
    sched.on_pod_add(pod)            # pod informer: bound pods feed the cache, others the queue
    sched.on_pod_update(old, new)    # e.g. the binding coming back (spec.nodeName set)
    sched.start()                    # ... sched.stop()

``binder.bind(pod, node)`` must persist ``spec.nodeName`` (raise to fail the binding: the pod is
retried after backoff); the store's update event should then reach ``on_pod_update``, which
confirms the assumed pod in the cache.

What kube-scheduler writes besides bindings reaches the ``PodStatusWriter``:
``set_pod_condition(pod, reason, message)`` after a failed attempt (PodScheduled=False with
reason ``Unschedulable`` or ``SchedulerError``; ``message`` is kube-scheduler's FitError text,
``0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node
affinity/selector. preemption: ...``, which is also the FailedScheduling event's message),
``set_nominated_node_name(pod, node)`` (``""`` clears it), and ``evict(victim, preemptor,
node)`` for each preemption victim (upstream deletes it with default options, so its own
terminationGracePeriodSeconds applies). A writer with ``extender_bound(pod, node)`` hears of
the pods a scheduler extender bound (the binder never sees them; kube-scheduler records
their Scheduled event all the same).

Beyond kube-scheduler, ``last_decision(namespace, name)`` tells why a pod is Pending or where
it went and why (pysched.decisions: filter verdicts per node, the reported nodes' scores, the
nominated node, victims and message), as a JSON-ready dict shaped like a ``pysched simulate
-o json`` entry; the log is bounded and forgets a deleted pod.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any, Protocol

from pykubelet.api.objects import Namespace, Node, PodDisruptionBudget
from pykubelet.api.types import TAINT_EFFECT_NO_SCHEDULE, ObjectMeta, Pod
from pysched import admission as pysched_admission
from pysched.cache import Cache, Snapshot
from pysched.clock import Clock, RealClock
from pysched.decisions import Decision, DecisionLog, filtered_statuses
from pysched.framework.types import NodeInfo, PodInfo
from pysched.metrics import SchedulerMetrics
from pysched.plugins import queue_sort
from pysched.queue import (
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    EVENT_NODE_ALLOCATABLE_CHANGE,
    EVENT_NODE_CONDITION_CHANGE,
    EVENT_NODE_LABEL_CHANGE,
    EVENT_NODE_SPEC_UNSCHEDULABLE_CHANGE,
    EVENT_NODE_TAINT_CHANGE,
    ClusterEvent,
    NominatingInfo,
    PriorityQueue,
    QueueingHintFunction,
    default_less,
    priority_sort_key,
)
from pysched.scheduler import CycleRecord, Scheduler

log = logging.getLogger(__name__)


class Binder(Protocol):
    """Writes the binding (pod.spec.nodeName); raises on failure (the pod is retried)."""

    def bind(self, pod: Pod, node_name: str) -> None: ...


class PodStatusWriter(Protocol):
    """Optional: what kube-scheduler patches besides bindings."""

    def set_pod_condition(self, pod: Pod, reason: str, message: str) -> None: ...

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None: ...

    def evict(self, victim: Pod, preemptor: Pod, node_name: str) -> None: ...


def pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def admission_check(pod: Pod, ni: NodeInfo) -> bool:
    """preCheckForNode (eventhandlers.go): AdmissionCheck's first failure, then the node's
    NoSchedule taints; True when the pod may fit the node."""
    node = ni.node
    if node is None:
        return False
    if pysched_admission.admission_check(pod, ni, include_all_failures=False):
        return False
    return pysched_admission.untolerated_taint(pod, node, TAINT_EFFECT_NO_SCHEDULE) is None


def node_scheduling_properties_change(new: Node, old: Node) -> ClusterEvent | None:
    """nodeSchedulingPropertiesChange: the first property that changed, or None."""
    if new.spec.unschedulable != old.spec.unschedulable:
        return EVENT_NODE_SPEC_UNSCHEDULABLE_CHANGE
    if new.status.allocatable != old.status.allocatable:
        return EVENT_NODE_ALLOCATABLE_CHANGE
    if new.metadata.labels != old.metadata.labels:
        return EVENT_NODE_LABEL_CHANGE
    if new.spec.taints != old.spec.taints:
        return EVENT_NODE_TAINT_CHANGE
    if [(c.type, c.status) for c in new.status.conditions] != [
        (c.type, c.status) for c in old.status.conditions
    ]:
        return EVENT_NODE_CONDITION_CHANGE
    return None


class _NoStatusWriter:
    def set_pod_condition(self, pod: Pod, reason: str, message: str) -> None:
        pass

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        pass

    def evict(self, victim: Pod, preemptor: Pod, node_name: str) -> None:
        pass


class EmbeddedScheduler:
    """kube-scheduler in-process: feed it events, it binds pods through ``binder``."""

    def __init__(
        self,
        binder: Binder,
        *,
        config: Any = None,
        status_writer: PodStatusWriter | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        async_binding: bool = False,
        fast: bool = True,
        metrics: SchedulerMetrics | None = None,
        decisions: DecisionLog | None = None,
    ) -> None:
        from pysched import config as config_mod
        from pysched.framework.runtime import FrameworkDeps

        self.binder = binder
        self.status_writer: PodStatusWriter = status_writer or _NoStatusWriter()
        self.clock = clock or RealClock()
        self.rng = rng or random.Random()
        self.metrics = metrics or SchedulerMetrics()
        self.config = config if config is not None else config_mod.default_config()
        self.decisions = decisions if decisions is not None else DecisionLog()
        self._pods: dict[str, Pod] = {}  # every pod we know, by key (the informer's store)
        self._pdbs: dict[str, PodDisruptionBudget] = {}
        self._namespaces: dict[str, dict[str, str]] = {}
        self.snapshot = Snapshot()
        table_factory = None
        if fast:
            from pysched.framework.node_table import NodeTable

            table_factory = NodeTable
        self.cache = Cache(table_factory=table_factory)
        self._lock = threading.RLock()
        self.deps = FrameworkDeps(
            snapshot=self.snapshot,
            binder=binder,
            namespaces=self._namespace_objects,
            extras={
                "pdb_lister": self.pdbs,
                "evict": self._evict,
                "clear_nomination": self._clear_nomination,
                "pod_getter": self.get_pod,
                "preemption_rng": self.rng,
            },
        )
        from pysched.extender import build_extenders

        self.extenders = build_extenders(
            getattr(self.config, "extenders", None) or [], self.metrics.observe_extender
        )
        self.deps.extras["extenders"] = self.extenders
        self.frameworks = config_mod.build_frameworks(self.config, self.deps)
        hints, pre_enqueue, less = queue_wiring(self.frameworks)
        sorts = {
            fwk.queue_sort_plugins[0].name()
            for fwk in self.frameworks.values()
            if fwk.queue_sort_plugins
        }
        # PrioritySort as a C-compared key; any other QueueSort plugin is called per comparison
        sort_key = priority_sort_key if sorts <= {queue_sort.NAME} else None
        self.queue = PriorityQueue(
            clock=self.clock,
            less=less,
            sort_key=sort_key,
            queueing_hints=hints,
            pre_enqueue_plugins=pre_enqueue,
            pod_initial_backoff=float(getattr(self.config, "pod_initial_backoff_seconds", 1)),
            pod_max_backoff=float(getattr(self.config, "pod_max_backoff_seconds", 10)),
            namespace_labels=lambda ns: self._namespaces.get(ns, {}),
        )
        fast_path = None
        if fast:
            from pysched.fast.path import FastPath

            fast_path = FastPath()
        self.deps.nominator = self.queue
        self.scheduler = Scheduler(
            self.frameworks,
            self.cache,
            self.queue,
            self.snapshot,
            percentage_of_nodes_to_score=int(
                getattr(self.config, "percentage_of_nodes_to_score", 0) or 0
            ),
            rng=self.rng,
            metrics=self.metrics,
            async_binding=async_binding,
            pod_getter=self.get_pod,
            on_failure=self._on_failure,
            on_decision=self._record_decision,
            fast=fast_path,
            extenders=self.extenders,
            on_extender_bound=getattr(self.status_writer, "extender_bound", None),
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lookups
    def get_pod(self, pod: Pod) -> Pod | None:
        with self._lock:
            return self._pods.get(pod_key(pod))

    def _namespace_objects(self) -> list[Namespace]:
        with self._lock:
            return [
                Namespace(metadata=ObjectMeta(name=n, labels=dict(lbl)))
                for n, lbl in self._namespaces.items()
            ]

    def pdbs(self) -> list[PodDisruptionBudget]:
        with self._lock:
            return list(self._pdbs.values())

    def responsible_for(self, pod: Pod) -> bool:
        return pod.spec.scheduler_name in self.frameworks

    # ------------------------------------------------------------------ node events
    def on_node_add(self, node: Node) -> None:
        ni = self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff_queue(
            EVENT_NODE_ADD, None, node, lambda p: admission_check(p, ni)
        )

    def on_node_update(self, old: Node, new: Node) -> None:
        ni = self.cache.update_node(old, new)
        event = node_scheduling_properties_change(new, old)
        if event is not None:
            self.queue.move_all_to_active_or_backoff_queue(
                event, old, new, lambda p: admission_check(p, ni)
            )

    def on_node_delete(self, node: Node) -> None:
        self.cache.remove_node(node)

    # ------------------------------------------------------------------ pod events
    def on_pod_add(self, pod: Pod) -> None:
        with self._lock:
            self._pods[pod_key(pod)] = pod
        if pod.spec.node_name:
            self.cache.add_pod(pod)
            self.queue.assigned_pod_added(pod)
        elif self.responsible_for(pod):
            self.queue.add(pod)

    def on_pod_update(self, old: Pod, new: Pod) -> None:
        with self._lock:
            self._pods[pod_key(new)] = new
        if new.spec.node_name:
            if not old.spec.node_name:
                # bound: it leaves the scheduling queue and enters the cache
                self.queue.delete(old)
                self.cache.add_pod(new)
                self.queue.assigned_pod_added(new)
                return
            try:
                self.cache.update_pod(old, new)
            except Exception:
                self.cache.add_pod(new)
            self.queue.assigned_pod_updated(old, new)
        elif self.responsible_for(new):
            if self.cache.is_assumed_pod(new):
                return
            self.queue.update(old, new)

    def on_pod_delete(self, pod: Pod) -> None:
        with self._lock:
            self._pods.pop(pod_key(pod), None)
        self.decisions.forget(pod_key(pod))
        if pod.spec.node_name:
            self.cache.remove_pod(pod)
            self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, pod, None)
        else:
            self.queue.delete(pod)
            if self.cache.is_assumed_pod(pod):
                self.cache.forget_pod(self.cache.get_pod(pod) or pod)

    # ------------------------------------------------------------------ other objects
    def on_pdb(self, pdb: PodDisruptionBudget, deleted: bool = False) -> None:
        key = f"{pdb.metadata.namespace}/{pdb.metadata.name}"
        with self._lock:
            if deleted:
                self._pdbs.pop(key, None)
            else:
                self._pdbs[key] = pdb

    def on_namespace(self, name: str, labels: dict[str, str], deleted: bool = False) -> None:
        with self._lock:
            if deleted:
                self._namespaces.pop(name, None)
            else:
                self._namespaces[name] = dict(labels)

    # ------------------------------------------------------------------ running
    def schedule_one(self, timeout: float | None = 0.0) -> CycleRecord | None:
        """One scheduling attempt (after the queue's periodic flushes that are due)."""
        self.queue.tick()
        rec = self.scheduler.schedule_one(timeout)
        self.metrics.set_pending_pods(self.queue.pending_pods())
        return rec

    def run(self, stop: threading.Event | None = None, poll: float = 0.2) -> None:
        """Schedule until ``stop`` is set, flushing the queue on its 1 s / 30 s periods."""
        stop = stop or self._stop
        while not stop.is_set():
            self.schedule_one(timeout=poll)

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="pysched", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self.scheduler.close()
        for ext in self.extenders:
            ext.close()

    def register_pod(self, pod: Pod) -> None:
        """Know a pending pod without queueing it (simulate schedules in list order)."""
        with self._lock:
            self._pods[pod_key(pod)] = pod

    def schedule_now(self, pod: Pod) -> CycleRecord:
        """One scheduling attempt for ``pod`` right now, bypassing the queue's order."""
        pinfo = self.queue.new_queued_pod_info(pod)
        self.queue.mark_in_flight(pinfo)
        rec = self.scheduler.schedule_queued(pinfo)
        if rec is None:
            rec = CycleRecord(pod=pod, result="error", message="pod skipped")
        return rec

    def pending_pods(self) -> dict[str, int]:
        return self.queue.pending_pods()

    def last_decision(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Why the pod is Pending, or where it went and why: its last attempt's decision as a
        JSON-ready dict (pysched.decisions), or None when it has none (never tried, deleted,
        or aged out of the bounded log)."""
        d = self.decisions.get(f"{namespace}/{name}")
        return None if d is None else d.to_dict()

    def decision_of(self, record: CycleRecord) -> Decision:
        """The Decision for one attempt's record, on the current snapshot."""
        pod = record.pod
        snap = self.snapshot
        infos = record.feasible_infos
        return Decision(
            pod_key(pod),
            record.node or None,
            record.nominated_node or None,
            [pod_key(v) for v in record.victims],
            record.message,
            filtered_statuses(record.diagnosis, snap.node_info_list, snap.index_of, infos),
            record.scores,
            record.evaluated_nodes,
            len(infos),
            profile=record.profile,
            extenders=record.extenders,
        )

    # ------------------------------------------------------------------ callbacks
    def _on_failure(
        self, pod: Pod, reason: str, message: str, nominating: NominatingInfo | None
    ) -> None:
        self.status_writer.set_pod_condition(pod, reason, message)
        if (
            nominating is not None
            and nominating.mode_override
            and nominating.nominated_node_name != (pod.status.nominated_node_name or "")
        ):
            self.status_writer.set_nominated_node_name(pod, nominating.nominated_node_name)

    def _record_decision(self, record: CycleRecord) -> None:
        """Keep the attempt's decision; explaining must never break scheduling (a binding
        failure records from a binding thread while the loop refreshes the snapshot)."""
        try:
            self.decisions.put(self.decision_of(record))
        except Exception:
            log.exception("recording the decision for %s", pod_key(record.pod))

    def _evict(self, victim: Pod, preemptor: Pod, node_name: str) -> None:
        self.status_writer.evict(victim, preemptor, node_name)

    def _clear_nomination(self, pod: Pod) -> None:
        self.queue.delete_nominated_pod_if_exists(pod)
        self.status_writer.set_nominated_node_name(pod, "")


def queue_wiring(
    frameworks: dict[str, Any],
) -> tuple[
    dict[str, list[tuple[ClusterEvent, QueueingHintFunction]]],
    dict[str, list[Any]],
    Callable[[Any, Any], bool],
]:
    """The queue's hints, PreEnqueue plugins and less function from the profiles."""
    hints: dict[str, list[tuple[ClusterEvent, QueueingHintFunction]]] = {}
    pre_enqueue: dict[str, list[Any]] = {}
    less: Callable[[Any, Any], bool] | None = None
    for name, fwk in frameworks.items():
        hints[name] = [
            (ewh.event, QueueingHintFunction(plugin, ewh.queueing_hint_fn))
            for plugin, evs in fwk.events_to_register().items()
            for ewh in evs
        ]
        pre_enqueue[name] = list(fwk.pre_enqueue_plugins)
        if less is None and fwk.queue_sort_plugins:
            less = fwk.queue_sort_less
    return hints, pre_enqueue, less or default_less


__all__ = ["Binder", "EmbeddedScheduler", "PodInfo", "PodStatusWriter", "admission_check"]
