"""Pod networking through pycni's libcni: loopback first, then the default network.

Only this module talks CNI for the runtime. It picks the default network by libcni's rules
(the conf dir's files sorted by name, first valid wins), reloads it when the conf dir
changes, passes the sandbox's hostPorts as the ``portMappings`` capability (the reference
``portmap`` plugin in the chain turns them into DNAT rules and removes them on DEL), and
keeps, per sandbox, the exact network list used for ADD so that DEL runs the same one even
after the conf dir changed or the runtime restarted.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pycni import cache, conf, spec
from pycni.libcni import CNIConfig, RuntimeConf
from pykubelet.runtime.errors import FailedPrecondition, Unavailable

log = logging.getLogger(__name__)

LOOPBACK_IFNAME = "lo"
POD_IFNAME = "eth0"


@dataclass(frozen=True)
class PortMapping:
    """One hostPort: CRI's PortMapping in CNI's portMappings capability shape."""

    container_port: int
    host_port: int
    protocol: str = "tcp"  # tcp, udp, sctp
    host_ip: str = ""

    def to_cni(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "hostPort": self.host_port,
            "containerPort": self.container_port,
            "protocol": self.protocol,
        }
        if self.host_ip:
            out["hostIP"] = self.host_ip
        return out


@dataclass(frozen=True)
class PodRef:
    """What CNI_ARGS tells plugins about the pod (kubelet/containerd's K8S_* keys)."""

    sandbox_id: str
    name: str
    namespace: str
    uid: str

    def cni_args(self) -> list[tuple[str, str]]:
        return [
            ("IgnoreUnknown", "1"),
            ("K8S_POD_NAMESPACE", self.namespace),
            ("K8S_POD_NAME", self.name),
            ("K8S_POD_INFRA_CONTAINER_ID", self.sandbox_id),
            ("K8S_POD_UID", self.uid),
        ]


@dataclass
class NetworkAttachment:
    """What ADD produced, kept in the sandbox checkpoint for status and DEL."""

    network: dict[str, Any]  # the network list ADD used (_conf_list_to_dict)
    ips: list[str] = field(default_factory=list)  # pod IPs, primary first
    result: dict[str, Any] = field(default_factory=dict)  # the default network's result
    port_mappings_applied: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "ips": self.ips,
            "result": self.result,
            "port_mappings_applied": self.port_mappings_applied,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NetworkAttachment:
        return cls(
            network=d["network"],
            ips=list(d.get("ips", [])),
            result=dict(d.get("result", {})),
            port_mappings_applied=bool(d.get("port_mappings_applied", False)),
        )


def _conf_list_to_dict(net: Any) -> dict[str, Any]:
    """A NetConfList as checkpointable JSON (a ``.conf`` file's list has no list JSON)."""
    return {
        "cniVersion": net.cni_version,
        "name": net.name,
        "plugins": net.plugins,
        "disableCheck": net.disable_check,
        "disableGC": getattr(net, "disable_gc", False),
        "file": net.file,
        "raw": net.raw,
        "source": (net.source or b"").decode("utf-8", "replace"),
    }


def _conf_list_from_dict(d: dict[str, Any]) -> Any:
    """Rebuild the NetConfList that ADD used, from the checkpoint."""
    return spec.NetConfList(
        cni_version=str(d.get("cniVersion", "")),
        name=str(d.get("name", "")),
        plugins=list(d.get("plugins", [])),
        disable_check=bool(d.get("disableCheck", False)),
        raw=dict(d.get("raw", {})),
        file=d.get("file"),
        disable_gc=bool(d.get("disableGC", False)),
        source=str(d.get("source", "")).encode(),
    )


def _has_port_mapping_capability(plugins: list[dict[str, Any]]) -> bool:
    return any(
        isinstance(p, dict) and (p.get("capabilities") or {}).get("portMappings")
        for p in plugins
    )


def _pod_ips(result: Any) -> list[str]:
    """IPs on the pod's eth0 (or every IP when interfaces are not reported), IPv4 first."""
    sandbox_ifaces = {
        i for i, iface in enumerate(result.interfaces) if iface.sandbox and iface.name == POD_IFNAME
    }
    ips = [
        str(c.address.ip)
        for c in result.ips
        if not sandbox_ifaces or c.interface is None or c.interface in sandbox_ifaces
    ]
    return sorted(ips, key=lambda ip: ipaddress.ip_address(ip).version)


def _runtime_confs(
    pod: PodRef, netns_path: str, port_mappings_applied: bool, port_mappings: list[PortMapping]
) -> tuple[RuntimeConf, RuntimeConf]:
    """The loopback's and the pod network's RuntimeConf, for ADD and DEL alike (the network's
    with the portMappings capability when its plugins took them at ADD)."""
    lo_rt = RuntimeConf(
        container_id=pod.sandbox_id, netns=netns_path, ifname=LOOPBACK_IFNAME,
        args=pod.cni_args(),
    )
    caps: dict[str, Any] = {}
    if port_mappings_applied and port_mappings:
        caps["portMappings"] = [m.to_cni() for m in port_mappings]
    rt = RuntimeConf(
        container_id=pod.sandbox_id, netns=netns_path, ifname=POD_IFNAME,
        args=pod.cni_args(), capability_args=caps,
    )
    return lo_rt, rt


class PodNetwork:
    """CNI for sandboxes: ``attach`` on RunPodSandbox, ``detach`` on StopPodSandbox."""

    def __init__(self, conf_dir: str, bin_dirs: list[str], cache_dir: str) -> None:
        self.conf_dir = conf_dir
        self.bin_dirs = bin_dirs
        self.cache_dir = cache_dir
        self._lock = threading.Lock()
        self._stamp: tuple[Any, ...] | None = None
        self._default: Any = None
        self._error = "cni config uninitialized"
        self._cni: Any = None
        self.pod_cidr = ""

    # -- config ---------------------------------------------------------------------------

    def _conf_dir_stamp(self) -> tuple[Any, ...]:
        try:
            entries = sorted(os.scandir(self.conf_dir), key=lambda e: e.name)
        except FileNotFoundError:
            return ("missing",)
        try:
            return tuple((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in entries)
        except FileNotFoundError:  # a file removed while we looked: look again next time
            return ("changing", time.monotonic_ns())

    def _reload(self) -> None:
        """Load the default network again when the conf dir changed (a few stat calls)."""
        stamp = self._conf_dir_stamp()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            net, warnings = conf.load_conf_dir(self.conf_dir)
        except Exception as exc:  # NoConfigFiles, NoValidNetwork, decoding errors
            self._default, self._error = None, f"cni config uninitialized: {exc}"
            log.warning("CNI: %s", self._error)
            return
        for w in warnings:
            log.warning("CNI conf dir %s: %s", self.conf_dir, w)
        self._default, self._error = net, ""
        log.info("CNI: default network %r from %s", net.name, net.file)

    def _client(self) -> Any:
        if self._cni is None:
            self._cni = CNIConfig(self.bin_dirs, cache_dir=self.cache_dir)
        return self._cni

    def status(self) -> tuple[bool, str]:
        """(ready, message): ready when the conf dir has a valid default network."""
        with self._lock:
            self._reload()
            return self._default is not None, self._error

    # -- ADD / DEL ------------------------------------------------------------------------

    def plan(self, pod: PodRef, port_mappings: list[PortMapping]) -> NetworkAttachment:
        """The network ADD will use (checkpointed before ADD, so a crash mid-ADD is undone)."""
        with self._lock:
            self._reload()
            default, error = self._default, self._error
        if default is None:
            raise FailedPrecondition(f"network not ready: {error} (conf dir {self.conf_dir})")
        applied = False
        if port_mappings:
            if _has_port_mapping_capability(default.plugins):
                applied = True
            else:
                log.warning(
                    "sandbox %s asks for hostPorts but network %r has no plugin with the "
                    "portMappings capability (add portmap to the chain); they are not mapped",
                    pod.sandbox_id[:12], default.name,
                )
        return NetworkAttachment(network=_conf_list_to_dict(default),
                                 port_mappings_applied=applied)

    def attach(
        self, pod: PodRef, netns_path: str, port_mappings: list[PortMapping],
        plan: NetworkAttachment,
    ) -> NetworkAttachment:
        """CNI ADD loopback, then the planned network; on failure the caller runs ``detach``."""
        cni = self._client()
        net = _conf_list_from_dict(plan.network)
        lo_rt, rt = _runtime_confs(pod, netns_path, plan.port_mappings_applied, port_mappings)
        try:
            cni.add_network_list(conf.loopback_network(), lo_rt)
        except Exception as exc:
            raise Unavailable(f"CNI ADD of loopback failed: {exc}") from exc
        try:
            result = cni.add_network_list(net, rt)
        except Exception as exc:
            raise Unavailable(f"CNI ADD of network {net.name!r} failed: {exc}") from exc
        ips = _pod_ips(result)
        if not ips:
            raise Unavailable(f"CNI network {net.name!r} gave the pod no IP address")
        return NetworkAttachment(
            network=plan.network,
            ips=ips,
            result=result.to_dict(),
            port_mappings_applied=plan.port_mappings_applied,
        )

    def detach(
        self, pod: PodRef, netns_path: str, att: NetworkAttachment,
        port_mappings: list[PortMapping],
    ) -> None:
        """CNI DEL of the sandbox's network, then loopback; raises Unavailable on failure.

        The loopback is deleted even when the network's DEL fails (a failed ADD of a plugin
        that cannot be found, say) or the namespace is gone: its DEL is what removes its
        cached result, which would otherwise stay behind once per failed sandbox.
        """
        cni = self._client()
        lo_rt, rt = _runtime_confs(pod, netns_path, att.port_mappings_applied, port_mappings)
        net = _conf_list_from_dict(att.network)
        try:
            cni.del_network_list(net, rt)
        except Exception as exc:
            raise Unavailable(f"CNI DEL of network {net.name!r} failed: {exc}") from exc
        finally:
            self._del_quietly(conf.loopback_network(), lo_rt)

    def detach_cached(self, sandbox_id: str) -> int:
        """CNI DEL of every attachment libcni's cache records for ``sandbox_id``.

        For a sandbox whose own record is lost (an unreadable checkpoint): the cache holds the
        network config, netns, args and capabilities each ADD used. Returns how many it undid.
        """
        done = 0
        for att in cache.list_attachments(self.cache_dir, sandbox_id):
            try:
                net = conf.conflist_from_bytes(att.config)
            except Exception as exc:
                log.warning("cached CNI attachment of %s unreadable: %s", sandbox_id[:12], exc)
                continue
            rt = RuntimeConf(att.container_id, att.netns if os.path.exists(att.netns) else "",
                             att.ifname, list(att.cni_args), dict(att.capability_args))
            self._del_quietly(net, rt)
            done += 1
        return done

    def _del_quietly(self, net: Any, rt: Any) -> None:
        try:
            self._client().del_network_list(net, rt)
        except Exception as exc:
            log.warning("CNI DEL of %s during cleanup failed: %s", getattr(net, "name", "?"), exc)
