"""A real control plane process for tests (``pykubelet control-plane`` on a loopback
port under a temporary root), and the real kubectl pointed at it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pykubelet.controlplane.storage.etcdserver import EtcdServer

KUBECTL = "kubectl"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# what fake nodes report as their address (no server listens there)
FAKE_NODE_ADDRESS = "127.0.0.9"


@dataclass
class ControlPlaneProcess:
    root: Path
    port: int = 0
    extra_args: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    etcd_url: str = ""  # the store on this etcd (else SQLite under root)

    @property
    def kubeconfig(self) -> Path:
        return self.root / "admin.kubeconfig"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root.parent / f"{self.root.name}.log"

    def start(self, timeout: float = 30.0) -> None:
        if not self.port:
            self.port = free_port()
        if self.kubeconfig.exists():
            self.kubeconfig.unlink()
        out = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT)
        out.close()
        end = time.monotonic() + timeout
        while not self.kubeconfig.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"control plane exited {self.proc.returncode}:\n"
                                   + self.log_path.read_text()[-3000:])
            if time.monotonic() > end:
                self.stop()
                raise RuntimeError("control plane did not serve in time:\n"
                                   + self.log_path.read_text()[-3000:])
            time.sleep(0.05)

    def command(self) -> list[str]:
        """The control plane's command line. Without the cluster DNS unless the test's
        arguments ask for it (a ``--cluster-dns...`` flag): every control plane serves it
        on <advertise address>:53 by default, which one process on 127.0.0.1 holds, and
        the others retried every 10 s, listing and watching again each time."""
        cmd = [sys.executable, "-m", "pykubelet.cli.main", "control-plane", "--root",
               str(self.root), "--listen", f"127.0.0.1:{self.port}", *self.extra_args]
        if not any(a.startswith("--cluster-dns") for a in self.extra_args):
            cmd.append("--no-cluster-dns")
        if self.etcd_url:
            cmd += ["--etcd-servers", self.etcd_url]
        return cmd

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 60,
                check: bool = True, env: dict[str, str] | None = None,
                program: str = KUBECTL) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig),
                   KUBECACHEDIR=str(self.root.parent / "kubectl-cache"), **(env or {}))
        res = subprocess.run([program, *args], input=input, capture_output=True, text=True,
                             env=env, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"{program} {' '.join(args)} failed ({res.returncode}):\n"
                                 f"{res.stdout}\n{res.stderr}")
        return res

    def kubectl_bg(self, *args: str, env: dict[str, str] | None = None,
                   program: str = KUBECTL) -> subprocess.Popen[str]:
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig),
                   KUBECACHEDIR=str(self.root.parent / "kubectl-cache"), **(env or {}))
        return subprocess.Popen([program, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)


BACKENDS = ("sqlite", "etcd")


@contextlib.contextmanager
def control_plane(root: Path, backend: str, extra_args: list[str] | None = None
                  ) -> Iterator[ControlPlaneProcess]:
    """A started control plane on ``backend``: SQLite under ``root``, or a one-member etcd
    (Debian's etcd-server on loopback ports, its data beside ``root``) that is removed
    with it."""
    etcd = None
    if backend == "etcd":
        etcd = EtcdServer(root.parent / f"{root.name}-etcd")
        etcd.start()
    proc = ControlPlaneProcess(root, extra_args=list(extra_args or []),
                               etcd_url=etcd.client_url if etcd else "")
    try:
        proc.start()
        yield proc
    finally:
        proc.stop()
        if etcd is not None:
            etcd.remove()


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.1, what: str = "") -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


class FakeNode:
    """A Node object kept alive by renewing its Lease, as a kubelet would (no pods run)."""

    def __init__(self, cp: ControlPlaneProcess, name: str, cpu: str = "4",
                 memory: str = "8Gi", labels: dict[str, str] | None = None,
                 taints: list[dict[str, str]] | None = None) -> None:
        import threading

        from kubernetes import client, config

        self.name = name
        self.api = config.new_client_from_config(str(cp.kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.coord = client.CoordinationV1Api(self.api)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "kubernetes.io/os": "linux",
                                                  **(labels or {})}},
            "spec": {"taints": taints or []},
            "status": {
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "kubelet is posting ready status",
                                "lastHeartbeatTime": now, "lastTransitionTime": now}],
                # a loopback address: a request the API makes to this node's server (logs,
                # exec) is refused on this host, never sent anywhere else
                "addresses": [{"type": "InternalIP", "address": FAKE_NODE_ADDRESS},
                              {"type": "Hostname", "address": name}],
                "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b",
                             "kernelVersion": "6.1", "osImage": "Debian GNU/Linux 12",
                             "containerRuntimeVersion": "pykubelet://0.1.0",
                             "kubeletVersion": "v1.32.0", "kubeProxyVersion": "",
                             "operatingSystem": "linux", "architecture": "amd64"},
            },
        }
        self.core.create_node(body)
        self._stop = threading.Event()
        self.renew()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def renew(self) -> None:
        from kubernetes import client

        t = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": self.name, "leaseDurationSeconds": 40,
                         "renewTime": t}}
        try:  # leases take no unconditional update (upstream's lease strategy)
            current = self.coord.read_namespaced_lease(self.name, "kube-node-lease")
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            self.coord.create_namespaced_lease("kube-node-lease", body)
            return
        body["metadata"]["resourceVersion"] = current.metadata.resource_version
        self.coord.replace_namespaced_lease(self.name, "kube-node-lease", body)

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.renew()
            except Exception:  # the control plane may be restarting
                pass

    def stop_heartbeat(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def delete(self) -> None:
        self.stop_heartbeat()
        try:
            self.core.delete_node(self.name)
        except Exception:
            pass
