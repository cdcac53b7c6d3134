"""Failpoints: make the agent fail at a named point, for tests of what happens then.

``PYKUBELET_FAILPOINTS`` is a comma-separated list of ``name`` or ``name=value``:

- a SyncPod step (``after-create-container`` ...): ``hit(name)`` SIGKILLs this process the
  first time that step is reached, as a power cut would at that exact point;
- ``wedge-sync-loop[=N]``: ``wedge(name)`` blocks the calling thread for good from the
  Nth time (default 2: after one good pass) the sync loop gets there, as a deadlock
  would, so health checks and systemd's watchdog can be seen noticing it;
- a number (``sync-loop-health-threshold=2``): ``number(name, default)`` reads it, for
  the thresholds such tests need shorter than in production.

Unset (always, outside tests) each call costs one dict lookup.
"""

from __future__ import annotations

import logging
import os
import signal
import threading

log = logging.getLogger(__name__)

ENV = "PYKUBELET_FAILPOINTS"


def _parse(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in text.split(","):
        name, _, value = item.strip().partition("=")
        if name:
            out[name] = value
    return out


_SPEC = _parse(os.environ.get(ENV, ""))
_ARMED = frozenset(_SPEC)
_reached: dict[str, int] = {}
_lock = threading.Lock()

NAMES = (
    "after-run-sandbox",
    "after-create-container",
    "after-start-container",
    "after-stop-container",
    "after-kill-pod",
    "wedge-sync-loop",
)


def hit(name: str) -> None:
    if name in _ARMED:
        os.kill(os.getpid(), signal.SIGKILL)


def wedge(name: str) -> None:
    """Block this thread forever once ``name`` has been reached its Nth time."""
    if name not in _ARMED:
        return
    with _lock:
        _reached[name] = _reached.get(name, 0) + 1
        count = _reached[name]
    if count >= int(_SPEC[name] or 2):
        log.error("failpoint %s: this thread stops here", name)
        threading.Event().wait()


def number(name: str, default: float) -> float:
    """The value given as ``name=value``, else ``default``."""
    value = _SPEC.get(name, "")
    try:
        return float(value) if value else default
    except ValueError:
        return default
