"""Wiring of the CRI runtime: one object owning the image store, sandboxes and containers.

``Runtime.open(...)`` builds everything under ``--root DIR`` (images in DIR/images,
sandboxes in DIR/sandboxes, containers in DIR/containers), recovers what a previous run
left (sandbox checkpoints, then containers through their monitors), and hands the
RPC-facing objects to the servicers. ``RuntimeInfoRPC`` answers Version, Status,
UpdateRuntimeConfig and RuntimeConfig.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pycni import defaults as cni_defaults
from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime.cri.sandbox_rpc import SandboxRPC
from pykubelet.runtime.cri.servicer import ImageServicer, RuntimeServicer
from pykubelet.runtime.errors import InvalidArgument
from pykubelet.runtime.podnet import PodNetwork
from pykubelet.runtime.runc import DEFAULT_RUNC
from pykubelet.runtime.sandbox import SandboxManager

log = logging.getLogger(__name__)

RUNTIME_NAME = "pykubelet"
RUNTIME_VERSION = "0.1.0"
CRI_VERSION = "v1"
KUBE_API_VERSION = "0.1.0"  # what kubelet's Version call expects in `version`


@dataclass
class RuntimeOptions:
    root: Path
    cni_conf_dir: str = "/etc/cni/net.d"
    cni_bin_dirs: list[str] = field(default_factory=lambda: list(cni_defaults.BIN_DIRS))
    cni_cache_dir: str = "/var/lib/cni"
    netns_dir: str = "/run/netns"
    netns_prefix: str = ""  # default: "pyk<hash of root>-", so runtimes on one host never mix
    runc_binary: str = DEFAULT_RUNC
    stream_address: str = "127.0.0.1"  # the streaming server (Exec/Attach/PortForward URLs)
    stream_port: int = 0  # 0: any free port, as containerd's default
    insecure_registries: tuple[str, ...] = ()  # plain HTTP pulls, besides loopback


def default_netns_prefix(root: Path) -> str:
    """Pins of different runtime roots never share a prefix (traceable, never confused)."""
    import hashlib

    return "pyk" + hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:6] + "-"


class RuntimeInfoRPC:
    """Version, Status, UpdateRuntimeConfig, RuntimeConfig."""

    def __init__(self, network: PodNetwork, containers: Any) -> None:
        self.network = network
        self.containers = containers

    def runtime_ready(self) -> tuple[bool, str, str]:
        """(ready, reason, message): container support loaded and its binaries executable."""
        if self.containers is None:
            return False, "ContainerManagerUnavailable", "container support is not loaded"
        for what, path in (("runc", getattr(getattr(self.containers, "runc", None), "binary", "")),
                           ("conmon", getattr(self.containers, "conmon_binary", ""))):
            if path and not (shutil.which(path) or os.access(path, os.X_OK)):
                return False, "RuntimeBinaryMissing", f"{what} ({path}) is not executable"
        return True, "", ""

    def Version(self, req: pb.VersionRequest) -> pb.VersionResponse:
        return pb.VersionResponse(
            version=KUBE_API_VERSION, runtime_name=RUNTIME_NAME,
            runtime_version=RUNTIME_VERSION, runtime_api_version=CRI_VERSION,
        )

    def Status(self, req: pb.StatusRequest) -> pb.StatusResponse:
        net_ok, net_msg = self.network.status()
        rt_ok, rt_reason, rt_msg = self.runtime_ready()
        conditions = [
            pb.RuntimeCondition(type="RuntimeReady", status=rt_ok, reason=rt_reason,
                                message=rt_msg),
            pb.RuntimeCondition(
                type="NetworkReady", status=net_ok,
                reason="" if net_ok else "NetworkPluginNotReady",
                message="" if net_ok else f"Network plugin returns error: {net_msg}",
            ),
        ]
        resp = pb.StatusResponse(
            status=pb.RuntimeStatus(conditions=conditions),
            runtime_handlers=[pb.RuntimeHandler(name=""), pb.RuntimeHandler(name="runc")],
        )
        if req.verbose:
            import json

            resp.info["config"] = json.dumps({
                "cniConfDir": self.network.conf_dir, "cniBinDirs": self.network.bin_dirs,
                "podCIDR": self.network.pod_cidr, "sandboxHolder": "bind-mounted namespaces",
            })
        return resp

    def UpdateRuntimeConfig(
        self, req: pb.UpdateRuntimeConfigRequest
    ) -> pb.UpdateRuntimeConfigResponse:
        cidr = req.runtime_config.network_config.pod_cidr
        if cidr:
            import ipaddress

            for part in cidr.split(","):
                try:
                    ipaddress.ip_network(part.strip(), strict=False)
                except ValueError:
                    raise InvalidArgument(
                        f"runtime_config.network_config.pod_cidr: {part!r} is not a CIDR"
                    ) from None
            if cidr != self.network.pod_cidr:
                log.info("pod CIDR is now %s", cidr)
            self.network.pod_cidr = cidr
        return pb.UpdateRuntimeConfigResponse()

    def RuntimeConfig(self, req: pb.RuntimeConfigRequest) -> pb.RuntimeConfigResponse:
        return pb.RuntimeConfigResponse(
            linux=pb.LinuxRuntimeConfiguration(cgroup_driver=pb.CGROUPFS)
        )


class SerializedCreate:
    """Container RPCs, with CreateContainer holding its sandbox still (see SandboxManager.locked).

    Every other RPC passes straight through to runtime-containers' ContainerRPC.
    """

    def __init__(self, inner: Any, sandboxes: SandboxManager) -> None:
        self._inner = inner
        self._sandboxes = sandboxes

    def CreateContainer(self, req: pb.CreateContainerRequest) -> pb.CreateContainerResponse:
        if not req.pod_sandbox_id:
            return self._inner.CreateContainer(req)  # its own "required" error
        with self._sandboxes.locked(req.pod_sandbox_id):
            return self._inner.CreateContainer(req)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _optional(module: str) -> Any:
    """runtime-containers' modules; None while they are absent from this build."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        log.warning("%s is not available: its RPCs answer UNIMPLEMENTED", module)
        return None


