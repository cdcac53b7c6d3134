"""ContainerStats as containerd's container_stats_list.go answers them: the cgroup's CPU and
memory counters, the CPU rate over the interval since the previous sample of the same
container (0 at the first), memory available under a limit, and the writable layer's bytes
and inodes, counted as du counts them.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from pykubelet.runtime import cgroups
from pykubelet.runtime.container_store import ContainerRecord, ContainerStats


def du(path: Path) -> tuple[int, int]:
    """(bytes in blocks, inodes) under ``path``."""
    used = inodes = 0
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            used += st.st_blocks * 512
            inodes += 1
    return used, inodes


class StatsSampler:
    """Samples containers' stats, remembering each one's previous CPU sample."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._samples: dict[str, tuple[int, int]] = {}  # id -> (time ns, cpu ns)

    def forget(self, cid: str) -> None:
        with self._lock:
            self._samples.pop(cid, None)

    def sample(self, rec: ContainerRecord, upper: Path) -> ContainerStats:
        """``rec``'s stats now; ``upper`` is its writable layer."""
        cg = cgroups.read_stats(rec.cgroups_path)
        used, inodes = du(upper)
        with self._lock:
            prev = self._samples.get(rec.id)
            self._samples[rec.id] = (cg.timestamp_ns, cg.cpu_usage_core_nanoseconds)
        nano_cores = 0
        if prev is not None and cg.timestamp_ns > prev[0]:
            delta = cg.cpu_usage_core_nanoseconds - prev[1]
            nano_cores = max(delta, 0) * 1_000_000_000 // (cg.timestamp_ns - prev[0])
        limit = int(rec.resources.get("memory_limit_in_bytes") or 0)
        return ContainerStats(
            id=rec.id, sandbox_id=rec.sandbox_id, name=rec.name, attempt=rec.attempt,
            labels=dict(rec.labels), annotations=dict(rec.annotations),
            timestamp_ns=cg.timestamp_ns,
            cpu_usage_core_nanoseconds=cg.cpu_usage_core_nanoseconds,
            memory_working_set_bytes=cg.memory_working_set_bytes,
            memory_usage_bytes=cg.memory_usage_bytes, memory_rss_bytes=cg.memory_rss_bytes,
            page_faults=cg.page_faults, major_page_faults=cg.major_page_faults,
            writable_layer_bytes=used, writable_layer_inodes=inodes,
            writable_layer_mountpoint=str(upper),
            cpu_usage_nano_cores=nano_cores,
            memory_available_bytes=max(limit - cg.memory_working_set_bytes, 0) if limit else 0,
        )
