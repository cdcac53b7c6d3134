"""CRI sandbox RPCs: proto messages <-> SandboxManager.

RunPodSandbox, StopPodSandbox, RemovePodSandbox, PodSandboxStatus, ListPodSandbox. Pure
translation and filtering; the effects live in ``pykubelet.runtime.sandbox``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime import netns
from pykubelet.runtime.errors import InvalidArgument, NotFound
from pykubelet.runtime.podnet import PortMapping
from pykubelet.runtime.sandbox import (
    NOTREADY,
    READY,
    DNSSettings,
    SandboxInfo,
    SandboxManager,
    SandboxSpec,
)

M = TypeVar("M")  # a CRI message built from a sandbox

_PROTOCOLS = {pb.TCP: "tcp", pb.UDP: "udp", pb.SCTP: "sctp"}
_STATES = {READY: pb.SANDBOX_READY, NOTREADY: pb.SANDBOX_NOTREADY}
_EVERYTHING = pb.PodSandboxFilter()  # an empty filter: kubelet's PLEG relist


def _profile(p: pb.SecurityProfile, present: bool, which: str) -> dict[str, str] | None:
    if not present:
        return None
    if p.profile_type not in pb.SecurityProfile.ProfileType.values():
        raise InvalidArgument(f"config.linux.security_context.{which}.profile_type: "
                              f"unknown value {p.profile_type}")
    return {
        "profile_type": pb.SecurityProfile.ProfileType.Name(p.profile_type),
        "localhost_ref": p.localhost_ref,
    }


def _namespace_mode(value: int, which: str) -> str:
    """A NamespaceMode's name; proto3 carries unknown numbers, which name no mode."""
    if value not in pb.NamespaceMode.values():
        raise InvalidArgument(
            f"config.linux.security_context.namespace_options.{which}: unknown value {value}")
    return pb.NamespaceMode.Name(value)


def spec_from_config(config: pb.PodSandboxConfig, runtime_handler: str = "") -> SandboxSpec:
    """Translate a PodSandboxConfig; InvalidArgument names the field that is wrong."""
    if not config.HasField("metadata"):
        raise InvalidArgument("config.metadata: required (name, uid, namespace)")
    md = config.metadata
    linux = config.linux
    sc = linux.security_context
    ns = sc.namespace_options
    ports = []
    for i, m in enumerate(config.port_mappings):
        if m.protocol not in _PROTOCOLS:
            raise InvalidArgument(f"config.port_mappings[{i}].protocol: unknown value {m.protocol}")
        if m.host_port == 0:
            continue  # CRI: 0 means no host port
        ports.append(PortMapping(container_port=m.container_port, host_port=m.host_port,
                                 protocol=_PROTOCOLS[m.protocol], host_ip=m.host_ip))
    dns = None
    if config.HasField("dns_config"):
        dns = DNSSettings(list(config.dns_config.servers), list(config.dns_config.searches),
                          list(config.dns_config.options))
    security: dict[str, Any] = {
        "privileged": sc.privileged,
        "seccomp": _profile(sc.seccomp, sc.HasField("seccomp"), "seccomp"),
        "apparmor": _profile(sc.apparmor, sc.HasField("apparmor"), "apparmor"),
        "run_as_user": sc.run_as_user.value if sc.HasField("run_as_user") else None,
        "run_as_group": sc.run_as_group.value if sc.HasField("run_as_group") else None,
        "supplemental_groups": list(sc.supplemental_groups),
        "readonly_rootfs": sc.readonly_rootfs,
    }
    if security["run_as_group"] is not None and security["run_as_user"] is None:
        raise InvalidArgument(
            "config.linux.security_context.run_as_group: set without run_as_user"
        )
    return SandboxSpec(
        name=md.name, namespace=md.namespace, uid=md.uid, attempt=md.attempt,
        hostname=config.hostname, log_directory=config.log_directory, dns=dns,
        port_mappings=ports, labels=dict(config.labels), annotations=dict(config.annotations),
        cgroup_parent=linux.cgroup_parent,
        network_mode=_namespace_mode(ns.network, "network"),
        ipc_mode=_namespace_mode(ns.ipc, "ipc"),
        pid_mode=_namespace_mode(ns.pid, "pid"),
        security=security, sysctls=dict(linux.sysctls), runtime_handler=runtime_handler,
    )


def _metadata(info: SandboxInfo) -> pb.PodSandboxMetadata:
    return pb.PodSandboxMetadata(name=info.name, uid=info.uid, namespace=info.namespace,
                                 attempt=info.attempt)


def _namespace_option(info: SandboxInfo) -> pb.NamespaceOption:
    return pb.NamespaceOption(
        network=info.network_mode, pid=info.pid_ns_mode, ipc=info.ipc_mode,  # enum names
    )


