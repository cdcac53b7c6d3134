"""A CRI v1 client (RuntimeService + ImageService) over gRPC on a unix socket.

This is the remote implementation of ``runtime_service.RuntimeService`` and
``ImageService`` (cri-api's remote_runtime.go and remote_image.go), so the agent runs
unchanged on our runtime or on containerd. Like kubelet's remote runtime service it
puts a deadline on every call (ExecSync: the probe's timeout plus a margin; image pulls:
none by default), allows 16 MiB messages and reconnects with its connect parameters (a
back-off from 100 ms to 3 s, not gRPC's default 1 s growing to 2 min, so a runtime that
restarted is used again within ~3 s of coming back). gRPC failures become ``CRICallError`` with
the status code kept, so callers decide on NOT_FOUND without importing grpc.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc
from pykubelet.kubelet.cri.runtime_service import CRICallError, StreamFlags, wait_ready

__all__ = ["DEFAULT_TIMEOUT_S", "CRICallError", "CRIClient"]

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_TIMEOUT_S = 120.0  # kubelet's runtimeRequestTimeout (2 min)
EXEC_MARGIN_S = 5.0
# cri-client's remote_runtime.go: baseBackoffDelay, maxBackoffDelay, minConnectionTimeout
# (gRPC C-core's min_reconnect_backoff is the minimum connect deadline, Go's
# MinConnectTimeout)
CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 3000),
    ("grpc.min_reconnect_backoff_ms", 5000),
]


def _channel_target(endpoint: str) -> str:
    if endpoint.startswith("unix://"):
        return "unix:" + endpoint[len("unix://"):]
    if endpoint.startswith(("unix:", "/")):
        return endpoint if endpoint.startswith("unix:") else "unix:" + endpoint
    raise ValueError(f"containerRuntimeEndpoint: unsupported endpoint {endpoint!r}")


class CRIClient:
    """RuntimeService and ImageService calls with deadlines; thread-safe (one channel)."""

    def __init__(
        self,
        endpoint: str,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._channel = grpc.insecure_channel(
            _channel_target(endpoint),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                *CHANNEL_OPTIONS,
            ],
        )
        self._rt = pb_grpc.RuntimeServiceStub(self._channel)
        self._img = pb_grpc.ImageServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> CRIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing
    def _call(self, stub: Any, method: str, request: Any, timeout: float | None = -1.0) -> Any:
        deadline = self.timeout if timeout is not None and timeout < 0 else timeout
        try:
            return getattr(stub, method)(request, timeout=deadline)
        except grpc.RpcError as exc:
            code = exc.code().name if exc.code() is not None else "UNKNOWN"
            raise CRICallError(method, code, exc.details() or "") from None

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Block until the endpoint answers Version (the runtime may still be starting)."""
        wait_ready(self, timeout)

    # ------------------------------------------------------------------ runtime
    def version(self) -> pb.VersionResponse:
        return self._call(self._rt, "Version", pb.VersionRequest(version="v1"), timeout=5.0)

    def status(self) -> pb.StatusResponse:
        return self._call(self._rt, "Status", pb.StatusRequest())

    # ------------------------------------------------------------------ sandboxes
    def run_pod_sandbox(self, config: pb.PodSandboxConfig, runtime_handler: str = "") -> str:
        req = pb.RunPodSandboxRequest(config=config, runtime_handler=runtime_handler)
        return self._call(self._rt, "RunPodSandbox", req).pod_sandbox_id

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self._call(self._rt, "StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=sandbox_id))

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        req = pb.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id)
        self._call(self._rt, "RemovePodSandbox", req)

    def pod_sandbox_status(self, sandbox_id: str) -> pb.PodSandboxStatus:
        req = pb.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id)
        return self._call(self._rt, "PodSandboxStatus", req).status

    def list_pod_sandbox(
        self, label_selector: Mapping[str, str] | None = None, ready_only: bool = False
    ) -> list[pb.PodSandbox]:
        flt = pb.PodSandboxFilter(label_selector=dict(label_selector or {}))
        if ready_only:
            flt.state.state = pb.SANDBOX_READY
        resp = self._call(self._rt, "ListPodSandbox", pb.ListPodSandboxRequest(filter=flt))
        return list(resp.items)

    # ------------------------------------------------------------------ containers
    def create_container(
        self, sandbox_id: str, config: pb.ContainerConfig, sandbox_config: pb.PodSandboxConfig
    ) -> str:
        req = pb.CreateContainerRequest(
            pod_sandbox_id=sandbox_id, config=config, sandbox_config=sandbox_config
        )
        return self._call(self._rt, "CreateContainer", req).container_id

    def start_container(self, container_id: str) -> None:
        self._call(self._rt, "StartContainer", pb.StartContainerRequest(container_id=container_id))

    def stop_container(self, container_id: str, timeout_s: int) -> None:
        req = pb.StopContainerRequest(container_id=container_id, timeout=int(timeout_s))
        # the runtime may take the whole grace period: wait for it plus our usual deadline
        self._call(self._rt, "StopContainer", req, timeout=self.timeout + max(0, timeout_s))

    def remove_container(self, container_id: str) -> None:
        req = pb.RemoveContainerRequest(container_id=container_id)
        self._call(self._rt, "RemoveContainer", req)

    def list_containers(
        self,
        sandbox_id: str = "",
        label_selector: Mapping[str, str] | None = None,
    ) -> list[pb.Container]:
        flt = pb.ContainerFilter(
            pod_sandbox_id=sandbox_id, label_selector=dict(label_selector or {})
        )
        resp = self._call(self._rt, "ListContainers", pb.ListContainersRequest(filter=flt))
        return list(resp.containers)

    def container_status(self, container_id: str) -> pb.ContainerStatus:
        req = pb.ContainerStatusRequest(container_id=container_id)
        return self._call(self._rt, "ContainerStatus", req).status

    def list_container_stats(self) -> list[pb.ContainerStats]:
        resp = self._call(self._rt, "ListContainerStats", pb.ListContainerStatsRequest())
        return list(resp.stats)

    def reopen_container_log(self, container_id: str) -> None:
        req = pb.ReopenContainerLogRequest(container_id=container_id)
        self._call(self._rt, "ReopenContainerLog", req)

    def exec_sync(
        self, container_id: str, cmd: list[str], timeout_s: float
    ) -> pb.ExecSyncResponse:
        req = pb.ExecSyncRequest(container_id=container_id, cmd=cmd, timeout=int(max(1, timeout_s)))
        return self._call(self._rt, "ExecSync", req, timeout=timeout_s + EXEC_MARGIN_S)

    def exec(self, container_id: str, cmd: list[str], streams: StreamFlags) -> str:
        req = pb.ExecRequest(container_id=container_id, cmd=cmd, tty=streams.tty,
                             stdin=streams.stdin, stdout=streams.stdout,
                             stderr=streams.stderr and not streams.tty)
        return str(self._call(self._rt, "Exec", req).url)

    def attach(self, container_id: str, streams: StreamFlags) -> str:
        req = pb.AttachRequest(container_id=container_id, tty=streams.tty,
                               stdin=streams.stdin, stdout=streams.stdout,
                               stderr=streams.stderr and not streams.tty)
        return str(self._call(self._rt, "Attach", req).url)

    def port_forward(self, sandbox_id: str, ports: list[int]) -> str:
        req = pb.PortForwardRequest(pod_sandbox_id=sandbox_id, port=ports)
        return str(self._call(self._rt, "PortForward", req).url)

    # ------------------------------------------------------------------ images
    def image_status(self, image: str) -> pb.Image | None:
        """The image if the node's store has it, else None (CRI answers an empty image)."""
        req = pb.ImageStatusRequest(image=pb.ImageSpec(image=image))
        resp = self._call(self._img, "ImageStatus", req)
        return resp.image if resp.HasField("image") and resp.image.id else None

    def pull_image(
        self, image: str, sandbox_config: pb.PodSandboxConfig | None = None,
        timeout: float | None = None, auth: pb.AuthConfig | None = None,
    ) -> str:
        req = pb.PullImageRequest(image=pb.ImageSpec(image=image))
        if sandbox_config is not None:
            req.sandbox_config.CopyFrom(sandbox_config)
        if auth is not None:
            req.auth.CopyFrom(auth)
        return self._call(self._img, "PullImage", req, timeout=timeout).image_ref

    def list_images(self) -> list[pb.Image]:
        return list(self._call(self._img, "ListImages", pb.ListImagesRequest()).images)

    def remove_image(self, image: str) -> None:
        self._call(self._img, "RemoveImage", pb.RemoveImageRequest(image=pb.ImageSpec(image=image)))

    def image_fs_info(self) -> list[pb.FilesystemUsage]:
        return list(self._call(self._img, "ImageFsInfo",
                               pb.ImageFsInfoRequest()).image_filesystems)
