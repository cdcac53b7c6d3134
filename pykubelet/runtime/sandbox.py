"""Pod sandboxes: pinned namespaces + CNI + the pod's hosts/resolv.conf/hostname files.

RunPodSandbox, step by step (dockershim's order, without the pause container):
  1. validate the request and reserve the pod's name (one sandbox per name+uid+attempt);
  2. pin fresh net, IPC and UTS namespaces with bind mounts and set the hostname
     (``netns.pin``; a pod on the node's network or IPC uses the host's instead);
  3. write the checkpoint (so a crash from here on is cleaned up by ``recover``);
  4. CNI ADD: loopback, then the default network with the hostPorts (``podnet``);
  5. write ``hosts``, ``resolv.conf`` (from DNSConfig, else the host's) and ``hostname``;
  6. checkpoint again as READY.
Stop: stop the containers, CNI DEL (which removes the hostPort rules), release the
namespaces; the sandbox stays listed as NOTREADY. Remove: stop if needed, remove the
containers, then the sandbox's directory and checkpoint.

Containers get what they need through :class:`SandboxInfo` (``SandboxManager.get``).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import hashlib
import ipaddress
import json
import logging
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pycni.atomic_files import write_atomic
from pycni.errors import PluginNotAvailable
from pykubelet.runtime import netns, pidns
from pykubelet.runtime.errors import (
    AlreadyExists,
    CRIError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
)
from pykubelet.runtime.podnet import NetworkAttachment, PodNetwork, PodRef, PortMapping

log = logging.getLogger(__name__)

READY = "SANDBOX_READY"
NOTREADY = "SANDBOX_NOTREADY"
# NamespaceMode names as CRI spells them
POD, CONTAINER, NODE, TARGET = "POD", "CONTAINER", "NODE", "TARGET"
RUNTIME_HANDLERS = ("", "runc")
CHECKPOINT = "sandbox.json"
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME_RE = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")

MANAGED_HOSTS = """# Kubernetes-managed hosts file (pykubelet runtime).
127.0.0.1\tlocalhost
::1\tlocalhost ip6-localhost ip6-loopback
fe00::0\tip6-localnet
fe00::0\tip6-mcastprefix
fe00::1\tip6-allnodes
fe00::2\tip6-allrouters
"""


@dataclass
class DNSSettings:
    servers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)


@dataclass
class SandboxSpec:
    """A RunPodSandbox request in domain terms (sandbox_rpc converts from the proto)."""

    name: str
    namespace: str
    uid: str
    attempt: int = 0
    hostname: str = ""
    log_directory: str = ""
    dns: DNSSettings | None = None
    port_mappings: list[PortMapping] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    cgroup_parent: str = ""
    network_mode: str = POD
    ipc_mode: str = POD
    pid_mode: str = CONTAINER
    security: dict[str, Any] = field(default_factory=dict)
    sysctls: dict[str, str] = field(default_factory=dict)
    runtime_handler: str = ""


@dataclass
class SandboxInfo:
    """Everything the container side needs about a sandbox (and what the checkpoint holds).

    Namespace paths are "" when the pod uses the node's namespace (hostNetwork/hostIPC).
    ``security`` holds the LinuxSandboxSecurityContext as plain data: ``privileged`` (bool),
    ``seccomp``/``apparmor`` ({"profile_type": "RuntimeDefault"|"Unconfined"|"Localhost",
    "localhost_ref": str}), ``run_as_user``/``run_as_group`` (int or None),
    ``supplemental_groups`` (list[int]), ``readonly_rootfs`` (bool).
    ``state`` is SANDBOX_READY or SANDBOX_NOTREADY; containers may only be created in READY.
    """

    id: str
    name: str
    namespace: str
    uid: str
    attempt: int
    netns_path: str
    ipc_ns_path: str
    uts_ns_path: str
    hostname: str
    hosts_path: str
    resolv_path: str
    hostname_path: str
    log_directory: str
    cgroup_parent: str
    labels: dict[str, str]
    annotations: dict[str, str]
    state: str
    ip: str
    pid_ns_mode: str
    security: dict[str, Any]
    network_mode: str = POD
    ipc_mode: str = POD
    additional_ips: list[str] = field(default_factory=list)
    created_at: int = 0  # nanoseconds since the epoch
    port_mappings: list[PortMapping] = field(default_factory=list)
    dns: DNSSettings | None = None
    sysctls: dict[str, str] = field(default_factory=dict)
    runtime_handler: str = ""
    network: NetworkAttachment | None = None  # set while CNI ADD is in effect
    pid_ns_path: str = ""  # pid=POD: /proc/<holder>/ns/pid, which containers join
    pid_holder: list[int] | None = None  # [pid, start_time] of the catatonit holding it

    @property
    def pod_ref(self) -> PodRef:
        return PodRef(self.id, self.name, self.namespace, self.uid)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["network"] = self.network.to_dict() if self.network else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SandboxInfo:
        d = dict(d)
        d["port_mappings"] = [PortMapping(**m) for m in d.get("port_mappings", [])]
        d["dns"] = DNSSettings(**d["dns"]) if d.get("dns") else None
        d["network"] = NetworkAttachment.from_dict(d["network"]) if d.get("network") else None
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


class SandboxContainers(Protocol):
    """The container side, as the sandbox manager needs it (ContainerManager satisfies it)."""

    def stop_all_in_sandbox(self, sandbox_id: str, timeout: int) -> None: ...

    def remove_all_in_sandbox(self, sandbox_id: str) -> None: ...


CHECKPOINT_VERSION = 1
_SANDBOX_ID = re.compile(r"^[0-9a-f]{64}$")


def encode_checkpoint(info: SandboxInfo) -> bytes:
    """The checkpoint file: versioned, with a checksum of the sandbox record (kubelet-style)."""
    body = json.dumps(info.to_dict(), sort_keys=True, separators=(",", ":"))
    doc = {"version": CHECKPOINT_VERSION, "checksum": hashlib.sha256(body.encode()).hexdigest(),
           "sandbox": info.to_dict()}
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def decode_checkpoint(data: bytes) -> SandboxInfo:
    """ValueError for a corrupt, truncated or unknown-version checkpoint."""
    doc = json.loads(data)
    if not isinstance(doc, dict) or doc.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"unsupported checkpoint version {doc.get('version')!r}"
                         if isinstance(doc, dict) else "not a JSON object")
    body = json.dumps(doc["sandbox"], sort_keys=True, separators=(",", ":"))
    if hashlib.sha256(body.encode()).hexdigest() != doc.get("checksum"):
        raise ValueError("checksum mismatch")
    return SandboxInfo.from_dict(doc["sandbox"])


def validate_spec(spec: SandboxSpec) -> None:
    """InvalidArgument naming the field for anything we cannot honour."""
    for fld in ("name", "namespace", "uid"):
        if not getattr(spec, fld):
            raise InvalidArgument(f"config.metadata.{fld}: must not be empty")
    if spec.runtime_handler not in RUNTIME_HANDLERS:
        raise InvalidArgument(
            f"runtime_handler: unknown runtime handler {spec.runtime_handler!r} "
            f"(this runtime has {', '.join(repr(h) for h in RUNTIME_HANDLERS)})"
        )
    if spec.hostname and not _HOSTNAME_RE.match(spec.hostname):
        raise InvalidArgument(f"config.hostname: {spec.hostname!r} is not a valid host name")
    if len(spec.hostname) > 64:
        raise InvalidArgument("config.hostname: longer than 64 characters")
    for mode_field, allowed in (("network", (POD, NODE)), ("ipc", (POD, NODE)),
                                ("pid", (POD, CONTAINER, NODE))):
        value = getattr(spec, f"{mode_field}_mode")
        if value not in allowed:
            raise InvalidArgument(
                f"config.linux.security_context.namespace_options.{mode_field}: "
                f"{value} is not supported for a sandbox (use one of {', '.join(allowed)})"
            )
    if spec.dns:
        for i, server in enumerate(spec.dns.servers):
            try:
                ipaddress.ip_address(server)
            except ValueError:
                raise InvalidArgument(
                    f"config.dns_config.servers[{i}]: {server!r} is not an IP address"
                ) from None
    for i, m in enumerate(spec.port_mappings):
        where = f"config.port_mappings[{i}]"
        if not 0 <= m.host_port <= 65535:
            raise InvalidArgument(f"{where}.host_port: {m.host_port} is outside 0..65535")
        if not 0 < m.container_port <= 65535:
            raise InvalidArgument(
                f"{where}.container_port: {m.container_port} is outside 1..65535"
            )
        if m.host_ip:
            try:
                ipaddress.ip_address(m.host_ip)
            except ValueError:
                raise InvalidArgument(f"{where}.host_ip: {m.host_ip!r} is not an IP") from None
    for key in spec.sysctls:
        kind = netns.sysctl_namespace(netns.normalize_sysctl(key))
        where = f"config.linux.sysctls[{key!r}]"
        if not kind:
            raise InvalidArgument(f"{where}: not a namespaced sysctl; a pod may only set "
                                  "net.*, IPC (kernel.shm*, kernel.msg*, kernel.sem) and "
                                  "fs.mqueue.* sysctls")
        if kind == "net" and spec.network_mode == NODE:
            raise InvalidArgument(f"{where}: a pod on the node's network cannot set net.*")
        if kind == "ipc" and spec.ipc_mode == NODE:
            raise InvalidArgument(f"{where}: a pod in the node's IPC namespace cannot set it")
    if spec.log_directory and not os.path.isabs(spec.log_directory):
        raise InvalidArgument(
            f"config.log_directory: {spec.log_directory!r} must be an absolute path"
        )


def resolv_conf_text(dns: DNSSettings | None, host_resolv: str = "/etc/resolv.conf") -> str:
    """resolv.conf as kubelet would mount it: from DNSConfig, else a copy of the host's."""
    if dns is None or not (dns.servers or dns.searches or dns.options):
        try:
            return Path(host_resolv).read_text()
        except FileNotFoundError:
            return ""
    lines = []
    if dns.searches:
        lines.append("search " + " ".join(dns.searches))
    lines.extend(f"nameserver {s}" for s in dns.servers)
    if dns.options:
        lines.append("options " + " ".join(dns.options))
    return "\n".join(lines) + "\n"


