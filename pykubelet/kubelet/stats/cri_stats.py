"""Pods' and containers' CPU and memory from the runtime, as kubelet's CRI stats provider
(pkg/kubelet/stats/cri_stats_provider.go, ListPodCPUAndMemoryStats) gathers them for the
resource metrics: ListContainers for which containers run and since when, ListContainerStats
for their counters, grouped into pods by kubelet's CRI labels. Terminated containers are
left out; a pod's usage is the sum of its running containers' (the provider's fallback when
no pod cgroup reading is at hand), stamped with the newest of their times.

Only CRI calls: it works the same on our runtime and on containerd.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.kubelet.cri.runtime_service import RuntimeService
from pykubelet.kubelet.kuberuntime.labels import (
    CONTAINER_NAME_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)
from pykubelet.kubelet.stats.node_stats import Usage


@dataclass(frozen=True)
class ContainerUsage:
    name: str
    start_time_ns: int  # CRI created_at, as the provider's StartTime
    usage: Usage


@dataclass(frozen=True)
class PodUsage:
    namespace: str
    name: str
    uid: str
    containers: tuple[ContainerUsage, ...]
    usage: Usage


def pods_usage(containers: list[pb.Container], stats: list[pb.ContainerStats]
               ) -> list[PodUsage]:
    """Running containers joined to their stats, grouped by pod (sorted by namespace, name)."""
    by_id = {s.attributes.id: s for s in stats}
    grouped: dict[tuple[str, str, str], list[ContainerUsage]] = {}
    for c in containers:
        s = by_id.get(c.id)
        if c.state != pb.CONTAINER_RUNNING or s is None:
            continue
        labels = c.labels
        key = (labels.get(POD_NAMESPACE_LABEL, ""), labels.get(POD_NAME_LABEL, ""),
               labels.get(POD_UID_LABEL, ""))
        if not key[1]:
            continue  # not a kubelet's container
        usage = Usage(
            timestamp_ns=s.cpu.timestamp or s.memory.timestamp,
            cpu_usage_core_nanoseconds=s.cpu.usage_core_nano_seconds.value,
            memory_working_set_bytes=s.memory.working_set_bytes.value)
        name = labels.get(CONTAINER_NAME_LABEL) or c.metadata.name
        grouped.setdefault(key, []).append(ContainerUsage(name, c.created_at, usage))
    out = []
    for (ns, name, uid), members in sorted(grouped.items()):
        members.sort(key=lambda m: m.name)
        total = Usage(
            timestamp_ns=max(m.usage.timestamp_ns for m in members),
            cpu_usage_core_nanoseconds=sum(m.usage.cpu_usage_core_nanoseconds for m in members),
            memory_working_set_bytes=sum(m.usage.memory_working_set_bytes for m in members))
        out.append(PodUsage(ns, name, uid, tuple(members), total))
    return out


def list_pods_usage(runtime: RuntimeService) -> list[PodUsage]:
    """The running pods' usage now (two CRI calls)."""
    return pods_usage(runtime.list_containers(), runtime.list_container_stats())
