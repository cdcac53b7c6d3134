"""kube-proxy's BoundedFrequencyRunner (pkg/util/async): a function run on request, but never
more often than a token bucket allows (one per ``min_interval``, a burst of ``burst``), and
at least once per ``max_interval``; a failed run is retried after ``retry``.

Informer handlers call :meth:`run` (cheap: it only sets a flag); the one thread of
:meth:`loop` does the work, so a storm of events becomes a few syncs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class BoundedFrequencyRunner:
    def __init__(self, name: str, fn: Callable[[], bool], min_interval: float,
                 max_interval: float, burst: int = 2, retry: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.fn = fn
        self.min_interval = min_interval
        self.max_interval = max_interval
        self.burst = burst
        self.retry = max_interval if retry is None else retry
        self.clock = clock
        self._tokens = float(burst)
        self._last_refill = clock()
        self._last_run = clock()
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._retry_at: float | None = None
        self._thread: threading.Thread | None = None
        self.runs = 0

    def run(self) -> None:
        """Ask for a run as soon as the bucket allows."""
        self._wanted.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self.loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join(5)

    def _refill(self, now: float) -> None:
        if self.min_interval > 0:
            self._tokens = min(float(self.burst),
                               self._tokens + (now - self._last_refill) / self.min_interval)
        else:
            self._tokens = float(self.burst)
        self._last_refill = now

    def loop(self) -> None:
        while not self._stop.is_set():
            now = self.clock()
            deadline = self._last_run + self.max_interval
            if self._retry_at is not None:
                deadline = min(deadline, self._retry_at)
            if not self._wanted.wait(max(0.0, deadline - now)) and self._stop.is_set():
                return
            if self._stop.is_set():
                return
            now = self.clock()
            self._refill(now)
            if self._tokens < 1:  # too soon: wait for the next token, then run
                if self._stop.wait((1 - self._tokens) * self.min_interval):
                    return
                self._refill(self.clock())
            self._tokens -= 1
            self._wanted.clear()
            self._retry_at = None
            self._last_run = self.clock()
            self.runs += 1
            try:
                ok = self.fn()
            except Exception:
                ok = False
            if not ok:
                self._retry_at = self.clock() + self.retry
