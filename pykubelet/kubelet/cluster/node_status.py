"""The node's own object in the API: registration, status and the heartbeat lease
(kubelet's kubelet_node_status.go, its nodestatus setters and the node lease controller).

Registration creates the Node with its labels (``kubernetes.io/hostname``/``os``/``arch``,
the config's labels), taints, ``podCIDR`` and a first status; an existing Node of that
name is taken over. Every ``STATUS_PERIOD_S`` the status is patched: capacity (psutil) and
allocatable (the config's overrides), addresses, ``nodeInfo`` with real versions, the
images the runtime holds, and the conditions from real signals: Ready (the runtime and
its network ready, the PLEG healthy), MemoryPressure (less than 100Mi available, kubelet's
default eviction threshold), DiskPressure (less than 10% of the root filesystem free),
PIDPressure (fewer than 5% of pid_max left). A condition's ``lastTransitionTime`` only
moves when its status changes. The Lease in ``kube-node-lease`` is renewed every
``LEASE_PERIOD_S`` (10 s) and is what the control plane's node lifecycle watches.

The pure part (``build_status``/``conditions``) takes its readings as arguments, so it
is tested without a node.
"""

from __future__ import annotations

import datetime as dt
import logging
import platform
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from pykubelet.api.machinery.timeutil import micro_time, now, rfc3339
from pykubelet.client.rest import LEASES, NODES, ClientError, RESTClient, StatusError

log = logging.getLogger(__name__)

STATUS_PERIOD_S = 10.0
LEASE_PERIOD_S = 10.0
LEASE_DURATION_S = 40
NODE_LEASE_NAMESPACE = "kube-node-lease"
KUBELET_PORT = 10250
MEMORY_EVICTION_BYTES = 100 * 1024 * 1024
DISK_FREE_FRACTION = 0.10
PID_FREE_FRACTION = 0.05
MAX_IMAGES = 50
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"


@dataclass
class Readings:
    """The signals the node's conditions come from, read at one moment."""

    # kubelet's runtime state errors, in its wording (``runtime_errors``)
    runtime_errors: list[str] = field(default_factory=list)
    pleg_healthy: bool = True
    pleg_message: str = ""
    memory_available: int = 1 << 40
    disk_free_fraction: float = 1.0
    pids_free_fraction: float = 1.0


@dataclass
class Facts:
    """What does not change while the agent runs."""

    cpu: int
    memory: int
    ephemeral_storage: int
    node_info: dict[str, str]
    addresses: list[dict[str, str]]
    allocatable_overrides: dict[str, str] = field(default_factory=dict)
    kubelet_port: int = KUBELET_PORT  # where the node serves logs/exec (config `port`)


