"""How the long-running commands stop: on SIGTERM (systemd, kill) or SIGINT (Ctrl-C) they
leave their wait and close what they opened, instead of dying mid-write. The control plane,
the load balancer and ``pykubectl port-forward`` wait on it."""

from __future__ import annotations

import asyncio
import signal


def stop_on_signals() -> asyncio.Event:
    """An event of the running loop that SIGTERM or SIGINT sets."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop
