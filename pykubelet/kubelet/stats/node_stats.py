"""The node's CPU and memory usage from the root cgroup, as cadvisor reports the "/"
container for kubelet's summary.

CPU is the root's cumulative usage (cgroup v2: ``usage_usec`` of the root ``cpu.stat``;
v1: ``cpuacct.usage``). The working set is usage minus ``inactive_file`` (kubelet's
eviction signal and metrics-server's ``memory``): on v1 the root's
``memory.usage_in_bytes`` less ``total_inactive_file``; on v2 the root has no
``memory.current``, so usage is ``MemTotal - MemFree`` from /proc/meminfo (runc's
rootStatsFromMeminfo) less the root ``memory.stat``'s ``inactive_file``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

# the node's cgroup tree, read here as cadvisor reads it (the kubelet never imports the
# runtime: it may be containerd)
CGROUP_ROOT = Path("/sys/fs/cgroup")

MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class Usage:
    """One reading of cumulative CPU and current working set, with when it was taken."""

    timestamp_ns: int
    cpu_usage_core_nanoseconds: int
    memory_working_set_bytes: int


def parse_flat_keyed(text: str) -> dict[str, int]:
    """``key value`` lines (cpu.stat, memory.stat) to ints; other lines are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        value = value.strip()
        if value.isdigit():
            out[key] = int(value)
    return out


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo to bytes (``MemTotal:  16318484 kB``)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            scale = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
            out[key.strip()] = int(parts[0]) * scale
    return out


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def working_set(usage: int, inactive_file: int) -> int:
    """usage - inactive_file, never below 0 (cadvisor's setMemoryStats)."""
    return max(usage - inactive_file, 0)


def read_node_usage(root: Path = CGROUP_ROOT, meminfo: Path = MEMINFO) -> Usage:
    """The root cgroup's usage now (cgroup v1 or v2)."""
    now = time.time_ns()
    if (root / "cgroup.controllers").exists():
        cpu = parse_flat_keyed(_read(root / "cpu.stat")).get("usage_usec", 0) * 1000
        info = parse_meminfo(_read(meminfo))
        usage = info.get("MemTotal", 0) - info.get("MemFree", 0)
        inactive = parse_flat_keyed(_read(root / "memory.stat")).get("inactive_file", 0)
    else:
        text = _read(root / "cpuacct" / "cpuacct.usage").strip()
        cpu = int(text) if text.isdigit() else 0
        text = _read(root / "memory" / "memory.usage_in_bytes").strip()
        usage = int(text) if text.isdigit() else 0
        inactive = parse_flat_keyed(_read(root / "memory" / "memory.stat")).get(
            "total_inactive_file", 0)
    return Usage(now, cpu, working_set(usage, inactive))
