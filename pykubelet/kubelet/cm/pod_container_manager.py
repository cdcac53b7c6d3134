"""The pod-level cgroup kubelet manages itself (cm/pod_container_manager, cgroupfs driver).

Before the sandbox exists, kubelet creates ``/kubepods[/<qos>]/pod<uid>`` and writes the
pod's limits there (ResourceConfigForPod): cpu.shares from the sum of cpu requests, a CFS
quota and a memory limit when every container has a limit (the larger of the app
containers' sum and the biggest init container). The runtime then puts the sandbox and
containers below it (PodSandboxConfig.linux.cgroup_parent). Only the cgroup v1 cpu and
memory hierarchies are written; the others are created by the runtime as it needs them.
Removal is ``sandbox_config.remove_pod_cgroups``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pykubelet.api.qos import qos_class
from pykubelet.api.types import Container, Pod, is_restartable_init_container
from pykubelet.kubelet.kuberuntime.container_config import CPU_PERIOD, MIN_QUOTA, MIN_SHARES
from pykubelet.kubelet.kuberuntime.sandbox_config import (
    CGROUP_ROOT,
    pod_cgroup_parent,
    remove_pod_cgroups,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PodResourceConfig:
    cpu_shares: int
    cpu_quota: int | None  # microseconds per CPU_PERIOD, None: unlimited
    memory_limit: int | None  # bytes, None: unlimited


def _total(containers: list[Container], init: list[Container], kind: str, res: str) -> int | None:
    """max(sum over app containers and sidecars, max over init containers), None if
    any lacks it."""
    def amount(c: Container) -> int | None:
        table = c.resources.limits if kind == "limits" else c.resources.requests
        q = table.get(res)
        if q is None and kind == "requests":
            q = c.resources.limits.get(res)
        if q is None:
            return None
        return q.milli_value() if res == "cpu" else q.value()

    apps = [amount(c) for c in containers]
    inits = [amount(c) for c in init]
    if kind == "limits" and any(a is None for a in [*apps, *inits]):
        return None
    # sidecars run beside the app containers and under every later init container
    # (resourcehelper.PodRequests/PodLimits)
    app_sum = sum(a or 0 for a in apps)
    sidecar_sum = 0
    init_max = 0
    for c, a in zip(init, inits, strict=True):
        if is_restartable_init_container(c):
            app_sum += a or 0
            sidecar_sum += a or 0
            init_max = max(init_max, sidecar_sum)
        else:
            init_max = max(init_max, sidecar_sum + (a or 0))
    return max(app_sum, init_max)


def resource_config_for_pod(pod: Pod) -> PodResourceConfig:
    """ResourceConfigForPod (cgroup v1 values)."""
    containers, init = pod.spec.containers, pod.spec.init_containers
    req_cpu = _total(containers, init, "requests", "cpu") or 0
    shares = max(MIN_SHARES, req_cpu * 1024 // 1000) if qos_class(pod) != "BestEffort" \
        else MIN_SHARES
    cpu_limit = _total(containers, init, "limits", "cpu")
    quota = max(MIN_QUOTA, cpu_limit * CPU_PERIOD // 1000) if cpu_limit else None
    mem_limit = _total(containers, init, "limits", "memory")
    return PodResourceConfig(shares, quota, mem_limit or None)


def _write(path: Path, value: int) -> None:
    try:
        path.write_text(str(value))
    except OSError as exc:
        log.warning("cgroup %s = %s: %s", path, value, exc.strerror)


def ensure_pod_cgroup(pod: Pod) -> str:
    """Create the pod's cgroup with its limits (idempotent); returns the cgroup parent."""
    parent = pod_cgroup_parent(pod)
    cfg = resource_config_for_pod(pod)
    rel = parent.lstrip("/")
    cpu = CGROUP_ROOT / "cpu"
    if (cpu / "cpu.shares").exists():
        d = cpu / rel
        d.mkdir(parents=True, exist_ok=True)
        _write(d / "cpu.shares", cfg.cpu_shares)
        if cfg.cpu_quota is not None:
            _write(d / "cpu.cfs_period_us", CPU_PERIOD)
            _write(d / "cpu.cfs_quota_us", cfg.cpu_quota)
    mem = CGROUP_ROOT / "memory"
    if (mem / "memory.limit_in_bytes").exists() and cfg.memory_limit is not None:
        d = mem / rel
        d.mkdir(parents=True, exist_ok=True)
        _write(d / "memory.limit_in_bytes", cfg.memory_limit)
    return parent


class PodCgroups(Protocol):
    """The pod container manager as SyncPod and housekeeping use it (a seam: unit tests
    of SyncPod must not write the host's cgroups)."""

    def ensure(self, pod: Pod) -> str: ...

    def remove(self, uid: str) -> None: ...


class CgroupfsPodCgroups:
    """The host's pod cgroups, cgroupfs driver."""

    def ensure(self, pod: Pod) -> str:
        return ensure_pod_cgroup(pod)

    def remove(self, uid: str) -> None:
        remove_pod_cgroups(uid)