def status_message(info: SandboxInfo) -> pb.PodSandboxStatus:
    return pb.PodSandboxStatus(
        id=info.id,
        metadata=_metadata(info),
        state=_STATES.get(info.state, pb.SANDBOX_NOTREADY),
        created_at=info.created_at,
        network=pb.PodSandboxNetworkStatus(
            ip=info.ip, additional_ips=[pb.PodIP(ip=ip) for ip in info.additional_ips]
        ),
        linux=pb.LinuxPodSandboxStatus(
            namespaces=pb.Namespace(options=_namespace_option(info))
        ),
        labels=info.labels,
        annotations=info.annotations,
        runtime_handler=info.runtime_handler,
    )


def verbose_info(info: SandboxInfo) -> dict[str, str]:
    """crictl inspectp's ``info``: one JSON document under "info", as containerd does."""
    doc = {
        # no pause process: namespaces are pinned by bind mounts; only pid=POD has a holder
        "pid": info.pid_holder[0] if info.pid_holder else 0,
        "pidNamespacePath": info.pid_ns_path,
        "netNamespacePath": info.netns_path,
        "ipcNamespacePath": info.ipc_ns_path,
        "utsNamespacePath": info.uts_ns_path,
        "hostsPath": info.hosts_path,
        "resolvPath": info.resolv_path,
        "hostnamePath": info.hostname_path,
        "cgroupParent": info.cgroup_parent,
        "portMappings": [m.to_cni() for m in info.port_mappings],
        "cniResult": info.network.result if info.network else None,
        "cniNetwork": info.network.network.get("name") if info.network else None,
        "portMappingsApplied": info.network.port_mappings_applied if info.network else False,
    }
    return {"info": json.dumps(doc)}


def _summary(info: SandboxInfo) -> pb.PodSandbox:
    return pb.PodSandbox(
        id=info.id, metadata=_metadata(info), state=_STATES.get(info.state, pb.SANDBOX_NOTREADY),
        created_at=info.created_at, labels=info.labels, annotations=info.annotations,
        runtime_handler=info.runtime_handler,
    )


def matches(info: SandboxInfo, f: pb.PodSandboxFilter | None) -> bool:
    """ListPodSandbox's filter: id (full or prefix), state, labels (all must match)."""
    if f is None:
        return True
    if f.id and not info.id.startswith(f.id):
        return False
    if f.HasField("state") and _STATES.get(info.state, pb.SANDBOX_NOTREADY) != f.state.state:
        return False
    return all(info.labels.get(k) == v for k, v in f.label_selector.items())


def _sum(values: list[pb.UInt64Value]) -> pb.UInt64Value:
    return pb.UInt64Value(value=sum(v.value for v in values))


def pod_stats(info: SandboxInfo, containers: list[pb.ContainerStats],
              counters: dict[str, tuple[int, int, int, int]]) -> pb.PodSandboxStats:
    """A pod's stats: its containers' CPU and memory summed, its interfaces' counters."""
    now = time.time_ns()
    cpu = pb.CpuUsage(
        timestamp=now,
        usage_core_nano_seconds=_sum([c.cpu.usage_core_nano_seconds for c in containers]),
        usage_nano_cores=_sum([c.cpu.usage_nano_cores for c in containers]),
    )
    memory = pb.MemoryUsage(
        timestamp=now,
        working_set_bytes=_sum([c.memory.working_set_bytes for c in containers]),
        usage_bytes=_sum([c.memory.usage_bytes for c in containers]),
        rss_bytes=_sum([c.memory.rss_bytes for c in containers]),
        page_faults=_sum([c.memory.page_faults for c in containers]),
        major_page_faults=_sum([c.memory.major_page_faults for c in containers]),
    )

    def iface(name: str) -> pb.NetworkInterfaceUsage:
        rx, rx_err, tx, tx_err = counters[name]
        return pb.NetworkInterfaceUsage(
            name=name, rx_bytes=pb.UInt64Value(value=rx), rx_errors=pb.UInt64Value(value=rx_err),
            tx_bytes=pb.UInt64Value(value=tx), tx_errors=pb.UInt64Value(value=tx_err))

    network = pb.NetworkUsage(timestamp=now)
    for name in sorted(counters):
        if name == "eth0":
            network.default_interface.CopyFrom(iface(name))
        elif name != "lo":
            network.interfaces.append(iface(name))
    return pb.PodSandboxStats(
        attributes=pb.PodSandboxAttributes(id=info.id, metadata=_metadata(info),
                                           labels=info.labels, annotations=info.annotations),
        linux=pb.LinuxPodSandboxStats(cpu=cpu, memory=memory, network=network,
                                      containers=containers),
    )


