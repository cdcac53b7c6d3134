"""kube-scheduler's PriorityQueue: activeQ, backoffQ, unschedulable pods, nominator.

Behaviour follows pkg/scheduler/backend/queue/scheduling_queue.go (queueing hints enabled):

- activeQ is ordered by the profile's QueueSort less function (PrioritySort: higher priority
  first, then the earlier timestamp).
- a pod that failed goes back through ``add_unschedulable_if_not_present``: the events seen while
  it was in flight are checked against the queueing hints of the plugins that rejected it; if one
  says Queue it goes to backoffQ (still backing off) or activeQ, else to the unschedulable pool.
- backoff is ``initial * 2**(attempts-1)`` capped at ``max`` from the pod's last timestamp;
  ``flush_backoff_q_completed`` (every 1 s) moves finished pods to activeQ.
- ``flush_unschedulable_pods_leftover`` (every 30 s) moves pods that stayed in the unschedulable
  pool longer than 5 min.
- cluster events (``move_all_to_active_or_backoff_queue``) move only pods for which a rejecting
  plugin's hint returns Queue (a pod with no rejecting plugin always moves), after an optional
  pre-enqueue check.

Time comes from an injectable Clock; ``tick()`` runs the periodic flushes that are due, so tests
with a FakeClock see exactly the periodic behaviour a running queue has.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.defaults import DEFAULT_SCHEDULER_NAME
from pysched.clock import Clock, RealClock
from pysched.framework.events import (
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
    QueueingHintFn,
)
from pysched.framework.types import PodInfo
from pysched.plugins import pod_topology_spread

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE = 300.0
BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0

ACTIVE_Q = "active"
BACKOFF_Q = "backoff"
UNSCHEDULABLE_Q = "unschedulable"
GATED = "gated"


# ---------------------------------------------------------------------------------------------
# Cluster events: the types live in pysched.framework.events (plugins register them).
# ---------------------------------------------------------------------------------------------
Resource = EventResource


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """framework.MatchClusterEvents: does a plugin's registered event cover the incoming one."""
    return registered.match(incoming)


def is_wildcard(event: ClusterEvent) -> bool:
    return event.resource == EventResource.WILDCARD and event.action_type == ActionType.all()


# The events the scheduler's handlers emit (framework/events.go).
EVENT_NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
EVENT_NODE_ALLOCATABLE_CHANGE = ClusterEvent(
    Resource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"
)
EVENT_NODE_LABEL_CHANGE = ClusterEvent(
    Resource.NODE, ActionType.UPDATE_NODE_LABEL, "NodeLabelChange"
)
EVENT_NODE_TAINT_CHANGE = ClusterEvent(
    Resource.NODE, ActionType.UPDATE_NODE_TAINT, "NodeTaintChange"
)
EVENT_NODE_CONDITION_CHANGE = ClusterEvent(
    Resource.NODE, ActionType.UPDATE_NODE_CONDITION, "NodeConditionChange"
)
EVENT_NODE_SPEC_UNSCHEDULABLE_CHANGE = ClusterEvent(
    Resource.NODE,
    ActionType.UPDATE_NODE_TAINT,
    "NodeSpecUnschedulableChange",
)
EVENT_ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(
    Resource.ASSIGNED_POD, ActionType.update(), "AssignedPodUpdate"
)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(
    Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"
)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(
    Resource.UNSCHEDULED_POD, ActionType.ADD, "UnschedulablePodAdd"
)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(
    Resource.UNSCHEDULED_POD, ActionType.update(), "UnschedulablePodUpdate"
)
BACKOFF_COMPLETE = "BackoffComplete"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"


@dataclass(frozen=True)
class QueueingHintFunction:
    plugin_name: str
    fn: QueueingHintFn | None  # None: always Queue


# profile name -> [(registered event, hint function)]
QueueingHintMap = dict[str, list[tuple[ClusterEvent, QueueingHintFunction]]]
PreEnqueueCheck = Callable[[Any], bool]


class QueueingStrategy(enum.IntEnum):
    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


# ---------------------------------------------------------------------------------------------
# Pod accessors: the queue needs only identity, priority, namespace and nomination.
# ---------------------------------------------------------------------------------------------
def pod_key(pod: Any) -> str:
    """namespace/name, the queue's identity for a pod (podInfoKeyFunc)."""
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def pod_priority(pod: Any) -> int:
    """corev1helpers.PodPriority: spec.priority, 0 when unset."""
    prio = getattr(pod.spec, "priority", None)
    return int(prio) if prio is not None else 0


