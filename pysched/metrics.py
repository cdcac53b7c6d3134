"""Scheduler metrics with upstream names (pkg/scheduler/metrics), through prometheus-client.

Every ``SchedulerMetrics`` owns its collectors in one ``CollectorRegistry`` (its own, or
the one an embedding control plane passes so that a single /metrics shows everything):
``scheduler_schedule_attempts_total{result,profile}``,
``scheduler_scheduling_attempt_duration_seconds{result,profile}`` (upstream's buckets),
``scheduler_pending_pods{queue}``, ``scheduler_preemption_attempts_total`` and
``scheduler_preemption_victims``. ``render()`` is the Prometheus text exposition.
Listeners (callables) also get every observation, and the attempt durations are kept
(bounded) for benches that want exact quantiles.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

# Go's client (what upstream exposes) has no *_created series; neither do we.
disable_created_metrics()

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

# metrics.go: ExponentialBuckets(0.001, 2, 15)
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
# metrics.go: ExponentialBuckets(1, 2, 7)
VICTIM_BUCKETS = tuple(float(2**i) for i in range(7))
QUEUES = ("active", "backoff", "unschedulable", "gated")
KEEP_SAMPLES = 200_000

Listener = Callable[[str, dict[str, str], float], None]


class SchedulerMetrics:
    """scheduler_schedule_attempts_total, scheduler_scheduling_attempt_duration_seconds,
    scheduler_pending_pods, scheduler_preemption_attempts_total, scheduler_preemption_victims."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ("result", "profile"), registry=self.registry)
        self._duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ("result", "profile"), buckets=ATTEMPT_BUCKETS, registry=self.registry)
        self._pending = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
            "number of pods in unschedulablePods that the scheduler attempted to schedule "
            "and failed; 'gated' is the number of unschedulable pods that the scheduler "
            "never attempted to schedule because they are gated.",
            ("queue",), registry=self.registry)
        for queue in QUEUES:
            self._pending.labels(queue).set(0)
        self._preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now", registry=self.registry)
        self._victims = Histogram(
            "scheduler_preemption_victims", "Number of selected preemption victims",
            buckets=VICTIM_BUCKETS, registry=self.registry)
        self._extender = Histogram(
            "scheduler_extender_duration_seconds",
            "Duration of scheduler extender calls in seconds, by extender (its urlPrefix), "
            "verb (filter, prioritize, bind, preempt) and result (success, error)",
            ("extender", "verb", "result"), buckets=ATTEMPT_BUCKETS, registry=self.registry)
        self.extender_seconds = 0.0  # every extender call's time, summed (benches)
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        self._attempt_series: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._samples: list[float] = []
        self.pending_pods: dict[str, int] = dict.fromkeys(QUEUES, 0)
        self.preemption_attempts_total = 0
        self.preemption_victims: list[int] = []
        self.listeners: list[Listener] = []

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        key = (result, profile)
        series = self._attempt_series.get(key)
        if series is None:  # labels() validates and locks: once per label pair, not per pod
            series = (
                self._attempts.labels(result, profile),
                self._duration.labels(result, profile),
            )
            self._attempt_series[key] = series
        series[0].inc()
        series[1].observe(seconds)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1
            if len(self._samples) < KEEP_SAMPLES:
                self._samples.append(seconds)
        for cb in self.listeners:
            cb(
                "scheduler_scheduling_attempt_duration_seconds",
                {"result": result, "profile": profile},
                seconds,
            )

    def observe_extender(self, extender: str, verb: str, result: str, seconds: float) -> None:
        self._extender.labels(extender, verb, result).observe(seconds)
        with self._lock:
            self.extender_seconds += seconds
        for cb in self.listeners:
            cb(
                "scheduler_extender_duration_seconds",
                {"extender": extender, "verb": verb, "result": result},
                seconds,
            )

    def set_pending_pods(self, counts: dict[str, int]) -> None:
        for queue, n in counts.items():
            self._pending.labels(queue).set(n)
        with self._lock:
            self.pending_pods = dict(counts)
        for queue, n in counts.items():
            for cb in self.listeners:
                cb("scheduler_pending_pods", {"queue": queue}, float(n))

    def observe_preemption(self, victims: int) -> None:
        self._preemption_attempts.inc()
        with self._lock:
            self.preemption_attempts_total += 1
            if victims:
                self.preemption_victims.append(victims)
        if victims:
            self._victims.observe(victims)

    def attempts(self, result: str | None = None) -> int:
        with self._lock:
            return sum(v for (r, _), v in self._counts.items() if result in (None, r))

    def all_durations(self) -> list[float]:
        """Every attempt's duration (the first KEEP_SAMPLES), for exact quantiles."""
        with self._lock:
            return list(self._samples)

    def render(self) -> str:
        """Prometheus text exposition of this registry."""
        return generate_latest(self.registry).decode()