class SandboxRPC:
    """Handlers named like the RPCs: each takes the request and returns the response.

    ListPodSandbox and PodSandboxStatus (polled by PLEG and the status sync) read the live
    sandbox records without copying them and reuse each sandbox's messages until a field
    they show changes: after RunPodSandbox only ``state``, ``ip`` and ``additional_ips``
    can (the rest is fixed when the sandbox is made). An unfiltered ListPodSandbox whose
    items are all the same messages as last time answers with last time's response.
    """

    def __init__(
        self,
        sandboxes: SandboxManager,
        container_statuses: Callable[[str], list[pb.ContainerStatus]] | None = None,
        container_stats: Callable[[str], list[pb.ContainerStats]] | None = None,
    ) -> None:
        self.sandboxes = sandboxes
        self.container_statuses = container_statuses
        self.container_stats = container_stats
        # sandbox id -> (what the message shows that can change, the message)
        self._summaries: dict[str, tuple[tuple[Any, ...], pb.PodSandbox]] = {}
        self._statuses: dict[str, tuple[tuple[Any, ...], pb.PodSandboxStatus]] = {}
        # the last unfiltered ListPodSandbox: its items and the response made of them
        self._last_list: tuple[list[pb.PodSandbox], pb.ListPodSandboxResponse] | None = None

    @staticmethod
    def _mutable(info: SandboxInfo) -> tuple[Any, ...]:
        return (info.state, info.ip, tuple(info.additional_ips), info.created_at)

    def _summary_pb(self, info: SandboxInfo) -> pb.PodSandbox:
        return self._memo(self._summaries, info, _summary)

    def _status_pb(self, info: SandboxInfo) -> pb.PodSandboxStatus:
        return self._memo(self._statuses, info, status_message)

    def _memo(self, cache: dict[str, tuple[tuple[Any, ...], M]], info: SandboxInfo,
              build: Callable[[SandboxInfo], M]) -> M:
        """The message built for ``info``, built again only once its mutable fields moved."""
        key = self._mutable(info)
        hit = cache.get(info.id)
        if hit is not None and hit[0] == key:
            return hit[1]
        msg = build(info)
        cache[info.id] = (key, msg)
        return msg

    def _stats(self, info: SandboxInfo) -> pb.PodSandboxStats:
        containers = self.container_stats(info.id) if self.container_stats else []
        counters = {}
        if info.netns_path and info.state == READY:
            try:
                counters = netns.interface_counters(info.netns_path)
            except OSError:
                counters = {}  # stopped meanwhile: no network to report
        return pod_stats(info, containers, counters)

    def PodSandboxStats(self, req: pb.PodSandboxStatsRequest) -> pb.PodSandboxStatsResponse:
        return pb.PodSandboxStatsResponse(stats=self._stats(self.sandboxes.get(req.pod_sandbox_id)))

    def ListPodSandboxStats(
        self, req: pb.ListPodSandboxStatsRequest
    ) -> pb.ListPodSandboxStatsResponse:
        f = req.filter
        stats = [
            self._stats(s) for s in self.sandboxes.list()
            if s.state == READY and (not f.id or s.id.startswith(f.id))
            and all(s.labels.get(k) == v for k, v in f.label_selector.items())
        ]
        return pb.ListPodSandboxStatsResponse(stats=stats)

    def RunPodSandbox(self, req: pb.RunPodSandboxRequest) -> pb.RunPodSandboxResponse:
        if not req.HasField("config"):
            raise InvalidArgument("config: required")
        spec = spec_from_config(req.config, req.runtime_handler)
        return pb.RunPodSandboxResponse(pod_sandbox_id=self.sandboxes.run(spec))

    def StopPodSandbox(self, req: pb.StopPodSandboxRequest) -> pb.StopPodSandboxResponse:
        self.sandboxes.stop(req.pod_sandbox_id)
        return pb.StopPodSandboxResponse()

    def RemovePodSandbox(self, req: pb.RemovePodSandboxRequest) -> pb.RemovePodSandboxResponse:
        if not req.pod_sandbox_id:
            raise InvalidArgument("pod_sandbox_id: must not be empty")
        try:
            self.sandboxes.remove(req.pod_sandbox_id)
        except NotFound:
            pass  # idempotent by contract
        return pb.RemovePodSandboxResponse()

    def PodSandboxStatus(self, req: pb.PodSandboxStatusRequest) -> pb.PodSandboxStatusResponse:
        info = self.sandboxes.view(req.pod_sandbox_id)
        resp = pb.PodSandboxStatusResponse(status=self._status_pb(info), timestamp=time.time_ns())
        if req.verbose:
            resp.info.update(verbose_info(info))
        if self.container_statuses is not None:
            resp.containers_statuses.extend(self.container_statuses(info.id))
        return resp

    def ListPodSandbox(self, req: pb.ListPodSandboxRequest) -> pb.ListPodSandboxResponse:
        f = req.filter if req.HasField("filter") else None
        if f is not None and f == _EVERYTHING:
            f = None
        infos = self.sandboxes.list_view()
        chosen = sorted((s for s in infos if matches(s, f)), key=lambda s: s.created_at)
        items = [self._summary_pb(s) for s in chosen]
        if f is not None:
            return pb.ListPodSandboxResponse(items=items)
        last = self._last_list
        if (last is not None and len(last[0]) == len(items)
                and all(a is b for a, b in zip(last[0], items, strict=True))):
            return last[1]  # nothing changed since: the same (read-only) response
        live = {s.id for s in infos}  # forget removed sandboxes' messages
        for cache in (self._summaries, self._statuses):
            for sid in [k for k in cache if k not in live]:
                cache.pop(sid, None)
        resp = pb.ListPodSandboxResponse(items=items)
        self._last_list = (items, resp)
        return resp
