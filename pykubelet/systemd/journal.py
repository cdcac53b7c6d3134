"""Logging to journald with levels, through the daemon's stderr.

Under systemd a service's stderr is a stream into journald, and systemd says so in
``$JOURNAL_STREAM`` (``<device>:<inode>`` of that stream). A line that starts with
``<N>`` (sd-daemon(3): ``<3>`` error ... ``<7>`` debug) is stored with priority N, so
``journalctl -u pykubelet -p warning`` shows only warnings and worse. Timestamps are
left to journald. Outside journald the usual timestamped lines are kept.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TextIO

JOURNAL_STREAM = "JOURNAL_STREAM"

#: logging level -> syslog priority (sd-daemon.h SD_CRIT ... SD_DEBUG)
PRIORITIES = ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4),
              (logging.INFO, 6), (logging.DEBUG, 7))


def priority(levelno: int) -> int:
    for level, prio in PRIORITIES:
        if levelno >= level:
            return prio
    return 7


def writes_to_journal(stream: TextIO | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` (stderr) is the journald stream systemd connected (sd_journal_stream_fd's
    check: the device and inode in $JOURNAL_STREAM are the stream's)."""
    env = os.environ if env is None else env
    value = env.get(JOURNAL_STREAM, "")
    dev, _, ino = value.partition(":")
    if not dev or not ino:
        return False
    stream = sys.stderr if stream is None else stream
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return f"{st.st_dev}:{st.st_ino}" == value


class JournalFormatter(logging.Formatter):
    """``<prio>logger: message``, the prefix on every line so a traceback keeps its level."""

    def __init__(self) -> None:
        super().__init__("%(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        prefix = f"<{priority(record.levelno)}>"
        return "\n".join(prefix + line for line in text.splitlines() or [""])
