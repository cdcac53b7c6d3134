"""How pykubelet's daemons log (``run``, ``runtime``, ``control-plane``): one line per
event on stderr, at kubelet-like verbosity levels.

- ``-v`` 0 (the default): what a person follows: pod and container events, node
  registration, warnings and errors, at INFO; libraries only from WARNING;
- ``-v`` 1: also the agent's DEBUG lines (each sync, each probe, each CRI call);
- ``-v`` 2 and more: DEBUG everywhere, libraries included (gRPC, aiohttp, urllib3).

Under systemd (stderr is the journal's stream) each line carries its syslog priority
and no timestamp (journald keeps both), so ``journalctl -u pykubelet -p warning``
filters by level; elsewhere lines start with a timestamp and the level's name.
"""

from __future__ import annotations

import logging
import sys

from pykubelet.systemd.journal import JournalFormatter, writes_to_journal

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
OUR_LOGGERS = ("pykubelet", "pycni", "pysched")


def setup(verbosity: int = 0) -> None:
    """Configure the root logger for a daemon at ``verbosity`` (0, 1, 2+)."""
    handler = logging.StreamHandler(sys.stderr)
    if writes_to_journal(sys.stderr):
        handler.setFormatter(JournalFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
    ours = logging.DEBUG if verbosity >= 1 else logging.INFO
    for name in OUR_LOGGERS:
        logging.getLogger(name).setLevel(ours)


def runtime_log_level(verbosity: int) -> str:
    """The embedded runtime's --log-level for the agent's verbosity: its per-RPC lines
    only from -v 1, its debug from -v 2."""
    return {0: "warning", 1: "info"}.get(verbosity, "debug")
