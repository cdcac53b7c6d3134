"""Builders for the kubelet rule tests: pods and observed runtime state in one line."""

from __future__ import annotations

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.types import Pod
from pykubelet.kubelet.container.hashing import hash_container_hex
from pykubelet.kubelet.container.runtime_state import (
    ContainerRuntimeStatus,
    ContainerState,
    PodRuntimeStatus,
    SandboxRuntimeStatus,
    SandboxState,
)

UID = "uid-1"
POD_IP = "10.244.1.5"


def make_pod(
    containers: tuple[str, ...] = ("app",),
    init: tuple[str, ...] = (),
    restart: str = "Always",
    **spec: object,
) -> Pod:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": UID},
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": n, "image": "busybox:1.36"} for n in containers],
            "initContainers": [{"name": n, "image": "busybox:1.36"} for n in init],
            **spec,
        },
    }
    return set_defaults_pod(decode_pod(obj))


def sandbox(
    state: SandboxState = SandboxState.READY,
    attempt: int = 0,
    ip: str = POD_IP,
    created: float = 100.0,
    sid: str = "sb1",
    host_network: bool = False,
) -> SandboxRuntimeStatus:
    return SandboxRuntimeStatus(
        id=sid, state=state, attempt=attempt, ip=ip, created_at=created, host_network=host_network
    )


def ctr(
    pod: Pod,
    name: str,
    state: ContainerState,
    exit_code: int = 0,
    created: float = 200.0,
    cid: str | None = None,
    reason: str = "",
    restart_count: int = 0,
    finished: float = 0.0,
    started: float = 0.0,
    hash_: str | None = None,
) -> ContainerRuntimeStatus:
    spec = next(c for c in (*pod.all_containers(), *pod.spec.ephemeral_containers)
                if c.name == name)
    if finished == 0.0 and state is ContainerState.EXITED:
        finished = created + 5
    if started == 0.0 and state in (ContainerState.RUNNING, ContainerState.EXITED):
        started = created + 1
    return ContainerRuntimeStatus(
        id=cid or f"{name}-{int(created)}",
        name=name,
        state=state,
        exit_code=exit_code,
        created_at=created,
        started_at=started,
        finished_at=finished,
        reason=reason,
        image=spec.image,
        image_ref="sha256:abc",
        hash=hash_ if hash_ is not None else hash_container_hex(spec),
        restart_count=restart_count,
    )


def observed(
    *containers: ContainerRuntimeStatus,
    sandboxes: tuple[SandboxRuntimeStatus, ...] | None = None,
) -> PodRuntimeStatus:
    sbs = list(sandboxes) if sandboxes is not None else [sandbox()]
    ips = [sbs[0].ip] if sbs and sbs[0].ip and sbs[0].state is SandboxState.READY else []
    return PodRuntimeStatus(
        uid=UID,
        name="web",
        namespace="default",
        ips=ips,
        sandboxes=sbs,
        containers=list(containers),
    )


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
