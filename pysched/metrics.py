"""Scheduler metrics with upstream names (pkg/scheduler/metrics), kept in process.

No Prometheus dependency: counters and histograms live here, ``render()`` prints the text
exposition format, and listeners (callables) get every observation, so an embedding control
plane can forward them wherever it likes.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

# metrics.go: ExponentialBuckets(0.001, 2, 15)
ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))

_BUCKET = "scheduler_scheduling_attempt_duration_seconds_bucket"
Listener = Callable[[str, dict[str, str], float], None]


@dataclass
class Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0
    samples: list[float] = field(default_factory=list)
    keep_samples: int = 200_000

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.buckets) + 1)

    def observe(self, v: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, v)] += 1
        self.total += v
        self.n += 1
        if len(self.samples) < self.keep_samples:
            self.samples.append(v)

    def quantile(self, q: float) -> float:
        """From the kept samples (exact while fewer than keep_samples)."""
        if not self.samples:
            return 0.0
        s = sorted(self.samples)
        i = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
        return s[i]


class SchedulerMetrics:
    """scheduler_schedule_attempts_total, scheduler_scheduling_attempt_duration_seconds,
    scheduler_pending_pods, scheduler_preemption_attempts_total, scheduler_preemption_victims."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.schedule_attempts_total: dict[tuple[str, str], int] = {}
        self.attempt_duration: dict[tuple[str, str], Histogram] = {}
        self.pending_pods: dict[str, int] = {}
        self.preemption_attempts_total = 0
        self.preemption_victims: list[int] = []
        self.listeners: list[Listener] = []

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        key = (result, profile)
        with self._lock:
            self.schedule_attempts_total[key] = self.schedule_attempts_total.get(key, 0) + 1
            h = self.attempt_duration.get(key)
            if h is None:
                h = self.attempt_duration[key] = Histogram(ATTEMPT_BUCKETS)
            h.observe(seconds)
        for cb in self.listeners:
            cb(
                "scheduler_scheduling_attempt_duration_seconds",
                {"result": result, "profile": profile},
                seconds,
            )

    def set_pending_pods(self, counts: dict[str, int]) -> None:
        with self._lock:
            self.pending_pods = dict(counts)
        for queue, n in counts.items():
            for cb in self.listeners:
                cb("scheduler_pending_pods", {"queue": queue}, float(n))

    def observe_preemption(self, victims: int) -> None:
        with self._lock:
            self.preemption_attempts_total += 1
            if victims:
                self.preemption_victims.append(victims)

    def attempts(self, result: str | None = None) -> int:
        with self._lock:
            return sum(
                v for (r, _), v in self.schedule_attempts_total.items() if result in (None, r)
            )

    def all_durations(self) -> list[float]:
        with self._lock:
            out: list[float] = []
            for h in self.attempt_duration.values():
                out.extend(h.samples)
            return out

    def render(self) -> str:
        """Prometheus text exposition of what is kept here."""
        lines = []
        with self._lock:
            lines.append("# TYPE scheduler_schedule_attempts_total counter")
            for (result, profile), v in sorted(self.schedule_attempts_total.items()):
                lbl = f'profile="{profile}",result="{result}"'
                lines.append(f"scheduler_schedule_attempts_total{{{lbl}}} {v}")
            lines.append("# TYPE scheduler_scheduling_attempt_duration_seconds histogram")
            for (result, profile), h in sorted(self.attempt_duration.items()):
                lbl = f'profile="{profile}",result="{result}"'
                cum = 0
                for b, c in zip(h.buckets, h.counts, strict=False):
                    cum += c
                    le = f'le="{b:g}"'
                    lines.append(f"{_BUCKET}{{{lbl},{le}}} {cum}")
                lines.append(f'{_BUCKET}{{{lbl},le="+Inf"}} {h.n}')
                lines.append(
                    f"scheduler_scheduling_attempt_duration_seconds_sum{{{lbl}}} {h.total}"
                )
                lines.append(f"scheduler_scheduling_attempt_duration_seconds_count{{{lbl}}} {h.n}")
            lines.append("# TYPE scheduler_pending_pods gauge")
            for queue, n in sorted(self.pending_pods.items()):
                lines.append(f'scheduler_pending_pods{{queue="{queue}"}} {n}')
            lines.append("# TYPE scheduler_preemption_attempts_total counter")
            lines.append(f"scheduler_preemption_attempts_total {self.preemption_attempts_total}")
        return "\n".join(lines) + "\n"