@dataclass(eq=False)
class QueuedPodInfo:
    """framework.QueuedPodInfo: a pending pod plus its queue bookkeeping."""

    pod_info: Any  # framework.types.PodInfo
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""
    gating_plugin_events: list[ClusterEvent] = field(default_factory=list)
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0

    @property
    def pod(self) -> Any:
        return self.pod_info.pod

    @property
    def key(self) -> str:
        return pod_key(self.pod)

    def gated(self) -> bool:
        return self.gating_plugin != ""


def priority_sort_key(p: QueuedPodInfo) -> tuple[int, float]:
    """PrioritySort's order as a sort key: (-priority, timestamp)."""
    return (-pod_priority(p.pod), p.timestamp)


def default_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort.Less: higher priority first, then the older timestamp."""
    pa, pb = pod_priority(a.pod), pod_priority(b.pod)
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


class _HeapEntry:
    __slots__ = ("less", "pinfo", "seq", "valid")

    def __init__(self, pinfo: QueuedPodInfo, seq: int, less: Callable[..., bool]) -> None:
        self.pinfo = pinfo
        self.seq = seq
        self.valid = True
        self.less = less

    def __lt__(self, other: _HeapEntry) -> bool:
        if self.less(self.pinfo, other.pinfo):
            return True
        if self.less(other.pinfo, self.pinfo):
            return False
        return self.seq < other.seq


class _KeyedHeap:
    """A heap keyed by pod key, with O(log n) add/pop and lazy deletion.

    With ``sort_key`` the heap orders (sort_key(pinfo), seq) tuples in C; otherwise it calls
    the ``less`` function (a QueueSort plugin) for every comparison."""

    def __init__(
        self,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
        sort_key: Callable[[QueuedPodInfo], Any] | None = None,
    ) -> None:
        self._less = less
        self._sort_key = sort_key
        self._heap: list[Any] = []
        self._entries: dict[str, _HeapEntry] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> QueuedPodInfo | None:
        e = self._entries.get(key)
        return e.pinfo if e else None

    def add_or_update(self, pinfo: QueuedPodInfo) -> None:
        self.delete(pinfo.key)
        seq = next(self._seq)
        e = _HeapEntry(pinfo, seq, self._less)
        self._entries[pinfo.key] = e
        if self._sort_key is not None:
            heapq.heappush(self._heap, (self._sort_key(pinfo), seq, e))
        else:
            heapq.heappush(self._heap, e)

    def _top(self) -> _HeapEntry:
        h = self._heap[0]
        return h[2] if self._sort_key is not None else h  # type: ignore[no-any-return]

    def delete(self, key: str) -> bool:
        e = self._entries.pop(key, None)
        if e is None:
            return False
        e.valid = False
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._entries):
            keyed = self._sort_key is not None
            self._heap = [x for x in self._heap if (x[2] if keyed else x).valid]
            heapq.heapify(self._heap)
        return True

    def peek(self) -> QueuedPodInfo | None:
        while self._heap and not self._top().valid:
            heapq.heappop(self._heap)
        return self._top().pinfo if self._heap else None

    def pop(self) -> QueuedPodInfo | None:
        keyed = self._sort_key is not None
        while self._heap:
            h = heapq.heappop(self._heap)
            e = h[2] if keyed else h
            if e.valid:
                del self._entries[e.pinfo.key]
                return e.pinfo  # type: ignore[no-any-return]
        return None

    def list(self) -> list[QueuedPodInfo]:
        return [e.pinfo for e in self._entries.values()]


@dataclass(frozen=True)
class NominatingInfo:
    """fwk.NominatingInfo: ModeOverride sets (or clears, with "") the nominated node."""

    nominated_node_name: str
    mode_override: bool = True


class Nominator:
    """nominator.go: pods nominated to nodes by preemption, counted in later filters."""

    def __init__(self) -> None:
        self._by_node: dict[str, list[Any]] = {}
        self._node_of: dict[str, str] = {}

    def add_nominated_pod(self, pod_info: Any, nominating_info: NominatingInfo | None) -> None:
        pod = pod_info.pod
        key = pod_key(pod)
        self.delete_nominated_pod_if_exists(pod)
        if getattr(pod.spec, "node_name", ""):
            return  # already bound
        if nominating_info is not None and nominating_info.mode_override:
            node = nominating_info.nominated_node_name
        else:
            node = getattr(pod.status, "nominated_node_name", "") or ""
        if not node:
            return
        self._node_of[key] = node
        self._by_node.setdefault(node, []).append(pod_info)

    def delete_nominated_pod_if_exists(self, pod: Any) -> None:
        key = pod_key(pod)
        node = self._node_of.pop(key, None)
        if node is None:
            return
        lst = [pi for pi in self._by_node.get(node, []) if pod_key(pi.pod) != key]
        if lst:
            self._by_node[node] = lst
        else:
            self._by_node.pop(node, None)

    def update_nominated_pod(self, old_pod: Any, new_pod_info: Any) -> None:
        """Keep the nomination across updates unless the new pod says otherwise."""
        old_node = self._node_of.get(pod_key(old_pod), "")
        nominating = None
        new_nnn = getattr(new_pod_info.pod.status, "nominated_node_name", "") or ""
        if old_node and not new_nnn:
            nominating = NominatingInfo(old_node)
        self.add_nominated_pod(new_pod_info, nominating)

    def nominated_pods_for_node(self, node_name: str) -> list[Any]:
        return list(self._by_node.get(node_name, ()))

    def nominated_node_of(self, pod: Any) -> str:
        return self._node_of.get(pod_key(pod), "")

    def has_any(self) -> bool:
        return bool(self._node_of)

    def node_names(self) -> list[str]:
        """Nodes that have nominated pods."""
        return list(self._by_node)


class PriorityQueue:
    """The scheduling queue. Thread-safe: the embedding API feeds events from other threads."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] = default_less,
        sort_key: Callable[[QueuedPodInfo], Any] | None = None,
        pod_info_factory: Callable[[Any], Any] | None = None,
        queueing_hints: QueueingHintMap | None = None,
        pre_enqueue_plugins: dict[str, list[Any]] | None = None,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable_pods_duration: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
        namespace_labels: Callable[[str], dict[str, str]] | None = None,
    ) -> None:
        if pod_initial_backoff <= 0 or pod_max_backoff < pod_initial_backoff:
            raise ValueError(
                "pod_initial_backoff must be > 0 and pod_max_backoff >= pod_initial_backoff "
                f"(got {pod_initial_backoff}, {pod_max_backoff})"
            )
        self.clock: Clock = clock or RealClock()
        self._pod_info_factory = pod_info_factory or _default_pod_info_factory
        self._hints: QueueingHintMap = queueing_hints or {}
        self._interest: dict[ClusterEvent, bool] = {}
        self._pre_enqueue = pre_enqueue_plugins or {}
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self.pod_max_in_unschedulable = pod_max_in_unschedulable_pods_duration
        self._ns_labels = namespace_labels or (lambda ns: {})
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._active = _KeyedHeap(less, sort_key)
        self._backoff = _KeyedHeap(self._less_backoff, self.backoff_time)
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        # inFlightEvents as upstream keeps them: one log of the events seen while pods are
        # in flight (a cluster event is appended once, not once per in-flight pod: with
        # hundreds of pods waiting for their bindings, every event cost a scan of them all),
        # each in-flight pod remembering where its attempt began; an event about one pod
        # names it. The log is trimmed up to the oldest attempt still in flight.
        self._in_flight: dict[str, int] = {}  # key -> absolute log position, oldest first
        self._flight_log: list[tuple[ClusterEvent, Any, Any, str | None]] = []
        self._flight_base = 0  # the absolute position of _flight_log[0]
        self.nominator = Nominator()
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        self._closed = False
        now = self.clock.now()
        self._last_backoff_flush = now
        self._last_unschedulable_flush = now
        self.incoming_pods: dict[tuple[str, str], int] = {}  # (queue, event) -> count (metrics)

    # ------------------------------------------------------------------ helpers
    def _less_backoff(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.backoff_time(a) < self.backoff_time(b)

    def backoff_duration(self, pinfo: QueuedPodInfo) -> float:
        """calculateBackoffDuration: initial doubled per attempt after the first, capped."""
        if pinfo.attempts == 0:
            return 0.0
        d = self.pod_initial_backoff
        for _ in range(1, pinfo.attempts):
            if d > self.pod_max_backoff - d:
                return self.pod_max_backoff
            d += d
        return d

    def backoff_time(self, pinfo: QueuedPodInfo) -> float:
        return pinfo.timestamp + self.backoff_duration(pinfo)

    def is_pod_backing_off(self, pinfo: QueuedPodInfo) -> bool:
        return self.backoff_time(pinfo) > self.clock.now()

    def _count(self, queue: str, event: str) -> None:
        k = (queue, event)
        self.incoming_pods[k] = self.incoming_pods.get(k, 0) + 1

    def new_queued_pod_info(self, pod: Any, *plugins: str) -> QueuedPodInfo:
        return QueuedPodInfo(
            pod_info=self._pod_info_factory(pod),
            timestamp=self.clock.now(),
            unschedulable_plugins=set(plugins),
        )

    def _run_pre_enqueue_plugins(self, pinfo: QueuedPodInfo) -> None:
        profile = getattr(pinfo.pod.spec, "scheduler_name", "") or DEFAULT_SCHEDULER_NAME
        plugins = self._pre_enqueue.get(profile, [])
        for pl in plugins:
            status = pl.pre_enqueue(pinfo.pod)
            if status is not None and not status.is_success():
                name = pl.name() if callable(getattr(pl, "name", None)) else str(pl.name)
                pinfo.unschedulable_plugins.add(name)
                pinfo.gating_plugin = name
                pinfo.gating_plugin_events = [
                    ev for ev, h in self._hints.get(profile, []) if h.plugin_name == name
                ]
                return
        pinfo.gating_plugin = ""

    def _move_to_active_q(self, pinfo: QueuedPodInfo, event: str) -> bool:
        self._run_pre_enqueue_plugins(pinfo)
        key = pinfo.key
        if pinfo.gated():
            if key in self._active or key in self._backoff or key in self._unschedulable:
                return False
            self._unschedulable[key] = pinfo
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self.clock.now()
        self._unschedulable.pop(key, None)
        self._backoff.delete(key)
        self._active.add_or_update(pinfo)
        self._count(ACTIVE_Q, event)
        if event in (EVENT_UNSCHEDULED_POD_ADD.label, EVENT_UNSCHEDULED_POD_UPDATE.label):
            self.nominator.add_nominated_pod(pinfo.pod_info, None)
        self._cond.notify_all()
        return True

    def _move_to_backoff_q(self, pinfo: QueuedPodInfo, event: str) -> bool:
        self._unschedulable.pop(pinfo.key, None)
        self._backoff.add_or_update(pinfo)
        self._count(BACKOFF_Q, event)
        return True

    def _add_unschedulable(self, pinfo: QueuedPodInfo, event: str) -> None:
        self._unschedulable[pinfo.key] = pinfo
        self._count(UNSCHEDULABLE_Q, event)

    # ------------------------------------------------------------------ public API
    def add(self, pod: Any) -> None:
        """A new unscheduled pod (informer Add)."""
        with self._lock:
            pinfo = self.new_queued_pod_info(pod)
            self._move_to_active_q(pinfo, EVENT_UNSCHEDULED_POD_ADD.label)

    def pop(self, timeout: float | None = 0.0) -> QueuedPodInfo | None:
        """Pop the head of activeQ; wait up to ``timeout`` seconds (None: forever) for one."""
        with self._cond:
            if timeout is None:
                while len(self._active) == 0 and not self._closed:
                    self._cond.wait()
            elif len(self._active) == 0 and timeout > 0 and not self._closed:
                self._cond.wait(timeout)
            if self._closed or len(self._active) == 0:
                return None
            pinfo = self._active.pop()
            assert pinfo is not None
            pinfo.attempts += 1
            self.scheduling_cycle += 1
            self._begin_flight(pinfo.key)
            return pinfo

    def mark_in_flight(self, pinfo: QueuedPodInfo) -> None:
        """Start an attempt for a pod that did not come through pop() (simulate's list order)."""
        with self._lock:
            key = pinfo.key
            self._active.delete(key)
            self._backoff.delete(key)
            self._unschedulable.pop(key, None)
            pinfo.attempts += 1
            if pinfo.initial_attempt_timestamp is None:
                pinfo.initial_attempt_timestamp = self.clock.now()
            self.scheduling_cycle += 1
            self._begin_flight(key)

    def _begin_flight(self, key: str) -> None:
        self._in_flight.pop(key, None)  # re-inserted: the dict stays ordered by position
        self._in_flight[key] = self._flight_base + len(self._flight_log)

    def _end_flight(self, key: str) -> None:
        if self._in_flight.pop(key, None) is None:
            return
        if not self._in_flight:
            self._flight_base += len(self._flight_log)
            self._flight_log.clear()
            return
        oldest = next(iter(self._in_flight.values()))
        if oldest > self._flight_base:
            del self._flight_log[: oldest - self._flight_base]
            self._flight_base = oldest

    def _record_in_flight(self, event: ClusterEvent, old: Any, new: Any,
                          key: str | None = None) -> None:
        """An event for the pods in flight (``key``: for that pod only)."""
        if self._in_flight:
            self._flight_log.append((event, old, new, key))

    def _events_in_flight(self, key: str) -> list[tuple[ClusterEvent, Any, Any]]:
        start = self._in_flight.get(key)
        if start is None:
            return []
        return [(ev, old, new) for ev, old, new, only in
                self._flight_log[start - self._flight_base:] if only is None or only == key]

    def done(self, pod: Any) -> None:
        """The pod's scheduling attempt is over; forget the events seen meanwhile."""
        with self._lock:
            self._end_flight(pod_key(pod))

    def add_unschedulable_if_not_present(
        self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> None:
        """Return a failed pod to the queue (AddUnschedulableIfNotPresent)."""
        with self._lock:
            key = pinfo.key
            try:
                if key in self._unschedulable or key in self._active or key in self._backoff:
                    raise ValueError(f"pod {key} is already present in the scheduling queue")
                if not pinfo.unschedulable_plugins and not pinfo.pending_plugins:
                    pinfo.consecutive_errors_count += 1
                else:
                    pinfo.unschedulable_count += 1
                    pinfo.consecutive_errors_count = 0
                pinfo.timestamp = self.clock.now()
                strategy = self._hint_for_in_flight_pod(pinfo)
                self._requeue(pinfo, strategy, SCHEDULE_ATTEMPT_FAILURE)
            finally:
                self._end_flight(key)

    def _hint_for_in_flight_pod(self, pinfo: QueuedPodInfo) -> QueueingStrategy:
        if not pinfo.unschedulable_plugins and not pinfo.pending_plugins:
            return QueueingStrategy.AFTER_BACKOFF
        strategy = QueueingStrategy.SKIP
        for event, old, new in self._events_in_flight(pinfo.key):
            s = self._is_pod_worth_requeuing(pinfo, event, old, new)
            if s == QueueingStrategy.IMMEDIATELY:
                return s
            if s == QueueingStrategy.AFTER_BACKOFF:
                strategy = s
                if not pinfo.pending_plugins:
                    return s
        return strategy

    def _requeue(self, pinfo: QueuedPodInfo, strategy: QueueingStrategy, event: str) -> str:
        if strategy == QueueingStrategy.SKIP:
            self._add_unschedulable(pinfo, event)
            return UNSCHEDULABLE_Q
        if strategy == QueueingStrategy.AFTER_BACKOFF and self.is_pod_backing_off(pinfo):
            self._move_to_backoff_q(pinfo, event)
            return BACKOFF_Q
        if self._move_to_active_q(pinfo, event):
            return ACTIVE_Q
        return UNSCHEDULABLE_Q

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        if is_wildcard(event):
            return True
        known = self._interest.get(event)
        if known is not None:
            return known
        known = self._interest[event] = any(
            match_cluster_events(ev, event) for hints in self._hints.values() for ev, _ in hints
        )
        return known

    def _is_pod_worth_requeuing(
        self, pinfo: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingStrategy:
        rejectors = pinfo.unschedulable_plugins | pinfo.pending_plugins
        if not rejectors or "Extender" in rejectors:
            # extenders (framework.ExtenderName) register no events: any event may help
            return QueueingStrategy.AFTER_BACKOFF
        if is_wildcard(event):
            if new is not None and hasattr(new, "metadata") and pod_key(new) != pinfo.key:
                return QueueingStrategy.SKIP
            return QueueingStrategy.AFTER_BACKOFF
        profile = getattr(pinfo.pod.spec, "scheduler_name", "") or DEFAULT_SCHEDULER_NAME
        hints = self._hints.get(profile)
        if hints is None:
            return QueueingStrategy.AFTER_BACKOFF
        strategy = QueueingStrategy.SKIP
        for registered, hint in hints:
            if hint.plugin_name not in rejectors or not match_cluster_events(registered, event):
                continue
            if hint.fn is None:
                verdict = QueueingHint.QUEUE
            else:
                try:
                    verdict = hint.fn(pinfo.pod, old, new)
                except Exception:  # a failing hint must not strand the pod
                    verdict = QueueingHint.QUEUE
            if verdict == QueueingHint.QUEUE_SKIP:
                continue
            if hint.plugin_name in pinfo.pending_plugins:
                return QueueingStrategy.IMMEDIATELY
            if not pinfo.pending_plugins:
                return QueueingStrategy.AFTER_BACKOFF
            strategy = QueueingStrategy.AFTER_BACKOFF
        return strategy

    def _move_pods(
        self, pinfos: Iterable[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any
    ) -> None:
        if not self._is_event_of_interest(event):
            return
        for pinfo in list(pinfos):
            if pinfo.gated() and not any(
                match_cluster_events(ev, event) for ev in pinfo.gating_plugin_events
            ):
                continue
            strategy = self._is_pod_worth_requeuing(pinfo, event, old, new)
            if strategy == QueueingStrategy.SKIP:
                continue
            self._unschedulable.pop(pinfo.key, None)
            self._requeue(pinfo, strategy, event.label)
        self.move_request_cycle = self.scheduling_cycle
        self._record_in_flight(event, old, new)

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: PreEnqueueCheck | None = None,
    ) -> None:
        """A cluster event: move the unschedulable pods it may help."""
        with self._lock:
            if not self._is_event_of_interest(event):
                return
            pods = [
                p for p in self._unschedulable.values() if pre_check is None or pre_check(p.pod)
            ]
            self._move_pods(pods, event, old, new)

    def assigned_pod_added(self, pod: Any) -> None:
        """A bound pod appeared: move pods whose required affinity terms match it."""
        with self._lock:
            self._move_pods(
                self._pods_with_cross_topology_term(pod), EVENT_ASSIGNED_POD_ADD, None, pod
            )

    def assigned_pod_updated(self, old: Any, new: Any) -> None:
        with self._lock:
            self._move_pods(
                self._pods_with_cross_topology_term(new), EVENT_ASSIGNED_POD_UPDATE, old, new
            )

    def _pods_with_cross_topology_term(self, pod: Any) -> list[QueuedPodInfo]:
        ns_labels = self._ns_labels(pod.metadata.namespace)
        out = []
        for pinfo in self._unschedulable.values():
            if (
                pod_topology_spread.NAME in pinfo.unschedulable_plugins
                and pinfo.pod.metadata.namespace == pod.metadata.namespace
            ):
                out.append(pinfo)
                continue
            for term in getattr(pinfo.pod_info, "required_affinity_terms", None) or ():
                if term.matches(pod, ns_labels):
                    out.append(pinfo)
                    break
        return out

    def activate(self, pods: Iterable[Any]) -> None:
        """Move the given pods to activeQ now (ForceActivate)."""
        with self._lock:
            for pod in pods:
                key = pod_key(pod)
                pinfo = self._unschedulable.get(key) or self._backoff.get(key)
                if pinfo is None:
                    if key in self._in_flight:
                        self._record_in_flight(EVENT_FORCE_ACTIVATE, None, pod, key)
                        self.move_request_cycle = self.scheduling_cycle
                    continue
                self._backoff.delete(key)
                self._move_to_active_q(pinfo, EVENT_FORCE_ACTIVATE.label)

    def update(self, old_pod: Any, new_pod: Any) -> None:
        """An unscheduled pod changed (informer Update)."""
        with self._lock:
            key = pod_key(new_pod)
            if key in self._in_flight:
                self._record_in_flight(EVENT_UNSCHEDULED_POD_UPDATE, old_pod, new_pod, key)
                return
            for q in (self._active, self._backoff):
                pinfo = q.get(key)
                if pinfo is not None:
                    pinfo.pod_info = self._pod_info_factory(new_pod)
                    q.add_or_update(pinfo)
                    self.nominator.update_nominated_pod(old_pod, pinfo.pod_info)
                    return
            pinfo = self._unschedulable.get(key)
            if pinfo is not None:
                pinfo.pod_info = self._pod_info_factory(new_pod)
                self.nominator.update_nominated_pod(old_pod, pinfo.pod_info)
                strategy = self._is_pod_worth_requeuing(
                    pinfo, EVENT_UNSCHEDULED_POD_UPDATE, old_pod, new_pod
                )
                if strategy != QueueingStrategy.SKIP:
                    self._unschedulable.pop(key, None)
                    self._requeue(pinfo, strategy, EVENT_UNSCHEDULED_POD_UPDATE.label)
                return
            self._move_to_active_q(
                self.new_queued_pod_info(new_pod), EVENT_UNSCHEDULED_POD_UPDATE.label
            )

    def delete(self, pod: Any) -> None:
        """An unscheduled pod was deleted."""
        with self._lock:
            key = pod_key(pod)
            self.nominator.delete_nominated_pod_if_exists(pod)
            if self._active.delete(key) or self._backoff.delete(key):
                return
            self._unschedulable.pop(key, None)

    def flush_backoff_q_completed(self) -> None:
        """Move every pod whose backoff has expired to activeQ."""
        with self._lock:
            while True:
                head = self._backoff.peek()
                if head is None or self.is_pod_backing_off(head):
                    break
                self._backoff.pop()
                self._move_to_active_q(head, BACKOFF_COMPLETE)

    def flush_unschedulable_pods_leftover(self) -> None:
        """Move pods that stayed in the unschedulable pool longer than the maximum."""
        with self._lock:
            now = self.clock.now()
            stale = [
                p
                for p in self._unschedulable.values()
                if now - p.timestamp > self.pod_max_in_unschedulable
            ]
            if stale:
                self._move_pods(stale, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    def tick(self) -> None:
        """Run the periodic flushes that are due by the clock (1 s backoff, 30 s leftovers)."""
        with self._lock:
            now = self.clock.now()
            if now - self._last_backoff_flush >= BACKOFF_FLUSH_PERIOD:
                periods = int((now - self._last_backoff_flush) // BACKOFF_FLUSH_PERIOD)
                self._last_backoff_flush += periods * BACKOFF_FLUSH_PERIOD
                self.flush_backoff_q_completed()
            if now - self._last_unschedulable_flush >= UNSCHEDULABLE_FLUSH_PERIOD:
                periods = int((now - self._last_unschedulable_flush) // UNSCHEDULABLE_FLUSH_PERIOD)
                self._last_unschedulable_flush += periods * UNSCHEDULABLE_FLUSH_PERIOD
                self.flush_unschedulable_pods_leftover()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ nominator and views
    def add_nominated_pod(self, pod_info: Any, nominating_info: NominatingInfo | None) -> None:
        with self._lock:
            self.nominator.add_nominated_pod(pod_info, nominating_info)

    def delete_nominated_pod_if_exists(self, pod: Any) -> None:
        with self._lock:
            self.nominator.delete_nominated_pod_if_exists(pod)

    def nominated_pods_for_node(self, node_name: str) -> list[Any]:
        with self._lock:
            return self.nominator.nominated_pods_for_node(node_name)

    def pending_pods(self) -> dict[str, int]:
        """scheduler_pending_pods{queue}: active, backoff, unschedulable, gated."""
        with self._lock:
            gated = sum(1 for p in self._unschedulable.values() if p.gated())
            return {
                ACTIVE_Q: len(self._active),
                BACKOFF_Q: len(self._backoff),
                UNSCHEDULABLE_Q: len(self._unschedulable) - gated,
                GATED: gated,
            }

    def where(self, pod: Any) -> str | None:
        """Which queue holds the pod (tests, debugging)."""
        key = pod_key(pod)
        with self._lock:
            if key in self._active:
                return ACTIVE_Q
            if key in self._backoff:
                return BACKOFF_Q
            if key in self._unschedulable:
                return GATED if self._unschedulable[key].gated() else UNSCHEDULABLE_Q
            return None

    def get(self, pod: Any) -> QueuedPodInfo | None:
        key = pod_key(pod)
        with self._lock:
            return self._active.get(key) or self._backoff.get(key) or self._unschedulable.get(key)

    def active_pods(self) -> list[Any]:
        with self._lock:
            return [p.pod for p in self._active.list()]

    def backoff_pods(self) -> list[Any]:
        with self._lock:
            return [p.pod for p in self._backoff.list()]

    def unschedulable_pods(self) -> list[Any]:
        with self._lock:
            return [p.pod for p in self._unschedulable.values()]


def _default_pod_info_factory(pod: Any) -> Any:
    return PodInfo(pod)