def hosts_text(hostname: str, ips: list[str]) -> str:
    """kubelet's managed hosts file: localhost entries, then the pod's IPs and hostname."""
    text = MANAGED_HOSTS
    for ip in ips:
        text += f"{ip}\t{hostname}\n"
    return text


class SandboxManager:
    """Owns sandboxes: their namespaces, network and files, checkpointed under ``root``."""

    def __init__(
        self,
        root: Path,
        network: PodNetwork,
        netns_dir: str = "/run/netns",
        netns_prefix: str = "pykubelet-",
        pid_holder_binary: str = pidns.DEFAULT_HOLDER,
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.network = network
        self.netns_dir = netns_dir
        self.netns_prefix = netns_prefix
        self.pid_holder_binary = pid_holder_binary
        self.containers: SandboxContainers | None = None
        self._lock = threading.Lock()
        self._sandboxes: dict[str, SandboxInfo] = {}
        self._names: dict[str, str] = {}  # reserved name -> sandbox id
        self._locks: dict[str, threading.Lock] = {}

    # -- lookup ---------------------------------------------------------------------------

    def _dir(self, sandbox_id: str) -> Path:
        return self.root / sandbox_id

    @staticmethod
    def _name_key(name: str, namespace: str, uid: str, attempt: int) -> str:
        return f"{name}_{namespace}_{uid}_{attempt}"

    def resolve_id(self, sandbox_id: str) -> str:
        """Full id from an id or a unique prefix (as crictl passes truncated ids)."""
        if not sandbox_id:
            raise InvalidArgument("pod_sandbox_id: must not be empty")
        with self._lock:
            if sandbox_id in self._sandboxes:
                return sandbox_id
            matches = [i for i in self._sandboxes if i.startswith(sandbox_id)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NotFound(f"pod sandbox {sandbox_id!r} not found")
        raise InvalidArgument(f"pod_sandbox_id: {sandbox_id!r} matches {len(matches)} sandboxes")

    def get(self, sandbox_id: str) -> SandboxInfo:
        """The sandbox's info (a copy); NotFound when there is none."""
        full = self.resolve_id(sandbox_id)
        with self._lock:
            info = self._sandboxes.get(full)
            if info is None:
                raise NotFound(f"pod sandbox {sandbox_id!r} not found")
            return dataclasses.replace(info)

    def list(self) -> list[SandboxInfo]:
        with self._lock:
            return [dataclasses.replace(s) for s in self._sandboxes.values()]

    def view(self, sandbox_id: str) -> SandboxInfo:
        """Like ``get`` without the copy, for read-only RPCs: the caller must not mutate it
        (changes here replace the object or set fields and checkpoint, never edit dicts)."""
        full = self.resolve_id(sandbox_id)
        with self._lock:
            info = self._sandboxes.get(full)
        if info is None:
            raise NotFound(f"pod sandbox {sandbox_id!r} not found")
        return info

    def list_view(self) -> builtins.list[SandboxInfo]:
        """Like ``list`` without the copies (read-only, as ``view``)."""
        with self._lock:
            return list(self._sandboxes.values())

    def _sandbox_lock(self, sandbox_id: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(sandbox_id, threading.Lock())

    @contextlib.contextmanager
    def locked(self, sandbox_id: str) -> Iterator[str]:
        """Hold the sandbox still (no stop/remove meanwhile); yields the full id.

        CreateContainer runs under it, so a container can never be made in a sandbox that
        StopPodSandbox is tearing down (it would join released namespaces or be missed).
        """
        full = self.resolve_id(sandbox_id)
        with self._sandbox_lock(full):
            yield full

    # -- checkpoint -----------------------------------------------------------------------

    def _checkpoint(self, info: SandboxInfo) -> None:
        write_atomic(self._dir(info.id) / CHECKPOINT, encode_checkpoint(info), mode=0o600)

    def recover(self) -> builtins.list[str]:
        """Load every checkpoint after a (re)start; finish half-made sandboxes as NOTREADY.

        A sandbox whose RunPodSandbox never completed (a crash between pinning and the final
        checkpoint) has its network and namespaces released so nothing leaks.
        """
        loaded: list[str] = []
        for d in sorted(self.root.iterdir()) if self.root.exists() else []:
            path = d / CHECKPOINT
            if not path.is_file():
                continue
            try:
                info = decode_checkpoint(path.read_bytes())
                if info.id != d.name:
                    raise ValueError(f"names sandbox {info.id!r}")
            except (ValueError, TypeError, KeyError) as exc:
                log.error("skipping unreadable sandbox checkpoint %s: %s", path, exc)
                continue
            with self._lock:
                self._sandboxes[info.id] = info
                self._names[self._name_key(info.name, info.namespace, info.uid, info.attempt)] = (
                    info.id
                )
            lost = (info.netns_path and not netns.is_mountpoint(info.netns_path)) or (
                info.pid_holder and not pidns.alive(pidns.PidHolder(*info.pid_holder)))
            if info.state == READY and lost:
                log.warning("sandbox %s lost a namespace while the runtime was down; "
                            "marking it NOTREADY", info.id)
                info.state = NOTREADY
                try:
                    self._release(info)
                except Exception as exc:  # CNI DEL failed: StopPodSandbox retries it
                    log.error("releasing sandbox %s: %s", info.id, exc)
                self._checkpoint(info)
            loaded.append(info.id)
        # half-made sandboxes are recorded with state "CREATING"
        for sid in loaded:
            info = self._sandboxes[sid]
            if info.state not in (READY, NOTREADY):
                log.warning("sandbox %s was being created when the runtime stopped", sid)
                info.state = NOTREADY
                try:
                    self._release(info)
                except Exception as exc:  # CNI DEL failed: StopPodSandbox retries it
                    log.error("releasing half-made sandbox %s: %s", sid, exc)
                self._checkpoint(info)
        self._collect_orphans(set(loaded))
        return loaded

    def _collect_orphans(self, known: set[str]) -> None:
        """Directories under our root that no checkpoint names (a crash right after mkdir).

        Pins are never collected by name: RunPodSandbox checkpoints a pin's path before
        creating it, so every pin we made is named by a checkpoint, and a pin with our
        prefix but no checkpoint belongs to another runtime sharing the netns directory.
        """
        for d in self.root.iterdir():
            if d.is_dir() and d.name not in known:
                log.warning("removing orphaned sandbox directory %s", d)
                # named after one of our own sandbox ids: its CNI attachments and its pin are
                # ours (an unreadable checkpoint); libcni's cache still knows the networks
                if _SANDBOX_ID.match(d.name):
                    try:
                        self.network.detach_cached(d.name)
                    except Exception as exc:
                        log.error("CNI DEL for orphaned sandbox %s: %s", d.name[:12], exc)
                    net = os.path.join(self.netns_dir, f"{self.netns_prefix}{d.name[:16]}")
                    if os.path.exists(net):
                        netns.unpin(netns.PinnedNamespaces(net=net, ipc="", uts=""))
                for f in (d / "ns" / "ipc", d / "ns" / "uts"):
                    netns.unmount(str(f))
                shutil.rmtree(d, ignore_errors=True)

    # -- run ------------------------------------------------------------------------------

    def run(self, spec: SandboxSpec) -> str:
        """RunPodSandbox; returns the new sandbox's id. Leaves nothing behind on failure."""
        validate_spec(spec)
        key = self._name_key(spec.name, spec.namespace, spec.uid, spec.attempt)
        sandbox_id = secrets.token_hex(32)
        with self._lock:
            if key in self._names:
                raise AlreadyExists(
                    f"pod sandbox name {key!r} is reserved for {self._names[key][:12]}; "
                    "remove that sandbox first (or use another attempt)"
                )
            self._names[key] = sandbox_id
        d = self._dir(sandbox_id)
        hostname = spec.hostname or (spec.name[:63] if spec.network_mode != NODE else "")
        own_net = spec.network_mode != NODE
        own_ipc = spec.ipc_mode != NODE
        short = sandbox_id[:16]
        net_pin = os.path.join(self.netns_dir, f"{self.netns_prefix}{short}")
        info = SandboxInfo(
            id=sandbox_id, name=spec.name, namespace=spec.namespace, uid=spec.uid,
            attempt=spec.attempt,
            netns_path=net_pin if own_net else "",
            ipc_ns_path=str(d / "ns" / "ipc") if own_ipc else "",
            uts_ns_path=str(d / "ns" / "uts") if own_net else "",
            hostname=hostname, hosts_path=str(d / "hosts"), resolv_path=str(d / "resolv.conf"),
            hostname_path=str(d / "hostname"), log_directory=spec.log_directory,
            cgroup_parent=spec.cgroup_parent, labels=dict(spec.labels),
            annotations=dict(spec.annotations), state="CREATING", ip="",
            pid_ns_mode=spec.pid_mode, security=dict(spec.security),
            network_mode=spec.network_mode, ipc_mode=spec.ipc_mode,
            created_at=time.time_ns(), port_mappings=list(spec.port_mappings), dns=spec.dns,
            sysctls=dict(spec.sysctls), runtime_handler=spec.runtime_handler,
        )
        try:
            d.mkdir(mode=0o700)
            if own_net:
                # what ADD will use, recorded first: a crash from here on is undone by recover()
                info.network = self.network.plan(info.pod_ref, info.port_mappings)
            with self._lock:
                self._sandboxes[sandbox_id] = info
            self._checkpoint(info)
            if own_net or own_ipc:
                netns.pin(self._pins(info), hostname if own_net else "")
                try:
                    netns.apply_sysctls(self._pins(info), {
                        netns.normalize_sysctl(k): v for k, v in info.sysctls.items()})
                except OSError as exc:
                    raise InvalidArgument(f"config.linux.sysctls: {exc.strerror}") from exc
            if spec.pid_mode == POD:
                if not os.access(self.pid_holder_binary, os.X_OK):
                    raise FailedPrecondition(
                        "config.linux.security_context.namespace_options.pid: POD needs "
                        f"{self.pid_holder_binary} (Debian's catatonit) as the pod's init")
                holder = pidns.start_holder(self.pid_holder_binary)
                info.pid_holder = [holder.pid, holder.start_time]
                info.pid_ns_path = holder.ns_path
                self._checkpoint(info)
            if own_net:
                assert info.network is not None
                info.network = self.network.attach(
                    info.pod_ref, info.netns_path, info.port_mappings, info.network
                )
                info.ip = info.network.ips[0]
                info.additional_ips = info.network.ips[1:]
            self._write_pod_files(info)
            info.state = READY
            self._checkpoint(info)
        except BaseException as exc:
            if isinstance(exc, CRIError):  # the CRI layer logs the error itself
                log.debug("RunPodSandbox %s/%s failed (%s); cleaning up", spec.namespace,
                          spec.name, exc.msg)
            else:
                log.exception("RunPodSandbox %s/%s failed; cleaning up", spec.namespace,
                              spec.name)
            self._discard(info)
            raise
        log.info("sandbox %s ready: %s/%s ip=%s", short, spec.namespace, spec.name, info.ip)
        return sandbox_id

    def _pins(self, info: SandboxInfo) -> netns.PinnedNamespaces:
        return netns.PinnedNamespaces(net=info.netns_path, ipc=info.ipc_ns_path,
                                      uts=info.uts_ns_path)

    def _write_pod_files(self, info: SandboxInfo) -> None:
        d = self._dir(info.id)
        if info.network_mode == NODE:
            hosts = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else ""
            hostname = os.uname().nodename
        else:
            hosts = hosts_text(info.hostname, [info.ip, *info.additional_ips] if info.ip else [])
            hostname = info.hostname
        # not durable: the containers these files serve do not outlive a host crash
        write_atomic(d / "hosts", hosts, durable=False)
        write_atomic(d / "resolv.conf", resolv_conf_text(info.dns), durable=False)
        write_atomic(d / "hostname", hostname + "\n", durable=False)

    def _discard(self, info: SandboxInfo) -> None:
        """Undo a failed run: network, namespaces, files, reservations."""
        try:
            self._release(info, force=True)
        except Exception as exc:
            log.error("cleaning up sandbox %s: %s", info.id[:12], exc)
        shutil.rmtree(self._dir(info.id), ignore_errors=True)
        with self._lock:
            self._forget(info)
            self._locks.pop(info.id, None)

    def _forget(self, info: SandboxInfo) -> None:
        """Drop the sandbox and its name's reservation (the caller holds ``_lock``)."""
        self._sandboxes.pop(info.id, None)
        key = self._name_key(info.name, info.namespace, info.uid, info.attempt)
        if self._names.get(key) == info.id:
            del self._names[key]

    def _release(self, info: SandboxInfo, force: bool = False) -> None:
        """CNI DEL (once) and unpin the namespaces.

        When CNI DEL fails this raises and keeps the namespaces, so a later StopPodSandbox
        retries DEL with them; with ``force`` (undoing a failed RunPodSandbox) it logs the
        failure and releases everything else anyway.
        """
        if info.network is not None:
            ns_path = info.netns_path if netns.is_mountpoint(info.netns_path) else ""
            try:
                self.network.detach(info.pod_ref, ns_path, info.network, info.port_mappings)
            except Exception as exc:
                if not force:
                    raise
                # a plugin that cannot be found made nothing to undo: no warning for it
                quiet = isinstance(exc.__cause__, PluginNotAvailable)
                log.log(logging.DEBUG if quiet else logging.WARNING, "sandbox %s: %s",
                        info.id[:12], exc)
            info.network = None
        if info.pid_holder:
            pidns.stop_holder(pidns.PidHolder(*info.pid_holder))
            info.pid_holder = None
            info.pid_ns_path = ""
        if info.netns_path or info.ipc_ns_path or info.uts_ns_path:
            netns.unpin(self._pins(info))

    # -- stop / remove --------------------------------------------------------------------

    def stop(self, sandbox_id: str) -> None:
        """StopPodSandbox: kill containers, CNI DEL, release namespaces; idempotent."""
        info = self.get(sandbox_id)
        with self._sandbox_lock(info.id):
            info = self.get(info.id)
            was_ready = info.state == READY
            if self.containers is not None:
                self.containers.stop_all_in_sandbox(info.id, 0)
            self._release(info)  # raises Unavailable when CNI DEL fails; retried next stop
            info.state = NOTREADY
            with self._lock:
                if info.id in self._sandboxes:
                    self._sandboxes[info.id] = info
            self._checkpoint(info)
        if was_ready:
            log.info("sandbox %s stopped", info.id[:16])

    def remove(self, sandbox_id: str) -> None:
        """RemovePodSandbox: stop if needed, remove containers and every file; idempotent."""
        try:
            info = self.get(sandbox_id)
        except NotFound:
            return
        self.stop(info.id)
        with self._sandbox_lock(info.id):
            if self.containers is not None:
                self.containers.remove_all_in_sandbox(info.id)
            shutil.rmtree(self._dir(info.id), ignore_errors=True)
            with self._lock:
                self._forget(info)
        with self._lock:
            self._locks.pop(info.id, None)
        log.info("sandbox %s removed", info.id[:16])

    def require_ready(self, sandbox_id: str) -> SandboxInfo:
        """For CreateContainer: the sandbox, or FailedPrecondition when it is not READY."""
        info = self.get(sandbox_id)
        if info.state != READY:
            raise FailedPrecondition(
                f"pod sandbox {info.id[:12]} is not ready ({info.state}); "
                "cannot create containers in it"
            )
        return info
