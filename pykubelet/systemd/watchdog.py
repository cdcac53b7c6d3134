"""A health-gated systemd watchdog, as kubelet's (pkg/kubelet/watchdog).

Every ``WatchdogSec/2`` the checks run (for the agent: its sync loop and PLEG, what
/healthz answers); only when all pass is ``WATCHDOG=1`` sent. A wedged sync loop
therefore stops the pings, and systemd kills and restarts the service once
``WatchdogSec`` passes without one: the restart is systemd's decision, made on our
health, not on whether some thread still runs. The first failing check and the recovery
are logged once each, so a person reading the journal sees why the pings stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pykubelet.systemd.notify import Notifier

log = logging.getLogger(__name__)

HealthCheck = Callable[[], tuple[bool, str]]


class HealthWatchdog:
    """Pings the watchdog, each ``tick`` (every ``interval`` seconds), while ``check`` passes."""

    def __init__(self, notifier: Notifier, interval: float, check: HealthCheck) -> None:
        if interval <= 0:
            raise ValueError("watchdog interval must be positive")
        self.notifier = notifier
        self.interval = interval
        self.check = check
        self.pings = 0
        self.failing = ""  # why the last check failed, "" while healthy

    def tick(self) -> bool:
        """One round: check, and ping only when healthy; True when pinged."""
        try:
            ok, why = self.check()
        except Exception as exc:  # a check that raises is a failing check
            ok, why = False, f"health check raised {exc!r}"
        if not ok:
            if not self.failing:  # once per failure, not per tick
                log.error("not notifying the systemd watchdog: %s", why)
            self.failing = why or "unhealthy"
            return False
        if self.failing:
            log.info("healthy again: notifying the systemd watchdog")
            self.failing = ""
        if self.notifier.watchdog():
            self.pings += 1
            return True
        return False
