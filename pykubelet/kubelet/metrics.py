"""The agent's metrics, with kubelet's names (pkg/kubelet/metrics/metrics.go), through
prometheus-client.

One ``KubeletMetrics`` object owns a registry that the parts which observe something write
to (the instrumented runtime service, PLEG's relist, the pod workers' syncs, the pod start
tracker) and that the HTTP port's /metrics renders as Prometheus text. The gauges about
pods (running pods, containers by state) are not kept: they are counted from the agent's
pod cache at each scrape. Process metrics come with every scrape.

Names, labels and buckets are upstream's: ``kubelet_runtime_operations_*`` label the CRI
call with its operation type (``run_podsandbox``, ``create_container``, ... as
instrumented_services.go names them), ``kubelet_started_pods_total`` counts sandboxes
started (RunPodSandbox calls) as SyncPod counts them.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    gc_collector,
    generate_latest,
    platform_collector,
    process_collector,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pykubelet.api.types import Pod, PodStatus

disable_created_metrics()

#: prometheus.DefBuckets
DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: metrics.go podStartupDurationBuckets
POD_START_BUCKETS = (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480,
                     600, 900, 1200, 1800, 2700, 3600)
#: metrics.go: ExponentialBuckets(.005, 2.5, 14)
RUNTIME_BUCKETS = tuple(0.005 * 2.5**i for i in range(14))
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

PodGauges = Callable[[], tuple[int, Mapping[str, int]]]


def operation_type(method: str) -> str:
    """A CRI method's operation type as kubelet labels it: RunPodSandbox -> run_podsandbox,
    ListContainerStats -> list_container_stats, ImageFsInfo -> image_fs_info."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", method.replace("PodSandbox", "Podsandbox"))
    return snake.lower()


class _PodGaugeCollector(Collector):
    """kubelet_running_pods and kubelet_running_containers{container_state}, counted at
    each scrape."""

    def __init__(self) -> None:
        self.source: PodGauges | None = None

    def collect(self) -> Iterator[Metric]:
        running_pods, by_state = self.source() if self.source is not None else (0, {})
        pods = GaugeMetricFamily("kubelet_running_pods",
                                 "Number of pods that have a running pod sandbox")
        pods.add_metric([], running_pods)
        yield pods
        containers = GaugeMetricFamily("kubelet_running_containers",
                                       "Number of containers currently running",
                                       labels=["container_state"])
        for state, n in sorted(by_state.items()):
            containers.add_metric([state], n)
        yield containers


class KubeletMetrics:
    """kubelet's metrics in a registry of their own; thread-safe."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.pods = _PodGaugeCollector()
        r.register(self.pods)
        self.pod_start = Histogram(
            "kubelet_pod_start_duration_seconds",
            "Duration in seconds from kubelet seeing a pod for the first time to the pod "
            "starting to run", buckets=POD_START_BUCKETS, registry=r)
        self.pod_worker = Histogram(
            "kubelet_pod_worker_duration_seconds",
            "Duration in seconds to sync a single pod. Broken down by operation type: "
            "create, update, or sync", ["operation_type"], buckets=DEF_BUCKETS, registry=r)
        self.pleg_relist = Histogram(
            "kubelet_pleg_relist_duration_seconds", "Duration in seconds for relisting pods "
            "in PLEG.", buckets=DEF_BUCKETS, registry=r)
        self.runtime_operations = Counter(
            "kubelet_runtime_operations_total",
            "Cumulative number of runtime operations by operation type.", ["operation_type"],
            registry=r)
        self.runtime_duration = Histogram(
            "kubelet_runtime_operations_duration_seconds",
            "Duration in seconds of runtime operations. Broken down by operation type.",
            ["operation_type"], buckets=RUNTIME_BUCKETS, registry=r)
        self.runtime_errors = Counter(
            "kubelet_runtime_operations_errors_total",
            "Cumulative number of runtime operation errors by operation type.",
            ["operation_type"], registry=r)
        self.started_pods = Counter("kubelet_started_pods_total",
                                    "Cumulative number of pods started", registry=r)
        self.started_pods_errors = Counter("kubelet_started_pods_errors_total",
                                           "Cumulative number of errors when starting pods",
                                           registry=r)
        process_collector.ProcessCollector(registry=r)
        platform_collector.PlatformCollector(registry=r)
        gc_collector.GCCollector(registry=r)
        self._lock = threading.Lock()
        self._calls: dict[str, tuple[int, float]] = {}  # CRI method -> (calls, seconds)

    # ------------------------------------------------------------------ writers
    def observe_runtime_operation(self, operation: str, seconds: float, failed: bool) -> None:
        """One CRI call (``operation`` is its method name, RunPodSandbox, ...)."""
        op = operation_type(operation)
        self.runtime_operations.labels(op).inc()
        self.runtime_duration.labels(op).observe(seconds)
        if failed:
            self.runtime_errors.labels(op).inc()
        if operation == "RunPodSandbox":
            (self.started_pods_errors if failed else self.started_pods).inc()
        with self._lock:
            calls, total = self._calls.get(operation, (0, 0.0))
            self._calls[operation] = (calls + 1, total + seconds)

    def observe_pleg_relist(self, seconds: float) -> None:
        self.pleg_relist.observe(seconds)

    def observe_pod_worker(self, operation: str, seconds: float) -> None:
        self.pod_worker.labels(operation).observe(seconds)

    def observe_pod_start(self, seconds: float) -> None:
        self.pod_start.observe(seconds)

    # ------------------------------------------------------------------ readers
    def runtime_operation_counts(self) -> dict[str, int]:
        """Calls per CRI method so far (failed ones included)."""
        with self._lock:
            return {op: n for op, (n, _) in self._calls.items()}

    def runtime_operation_means(self) -> dict[str, float]:
        """Mean seconds per CRI method so far."""
        with self._lock:
            return {op: t / n for op, (n, t) in self._calls.items() if n}

    def render(self, pod_gauges: PodGauges | None = None) -> bytes:
        """Prometheus text exposition of every metric; ``pod_gauges`` counts the pods."""
        if pod_gauges is not None:
            self.pods.source = pod_gauges
        return generate_latest(self.registry)


class PodStartLatencyTracker:
    """From a pod's first sight to all its app containers running, once per pod
    (kubelet's pod_startup_latency_tracker): kubelet_pod_start_duration_seconds."""

    def __init__(self, metrics: KubeletMetrics, clock: Callable[[], float] = time.time) -> None:
        self.metrics = metrics
        self._clock = clock
        self._lock = threading.Lock()
        self._first_seen: dict[str, float] = {}

    def observed_pod(self, uid: str) -> None:
        with self._lock:
            self._first_seen.setdefault(uid, self._clock())

    def observed_status(self, pod: Pod, status: PodStatus) -> None:
        if not pod.spec.containers:
            return
        if len(status.container_statuses) != len(pod.spec.containers) or not all(
            cs.state.running is not None for cs in status.container_statuses
        ):
            return
        with self._lock:
            seen = self._first_seen.pop(pod.uid, None)
        if seen is not None:
            self.metrics.observe_pod_start(self._clock() - seen)

    def forget(self, uid: str) -> None:
        with self._lock:
            self._first_seen.pop(uid, None)
