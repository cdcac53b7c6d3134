"""What a CreateContainer request says, as plain dataclasses (no protobuf).

``cri/container_rpc.py`` converts the CRI ``ContainerConfig`` into a ``ContainerConfigSpec``
once; ``oci_spec`` and ``containers`` work only with these types, so they are testable
without gRPC. Field names follow CRI's ``runtime.v1`` messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# CRI NamespaceMode
NS_POD = "POD"
NS_CONTAINER = "CONTAINER"
NS_NODE = "NODE"
NS_TARGET = "TARGET"

# CRI SecurityProfile.ProfileType
SECCOMP_RUNTIME_DEFAULT = "RuntimeDefault"
SECCOMP_UNCONFINED = "Unconfined"
SECCOMP_LOCALHOST = "Localhost"

# CRI MountPropagation
PROPAGATION_PRIVATE = "private"
PROPAGATION_HOST_TO_CONTAINER = "rslave"
PROPAGATION_BIDIRECTIONAL = "rshared"


@dataclass(frozen=True)
class ContainerMetadata:
    name: str
    attempt: int = 0


@dataclass(frozen=True)
class MountSpec:
    container_path: str
    host_path: str
    readonly: bool = False
    propagation: str = PROPAGATION_PRIVATE


@dataclass(frozen=True)
class Resources:
    """LinuxContainerResources (cgroup v1 semantics; 0 means unset)."""

    cpu_period: int = 0
    cpu_quota: int = 0
    cpu_shares: int = 0
    memory_limit_in_bytes: int = 0
    memory_swap_limit_in_bytes: int = 0
    oom_score_adj: int = 0
    cpuset_cpus: str = ""
    cpuset_mems: str = ""
    unified: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SeccompProfile:
    profile_type: str = SECCOMP_UNCONFINED
    localhost_ref: str = ""


@dataclass(frozen=True)
class SecurityContext:
    """LinuxContainerSecurityContext. ``run_as_user`` None means "from the image"."""

    add_capabilities: tuple[str, ...] = ()
    drop_capabilities: tuple[str, ...] = ()
    privileged: bool = False
    network_mode: str = NS_POD
    pid_mode: str = NS_CONTAINER
    ipc_mode: str = NS_POD
    # pid_mode TARGET: the container whose PID namespace this one joins (kubectl debug
    # --target; NamespaceOption.target_id)
    target_id: str = ""
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_username: str = ""
    readonly_rootfs: bool = False
    supplemental_groups: tuple[int, ...] = ()
    no_new_privs: bool = False
    masked_paths: tuple[str, ...] | None = None  # None: the runtime's defaults
    readonly_paths: tuple[str, ...] | None = None
    seccomp: SeccompProfile = field(default_factory=SeccompProfile)


@dataclass(frozen=True)
class ContainerConfigSpec:
    """CRI ContainerConfig."""

    metadata: ContainerMetadata
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    working_dir: str = ""
    envs: tuple[tuple[str, str], ...] = ()
    mounts: tuple[MountSpec, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    log_path: str = ""
    stdin: bool = False
    stdin_once: bool = False
    tty: bool = False
    resources: Resources = field(default_factory=Resources)
    security: SecurityContext = field(default_factory=SecurityContext)
