"""The audit log backend: one JSON event per line in a 0600 file, rotated as lumberjack
(kube-apiserver's --audit-log-maxsize/maxbackup/maxage): past the size the file becomes
``<name>-<UTC time>.<ext>``, backups beyond the count or older than the age are removed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from pykubelet.controlplane.apiserver.audit.backend import LogBackend, LogOptions


class Clock:
    def __init__(self) -> None:
        self.t = dt.datetime(2026, 12, 4, 1, 2, 3, 456789, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.t

    def step(self, **kw: float) -> None:
        self.t += dt.timedelta(**kw)


def event(i: int) -> dict[str, object]:
    return {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": f"id-{i:04d}"}


def test_lines_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.log"
    backend = LogBackend(LogOptions(str(path)))
    try:
        for i in range(3):
            backend.process(event(i))
    finally:
        backend.close()
    lines = path.read_text().splitlines()
    assert [json.loads(line)["auditID"] for line in lines] == ["id-0000", "id-0001", "id-0002"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert backend.max_bytes == 100 * 1024 * 1024  # --audit-log-maxsize 0: lumberjack's 100 MB


def test_rotation_by_size_and_backups(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    clock = Clock()
    line = len(json.dumps(event(0), separators=(",", ":"))) + 1
    backend = LogBackend(LogOptions(str(path), max_backups=2), max_bytes=3 * line, now=clock)
    try:
        for i in range(12):  # 3 lines a file: 4 files, the oldest backup removed
            backend.process(event(i))
            clock.step(seconds=1)
    finally:
        backend.close()
    backups = backend.backups()
    assert [p.name for _, p in backups] == ["audit-2026-12-04T01-02-12.456.log",
                                            "audit-2026-12-04T01-02-09.456.log"]
    assert [json.loads(x)["auditID"] for x in path.read_text().splitlines()] == [
        "id-0009", "id-0010", "id-0011"]
    assert [json.loads(x)["auditID"] for x in backups[1][1].read_text().splitlines()] == [
        "id-0003", "id-0004", "id-0005"]


def test_backups_older_than_max_age_go(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    clock = Clock()
    backend = LogBackend(LogOptions(str(path), max_age_days=1), max_bytes=1, now=clock)
    try:
        backend.process(event(0))
        backend.process(event(1))  # rotates: the first line's file is a backup
        assert len(backend.backups()) == 1
        clock.step(days=2)
        backend.process(event(2))  # rotates again: the first backup is two days old
    finally:
        backend.close()
    assert [when for when, _ in backend.backups()] == [clock.t.replace(microsecond=456000)]


def test_an_existing_file_is_appended_to_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text("x" * 100 + "\n")
    backend = LogBackend(LogOptions(str(path)), max_bytes=120)
    try:
        backend.process(event(0))  # would pass 120 bytes: the old content is rotated first
    finally:
        backend.close()
    assert len(backend.backups()) == 1
    assert json.loads(path.read_text())["auditID"] == "id-0000"
