"""A runtime service that measures every call, as kubelet's instrumented_services.go.

``InstrumentedRuntimeService`` wraps any ``RuntimeAndImageService`` (the remote CRI client,
or the fake in tests) and records each call's duration, and its failure, by operation
type (the CRI method name) in ``KubeletMetrics``: kubelet_runtime_operations_duration_seconds
and kubelet_runtime_operations_errors_total. The wrapped service stays unaware of metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.kubelet.cri.runtime_service import RuntimeAndImageService, StreamFlags
from pykubelet.kubelet.metrics import KubeletMetrics

T = TypeVar("T")


class InstrumentedRuntimeService:
    """Every RuntimeService and ImageService call of ``service``, timed and counted."""

    def __init__(self, service: RuntimeAndImageService, metrics: KubeletMetrics) -> None:
        self.service = service
        self.metrics = metrics

    def _record(self, operation: str, call: Callable[[], T]) -> T:
        start = time.monotonic()
        failed = True
        try:
            result = call()
            failed = False
            return result
        finally:
            self.metrics.observe_runtime_operation(operation, time.monotonic() - start, failed)

    @property
    def op_counts(self) -> dict[str, int]:
        """Calls per CRI method so far (failed ones included)."""
        return self.metrics.runtime_operation_counts()

    def close(self) -> None:
        self.service.close()

    # ------------------------------------------------------------------ runtime
    def version(self) -> pb.VersionResponse:
        return self._record("Version", self.service.version)

    def status(self) -> pb.StatusResponse:
        return self._record("Status", self.service.status)

    def run_pod_sandbox(self, config: pb.PodSandboxConfig, runtime_handler: str = "") -> str:
        return self._record(
            "RunPodSandbox", lambda: self.service.run_pod_sandbox(config, runtime_handler)
        )

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self._record("StopPodSandbox", lambda: self.service.stop_pod_sandbox(sandbox_id))

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        self._record("RemovePodSandbox", lambda: self.service.remove_pod_sandbox(sandbox_id))

    def pod_sandbox_status(self, sandbox_id: str) -> pb.PodSandboxStatus:
        return self._record(
            "PodSandboxStatus", lambda: self.service.pod_sandbox_status(sandbox_id)
        )

    def list_pod_sandbox(
        self, label_selector: Mapping[str, str] | None = None, ready_only: bool = False
    ) -> list[pb.PodSandbox]:
        return self._record(
            "ListPodSandbox", lambda: self.service.list_pod_sandbox(label_selector, ready_only)
        )

    def create_container(
        self, sandbox_id: str, config: pb.ContainerConfig, sandbox_config: pb.PodSandboxConfig
    ) -> str:
        return self._record(
            "CreateContainer",
            lambda: self.service.create_container(sandbox_id, config, sandbox_config),
        )

    def start_container(self, container_id: str) -> None:
        self._record("StartContainer", lambda: self.service.start_container(container_id))

    def stop_container(self, container_id: str, timeout_s: int) -> None:
        self._record(
            "StopContainer", lambda: self.service.stop_container(container_id, timeout_s)
        )

    def remove_container(self, container_id: str) -> None:
        self._record("RemoveContainer", lambda: self.service.remove_container(container_id))

    def list_containers(
        self, sandbox_id: str = "", label_selector: Mapping[str, str] | None = None
    ) -> list[pb.Container]:
        return self._record(
            "ListContainers", lambda: self.service.list_containers(sandbox_id, label_selector)
        )

    def container_status(self, container_id: str) -> pb.ContainerStatus:
        return self._record(
            "ContainerStatus", lambda: self.service.container_status(container_id)
        )

    def list_container_stats(self) -> list[pb.ContainerStats]:
        return self._record("ListContainerStats", self.service.list_container_stats)

    def reopen_container_log(self, container_id: str) -> None:
        self._record(
            "ReopenContainerLog", lambda: self.service.reopen_container_log(container_id)
        )

    def exec_sync(
        self, container_id: str, cmd: list[str], timeout_s: float
    ) -> pb.ExecSyncResponse:
        return self._record(
            "ExecSync", lambda: self.service.exec_sync(container_id, cmd, timeout_s)
        )

    def exec(self, container_id: str, cmd: list[str], streams: StreamFlags) -> str:
        return self._record("Exec", lambda: self.service.exec(container_id, cmd, streams))

    def attach(self, container_id: str, streams: StreamFlags) -> str:
        return self._record("Attach", lambda: self.service.attach(container_id, streams))

    def port_forward(self, sandbox_id: str, ports: list[int]) -> str:
        return self._record("PortForward", lambda: self.service.port_forward(sandbox_id, ports))

    # ------------------------------------------------------------------ images
    def image_status(self, image: str) -> pb.Image | None:
        return self._record("ImageStatus", lambda: self.service.image_status(image))

    def pull_image(
        self, image: str, sandbox_config: pb.PodSandboxConfig | None = None,
        timeout: float | None = None, auth: pb.AuthConfig | None = None,
    ) -> str:
        return self._record(
            "PullImage", lambda: self.service.pull_image(image, sandbox_config, timeout, auth)
        )

    def list_images(self) -> list[pb.Image]:
        return self._record("ListImages", self.service.list_images)

    def remove_image(self, image: str) -> None:
        self._record("RemoveImage", lambda: self.service.remove_image(image))

    def image_fs_info(self) -> list[pb.FilesystemUsage]:
        return self._record("ImageFsInfo", self.service.image_fs_info)
