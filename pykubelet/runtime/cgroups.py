"""Container resource usage read from its cgroup (v1 controllers, cgroupfs driver).

The container's cgroup is ``/sys/fs/cgroup/<controller><cgroupsPath>`` for every v1
controller (runc with the cgroupfs driver); on a pure cgroup v2 host it is
``/sys/fs/cgroup<cgroupsPath>``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class CgroupStats:
    timestamp_ns: int
    cpu_usage_core_nanoseconds: int
    memory_usage_bytes: int
    memory_working_set_bytes: int
    memory_rss_bytes: int
    page_faults: int
    major_page_faults: int


def is_v2(root: Path = CGROUP_ROOT) -> bool:
    return (root / "cgroup.controllers").exists()


def controller_dir(cgroups_path: str, controller: str, root: Path = CGROUP_ROOT) -> Path:
    rel = cgroups_path.lstrip("/")
    if is_v2(root):
        return root / rel
    return root / controller / rel


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _read_kv(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().lstrip("-").isdigit():
                out[key] = int(value)
    except OSError:
        pass
    return out


def read_stats(cgroups_path: str, root: Path = CGROUP_ROOT) -> CgroupStats:
    now = time.time_ns()
    if is_v2(root):
        d = root / cgroups_path.lstrip("/")
        cpu = _read_kv(d / "cpu.stat").get("usage_usec", 0) * 1000
        usage = _read_int(d / "memory.current")
        stat = _read_kv(d / "memory.stat")
        inactive = stat.get("inactive_file", 0)
        rss = stat.get("anon", 0)
    else:
        cpu = _read_int(controller_dir(cgroups_path, "cpuacct", root) / "cpuacct.usage")
        mem = controller_dir(cgroups_path, "memory", root)
        usage = _read_int(mem / "memory.usage_in_bytes")
        stat = _read_kv(mem / "memory.stat")
        inactive = stat.get("total_inactive_file", 0)
        rss = stat.get("total_rss", 0)
    return CgroupStats(
        timestamp_ns=now,
        cpu_usage_core_nanoseconds=cpu,
        memory_usage_bytes=usage,
        memory_working_set_bytes=max(usage - inactive, 0),
        memory_rss_bytes=rss,
        page_faults=stat.get("total_pgfault", stat.get("pgfault", 0)),
        major_page_faults=stat.get("total_pgmajfault", stat.get("pgmajfault", 0)),
    )


def oom_killed_count(cgroups_path: str, root: Path = CGROUP_ROOT) -> int:
    """How many processes the kernel OOM-killed in this cgroup (0 when unknown)."""
    if is_v2(root):
        return _read_kv(root / cgroups_path.lstrip("/") / "memory.events").get("oom_kill", 0)
    return _read_kv(controller_dir(cgroups_path, "memory", root) / "memory.oom_control").get(
        "oom_kill", 0)


def has_memsw(root: Path = CGROUP_ROOT) -> bool:
    """Whether v1 swap accounting exists (runc fails to set a swap limit without it)."""
    return is_v2(root) or (root / "memory" / "memory.memsw.limit_in_bytes").exists()


def existing_dirs(cgroups_path: str, root: Path = CGROUP_ROOT) -> list[Path]:
    """The container's cgroup dirs that still exist (tests assert none is left)."""
    if is_v2(root):
        d = root / cgroups_path.lstrip("/")
        return [d] if d.is_dir() else []
    out = []
    for ctrl in sorted(os.listdir(root)):
        d = root / ctrl / cgroups_path.lstrip("/")
        if (root / ctrl).is_dir() and d.is_dir():
            out.append(d)
    return out


def remove_empty(cgroups_path: str, root: Path = CGROUP_ROOT) -> None:
    """rmdir the container's cgroup dirs if runc left any behind (empty ones only)."""
    for d in existing_dirs(cgroups_path, root):
        try:
            os.rmdir(d)
        except OSError:
            pass
