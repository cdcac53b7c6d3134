"""What the runtime shows of a pod: kubelet's kubecontainer.PodStatus, in plain data.

The engine builds these from CRI ListPodSandbox / PodSandboxStatus / ListContainers /
ContainerStatus (matching objects to the pod by kubelet's labels
io.kubernetes.pod.uid and io.kubernetes.container.name, and reading the spec hash and
restart count from the annotations it wrote). The rules (kuberuntime/actions.py,
status/generate.py) read only these, so they never see a proto. Times are seconds since the
epoch (floats; the engine divides CRI's nanoseconds by 1e9), 0.0 meaning "not set".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class ContainerState(enum.Enum):
    """kubecontainer.State, from CRI's ContainerState."""

    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


class SandboxState(enum.Enum):
    READY = "ready"
    NOT_READY = "notready"


@dataclass(kw_only=True)
class ContainerRuntimeStatus:
    """One container instance as the runtime reports it (kubecontainer.Status)."""

    id: str  # CRI container id (without the runtime:// prefix)
    name: str  # io.kubernetes.container.name
    state: ContainerState
    runtime_type: str = "containerd"  # makes the API containerID "<runtime_type>://<id>"
    created_at: float = 0.0
    started_at: float = 0.0
    finished_at: float = 0.0
    exit_code: int = 0
    reason: str = ""  # CRI reason: "Completed", "Error", "OOMKilled", ...
    message: str = ""
    image: str = ""  # the image as the spec named it
    image_ref: str = ""  # the runtime's image reference (digest), for imageID
    image_id: str = ""
    hash: str = ""  # io.kubernetes.container.hash annotation (hashing.hash_container)
    restart_count: int = 0  # io.kubernetes.container.restartCount annotation
    sandbox_id: str = ""

    @property
    def container_id(self) -> str:
        """The API form, `containerd://<id>`."""
        return f"{self.runtime_type}://{self.id}" if self.id else ""


@dataclass(kw_only=True)
class SandboxRuntimeStatus:
    """One pod sandbox (CRI PodSandboxStatus)."""

    id: str
    state: SandboxState
    attempt: int = 0  # metadata.attempt
    created_at: float = 0.0
    ip: str = ""
    additional_ips: list[str] = field(default_factory=list)
    host_network: bool = False  # linux.namespaces.options.network == NODE


@dataclass(kw_only=True)
class PodRuntimeStatus:
    """Everything the runtime holds for one pod uid.

    `sandboxes` and `containers` are sorted newest first (by created_at), as
    kubelet's GetPodStatus returns them; several instances of the same container
    name may be present (the current one and exited ones kept for lastState/logs).
    """

    uid: str
    name: str = ""
    namespace: str = ""
    ips: list[str] = field(default_factory=list)
    sandboxes: list[SandboxRuntimeStatus] = field(default_factory=list)
    containers: list[ContainerRuntimeStatus] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sandboxes.sort(key=lambda s: s.created_at, reverse=True)
        self.containers.sort(key=lambda c: c.created_at, reverse=True)

    @property
    def ip(self) -> str:
        return self.ips[0] if self.ips else ""

    def find_container(self, name: str) -> ContainerRuntimeStatus | None:
        """The newest instance of container `name` (kubelet's FindContainerStatusByName)."""
        for status in self.containers:
            if status.name == name:
                return status
        return None

    def instances(self, name: str) -> list[ContainerRuntimeStatus]:
        """All instances of container `name`, newest first."""
        return [c for c in self.containers if c.name == name]

    def running_containers(self) -> list[ContainerRuntimeStatus]:
        return [c for c in self.containers if c.state is ContainerState.RUNNING]


def empty_status(uid: str, name: str = "", namespace: str = "") -> PodRuntimeStatus:
    """The state of a pod the runtime knows nothing about."""
    return PodRuntimeStatus(uid=uid, name=name, namespace=namespace)


def secs(ns: int) -> float:
    """CRI's nanoseconds since the epoch as the seconds kept here (0 stays "not set")."""
    return ns / 1e9 if ns else 0.0
