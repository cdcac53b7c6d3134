"""sd_notify(3): tell systemd how the daemon is doing, over ``$NOTIFY_SOCKET``.

A ``Type=notify`` unit is "active" only once the daemon sends ``READY=1``; ``STATUS=`` is
the line ``systemctl status`` shows; ``WATCHDOG=1`` keeps a ``WatchdogSec=`` unit from
being killed; ``STOPPING=1`` says the stop is ours. Outside systemd (no socket in the
environment) every call does nothing, so the daemon runs the same by hand.

The protocol is one datagram of newline-separated assignments to an AF_UNIX socket whose
address is in the environment (``@`` starts an abstract address), as the C library and
go-systemd's ``daemon.SdNotify`` send it.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, MutableMapping

log = logging.getLogger(__name__)

NOTIFY_SOCKET = "NOTIFY_SOCKET"
WATCHDOG_USEC = "WATCHDOG_USEC"
WATCHDOG_PID = "WATCHDOG_PID"
#: what systemd sets for the main process only; a child we start must not inherit it
SERVICE_ENV = (NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID)


def _address(value: str) -> str | None:
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None  # vsock and other transports: not for a node agent


class Notifier:
    """Sends notify messages when systemd asked for them (``$NOTIFY_SOCKET`` set)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self._address = _address(env.get(NOTIFY_SOCKET, ""))
        self._warned = False

    @property
    def enabled(self) -> bool:
        return self._address is not None

    def send(self, *assignments: str) -> bool:
        """One datagram with every assignment; False when not sent (never raises: a
        daemon must not fail because its supervisor went away)."""
        if self._address is None or not assignments:
            return False
        payload = "\n".join(assignments).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.sendto(payload, self._address)
        except OSError as exc:
            if not self._warned:
                log.warning("sd_notify to %s failed: %s", self._address.lstrip("\0"), exc)
                self._warned = True
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1", *([_status(status)] if status else []))

    def status(self, text: str) -> bool:
        return self.send(_status(text))

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def stopping(self, status: str = "") -> bool:
        return self.send("STOPPING=1", *([_status(status)] if status else []))

    def extend_timeout(self, seconds: float) -> bool:
        """Ask for more time to start or stop (EXTEND_TIMEOUT_USEC)."""
        return self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")


def _status(text: str) -> str:
    return "STATUS=" + " ".join(text.split())  # one line


def watchdog_interval(env: Mapping[str, str] | None = None, pid: int | None = None) -> float:
    """sd_watchdog_enabled(3): the watchdog timeout in seconds, 0 when there is none or it
    is meant for another process (``WATCHDOG_PID`` names someone else)."""
    env = os.environ if env is None else env
    raw = env.get(WATCHDOG_USEC, "")
    if not raw:
        return 0.0
    try:
        usec = int(raw)
    except ValueError:
        log.warning("%s=%r is not a number: no watchdog", WATCHDOG_USEC, raw)
        return 0.0
    owner = env.get(WATCHDOG_PID, "")
    if owner and owner != str(os.getpid() if pid is None else pid):
        return 0.0
    return usec / 1_000_000 if usec > 0 else 0.0


def child_environment(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process: ours without systemd's service variables, so
    a child never speaks for the service (NotifyAccess=main ignores it anyway)."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if k not in SERVICE_ENV}
