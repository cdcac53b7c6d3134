"""What the runtime keeps of each container, as containerd's internal/cri/store/container:
its durable record (``record.json``: what CreateContainer said, plus the monitor's pid and
the start and exit), the CRI states and exit reasons, the status, filter and stats types the
RPCs answer with, and how a record's process is known to be ours still (boot id, pid and
start time, so a reused pid is never taken for the container's init).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pycni.atomic_files import write_atomic
from pykubelet.runtime.container_request import MountSpec

CREATED = "CONTAINER_CREATED"
RUNNING = "CONTAINER_RUNNING"
EXITED = "CONTAINER_EXITED"
UNKNOWN = "CONTAINER_UNKNOWN"

REASON_COMPLETED = "Completed"
REASON_ERROR = "Error"
REASON_OOM = "OOMKilled"
REASON_UNKNOWN = "Unknown"
UNKNOWN_EXIT_CODE = 255


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


BOOT_ID = _boot_id()


def process_start(pid: int) -> tuple[str, int]:
    """(state letter, start time in clock ticks since boot) of ``pid``; ("", 0) if gone."""
    if pid <= 0:
        return "", 0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[19])
    except (OSError, IndexError, ValueError):
        return "", 0


def process_alive(pid: int, start: int = 0, boot_id: str = "") -> bool:
    """True while the process we started runs: same boot, same pid and start time (no pid
    reuse), and not a zombie nobody reaped."""
    if boot_id and boot_id != BOOT_ID:
        return False
    state, started = process_start(pid)
    if not state or state in ("Z", "X"):
        return False
    return not start or started == start


@dataclass
class ContainerRecord:
    """The container's durable record (``record.json``)."""

    id: str
    sandbox_id: str
    name: str
    attempt: int
    full_name: str
    image_ref: str
    image_id: str
    labels: dict[str, str]
    annotations: dict[str, str]
    log_path: str
    cgroups_path: str
    mounts: list[dict[str, Any]]
    created_at: int
    stop_signal: str = ""
    host_pid_ns: bool = False
    pid: int = 0
    started_at: int = 0
    finished_at: int = 0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    resources: dict[str, Any] = field(default_factory=dict)
    image_digest_ref: str = ""  # repo digest when the image has one, else its ID
    uid: int = 0
    gid: int = 0
    additional_gids: list[int] = field(default_factory=list)
    pid_start: int = 0  # the init's start time (clock ticks since boot): guards pid reuse
    boot_id: str = ""
    stdin: bool = False  # conmon holds the container's stdin open for Attach
    stdin_once: bool = False  # the first attach that ends closes stdin
    tty: bool = False  # the container's stdio is a terminal (conmon holds its master)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ContainerRecord:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass(frozen=True)
class ContainerStatus:
    id: str
    sandbox_id: str
    name: str
    attempt: int
    state: str
    created_at: int
    started_at: int
    finished_at: int
    exit_code: int
    image_ref: str
    image_id: str
    reason: str
    message: str
    labels: dict[str, str]
    annotations: dict[str, str]
    mounts: list[MountSpec]
    log_path: str
    pid: int
    resources: dict[str, Any] = field(default_factory=dict)
    image_digest_ref: str = ""
    uid: int = 0
    gid: int = 0
    additional_gids: tuple[int, ...] = ()


@dataclass(frozen=True)
class ContainerFilter:
    """CRI ContainerFilter: every set field must match; IDs match by prefix."""

    id: str = ""
    sandbox_id: str = ""
    state: str | None = None
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ContainerStats:
    id: str
    sandbox_id: str
    name: str
    attempt: int
    labels: dict[str, str]
    annotations: dict[str, str]
    timestamp_ns: int
    cpu_usage_core_nanoseconds: int
    memory_working_set_bytes: int
    memory_usage_bytes: int
    memory_rss_bytes: int
    page_faults: int
    major_page_faults: int
    writable_layer_bytes: int
    writable_layer_inodes: int
    writable_layer_mountpoint: str
    cpu_usage_nano_cores: int = 0  # over the interval since the previous sample; 0 at first
    memory_available_bytes: int = 0  # limit - working set, when a limit is set


def write_json(path: Path, obj: object) -> None:
    # not durable (no fsync on the create path): a host crash ends the containers too, and
    # recovery reads what the monitors left (two threads may record one exit at once:
    # each write has its own temp file)
    write_atomic(path, json.dumps(obj, sort_keys=True), durable=False)


def build_status(rec: ContainerRecord, state: str) -> ContainerStatus:
    """The CRI status of ``rec`` in ``state``: exit fields only once exited, the pid only
    while running."""
    return ContainerStatus(
        id=rec.id, sandbox_id=rec.sandbox_id, name=rec.name, attempt=rec.attempt,
        state=state, created_at=rec.created_at, started_at=rec.started_at,
        finished_at=rec.finished_at if state == EXITED else 0,
        exit_code=rec.exit_code if state == EXITED else 0,
        image_ref=rec.image_ref, image_id=rec.image_id,
        reason=rec.reason if state == EXITED else "",
        message=rec.message if state == EXITED else "",
        labels=dict(rec.labels), annotations=dict(rec.annotations),
        mounts=[MountSpec(**m) for m in rec.mounts], log_path=rec.log_path,
        pid=rec.pid if state == RUNNING else 0, resources=dict(rec.resources),
        image_digest_ref=rec.image_digest_ref or rec.image_id, uid=rec.uid, gid=rec.gid,
        additional_gids=tuple(rec.additional_gids),
    )
