"""The log backend (``--audit-log-path``): one audit.k8s.io/v1 Event per line, JSON, in a
file rotated as kube-apiserver's lumberjack logger rotates it: past ``--audit-log-maxsize``
megabytes (100 when 0) the file is renamed ``<name>-<UTC time>.<ext>`` and a new one
opened; backups beyond ``--audit-log-maxbackup`` (0: all kept) or older than
``--audit-log-maxage`` days (0: any age) are removed. ``-`` is standard output."""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from pykubelet.api.machinery import timeutil

MEGABYTE = 1024 * 1024
DEFAULT_MAX_SIZE_MB = 100


@dataclass(frozen=True)
class LogOptions:
    """kube-apiserver's --audit-log-* options."""

    path: str
    max_age_days: int = 0
    max_backups: int = 0
    max_size_mb: int = 0


class LogBackend:
    """Writes events as lines; thread-safe; rotation as lumberjack.Logger."""

    def __init__(self, options: LogOptions, max_bytes: int | None = None,
                 now: Any = None) -> None:
        self.options = options
        self.max_bytes = max_bytes if max_bytes is not None else (
            (options.max_size_mb or DEFAULT_MAX_SIZE_MB) * MEGABYTE)
        self._now = now or (lambda: dt.datetime.now(dt.UTC))
        self._lock = threading.Lock()
        self._file: IO[bytes] | None = None
        self._size = 0
        self.path = None if options.path == "-" else Path(options.path)

    def process(self, event: dict[str, Any]) -> None:
        """Write one event (a line); errors are the caller's to log."""
        line = orjson.dumps(event) + b"\n"
        with self._lock:
            if self.path is None:
                sys.stdout.buffer.write(line)
                sys.stdout.flush()
                return
            if self._file is None:
                self._open()
            if self._size + len(line) > self.max_bytes and self._size > 0:
                self._rotate()
            assert self._file is not None
            self._file.write(line)
            self._file.flush()
            self._size += len(line)

    def _open(self) -> None:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._file = os.fdopen(fd, "ab")
        self._size = os.fstat(fd).st_size

    def _rotate(self) -> None:
        """Rename the current file to its backup name, open a new one, prune backups."""
        assert self.path is not None
        assert self._file is not None
        self._file.close()
        self._file = None
        stamp = timeutil.backup_stamp(self._now())
        os.replace(self.path, self.path.with_name(
            f"{self.path.stem}-{stamp}{self.path.suffix}"))
        self._open()
        self._prune()

    def backups(self) -> list[tuple[dt.datetime, Path]]:
        """The rotated files of this log with the time each was rotated, newest first."""
        assert self.path is not None
        pattern = re.compile(re.escape(self.path.stem) + r"-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d"
                             r"\.\d{3})" + re.escape(self.path.suffix) + "$")
        found = []
        for p in self.path.parent.iterdir():
            m = pattern.match(p.name)
            if m:
                found.append((timeutil.parse_backup_stamp(m.group(1)), p))
        return sorted(found, reverse=True)

    def _prune(self) -> None:
        """lumberjack's millRunOnce: beyond MaxBackups, or older than MaxAge, removed."""
        backups = self.backups()
        doomed: set[Path] = set()
        if self.options.max_backups > 0:
            doomed.update(p for _, p in backups[self.options.max_backups:])
        if self.options.max_age_days > 0:
            cutoff = self._now() - dt.timedelta(days=self.options.max_age_days)
            doomed.update(p for when, p in backups if when < cutoff)
        for p in doomed:
            p.unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
