"""What a daemon tells systemd over its life, in one place (``Type=notify`` units).

``pykubelet run`` calls ``starting`` with each step (the ``STATUS=`` line ``systemctl
status`` shows while the unit is "activating"), ``ready`` once it serves and has synced
once (``READY=1``), and ``stopping`` on shutdown (``STOPPING=1``). From ``ready`` on, a
thread refreshes the status line and, when the unit has ``WatchdogSec=``, pings the
watchdog every half period only while the health check passes (kubelet's watchdog).
Outside systemd nothing is sent and no thread runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from pykubelet.systemd.notify import Notifier, watchdog_interval
from pykubelet.systemd.watchdog import HealthCheck, HealthWatchdog

log = logging.getLogger(__name__)

#: how often the status line is refreshed when there is no watchdog to pace it
STATUS_PERIOD_S = 10.0


class SystemdService:
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.notifier = Notifier(env)
        self.watchdog_timeout = watchdog_interval(env)
        self.watchdog: HealthWatchdog | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.notifier.enabled

    def starting(self, step: str) -> None:
        self.notifier.status(step)

    def ready(self, health: HealthCheck, status_line: Callable[[], str]) -> None:
        """READY=1 with the first status line; then keep the line fresh and, with a
        watchdog, ping it while ``health`` passes."""
        if not self.enabled:
            return
        self.notifier.ready(_safe(status_line))
        period = STATUS_PERIOD_S
        if self.watchdog_timeout > 0:
            # at least every WatchdogSec/2 (kubelet's pace); more often keeps the status fresh
            period = min(self.watchdog_timeout / 2, STATUS_PERIOD_S)
            self.watchdog = HealthWatchdog(self.notifier, period, health)
        self._thread = threading.Thread(
            target=self._run, args=(period, health, status_line), name="systemd", daemon=True
        )
        self._thread.start()

    def _run(self, period: float, health: HealthCheck, status_line: Callable[[], str]) -> None:
        if self.watchdog is not None:
            log.info("systemd watchdog: %.0fs, health checked every %.1fs",
                     self.watchdog_timeout, period)
        while True:
            if self.watchdog is not None:
                self.watchdog.tick()
                if self.watchdog.failing:
                    self.notifier.status(f"Unhealthy: {self.watchdog.failing}")
                else:
                    self.notifier.status(_safe(status_line))
            else:
                self.notifier.status(_safe(status_line))
            if self._stop.wait(period):
                return

    def stopping(self, why: str = "stopping") -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.notifier.stopping(why)


def _safe(status_line: Callable[[], str]) -> str:
    try:
        return status_line()
    except Exception as exc:  # a status line must never take the daemon down
        return f"running (status unavailable: {exc})"