def _condition(type_: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def conditions(r: Readings) -> list[dict[str, str]]:
    """The four node conditions from readings (nodestatus.ReadyCondition and the
    pressure setters), without times."""
    mem = r.memory_available < MEMORY_EVICTION_BYTES
    disk = r.disk_free_fraction < DISK_FREE_FRACTION
    pid = r.pids_free_fraction < PID_FREE_FRACTION
    out = [
        _condition("MemoryPressure", str(mem),
                   "KubeletHasInsufficientMemory" if mem else "KubeletHasSufficientMemory",
                   "kubelet has insufficient memory available" if mem
                   else "kubelet has sufficient memory available"),
        _condition("DiskPressure", str(disk),
                   "KubeletHasDiskPressure" if disk else "KubeletHasNoDiskPressure",
                   "kubelet has disk pressure" if disk else "kubelet has no disk pressure"),
        _condition("PIDPressure", str(pid),
                   "KubeletHasInsufficientPID" if pid else "KubeletHasSufficientPID",
                   "kubelet has insufficient PID available" if pid
                   else "kubelet has sufficient PID available"),
    ]
    problems = list(r.runtime_errors)
    if not r.pleg_healthy:
        problems.append(r.pleg_message
                        or "PLEG is not healthy: pleg was last seen active too long ago")
    if problems:
        # utilerrors.NewAggregate's Error(): one error as it is, several in brackets
        message = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
        out.append(_condition("Ready", "False", "KubeletNotReady", message))
    else:
        out.append(_condition("Ready", "True", "KubeletReady",
                              "kubelet is posting ready status"))
    return out


class RuntimeCondition(Protocol):
    """A CRI RuntimeCondition (runtime.v1)."""

    type: str
    status: bool
    reason: str
    message: str


def _condition_string(c: RuntimeCondition) -> str:
    """kubecontainer.RuntimeCondition's String(): ``NetworkReady=false reason:R message:M``."""
    return f"{c.type}={'true' if c.status else 'false'} reason:{c.reason} message:{c.message}"


def runtime_errors(conditions: Sequence[RuntimeCondition] | None) -> list[str]:
    """The errors kubelet's updateRuntimeUp records from the runtime's Status: a runtime
    not ready, its network not ready; ``None`` (no answer) is the runtime down."""
    if conditions is None:
        return ["container runtime is down"]
    by_type = {c.type: c for c in conditions}
    errs = []
    runtime = by_type.get("RuntimeReady")
    if runtime is not None and not runtime.status:
        errs.append(f"container runtime not ready: {_condition_string(runtime)}")
    network = by_type.get("NetworkReady")
    if network is not None and not network.status:
        errs.append(f"container runtime network not ready: {_condition_string(network)}")
    return errs


def stamp(new: list[dict[str, str]], old: list[dict[str, Any]], at: dt.datetime
          ) -> list[dict[str, Any]]:
    """Heartbeat times on every condition; transition times kept while a status holds."""
    before = {c.get("type"): c for c in old}
    out = []
    for c in new:
        prev = before.get(c["type"])
        transition = (prev.get("lastTransitionTime") if prev is not None
                      and prev.get("status") == c["status"] else None) or rfc3339(at)
        out.append({**c, "lastHeartbeatTime": rfc3339(at), "lastTransitionTime": transition})
    return out


def _quantity_bytes(n: int) -> str:
    return f"{n // 1024}Ki"


def capacity(f: Facts) -> dict[str, str]:
    return {"cpu": str(f.cpu), "memory": _quantity_bytes(f.memory),
            "ephemeral-storage": _quantity_bytes(f.ephemeral_storage), "pods": "110"}


def build_status(f: Facts, r: Readings, images: list[dict[str, Any]],
                 old_conditions: list[dict[str, Any]], at: dt.datetime) -> dict[str, Any]:
    cap = capacity(f)
    alloc = dict(cap)
    alloc.update(f.allocatable_overrides)
    return {
        "capacity": cap,
        "allocatable": alloc,
        "conditions": stamp(conditions(r), old_conditions, at),
        "addresses": f.addresses,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": f.kubelet_port}},
        "nodeInfo": f.node_info,
        "images": images,
    }


# ---------------------------------------------------------------------------- readings


def run_if_due(t: float, due: float, period: float, work: Callable[[], object],
               what: str) -> float:
    """One of the status loop's periodic writes (the lease, the status): ``work`` when
    ``due`` at ``t``; the next due time, a period on, or within a second after a failure
    to reach the API server (logged, as kubelet logs and retries it)."""
    if t < due:
        return due
    try:
        work()
    except (ClientError, OSError) as exc:
        log.warning("%s: %s", what, exc)
        return t + min(period, 1.0)
    return t + period


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def os_image() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return "Linux"


def arch() -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def node_info(runtime_version: str, kubelet_version: str) -> dict[str, str]:
    machine_id = _read("/etc/machine-id")
    return {
        "machineID": machine_id,
        "systemUUID": _read("/sys/class/dmi/id/product_uuid") or machine_id,
        "bootID": _read("/proc/sys/kernel/random/boot_id"),
        "kernelVersion": platform.release(),
        "osImage": os_image(),
        "containerRuntimeVersion": runtime_version,
        "kubeletVersion": kubelet_version,
        "kubeProxyVersion": "",
        "operatingSystem": "linux",
        "architecture": arch(),
    }


def read_signals(root_dir: str) -> Readings:
    mem = psutil.virtual_memory()
    try:
        du = shutil.disk_usage(root_dir)
        disk_free = du.free / du.total if du.total else 1.0
    except OSError:
        disk_free = 1.0
    try:
        pid_max = int(_read("/proc/sys/kernel/pid_max") or "32768")
        pids_free = max(0.0, 1 - len(psutil.pids()) / pid_max)
    except (OSError, ValueError):
        pids_free = 1.0
    return Readings(memory_available=mem.available, disk_free_fraction=disk_free,
                    pids_free_fraction=pids_free)


def node_labels(name: str, extra: dict[str, str], control_plane: bool) -> dict[str, str]:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch(),
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": arch(),
    }
    if control_plane:
        labels[CONTROL_PLANE_LABEL] = ""
    labels.update(extra)
    return labels


# ---------------------------------------------------------------------------- the reporter


