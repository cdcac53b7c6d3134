"""An in-memory CRI runtime: ``RuntimeService`` and ``ImageService`` without runc or root.

As cri-api's FakeRuntimeService and FakeImageService: sandboxes and containers are
records that move through CRI's states (a sandbox READY -> NOTREADY; a container
CREATED -> RUNNING -> EXITED), keep the labels, annotations and metadata they were
created with, and answer the status and list calls the kubelet side makes. Tests drive
what a real runtime would do on its own with ``exit_container`` (a process ending) and
make any call fail with ``inject_error``; ``calls`` records every call by CRI method
name and ``targets`` the object each call was about. Stop and Remove are idempotent,
unknown objects answer NOT_FOUND to status calls, and StopPodSandbox stops the sandbox's
containers, as containerd does. ``refuse_removal`` models containerd 1.6/1.7 keeping the
task of a start its client abandoned (containerd/containerd#11037): RemoveContainer of
those ids fails with FAILED_PRECONDITION, whatever their state.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.kubelet.cri.runtime_service import CRICallError, StreamFlags

STOP_EXIT_CODE = 137  # what a stopped container reports (SIGKILL after the grace period)
FAKE_STREAMING_URL = "http://127.0.0.1:1"  # nothing listens: a fake session is only a URL
ExecHandler = Callable[[str, list[str]], pb.ExecSyncResponse]


@dataclass
class FakeSandbox:
    id: str
    config: pb.PodSandboxConfig
    state: pb.PodSandboxState
    created_at: int  # nanoseconds
    ip: str


@dataclass
class FakeContainer:
    id: str
    sandbox_id: str
    config: pb.ContainerConfig
    state: pb.ContainerState
    created_at: int
    log_path: str
    image_ref: str
    started_at: int = 0
    finished_at: int = 0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    cpu_usage_core_nanoseconds: int = 0  # what ListContainerStats reports; tests set them
    memory_working_set_bytes: int = 0


def _matches(labels: Mapping[str, str], selector: Mapping[str, str] | None) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


@dataclass
class FakeRuntimeService:
    """RuntimeService + ImageService in memory; thread-safe."""

    runtime_name: str = "fake"
    images: dict[str, pb.Image] = field(default_factory=dict)
    clock: Callable[[], float] = time.time
    exec_handler: ExecHandler | None = None
    calls: list[str] = field(default_factory=list)
    targets: dict[str, list[str]] = field(default_factory=dict)  # method -> ids, in order
    refuse_removal: set[str] = field(default_factory=set)
    sandboxes: dict[str, FakeSandbox] = field(default_factory=dict)
    containers: dict[str, FakeContainer] = field(default_factory=dict)
    _errors: dict[str, list[CRICallError]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _next_ip: int = 2
    _last_ns: int = 0
    closed: bool = False

    # ------------------------------------------------------------------ test controls
    def add_image(self, ref: str) -> pb.Image:
        """Put ``ref`` in the node's image store (as an import would)."""
        with self._lock:
            image = pb.Image(id=f"sha256:{uuid.uuid5(uuid.NAMESPACE_URL, ref).hex * 2}",
                             repo_tags=[ref], size=1 << 20)
            self.images[ref] = image
            return image

    def inject_error(self, method: str, code: str = "UNKNOWN", details: str = "injected",
                     times: int = 1) -> None:
        """The next ``times`` calls of CRI method ``method`` fail with ``code``."""
        with self._lock:
            self._errors.setdefault(method, []).extend(
                CRICallError(method, code, details) for _ in range(times)
            )

    def exit_container(self, container_id: str, exit_code: int = 0, reason: str = "") -> None:
        """The container's process ended (as the runtime's monitor would report it)."""
        with self._lock:
            c = self.containers[container_id]
            c.state = pb.CONTAINER_EXITED
            c.exit_code = exit_code
            c.reason = reason or ("Completed" if exit_code == 0 else "Error")
            c.finished_at = self._now_ns()
            if not c.started_at:
                c.started_at = c.finished_at

    def count(self, method: str) -> int:
        with self._lock:
            return self.calls.count(method)

    def containers_named(self, name: str) -> list[FakeContainer]:
        """Every instance of container ``name`` (the CRI metadata name), oldest first."""
        with self._lock:
            return sorted((c for c in self.containers.values() if c.config.metadata.name == name),
                          key=lambda c: c.created_at)

    # ------------------------------------------------------------------ plumbing
    def _enter(self, method: str, target: str = "") -> None:
        self.calls.append(method)
        if target:
            self.targets.setdefault(method, []).append(target)
        pending = self._errors.get(method)
        if pending:
            raise pending.pop(0)

    def _now_ns(self) -> int:
        # strictly increasing, so "newest first" orderings are never ties
        self._last_ns = max(self._last_ns + 1, int(self.clock() * 1e9))
        return self._last_ns

    def _sandbox(self, method: str, sandbox_id: str) -> FakeSandbox:
        s = self.sandboxes.get(sandbox_id)
        if s is None:
            raise CRICallError(method, "NOT_FOUND", f"sandbox {sandbox_id!r} not found")
        return s

    def _container(self, method: str, container_id: str) -> FakeContainer:
        c = self.containers.get(container_id)
        if c is None:
            raise CRICallError(method, "NOT_FOUND", f"container {container_id!r} not found")
        return c

    def _container_in(self, method: str, container_id: str, state: int, word: str
                      ) -> FakeContainer:
        """The call ``method`` recorded on a container that must be in ``state``: the
        container, else FAILED_PRECONDITION "container ID is not WORD" (NOT_FOUND if gone)."""
        self._enter(method, container_id)
        c = self._container(method, container_id)
        if c.state != state:
            raise CRICallError(method, "FAILED_PRECONDITION",
                               f"container {container_id} is not {word}")
        return c

    def close(self) -> None:
        self.closed = True

    # ------------------------------------------------------------------ runtime
    def version(self) -> pb.VersionResponse:
        with self._lock:
            self._enter("Version")
            return pb.VersionResponse(version="0.1.0", runtime_name=self.runtime_name,
                                      runtime_version="0.0.0", runtime_api_version="v1")

    def status(self) -> pb.StatusResponse:
        with self._lock:
            self._enter("Status")
            return pb.StatusResponse(status=pb.RuntimeStatus(conditions=[
                pb.RuntimeCondition(type="RuntimeReady", status=True),
                pb.RuntimeCondition(type="NetworkReady", status=True),
            ]))

    def run_pod_sandbox(self, config: pb.PodSandboxConfig, runtime_handler: str = "") -> str:
        with self._lock:
            self._enter("RunPodSandbox")
            sid = uuid.uuid4().hex * 2
            host_network = (config.linux.security_context.namespace_options.network == pb.NODE)
            ip = ""
            if not host_network:
                ip = f"10.88.{self._next_ip // 250}.{self._next_ip % 250 + 2}"
                self._next_ip += 1
            copy = pb.PodSandboxConfig()
            copy.CopyFrom(config)
            self.sandboxes[sid] = FakeSandbox(sid, copy, pb.SANDBOX_READY, self._now_ns(), ip)
            return sid

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        with self._lock:
            self._enter("StopPodSandbox", sandbox_id)
            s = self.sandboxes.get(sandbox_id)
            if s is None:
                return
            for c in self.containers.values():
                if c.sandbox_id == sandbox_id and c.state == pb.CONTAINER_RUNNING:
                    self.exit_container(c.id, STOP_EXIT_CODE, "Error")
            s.state = pb.SANDBOX_NOTREADY

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        with self._lock:
            self._enter("RemovePodSandbox", sandbox_id)
            for cid in [c.id for c in self.containers.values() if c.sandbox_id == sandbox_id]:
                del self.containers[cid]
            self.sandboxes.pop(sandbox_id, None)

    def pod_sandbox_status(self, sandbox_id: str) -> pb.PodSandboxStatus:
        with self._lock:
            self._enter("PodSandboxStatus", sandbox_id)
            s = self._sandbox("PodSandboxStatus", sandbox_id)
            st = pb.PodSandboxStatus(
                id=s.id, metadata=s.config.metadata, state=s.state, created_at=s.created_at,
                network=pb.PodSandboxNetworkStatus(ip=s.ip),
                labels=dict(s.config.labels), annotations=dict(s.config.annotations),
            )
            st.linux.namespaces.options.network = (
                s.config.linux.security_context.namespace_options.network)
            return st

    def list_pod_sandbox(
        self, label_selector: Mapping[str, str] | None = None, ready_only: bool = False
    ) -> list[pb.PodSandbox]:
        with self._lock:
            self._enter("ListPodSandbox")
            return [
                pb.PodSandbox(id=s.id, metadata=s.config.metadata, state=s.state,
                              created_at=s.created_at, labels=dict(s.config.labels),
                              annotations=dict(s.config.annotations))
                for s in self.sandboxes.values()
                if _matches(s.config.labels, label_selector)
                and (not ready_only or s.state == pb.SANDBOX_READY)
            ]

    # ------------------------------------------------------------------ containers
    def create_container(
        self, sandbox_id: str, config: pb.ContainerConfig, sandbox_config: pb.PodSandboxConfig
    ) -> str:
        with self._lock:
            self._enter("CreateContainer", sandbox_id)
            s = self._sandbox("CreateContainer", sandbox_id)
            if s.state != pb.SANDBOX_READY:
                raise CRICallError("CreateContainer", "FAILED_PRECONDITION",
                                   f"sandbox {sandbox_id} is not ready")
            image = self.images.get(config.image.image)
            if image is None:
                raise CRICallError("CreateContainer", "NOT_FOUND",
                                   f"image {config.image.image!r} not found")
            cid = uuid.uuid4().hex * 2
            copy = pb.ContainerConfig()
            copy.CopyFrom(config)
            log_path = (f"{sandbox_config.log_directory}/{config.log_path}"
                        if config.log_path else "")
            self.containers[cid] = FakeContainer(
                cid, sandbox_id, copy, pb.CONTAINER_CREATED, self._now_ns(), log_path, image.id
            )
            return cid

    def start_container(self, container_id: str) -> None:
        with self._lock:
            c = self._container_in("StartContainer", container_id, pb.CONTAINER_CREATED,
                                   "created")
            c.state = pb.CONTAINER_RUNNING
            c.started_at = self._now_ns()

    def stop_container(self, container_id: str, timeout_s: int) -> None:
        with self._lock:
            self._enter("StopContainer", container_id)
            c = self._container("StopContainer", container_id)
            if c.state in (pb.CONTAINER_RUNNING, pb.CONTAINER_CREATED):
                self.exit_container(container_id, STOP_EXIT_CODE, "Error")

    def remove_container(self, container_id: str) -> None:
        with self._lock:
            self._enter("RemoveContainer", container_id)
            if container_id in self.refuse_removal:
                raise CRICallError("RemoveContainer", "FAILED_PRECONDITION",
                                   "failed to delete containerd container: cannot delete "
                                   "running task: failed precondition")
            c = self.containers.get(container_id)
            if c is None:
                return
            if c.state == pb.CONTAINER_RUNNING:
                raise CRICallError("RemoveContainer", "FAILED_PRECONDITION",
                                   f"container {container_id} is running")
            del self.containers[container_id]

    def list_containers(
        self, sandbox_id: str = "", label_selector: Mapping[str, str] | None = None
    ) -> list[pb.Container]:
        with self._lock:
            self._enter("ListContainers")
            return [
                pb.Container(id=c.id, pod_sandbox_id=c.sandbox_id, metadata=c.config.metadata,
                             image=c.config.image, image_ref=c.image_ref, state=c.state,
                             created_at=c.created_at, labels=dict(c.config.labels),
                             annotations=dict(c.config.annotations))
                for c in self.containers.values()
                if (not sandbox_id or c.sandbox_id == sandbox_id)
                and _matches(c.config.labels, label_selector)
            ]

    def list_container_stats(self) -> list[pb.ContainerStats]:
        """Every container's counters as tests set them, stamped with the clock."""
        with self._lock:
            self._enter("ListContainerStats")
            now = int(self.clock() * 1e9)
            return [
                pb.ContainerStats(
                    attributes=pb.ContainerAttributes(
                        id=c.id, metadata=c.config.metadata, labels=dict(c.config.labels),
                        annotations=dict(c.config.annotations)),
                    cpu=pb.CpuUsage(timestamp=now, usage_core_nano_seconds=pb.UInt64Value(
                        value=c.cpu_usage_core_nanoseconds)),
                    memory=pb.MemoryUsage(timestamp=now, working_set_bytes=pb.UInt64Value(
                        value=c.memory_working_set_bytes)))
                for c in self.containers.values()
            ]

    def container_status(self, container_id: str) -> pb.ContainerStatus:
        with self._lock:
            self._enter("ContainerStatus", container_id)
            c = self._container("ContainerStatus", container_id)
            return pb.ContainerStatus(
                id=c.id, metadata=c.config.metadata, state=c.state, created_at=c.created_at,
                started_at=c.started_at, finished_at=c.finished_at, exit_code=c.exit_code,
                image=c.config.image, image_ref=c.image_ref, reason=c.reason,
                message=c.message, labels=dict(c.config.labels),
                annotations=dict(c.config.annotations), log_path=c.log_path,
            )

    def reopen_container_log(self, container_id: str) -> None:
        with self._lock:
            self._container_in("ReopenContainerLog", container_id, pb.CONTAINER_RUNNING,
                               "running")

    def exec_sync(
        self, container_id: str, cmd: list[str], timeout_s: float
    ) -> pb.ExecSyncResponse:
        with self._lock:
            self._container_in("ExecSync", container_id, pb.CONTAINER_RUNNING, "running")
            handler = self.exec_handler
        return handler(container_id, cmd) if handler is not None else pb.ExecSyncResponse()

    def exec(self, container_id: str, cmd: list[str], streams: StreamFlags) -> str:
        self._running("Exec", container_id)
        return f"{FAKE_STREAMING_URL}/exec/{container_id}"

    def attach(self, container_id: str, streams: StreamFlags) -> str:
        self._running("Attach", container_id)
        return f"{FAKE_STREAMING_URL}/attach/{container_id}"

    def port_forward(self, sandbox_id: str, ports: list[int]) -> str:
        with self._lock:
            self._enter("PortForward", sandbox_id)
            self._sandbox("PortForward", sandbox_id)
        return f"{FAKE_STREAMING_URL}/portforward/{sandbox_id}"

    def _running(self, method: str, container_id: str) -> None:
        with self._lock:
            self._container_in(method, container_id, pb.CONTAINER_RUNNING, "running")

    # ------------------------------------------------------------------ images
    def image_status(self, image: str) -> pb.Image | None:
        with self._lock:
            self._enter("ImageStatus")
            return self.images.get(image)

    def pull_image(
        self, image: str, sandbox_config: pb.PodSandboxConfig | None = None,
        timeout: float | None = None, auth: pb.AuthConfig | None = None,
    ) -> str:
        with self._lock:
            self._enter("PullImage")
            return (self.images.get(image) or self.add_image(image)).id

    def list_images(self) -> list[pb.Image]:
        with self._lock:
            self._enter("ListImages")
            return list(self.images.values())

    def remove_image(self, image: str) -> None:
        with self._lock:
            self._enter("RemoveImage", image)
            for ref, img in list(self.images.items()):
                if image in (ref, img.id):
                    del self.images[ref]

    def image_fs_info(self) -> list[pb.FilesystemUsage]:
        with self._lock:
            self._enter("ImageFsInfo")
            used = sum(img.size for img in self.images.values())
            return [pb.FilesystemUsage(fs_id=pb.FilesystemIdentifier(mountpoint="/"),
                                       used_bytes=pb.UInt64Value(value=used))]
