"""The CRI container log format: ``<RFC3339Nano> <stdout|stderr> <P|F> <msg>`` per line.

conmon's ``k8s-file`` driver writes these files; this module reads them back (tests,
``ContainerStatus`` messages, the kubelet's ``logs``) and resolves where a container's log
goes (``log_path`` is relative to the sandbox's ``log_directory``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pykubelet.runtime.errors import InvalidArgument

STREAMS = ("stdout", "stderr")
TAG_PARTIAL = "P"
TAG_FULL = "F"


@dataclass(frozen=True)
class LogEntry:
    timestamp: str
    stream: str
    partial: bool
    content: bytes


def parse_line(line: bytes) -> LogEntry:
    """One log line (without its newline) -> LogEntry; ValueError when malformed."""
    parts = line.split(b" ", 3)
    if len(parts) < 3:
        raise ValueError(f"not a CRI log line: {line[:80]!r}")
    ts, stream, tag = parts[0].decode(), parts[1].decode(), parts[2].decode()
    if stream not in STREAMS or tag not in (TAG_PARTIAL, TAG_FULL):
        raise ValueError(f"not a CRI log line: {line[:80]!r}")
    return LogEntry(ts, stream, tag == TAG_PARTIAL, parts[3] if len(parts) > 3 else b"")


def read_entries(path: str | os.PathLike[str]) -> Iterator[LogEntry]:
    with open(path, "rb") as f:
        for raw in f:
            yield parse_line(raw.rstrip(b"\n"))


def read_messages(path: str | os.PathLike[str], stream: str | None = None) -> list[str]:
    """Whole messages (partial chunks joined), optionally of one stream."""
    out: list[str] = []
    pending: dict[str, bytes] = {}
    for e in read_entries(path):
        if stream and e.stream != stream:
            continue
        buf = pending.pop(e.stream, b"") + e.content
        if e.partial:
            pending[e.stream] = buf
        else:
            out.append(buf.decode(errors="replace"))
    return out


def resolve_log_path(log_directory: str, log_path: str) -> str:
    """The absolute log file path; '' when the request asks for no log."""
    if not log_path:
        return ""
    if os.path.isabs(log_path):
        return log_path
    if not log_directory:
        raise InvalidArgument(
            f"log_path: {log_path!r} is relative but the sandbox has no log_directory")
    full = os.path.normpath(os.path.join(log_directory, log_path))
    if not full.startswith(os.path.normpath(log_directory) + os.sep):
        raise InvalidArgument(f"log_path: {log_path!r} escapes the sandbox log_directory")
    return full


def ensure_parent(path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
