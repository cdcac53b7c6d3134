"""Run a function every period in its own thread, as apimachinery's ``wait.Until``.

PLEG's relist, housekeeping, log rotation and the static-pod directory's poll are each
one of these: a daemon thread that calls the function, waits the period (or stops at
once when told), and goes on after a failure. Failures of the kinds named ``expected``
(a runtime call that failed) are one warning line when a run of failures begins, then
debug lines (``-v``) while it lasts, and an info line when a pass works again: a runtime
that is down for an hour is not 3,600 warnings. Anything else is a bug, logged with its
traceback every time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic:
    """``fn`` every ``period`` seconds in a thread named ``name``, until ``stop``."""

    def __init__(
        self,
        name: str,
        fn: Callable[[], object],
        period: float,
        *,
        immediately: bool = False,
        expected: tuple[type[Exception], ...] = (),
    ) -> None:
        self.name = name
        self.fn = fn
        self.period = period
        self.immediately = immediately  # run once at start, before the first wait
        self.expected = expected
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failing_since = 0.0  # time.monotonic() of the first failure of this run; 0: ok

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _loop(self) -> None:
        if self.immediately:
            self._run_once()
        while not self._stop.wait(self.period):
            self._run_once()

    def _run_once(self) -> None:
        try:
            self.fn()
        except self.expected as exc:
            if not self.failing_since:
                self.failing_since = time.monotonic()
                log.warning("%s: %s", self.name, exc)
            else:
                log.debug("%s (failing for %.0fs): %s", self.name,
                          time.monotonic() - self.failing_since, exc)
        except Exception:
            self.failing_since = self.failing_since or time.monotonic()
            log.exception("%s failed", self.name)
        else:
            if self.failing_since:
                log.info("%s works again after %.0fs", self.name,
                         time.monotonic() - self.failing_since)
                self.failing_since = 0.0
