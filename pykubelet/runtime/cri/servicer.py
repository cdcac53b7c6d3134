"""RuntimeService and ImageService servicers: route each RPC to the object that owns it.

Sandbox RPCs go to ``sandbox_rpc.SandboxRPC``, container RPCs to runtime-containers'
``container_rpc``, image RPCs to ``image_rpc``, and Version/Status/UpdateRuntimeConfig/
RuntimeConfig to ``service.RuntimeInfoRPC``. A handler is any object with a method named
exactly like the RPC that takes the request and returns the response; a route with no
handler answers UNIMPLEMENTED (CheckpointContainer and the pod metrics RPCs, for now).
GetContainerEvents streams from ``events.ContainerEvents``; Exec, Attach and PortForward go
to the streaming server (``runtime.streaming_server``), which answers their URLs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

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

    def __init__(self, sandbox: Any, containers: Any, runtime_info: Any,
                 events: Any = None, streaming: Any = None) -> None:
        self._table = _routes([
            (SANDBOX_RPCS, sandbox), (CONTAINER_RPCS, containers),
            (RUNTIME_INFO_RPCS, runtime_info), (EVENT_RPCS, events),
            (STREAMING_RPCS, streaming),
        ])


class ImageServicer(pb_grpc.ImageServiceServicer):
    rpc_names = IMAGE_RPCS

    def __init__(self, images: Any) -> None:
        self._table = _routes([(IMAGE_RPCS, images)])


for _cls in (RuntimeServicer, ImageServicer):
    for _name in _cls.rpc_names:
        setattr(_cls, _name, _dispatch(_name))


def add_to_server(server: grpc.Server, runtime: RuntimeServicer, images: ImageServicer) -> None:
    pb_grpc.add_RuntimeServiceServicer_to_server(runtime, server)
    pb_grpc.add_ImageServiceServicer_to_server(images, server)
