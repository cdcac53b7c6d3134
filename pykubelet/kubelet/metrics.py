"""The agent's metrics, with kubelet's names (pkg/kubelet/metrics/metrics.go).

One ``KubeletMetrics`` object is written by the parts that observe something (the
instrumented runtime service, PLEG's relist, the pod workers' syncs, the pod start
tracker) and read by the HTTP port's /metrics, which renders Prometheus text. The
gauges about pods (running pods, containers by state) are not kept here: they are
counted from the agent's pod cache when rendered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pykubelet.api.types import Pod, PodStatus


@dataclass
class _Summary:
    """A Prometheus summary without quantiles: a sum and a count."""

    total: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        self.total += value
        self.count += 1


@dataclass
class KubeletMetrics:
    """Durations and counters by metric; thread-safe."""

    pod_start: _Summary = field(default_factory=_Summary)
    started_pods_total: int = 0
    pleg_relist: _Summary = field(default_factory=_Summary)
    pod_worker: dict[str, _Summary] = field(default_factory=dict)
    runtime_operations: dict[str, _Summary] = field(default_factory=dict)
    runtime_operations_errors: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ------------------------------------------------------------------ writers
    def observe_runtime_operation(self, operation: str, seconds: float, failed: bool) -> None:
        """kubelet_runtime_operations_duration_seconds / _errors_total{operation_type}."""
        with self._lock:
            self.runtime_operations.setdefault(operation, _Summary()).observe(seconds)
            if failed:
                self.runtime_operations_errors[operation] = (
                    self.runtime_operations_errors.get(operation, 0) + 1
                )

    def observe_pleg_relist(self, seconds: float) -> None:
        with self._lock:
            self.pleg_relist.observe(seconds)

    def observe_pod_worker(self, operation: str, seconds: float) -> None:
        with self._lock:
            self.pod_worker.setdefault(operation, _Summary()).observe(seconds)

    def observe_pod_start(self, seconds: float) -> None:
        with self._lock:
            self.pod_start.observe(seconds)
            self.started_pods_total += 1

    # ------------------------------------------------------------------ readers
    def runtime_operation_counts(self) -> dict[str, int]:
        """Calls per CRI operation so far (failed ones included)."""
        with self._lock:
            return {op: s.count for op, s in self.runtime_operations.items()}

    def runtime_operation_means(self) -> dict[str, float]:
        """Mean seconds per CRI operation so far."""
        with self._lock:
            return {op: s.total / s.count for op, s in self.runtime_operations.items() if s.count}

    def render(self, running_pods: int, containers_by_state: Mapping[str, int]) -> str:
        """Prometheus text exposition of every metric."""
        with self._lock:
            lines = [
                "# TYPE kubelet_running_pods gauge",
                f"kubelet_running_pods {running_pods}",
                "# TYPE kubelet_running_containers gauge",
                *(f'kubelet_running_containers{{container_state="{k}"}} {v}'
                  for k, v in sorted(containers_by_state.items())),
                "# TYPE kubelet_started_pods_total counter",
                f"kubelet_started_pods_total {self.started_pods_total}",
                *_summary("kubelet_pod_start_duration_seconds", {"": self.pod_start}),
                *_summary("kubelet_pleg_relist_duration_seconds", {"": self.pleg_relist}),
                *_summary("kubelet_pod_worker_duration_seconds", self.pod_worker),
                *_summary("kubelet_runtime_operations_duration_seconds",
                          self.runtime_operations),
                "# TYPE kubelet_runtime_operations_errors_total counter",
                *(f'kubelet_runtime_operations_errors_total{{operation_type="{op}"}} {n}'
                  for op, n in sorted(self.runtime_operations_errors.items())),
            ]
        return "\n".join(lines) + "\n"


def _summary(name: str, by_operation: Mapping[str, _Summary]) -> list[str]:
    """A summary's _sum and _count lines; the key "" means no operation_type label."""
    lines = [f"# TYPE {name} summary"]
    for op in sorted(by_operation):
        s = by_operation[op]
        label = f'{{operation_type="{op}"}}' if op else ""
        lines.append(f"{name}_sum{label} {s.total:.6f}")
        lines.append(f"{name}_count{label} {s.count}")
    return lines


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
