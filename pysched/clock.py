"""Time as a parameter: the queue, cache and scheduler read a Clock, so tests drive time by hand."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Seconds on a monotonic scale; only differences matter."""

    def now(self) -> float: ...


class RealClock:
    """The process's monotonic clock."""

    def now(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start: float = 1000.0) -> None:
        self._t = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._t

    def step(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"FakeClock.step: seconds must be >= 0, got {seconds}")
        with self._lock:
            self._t += seconds

    def set(self, t: float) -> None:
        with self._lock:
            if t < self._t:
                raise ValueError(f"FakeClock.set: time cannot go back ({t} < {self._t})")
            self._t = float(t)
