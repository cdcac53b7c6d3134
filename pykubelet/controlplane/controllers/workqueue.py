"""A keyed work queue (client-go's workqueue, rate-limited and delaying) for the
watch-driven controllers: a key waits once however often it is added, is never processed
by two workers at once (added while processing, it comes back after), can be added after
a delay, and a key whose sync failed comes back after a per-key back-off until it succeeds
(by default 1 s doubling to a minute, as the Job controller's DefaultJobApiBackOff/
MaxJobApiBackOff; the ReplicaSet, Deployment and DaemonSet controllers and the garbage
collector pass DefaultControllerRateLimiter's 5 ms doubling to 1000 s). Sync failures are
logged with the key (a Status error by its message); one object never stops the loop.
Given metrics, the queue reports client-go's workqueue_* series under its name."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pykubelet.controlplane import errors

if TYPE_CHECKING:
    from pykubelet.controlplane.metrics import WorkqueueMetrics

log = logging.getLogger(__name__)

API_BACKOFF_S = 1.0
MAX_API_BACKOFF_S = 60.0
#: client-go's DefaultControllerRateLimiter (ItemExponentialFailureRateLimiter 5 ms..1000 s)
CONTROLLER_BASE_S = 0.005
CONTROLLER_MAX_S = 1000.0


class WorkQueue:
    def __init__(self, name: str, sync: Callable[[str], Awaitable[None]], *,
                 base: float = API_BACKOFF_S, cap: float = MAX_API_BACKOFF_S,
                 logger: logging.Logger = log, metrics: WorkqueueMetrics | None = None,
                 describe: Callable[[str], str] = str,
                 expected: tuple[type[Exception], ...] = ()) -> None:
        self.name = name
        self.sync = sync
        self.base, self.cap, self.log = base, cap, logger
        self.metrics = metrics
        self.describe = describe  # the key as log lines name it
        # failures logged without a traceback (besides Status and lookup errors)
        self.expected = (LookupError, errors.StatusError, *expected)
        self.loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._failures: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def add(self, key: str) -> None:
        """Queue ``key`` (safe from any thread)."""
        self.loop.call_soon_threadsafe(self._add, key)

    def _add(self, key: str) -> None:
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)
            if self.metrics is not None:
                self.metrics.adds.labels(self.name).inc()
                self.metrics.depth.labels(self.name).set(len(self._queued))

    def failures(self, key: str) -> int:
        """How often ``key``'s sync failed since it last succeeded."""
        return self._failures.get(key, 0)

    def __len__(self) -> int:
        return len(self._queued)

    def add_after(self, key: str, seconds: float) -> None:
        """Queue ``key`` in ``seconds`` (an earlier pending timer for it wins)."""
        if seconds <= 0:
            self._add(key)
            return
        due = self.loop.time() + seconds
        timer = self._timers.get(key)
        if timer is not None and not timer.cancelled() and timer.when() <= due:
            return
        if timer is not None:
            timer.cancel()
        self._timers[key] = self.loop.call_at(due, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self._add(key)

    async def run(self) -> None:
        try:
            while True:
                key = await self._queue.get()
                self._queued.discard(key)
                if self.metrics is not None:
                    self.metrics.depth.labels(self.name).set(len(self._queued))
                self._processing.add(key)
                try:
                    await self.sync(key)
                    self._failures.pop(key, None)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # one object's failure: logged, retried later
                    n = self._failures.get(key, 0)
                    self._failures[key] = n + 1
                    delay = min(self.base * 2 ** n, self.cap)
                    text = exc.message if isinstance(exc, errors.StatusError) else str(exc)
                    if self.metrics is not None:
                        self.metrics.retries.labels(self.name).inc()
                    self.log.warning("%s %s: sync failed, retrying: %s", self.name,
                                     self.describe(key), text,
                                     exc_info=not isinstance(exc, self.expected))
                    self.add_after(key, delay)
                finally:
                    self._processing.discard(key)
                    if key in self._dirty:
                        self._dirty.discard(key)
                        self._add(key)
        finally:
            for timer in self._timers.values():
                timer.cancel()
