"""RuntimeService and ImageService servicers: route each RPC to the object that owns it.

Sandbox RPCs go to ``sandbox_rpc.SandboxRPC``, container RPCs to runtime-containers'
``container_rpc``, image RPCs to ``image_rpc``, and Version/Status/UpdateRuntimeConfig/
RuntimeConfig to ``service.RuntimeInfoRPC``. A handler is any object with a method named
exactly like the RPC that takes the request and returns the response (the Protocols
below name the RPCs each must have; any other RPC of its group it has is routed too); a
route with no handler answers UNIMPLEMENTED (CheckpointContainer and the pod metrics RPCs,
for now). GetContainerEvents streams from ``events.ContainerEvents``; Exec, Attach and
PortForward go to the streaming server (``runtime.streaming_server``), which answers their
URLs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import grpc

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc

SANDBOX_RPCS = (
    "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox",
    "PodSandboxStats", "ListPodSandboxStats",
)
CONTAINER_RPCS = (
    "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ListContainers",
    "ContainerStatus", "UpdateContainerResources", "ReopenContainerLog", "ExecSync",
    "ContainerStats", "ListContainerStats",
)
RUNTIME_INFO_RPCS = ("Version", "Status", "UpdateRuntimeConfig", "RuntimeConfig")
STREAMING_RPCS = ("Exec", "Attach", "PortForward")
EVENT_RPCS = ("GetContainerEvents",)
OTHER_RUNTIME_RPCS = (
    "CheckpointContainer",
    "ListMetricDescriptors", "ListPodSandboxMetrics",
)
IMAGE_RPCS = ("ListImages", "ImageStatus", "PullImage", "RemoveImage", "ImageFsInfo")


class SandboxRPCs(Protocol):
    """The sandbox RPCs (sandbox_rpc.SandboxRPC)."""

    def RunPodSandbox(self, req: pb.RunPodSandboxRequest) -> pb.RunPodSandboxResponse: ...

    def StopPodSandbox(self, req: pb.StopPodSandboxRequest) -> pb.StopPodSandboxResponse: ...

    def RemovePodSandbox(
        self, req: pb.RemovePodSandboxRequest
    ) -> pb.RemovePodSandboxResponse: ...

    def PodSandboxStatus(
        self, req: pb.PodSandboxStatusRequest
    ) -> pb.PodSandboxStatusResponse: ...

    def ListPodSandbox(self, req: pb.ListPodSandboxRequest) -> pb.ListPodSandboxResponse: ...


class ContainerRPCs(Protocol):
    """The container RPCs (container_rpc.ContainerRPC, behind service.SerializedCreate)."""

    def CreateContainer(self, req: pb.CreateContainerRequest) -> pb.CreateContainerResponse: ...

    def StartContainer(self, req: pb.StartContainerRequest) -> pb.StartContainerResponse: ...

    def StopContainer(self, req: pb.StopContainerRequest) -> pb.StopContainerResponse: ...

    def RemoveContainer(self, req: pb.RemoveContainerRequest) -> pb.RemoveContainerResponse: ...

    def ListContainers(self, req: pb.ListContainersRequest) -> pb.ListContainersResponse: ...

    def ContainerStatus(self, req: pb.ContainerStatusRequest) -> pb.ContainerStatusResponse: ...

    def ExecSync(self, req: pb.ExecSyncRequest) -> pb.ExecSyncResponse: ...


class RuntimeInfoRPCs(Protocol):
    """Version and Status (service.RuntimeInfoRPC)."""

    def Version(self, req: pb.VersionRequest) -> pb.VersionResponse: ...

    def Status(self, req: pb.StatusRequest) -> pb.StatusResponse: ...


class EventRPCs(Protocol):
    """The container event stream (events.ContainerEvents); it is handed the context."""

    wants_context: bool

    def GetContainerEvents(
        self, req: pb.GetEventsRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ContainerEventResponse]: ...


class StreamingRPCs(Protocol):
    """Exec, Attach and PortForward: the streaming server hands out their URLs."""

    def Exec(self, req: pb.ExecRequest) -> pb.ExecResponse: ...

    def Attach(self, req: pb.AttachRequest) -> pb.AttachResponse: ...

    def PortForward(self, req: pb.PortForwardRequest) -> pb.PortForwardResponse: ...


class ImageRPCs(Protocol):
    """The image RPCs (image_rpc.ImageRPC)."""

    def ListImages(self, req: pb.ListImagesRequest) -> pb.ListImagesResponse: ...

    def ImageStatus(self, req: pb.ImageStatusRequest) -> pb.ImageStatusResponse: ...

    def PullImage(self, req: pb.PullImageRequest) -> pb.PullImageResponse: ...

    def RemoveImage(self, req: pb.RemoveImageRequest) -> pb.RemoveImageResponse: ...


def _routes(handlers: list[tuple[tuple[str, ...], Any]]) -> dict[str, Callable[[Any], Any]]:
    table: dict[str, Callable[[Any], Any]] = {}
    for names, obj in handlers:
        if obj is None:
            continue
        for name in names:
            fn = getattr(obj, name, None)
            if fn is not None:
                table[name] = fn
    return table


def _unimplemented(request: Any) -> Any:
    raise NotImplementedError


def _dispatch(name: str) -> Callable[[Any, Any, grpc.ServicerContext], Any]:
    """The servicer method for RPC ``name``: look the handler up, call it with the request."""

    def method(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        handler = self._table.get(name, _unimplemented)
        if getattr(getattr(handler, "__self__", None), "wants_context", False):
            return handler(request, context)  # streams end when the client goes away
        return handler(request)

    method.__name__ = method.__qualname__ = name
    return method


class RuntimeServicer(pb_grpc.RuntimeServiceServicer):
    rpc_names = (SANDBOX_RPCS + CONTAINER_RPCS + RUNTIME_INFO_RPCS + STREAMING_RPCS
                 + EVENT_RPCS + OTHER_RUNTIME_RPCS)

    def __init__(self, sandbox: SandboxRPCs | None, containers: ContainerRPCs | None,
                 runtime_info: RuntimeInfoRPCs | None, events: EventRPCs | None = None,
                 streaming: StreamingRPCs | None = None) -> None:
        self._table = _routes([
            (SANDBOX_RPCS, sandbox), (CONTAINER_RPCS, containers),
            (RUNTIME_INFO_RPCS, runtime_info), (EVENT_RPCS, events),
            (STREAMING_RPCS, streaming),
        ])


class ImageServicer(pb_grpc.ImageServiceServicer):
    rpc_names = IMAGE_RPCS

    def __init__(self, images: ImageRPCs | None) -> None:
        self._table = _routes([(IMAGE_RPCS, images)])


for _cls in (RuntimeServicer, ImageServicer):
    for _name in _cls.rpc_names:
        setattr(_cls, _name, _dispatch(_name))


def add_to_server(server: grpc.Server, runtime: RuntimeServicer, images: ImageServicer) -> None:
    pb_grpc.add_RuntimeServiceServicer_to_server(runtime, server)
    pb_grpc.add_ImageServiceServicer_to_server(images, server)