class NodeStatusReporter:
    """Registers the Node, keeps its status and its Lease fresh (two loops, one thread)."""

    def __init__(
        self,
        client: RESTClient,
        name: str,
        *,
        labels: dict[str, str],
        taints: list[dict[str, Any]],
        pod_cidr: str,
        facts: Facts,
        readings: Callable[[], Readings],
        images: Callable[[], list[dict[str, Any]]],
        status_period: float = STATUS_PERIOD_S,
        lease_period: float = LEASE_PERIOD_S,
    ) -> None:
        self.client = client
        self.name = name
        self.labels = labels
        self.taints = taints
        self.pod_cidr = pod_cidr
        self.facts = facts
        self.readings = readings
        self.images = images
        self.status_period = status_period
        self.lease_period = lease_period
        self.registered = threading.Event()
        self.node_uid = ""
        # the Node's labels as the API last returned them (users label nodes there)
        self.api_labels: dict[str, str] | None = None
        self._conditions: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_status_ok = 0.0

    # ------------------------------------------------------------------ objects
    def node(self) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if self.pod_cidr:
            spec["podCIDR"] = self.pod_cidr
            spec["podCIDRs"] = [self.pod_cidr]
        if self.taints:
            spec["taints"] = self.taints
        at = now()
        status = build_status(self.facts, self.readings(), self.images(), [], at)
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": self.name, "labels": dict(self.labels)},
                "spec": spec, "status": status}

    def register(self) -> None:
        """tryRegisterWithAPIServer: create, or take over an existing Node of this name."""
        body = self.node()
        try:
            made = self.client.create(NODES, body)
            log.info("node %s registered", self.name)
        except StatusError as exc:
            if exc.code != 409:
                raise
            existing = self.client.get(NODES, self.name)
            labels = dict((existing.get("metadata") or {}).get("labels") or {})
            labels.update(self.labels)
            patch: dict[str, Any] = {"metadata": {"labels": labels}}
            if self.pod_cidr and not (existing.get("spec") or {}).get("podCIDR"):
                patch["spec"] = {"podCIDR": self.pod_cidr, "podCIDRs": [self.pod_cidr]}
            made = self.client.patch(NODES, self.name, patch)
            log.info("node %s already registered; taking it over", self.name)
        self.node_uid = (made.get("metadata") or {}).get("uid", "")
        self._conditions = (made.get("status") or {}).get("conditions") or []
        self._keep_labels(made)
        self.registered.set()

    def _keep_labels(self, node: dict[str, Any]) -> None:
        labels = (node.get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            self.api_labels = {str(k): str(v) for k, v in labels.items()}

    def current_labels(self, fresh: bool = False) -> dict[str, str] | None:
        """The Node's labels in the API (as kubelet's node lister has them): the last seen,
        or read now when ``fresh``; None before registration or when the API is away."""
        if fresh and self.registered.is_set():
            try:
                self._keep_labels(self.client.get(NODES, self.name))
            except (ClientError, OSError) as exc:
                log.debug("reading node %s: %s", self.name, exc)
        return self.api_labels

    def update_status(self) -> None:
        """Patch the Node's status; a Node deleted from the API (``kubectl delete node``)
        is registered again, so the node comes back without a restart."""
        at = now()
        status = build_status(self.facts, self.readings(), self.images(), self._conditions, at)
        try:
            result = self.client.patch(NODES, self.name, {"status": status},
                                       subresource="status",
                                       content_type="application/merge-patch+json")
        except StatusError as exc:
            if not exc.not_found:
                raise
            log.warning("node %s not found in the API (deleted); registering it again",
                        self.name)
            self._conditions = []
            self.register()
            self.last_status_ok = at.timestamp()
            return
        self._conditions = (result.get("status") or {}).get("conditions") or status["conditions"]
        self._keep_labels(result)
        self.last_status_ok = at.timestamp()

    def renew_lease(self) -> None:
        at = now()
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "namespace": NODE_LEASE_NAMESPACE},
            "spec": {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_DURATION_S,
                     "renewTime": micro_time(at)},
        }
        if self.node_uid:
            body["metadata"]["ownerReferences"] = [{
                "apiVersion": "v1", "kind": "Node", "name": self.name, "uid": self.node_uid}]
        try:
            current = self.client.get(LEASES, self.name, NODE_LEASE_NAMESPACE)
        except StatusError as exc:
            if not exc.not_found:
                raise
            self.client.create(LEASES, body, NODE_LEASE_NAMESPACE)
            return
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        body["spec"]["acquireTime"] = (current.get("spec") or {}).get("acquireTime")
        self.client.replace(LEASES, self.name, body, NODE_LEASE_NAMESPACE)

    # ------------------------------------------------------------------ loops
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="node-status", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set() and not self.registered.is_set():
            try:
                self.register()
            except (ClientError, OSError) as exc:
                log.warning("registering node %s: %s (retrying)", self.name, exc)
                self._stop.wait(backoff)
                backoff = min(7.0, backoff * 2)
        next_status = next_lease = 0.0
        clock = time.monotonic
        while not self._stop.is_set():
            t = clock()
            next_lease = run_if_due(t, next_lease, self.lease_period, self.renew_lease,
                                    "renewing the node lease")
            next_status = run_if_due(t, next_status, self.status_period, self.update_status,
                                     "updating node status")
            self._stop.wait(max(0.05, min(next_lease, next_status) - clock()))
