"""A controller's rate-limited work queue (client-go's util/workqueue): keys, each queued
once however often it is added, a failed one added again after a per-item delay that
doubles with each failure (ItemExponentialFailureRateLimiter, 5 ms to 1000 s) and is
forgotten on success; with client-go's workqueue metrics, labelled by the queue's name."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Counter, Gauge

BASE_DELAY_S = 0.005
MAX_DELAY_S = 1000.0


class WorkqueueMetrics:
    """workqueue_depth, workqueue_adds_total, workqueue_retries_total (client-go's
    component-base/metrics/prometheus/workqueue names)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.depth = Gauge("workqueue_depth", "Current depth of workqueue", ("name",),
                           registry=registry)
        self.adds = Counter("workqueue_adds_total", "Total number of adds handled by "
                            "workqueue", ("name",), registry=registry)
        self.retries = Counter("workqueue_retries_total", "Total number of retries handled "
                               "by workqueue", ("name",), registry=registry)


class WorkQueue:
    def __init__(self, name: str, base: float = BASE_DELAY_S, cap: float = MAX_DELAY_S,
                 metrics: WorkqueueMetrics | None = None) -> None:
        self.name = name
        self.base, self.cap = base, cap
        self.metrics = metrics
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self.failures: dict[str, int] = {}

    def add(self, key: str) -> None:
        if key in self._queued:
            return
        self._queued.add(key)
        self._queue.put_nowait(key)
        if self.metrics is not None:
            self.metrics.adds.labels(self.name).inc()
            self.metrics.depth.labels(self.name).set(len(self._queued))

    def add_rate_limited(self, key: str) -> float:
        """Add ``key`` again after its back-off; the delay."""
        n = self.failures.get(key, 0)
        self.failures[key] = n + 1
        delay: float = min(self.cap, self.base * 2.0 ** n)
        if self.metrics is not None:
            self.metrics.retries.labels(self.name).inc()
        asyncio.get_running_loop().call_later(delay, self.add, key)
        return delay

    def forget(self, key: str) -> None:
        self.failures.pop(key, None)

    async def get(self) -> str:
        key = await self._queue.get()
        self._queued.discard(key)
        if self.metrics is not None:
            self.metrics.depth.labels(self.name).set(len(self._queued))
        return key

    def __len__(self) -> int:
        return len(self._queued)
