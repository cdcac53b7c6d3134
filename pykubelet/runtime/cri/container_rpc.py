"""Container RPCs of the CRI RuntimeService: protobuf <-> ContainerManager, once.

Every method takes the request message and returns the response message; domain errors
(NotFound, InvalidArgument, ...) pass through to the interceptor, which maps them to gRPC
codes. Requests are validated here field by field, so the manager only sees well-formed
``ContainerConfigSpec`` values.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime.container_request import (
    NS_CONTAINER,
    NS_NODE,
    NS_POD,
    NS_TARGET,
    PROPAGATION_BIDIRECTIONAL,
    PROPAGATION_HOST_TO_CONTAINER,
    PROPAGATION_PRIVATE,
    SECCOMP_LOCALHOST,
    SECCOMP_RUNTIME_DEFAULT,
    SECCOMP_UNCONFINED,
    ContainerConfigSpec,
    ContainerMetadata,
    MountSpec,
    Resources,
    SeccompProfile,
    SecurityContext,
)
from pykubelet.runtime.container_store import ContainerFilter, ContainerStats, ContainerStatus
from pykubelet.runtime.containers import ContainerManager
from pykubelet.runtime.errors import InvalidArgument
from pykubelet.runtime.oci_spec import SandboxView

_NS_MODES = {pb.POD: NS_POD, pb.CONTAINER: NS_CONTAINER, pb.NODE: NS_NODE, pb.TARGET: NS_TARGET}
_PROPAGATION = {
    pb.PROPAGATION_PRIVATE: PROPAGATION_PRIVATE,
    pb.PROPAGATION_HOST_TO_CONTAINER: PROPAGATION_HOST_TO_CONTAINER,
    pb.PROPAGATION_BIDIRECTIONAL: PROPAGATION_BIDIRECTIONAL,
}
_PROPAGATION_PB = {v: k for k, v in _PROPAGATION.items()}
_SECCOMP_TYPES = {
    pb.SecurityProfile.RuntimeDefault: SECCOMP_RUNTIME_DEFAULT,
    pb.SecurityProfile.Unconfined: SECCOMP_UNCONFINED,
    pb.SecurityProfile.Localhost: SECCOMP_LOCALHOST,
}
_STATES = {
    "CONTAINER_CREATED": pb.CONTAINER_CREATED,
    "CONTAINER_RUNNING": pb.CONTAINER_RUNNING,
    "CONTAINER_EXITED": pb.CONTAINER_EXITED,
    "CONTAINER_UNKNOWN": pb.CONTAINER_UNKNOWN,
}
_STATE_NAMES = {v: k for k, v in _STATES.items()}
_EVERYTHING = ContainerFilter()  # an empty filter: kubelet's PLEG relist


# ---------------------------------------------------------------------- proto -> domain
def resources_from_pb(r: pb.LinuxContainerResources) -> Resources:
    return Resources(
        cpu_period=r.cpu_period, cpu_quota=r.cpu_quota, cpu_shares=r.cpu_shares,
        memory_limit_in_bytes=r.memory_limit_in_bytes,
        memory_swap_limit_in_bytes=r.memory_swap_limit_in_bytes,
        oom_score_adj=r.oom_score_adj, cpuset_cpus=r.cpuset_cpus, cpuset_mems=r.cpuset_mems,
        unified=dict(r.unified),
    )


def seccomp_from_pb(sc: pb.LinuxContainerSecurityContext) -> SeccompProfile:
    """The ``seccomp`` field wins; else the deprecated ``seccomp_profile_path``; else none."""
    if sc.HasField("seccomp"):
        kind = _SECCOMP_TYPES.get(sc.seccomp.profile_type)
        if kind is None:
            raise InvalidArgument("linux.security_context.seccomp.profile_type: unknown value "
                                  f"{sc.seccomp.profile_type}")
        return SeccompProfile(kind, sc.seccomp.localhost_ref)
    path = sc.seccomp_profile_path
    if path in ("", "unconfined"):
        return SeccompProfile(SECCOMP_UNCONFINED)
    if path in ("runtime/default", "docker/default"):
        return SeccompProfile(SECCOMP_RUNTIME_DEFAULT)
    if path.startswith("localhost/"):
        return SeccompProfile(SECCOMP_LOCALHOST, path.removeprefix("localhost"))
    raise InvalidArgument(f"linux.security_context.seccomp_profile_path: unknown {path!r}")


def security_from_pb(sc: pb.LinuxContainerSecurityContext) -> SecurityContext:
    ns = sc.namespace_options
    return SecurityContext(
        add_capabilities=tuple(sc.capabilities.add_capabilities),
        drop_capabilities=tuple(sc.capabilities.drop_capabilities),
        privileged=sc.privileged,
        network_mode=_NS_MODES.get(ns.network, NS_POD),
        pid_mode=_NS_MODES.get(ns.pid, NS_CONTAINER) if sc.HasField("namespace_options")
        else NS_CONTAINER,
        ipc_mode=_NS_MODES.get(ns.ipc, NS_POD),
        target_id=ns.target_id,
        run_as_user=sc.run_as_user.value if sc.HasField("run_as_user") else None,
        run_as_group=sc.run_as_group.value if sc.HasField("run_as_group") else None,
        run_as_username=sc.run_as_username,
        readonly_rootfs=sc.readonly_rootfs,
        supplemental_groups=tuple(sc.supplemental_groups),
        no_new_privs=sc.no_new_privs,
        masked_paths=tuple(sc.masked_paths) if sc.masked_paths else None,
        readonly_paths=tuple(sc.readonly_paths) if sc.readonly_paths else None,
        seccomp=seccomp_from_pb(sc),
    )


def config_from_pb(c: pb.ContainerConfig) -> ContainerConfigSpec:
    if not c.HasField("metadata") or not c.metadata.name:
        raise InvalidArgument("config.metadata.name: required")
    if not c.HasField("image") or not c.image.image:
        raise InvalidArgument("config.image.image: required")
    if c.devices or c.CDI_devices:
        raise InvalidArgument("config.devices: host devices are not supported by this runtime")
    for i, m in enumerate(c.mounts):
        if m.propagation not in _PROPAGATION:
            raise InvalidArgument(f"config.mounts[{i}].propagation: unknown {m.propagation}")
    return ContainerConfigSpec(
        metadata=ContainerMetadata(c.metadata.name, c.metadata.attempt),
        image=c.image.image,
        command=tuple(c.command),
        args=tuple(c.args),
        working_dir=c.working_dir,
        envs=tuple((kv.key, kv.value) for kv in c.envs),
        mounts=tuple(MountSpec(m.container_path, m.host_path, m.readonly,
                               _PROPAGATION[m.propagation]) for m in c.mounts),
        labels=dict(c.labels),
        annotations=dict(c.annotations),
        log_path=c.log_path,
        stdin=c.stdin,
        stdin_once=c.stdin_once,
        tty=c.tty,
        resources=resources_from_pb(c.linux.resources),
        security=security_from_pb(c.linux.security_context),
    )


# ---------------------------------------------------------------------- domain -> proto
def _resources_pb(r: dict[str, Any]) -> pb.ContainerResources:
    return pb.ContainerResources(linux=pb.LinuxContainerResources(
        cpu_period=r.get("cpu_period", 0), cpu_quota=r.get("cpu_quota", 0),
        cpu_shares=r.get("cpu_shares", 0),
        memory_limit_in_bytes=r.get("memory_limit_in_bytes", 0),
        memory_swap_limit_in_bytes=r.get("memory_swap_limit_in_bytes", 0),
        oom_score_adj=r.get("oom_score_adj", 0), cpuset_cpus=r.get("cpuset_cpus", ""),
        cpuset_mems=r.get("cpuset_mems", ""), unified=r.get("unified", {}),
    ))


def status_to_pb(s: ContainerStatus) -> pb.ContainerStatus:
    return pb.ContainerStatus(
        id=s.id,
        metadata=pb.ContainerMetadata(name=s.name, attempt=s.attempt),
        state=_STATES[s.state],
        created_at=s.created_at,
        started_at=s.started_at,
        finished_at=s.finished_at,
        exit_code=s.exit_code,
        image=pb.ImageSpec(image=s.image_ref),
        image_ref=s.image_digest_ref,
        image_id=s.image_id,
        reason=s.reason,
        message=s.message,
        labels=s.labels,
        annotations=s.annotations,
        mounts=[pb.Mount(container_path=m.container_path, host_path=m.host_path,
                         readonly=m.readonly, propagation=_PROPAGATION_PB.get(
                             m.propagation, pb.PROPAGATION_PRIVATE)) for m in s.mounts],
        log_path=s.log_path,
        resources=_resources_pb(s.resources),
        user=pb.ContainerUser(linux=pb.LinuxContainerUser(
            uid=s.uid, gid=s.gid, supplemental_groups=list(s.additional_gids))),
    )


def container_to_pb(s: ContainerStatus) -> pb.Container:
    return pb.Container(
        id=s.id, pod_sandbox_id=s.sandbox_id,
        metadata=pb.ContainerMetadata(name=s.name, attempt=s.attempt),
        image=pb.ImageSpec(image=s.image_ref), image_ref=s.image_digest_ref,
        image_id=s.image_id, state=_STATES[s.state], created_at=s.created_at, labels=s.labels,
        annotations=s.annotations,
    )


def stats_to_pb(s: ContainerStats) -> pb.ContainerStats:
    def u(v: int) -> pb.UInt64Value:
        return pb.UInt64Value(value=max(v, 0))

    return pb.ContainerStats(
        attributes=pb.ContainerAttributes(
            id=s.id, metadata=pb.ContainerMetadata(name=s.name, attempt=s.attempt),
            labels=s.labels, annotations=s.annotations),
        cpu=pb.CpuUsage(timestamp=s.timestamp_ns,
                        usage_core_nano_seconds=u(s.cpu_usage_core_nanoseconds),
                        usage_nano_cores=u(s.cpu_usage_nano_cores)),
        memory=pb.MemoryUsage(
            timestamp=s.timestamp_ns, working_set_bytes=u(s.memory_working_set_bytes),
            available_bytes=u(s.memory_available_bytes),
            usage_bytes=u(s.memory_usage_bytes), rss_bytes=u(s.memory_rss_bytes),
            page_faults=u(s.page_faults), major_page_faults=u(s.major_page_faults)),
        writable_layer=pb.FilesystemUsage(
            timestamp=s.timestamp_ns,
            fs_id=pb.FilesystemIdentifier(mountpoint=s.writable_layer_mountpoint),
            used_bytes=u(s.writable_layer_bytes), inodes_used=u(s.writable_layer_inodes)),
    )


def _require_id(value: str, field: str = "container_id") -> str:
    if not value:
        raise InvalidArgument(f"{field}: required")
    return value


class ContainerRPC:
    """The container half of RuntimeService.

    The read RPCs (PLEG relists every second) reuse the messages built for a status object
    as long as the manager hands out that same object, i.e. until the container changed:
    a response copies them (in C) instead of building every field again in Python. An
    unfiltered ListContainers whose statuses are all the same objects as last time answers
    with last time's response (gRPC only serializes it).
    """

    def __init__(self, containers: ContainerManager,
                 sandbox_for_create: Callable[[str], SandboxView]) -> None:
        self.containers = containers
        self.sandbox_for_create = sandbox_for_create
        # container id -> [the ContainerStatus, its pb.Container, its pb.ContainerStatus]
        self._messages: dict[str, list[Any]] = {}
        # the last unfiltered ListContainers: its statuses and the response made of them
        self._last_list: tuple[list[ContainerStatus], pb.ListContainersResponse] | None = None

    def _cached(self, st: ContainerStatus) -> list[Any]:
        entry = self._messages.get(st.id)
        if entry is None or entry[0] is not st:
            entry = [st, None, None]
            self._messages[st.id] = entry
        return entry

    def _container_pb(self, st: ContainerStatus) -> pb.Container:
        entry = self._cached(st)
        if entry[1] is None:
            entry[1] = container_to_pb(st)
        return entry[1]

    def _status_pb(self, st: ContainerStatus) -> pb.ContainerStatus:
        entry = self._cached(st)
        if entry[2] is None:
            entry[2] = status_to_pb(st)
        return entry[2]

    def CreateContainer(self, req: pb.CreateContainerRequest) -> pb.CreateContainerResponse:
        _require_id(req.pod_sandbox_id, "pod_sandbox_id")
        if not req.HasField("config"):
            raise InvalidArgument("config: required")
        config = config_from_pb(req.config)
        sandbox = self.sandbox_for_create(req.pod_sandbox_id)
        return pb.CreateContainerResponse(container_id=self.containers.create(sandbox, config))

    def StartContainer(self, req: pb.StartContainerRequest) -> pb.StartContainerResponse:
        self.containers.start(_require_id(req.container_id))
        return pb.StartContainerResponse()

    def StopContainer(self, req: pb.StopContainerRequest) -> pb.StopContainerResponse:
        if req.timeout < 0:
            raise InvalidArgument(f"timeout: {req.timeout} must not be negative")
        self.containers.stop(_require_id(req.container_id), req.timeout)
        return pb.StopContainerResponse()

    def RemoveContainer(self, req: pb.RemoveContainerRequest) -> pb.RemoveContainerResponse:
        self.containers.remove(_require_id(req.container_id))
        return pb.RemoveContainerResponse()

    def ContainerStatus(self, req: pb.ContainerStatusRequest) -> pb.ContainerStatusResponse:
        st = self.containers.status(_require_id(req.container_id))
        resp = pb.ContainerStatusResponse(status=self._status_pb(st))
        if req.verbose:
            resp.info["info"] = json.dumps({"pid": st.pid, "sandboxID": st.sandbox_id,
                                            "runtimeSpec": self._spec(st.id)})
        return resp

    def _spec(self, cid: str) -> Any:
        try:
            with open(self.containers.root / cid / "bundle" / "config.json") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def ListContainers(self, req: pb.ListContainersRequest) -> pb.ListContainersResponse:
        flt = None
        if req.HasField("filter"):
            f = req.filter
            flt = ContainerFilter(
                id=f.id, sandbox_id=f.pod_sandbox_id,
                state=_STATE_NAMES.get(f.state.state) if f.HasField("state") else None,
                labels=dict(f.label_selector))
        if flt == _EVERYTHING:
            flt = None
        statuses = self.containers.list(flt)
        if flt is not None:
            return pb.ListContainersResponse(
                containers=[self._container_pb(s) for s in statuses])
        last = self._last_list
        if (last is not None and len(last[0]) == len(statuses)
                and all(a is b for a, b in zip(last[0], statuses, strict=True))):
            return last[1]  # nothing changed since: the same (read-only) response
        live = {s.id for s in statuses}  # forget removed containers' messages
        for cid in [c for c in self._messages if c not in live]:
            self._messages.pop(cid, None)
        resp = pb.ListContainersResponse(containers=[self._container_pb(s) for s in statuses])
        self._last_list = (statuses, resp)
        return resp

    def statuses_in_sandbox(self, sandbox_id: str) -> list[pb.ContainerStatus]:
        """For PodSandboxStatus's containers_statuses (shared messages: copy, never mutate)."""
        return [self._status_pb(s) for s in self.containers.list(ContainerFilter(
            sandbox_id=sandbox_id)) if s.sandbox_id == sandbox_id]

    def UpdateContainerResources(
        self, req: pb.UpdateContainerResourcesRequest
    ) -> pb.UpdateContainerResourcesResponse:
        self.containers.update_resources(_require_id(req.container_id),
                                         resources_from_pb(req.linux))
        return pb.UpdateContainerResourcesResponse()

    def ReopenContainerLog(self, req: pb.ReopenContainerLogRequest
                           ) -> pb.ReopenContainerLogResponse:
        self.containers.reopen_log(_require_id(req.container_id))
        return pb.ReopenContainerLogResponse()

    def ExecSync(self, req: pb.ExecSyncRequest) -> pb.ExecSyncResponse:
        if req.timeout < 0:
            raise InvalidArgument(f"timeout: {req.timeout} must not be negative")
        out, err, code = self.containers.exec_sync(_require_id(req.container_id),
                                                   list(req.cmd), req.timeout)
        return pb.ExecSyncResponse(stdout=out, stderr=err, exit_code=code)

    def ContainerStats(self, req: pb.ContainerStatsRequest) -> pb.ContainerStatsResponse:
        return pb.ContainerStatsResponse(
            stats=stats_to_pb(self.containers.stats(_require_id(req.container_id))))

    def ListContainerStats(self, req: pb.ListContainerStatsRequest
                           ) -> pb.ListContainerStatsResponse:
        flt = None
        if req.HasField("filter"):
            f = req.filter
            flt = ContainerFilter(id=f.id, sandbox_id=f.pod_sandbox_id,
                                  labels=dict(f.label_selector))
        return pb.ListContainerStatsResponse(
            stats=[stats_to_pb(s) for s in self.containers.list_stats(flt)])
