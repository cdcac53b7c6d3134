"""The CRI seam of the kubelet side: cri-api's ``RuntimeService`` and ``ImageManagerService``.

Everything on the kubelet side that talks to a container runtime (the runtime manager,
the image manager, PLEG, the prober, the log manager, housekeeping) depends on these
Protocols, never on a concrete client, as kubelet's kuberuntime depends on cri-api's
interfaces: ``cri_client.CRIClient`` is the remote one (gRPC on a unix socket),
``instrumented_services.InstrumentedRuntimeService`` wraps any of them with operation
metrics, and ``testing.fake_runtime_service.FakeRuntimeService`` keeps a runtime in memory
so SyncPod is unit tested without root. Replies are the CRI v1 messages themselves.

Every implementation reports a failed call as ``CRICallError`` with the gRPC status code
name, so callers decide on NOT_FOUND without importing grpc.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from pykubelet._proto.runtime.v1 import api_pb2 as pb


class CRICallError(Exception):
    """A CRI call failed; ``code`` is the grpc status code name (e.g. "NOT_FOUND")."""

    def __init__(self, method: str, code: str, details: str) -> None:
        super().__init__(f"{method}: {code}: {details}")
        self.method = method
        self.code = code
        self.details = details

    @property
    def not_found(self) -> bool:
        return self.code == "NOT_FOUND"


class _Listed(Protocol):
    @property
    def id(self) -> str: ...


ListedT = TypeVar("ListedT", bound=_Listed)
StatusT = TypeVar("StatusT")


def with_statuses(listed: Iterable[ListedT], status: Callable[[str], StatusT]
                  ) -> Iterator[tuple[ListedT, StatusT]]:
    """Each listed sandbox or container with its status, skipping one the runtime removed
    between the List and its Status call (NotFound), as kubelet's getPodContainerStatuses
    and sandbox listing do."""
    for item in listed:
        try:
            st = status(item.id)
        except CRICallError as exc:
            if exc.not_found:
                continue
            raise
        yield item, st


@dataclass(frozen=True)
class StreamFlags:
    """Which of an exec's or attach's streams the client opens (kubelet's query ``input``,
    ``output``, ``error``, ``tty``)."""

    stdin: bool = False
    stdout: bool = True
    stderr: bool = True
    tty: bool = False


class RuntimeService(Protocol):
    """cri-api's RuntimeService: sandboxes, containers, exec, runtime info."""

    def version(self) -> pb.VersionResponse: ...

    def status(self) -> pb.StatusResponse: ...

    def run_pod_sandbox(self, config: pb.PodSandboxConfig, runtime_handler: str = "") -> str: ...

    def stop_pod_sandbox(self, sandbox_id: str) -> None: ...

    def remove_pod_sandbox(self, sandbox_id: str) -> None: ...

    def pod_sandbox_status(self, sandbox_id: str) -> pb.PodSandboxStatus: ...

    def list_pod_sandbox(
        self, label_selector: Mapping[str, str] | None = None, ready_only: bool = False
    ) -> list[pb.PodSandbox]: ...

    def create_container(
        self, sandbox_id: str, config: pb.ContainerConfig, sandbox_config: pb.PodSandboxConfig
    ) -> str: ...

    def start_container(self, container_id: str) -> None: ...

    def stop_container(self, container_id: str, timeout_s: int) -> None: ...

    def remove_container(self, container_id: str) -> None: ...

    def list_containers(
        self, sandbox_id: str = "", label_selector: Mapping[str, str] | None = None
    ) -> list[pb.Container]: ...

    def container_status(self, container_id: str) -> pb.ContainerStatus: ...

    def list_container_stats(self) -> list[pb.ContainerStats]: ...

    def reopen_container_log(self, container_id: str) -> None: ...

    def exec_sync(
        self, container_id: str, cmd: list[str], timeout_s: float
    ) -> pb.ExecSyncResponse: ...

    # streaming: each answers the URL of the runtime's streaming server for one session
    def exec(self, container_id: str, cmd: list[str], streams: StreamFlags) -> str: ...

    def attach(self, container_id: str, streams: StreamFlags) -> str: ...

    def port_forward(self, sandbox_id: str, ports: list[int]) -> str: ...


class ImageService(Protocol):
    """cri-api's ImageManagerService."""

    def image_status(self, image: str) -> pb.Image | None: ...

    def pull_image(
        self, image: str, sandbox_config: pb.PodSandboxConfig | None = None,
        timeout: float | None = None, auth: pb.AuthConfig | None = None,
    ) -> str: ...

    def list_images(self) -> list[pb.Image]: ...

    def remove_image(self, image: str) -> None: ...

    def image_fs_info(self) -> list[pb.FilesystemUsage]: ...


class RuntimeAndImageService(RuntimeService, ImageService, Protocol):
    """One endpoint serving both services (a CRI socket), as the agent is given it."""

    def close(self) -> None: ...


def wait_ready(service: RuntimeService, timeout: float = 30.0) -> None:
    """Block until the runtime answers Version (it may still be starting)."""
    end = time.monotonic() + timeout
    while True:
        try:
            service.version()
            return
        except CRICallError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)
