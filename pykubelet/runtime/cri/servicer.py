"""RuntimeService and ImageService servicers: route each RPC to the object that owns it.

Sandbox RPCs go to ``sandbox_rpc.SandboxRPC``, container RPCs to runtime-containers'
``container_rpc``, image RPCs to ``image_rpc``, and Version/Status/UpdateRuntimeConfig/
RuntimeConfig to ``service.RuntimeInfoRPC``. A handler is any object with a method named
exactly like the RPC that takes the request and returns the response; a route with no
handler answers UNIMPLEMENTED (Exec, Attach, PortForward, CheckpointContainer,
GetContainerEvents, the pod metrics RPCs, for now).
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
OTHER_RUNTIME_RPCS = (
    "CheckpointContainer", "GetContainerEvents",
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


class _Router:
    """Base: ``getattr(servicer, "RunPodSandbox")`` gives a (request, context) handler."""

    rpc_names: tuple[str, ...] = ()

    def __init__(self, table: dict[str, Callable[[Any], Any]]) -> None:
        self._table = table

    def __getattribute__(self, name: str) -> Any:
        if name in type(self).rpc_names:
            fn = object.__getattribute__(self, "_table").get(name, _unimplemented)

            def handler(request: Any, context: grpc.ServicerContext) -> Any:
                return fn(request)

            return handler
        return object.__getattribute__(self, name)


class RuntimeServicer(_Router, pb_grpc.RuntimeServiceServicer):
    rpc_names = (SANDBOX_RPCS + CONTAINER_RPCS + RUNTIME_INFO_RPCS + STREAMING_RPCS
                 + OTHER_RUNTIME_RPCS)

    def __init__(self, sandbox: Any, containers: Any, runtime_info: Any) -> None:
        super().__init__(_routes([
            (SANDBOX_RPCS, sandbox), (CONTAINER_RPCS, containers),
            (RUNTIME_INFO_RPCS, runtime_info),
        ]))


class ImageServicer(_Router, pb_grpc.ImageServiceServicer):
    rpc_names = IMAGE_RPCS

    def __init__(self, images: Any) -> None:
        super().__init__(_routes([(IMAGE_RPCS, images)]))


def add_to_server(server: grpc.Server, runtime: RuntimeServicer, images: ImageServicer) -> None:
    pb_grpc.add_RuntimeServiceServicer_to_server(runtime, server)
    pb_grpc.add_ImageServiceServicer_to_server(images, server)
