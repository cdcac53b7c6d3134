"""Failpoints: kill the agent with SIGKILL at a named step of SyncPod, for crash tests.

``PYKUBELET_FAILPOINTS=after-create-container`` (comma-separated names) makes ``hit(name)``
SIGKILL this process the first time that step is reached, as a power cut would at that
exact point. Unset (always, outside tests) it costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "PYKUBELET_FAILPOINTS"
_ARMED = frozenset(n.strip() for n in os.environ.get(ENV, "").split(",") if n.strip())

NAMES = (
    "after-run-sandbox",
    "after-create-container",
    "after-start-container",
    "after-stop-container",
    "after-kill-pod",
)


def hit(name: str) -> None:
    if name in _ARMED:
        os.kill(os.getpid(), signal.SIGKILL)