def _container_events(container_rpc: Any, sandbox_rpc: SandboxRPC) -> Any:
    from pykubelet.runtime.cri.events import ContainerEvents
    from pykubelet.runtime.errors import NotFound

    def list_containers() -> list[pb.Container]:
        return list(container_rpc.ListContainers(pb.ListContainersRequest()).containers)

    def container_status(cid: str) -> pb.ContainerStatus | None:
        try:
            return container_rpc.ContainerStatus(
                pb.ContainerStatusRequest(container_id=cid)).status
        except NotFound:
            return None

    def sandbox_status(sid: str) -> pb.PodSandboxStatus | None:
        try:
            return sandbox_rpc.PodSandboxStatus(
                pb.PodSandboxStatusRequest(pod_sandbox_id=sid)).status
        except NotFound:
            return None

    return ContainerEvents(list_containers, container_status, sandbox_status,
                           container_rpc.statuses_in_sandbox)


@dataclass
class Runtime:
    """Everything the CRI server serves, built and recovered from one root directory."""

    options: RuntimeOptions
    network: PodNetwork
    sandboxes: SandboxManager
    images: Any
    containers: Any
    runtime_servicer: RuntimeServicer
    image_servicer: ImageServicer
    streaming: Any = None

    @classmethod
    def open(cls, options: RuntimeOptions) -> Runtime:
        root = Path(options.root)
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        network = PodNetwork(options.cni_conf_dir, options.cni_bin_dirs, options.cni_cache_dir)
        sandboxes = SandboxManager(root / "sandboxes", network, options.netns_dir,
                                   options.netns_prefix or default_netns_prefix(root))
        from pykubelet.runtime.images import ImageStore

        images = ImageStore(root / "images")
        containers = container_rpc = image_rpc = None
        containers_mod = _optional("pykubelet.runtime.containers")
        container_rpc_mod = _optional("pykubelet.runtime.cri.container_rpc")
        image_rpc_mod = _optional("pykubelet.runtime.cri.image_rpc")
        if containers_mod is not None:
            containers = containers_mod.ContainerManager(
                root=root / "containers", images=images, sandbox_lookup=sandboxes.get,
                runc_binary=options.runc_binary,
            )
            sandboxes.containers = containers
        sandboxes.recover()
        if containers is not None:
            containers.recover()
        if container_rpc_mod is not None and containers is not None:
            container_rpc = SerializedCreate(
                container_rpc_mod.ContainerRPC(containers, sandboxes.require_ready), sandboxes)
        if image_rpc_mod is not None:
            from pykubelet.runtime.image_pull import DEFAULT_INSECURE, PullOptions

            image_rpc = image_rpc_mod.ImageRPC(images, PullOptions(
                insecure_registries=(*DEFAULT_INSECURE, *options.insecure_registries)))
        statuses = getattr(container_rpc, "statuses_in_sandbox", None)
        stats = None
        if container_rpc is not None:
            list_stats = container_rpc.ListContainerStats

            def stats(sandbox_id: str) -> list[pb.ContainerStats]:
                return list(list_stats(pb.ListContainerStatsRequest(
                    filter=pb.ContainerStatsFilter(pod_sandbox_id=sandbox_id))).stats)

        sandbox_rpc = SandboxRPC(sandboxes, statuses, stats)
        events = None
        if container_rpc is not None:
            events = _container_events(container_rpc, sandbox_rpc)
        streaming = None
        if containers is not None:
            from pykubelet.runtime.streaming_server import StreamingServer

            streaming = StreamingServer(containers, sandboxes.require_ready,
                                        options.stream_address, options.stream_port)
            streaming.start()
        runtime_servicer = RuntimeServicer(
            sandbox=sandbox_rpc, events=events,
            containers=container_rpc,
            runtime_info=RuntimeInfoRPC(network, containers),
            streaming=streaming,
        )
        return cls(options, network, sandboxes, images, containers, runtime_servicer,
                   ImageServicer(image_rpc), streaming)

    def close(self) -> None:
        """Stop what runs in this process (the streaming server); pods keep running."""
        if self.streaming is not None:
            self.streaming.stop()
