"""A real node for cluster tests: ``pykubelet run`` joined to a control plane process, on its
own root, run dir, CNI bridge (``kcn<N>``) and pod subnet, with the offline busybox image.
Cleanup removes its pods (over CRI), stops it and its runtime, and removes the bridge,
mounts and directories, even after a SIGKILL, and even when no runtime is left to ask: the
sandboxes its checkpoints name are released from libcni's cache (CNI DEL: the veth, the
address, /var/lib/cni/results) and their netns pins unmounted."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from cp_process import ControlPlaneProcess, free_port, wait_for

REPO = Path(__file__).resolve().parents[3]
IMAGE = "localhost/busybox:latest"
CNI_CACHE_DIR = "/var/lib/cni"  # the runtime's default: results under results/


def join_args(cp: ControlPlaneProcess) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "pykubelet.cli.main", "control-plane", "--root", str(cp.root),
         "join-command"], capture_output=True, text=True, check=True).stdout.split()
    args = dict(zip(out[0::2], out[1::2], strict=True))
    return {"server": f"https://127.0.0.1:{cp.port}", "token": args["--token"],
            "caCertHash": args["--ca-cert-hash"]}


def _terminate(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM ``pid`` and wait for it to go (SIGKILL after ``timeout``): what it leaves
    is only cleaned up once it can no longer touch it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


@dataclass
class NodeProcess:
    base: Path
    name: str
    index: int
    cp: ControlPlaneProcess
    static_pods: dict[str, str] = field(default_factory=dict)
    extra_config: dict[str, object] = field(default_factory=dict)  # more config fields
    proc: subprocess.Popen[bytes] | None = None

    @property
    def bridge(self) -> str:
        return f"kcn{self.index}"

    @property
    def subnet(self) -> str:
        return f"10.97.{230 + self.index}.0/24"

    @property
    def config_path(self) -> Path:
        return self.base / "config.yaml"

    @property
    def log_path(self) -> Path:
        return self.base / "agent.log"

    def prepare(self, image_archive: Path) -> None:
        for d in ("net.d", "manifests", "root", "run", "logs"):
            (self.base / d).mkdir(parents=True, exist_ok=True)
        (self.base / "net.d" / "10-kcn.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": f"kcn{self.index}",
            "plugins": [{"type": "bridge", "bridge": self.bridge, "isGateway": True,
                         "ipMasq": False,
                         "ipam": {"type": "host-local", "dataDir": str(self.base / "ipam"),
                                  "ranges": [[{"subnet": self.subnet}]]}}]}))
        for name, text in self.static_pods.items():
            (self.base / "manifests" / name).write_text(text)
        self.healthz_port = free_port()
        cfg = {"apiVersion": "pykubelet.io/v1alpha1", "kind": "KubeletConfiguration",
               "nodeName": self.name, "rootDir": str(self.base / "root"),
               "runDir": str(self.base / "run"), "staticPodPath": str(self.base / "manifests"),
               "cniConfDir": str(self.base / "net.d"), "cniBinDir": "/usr/lib/cni",
               "podLogsDir": str(self.base / "logs"), "healthzPort": self.healthz_port,
               # the node's server on a free port: a port 10250 of the host's address
               # held by anything else would keep this node from starting
               "port": free_port(),
               "podCIDR": self.subnet, "nodeLabels": {"test/node": self.name},
               **join_args(self.cp), **self.extra_config}
        self.config_path.write_text(yaml.safe_dump(cfg))
        subprocess.run([str(REPO / ".venv" / "bin" / "pykubelet"), "image", "--root",
                        str(self.base / "root"), "import", str(image_archive)], check=True,
                       stdout=subprocess.DEVNULL)

    def start(self) -> None:
        out = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pykubelet.cli.main", "run", "--config",
             str(self.config_path)], stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        out.close()

    def kill(self) -> None:
        """SIGKILL the agent (its runtime and containers live on)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def release_sandboxes(self) -> list[str]:
        """Undo what the node's runtime made for the sandboxes it still checkpoints, once no
        runtime is there to do it (an agent and runtime that died before the node became
        Ready leave them): CNI DEL of each attachment libcni's cache records (as the
        runtime's own orphan collection does), the cached results removed, the netns pin
        unmounted and deleted. Returns the sandbox ids it found."""
        from pykubelet.runtime import netns
        from pykubelet.runtime.podnet import PodNetwork
        from pykubelet.runtime.sandbox import CHECKPOINT, decode_checkpoint

        network = PodNetwork(str(self.base / "net.d"), ["/usr/lib/cni"], CNI_CACHE_DIR)
        found = []
        for checkpoint in sorted(self.base.rglob(CHECKPOINT)):
            sandbox_id = checkpoint.parent.name
            found.append(sandbox_id)
            with contextlib.suppress(Exception):
                network.detach_cached(sandbox_id)
            for f in Path(CNI_CACHE_DIR, "results").glob(f"*-{sandbox_id}-*"):
                f.unlink(missing_ok=True)
            try:
                info = decode_checkpoint(checkpoint.read_bytes())
            except (OSError, ValueError):
                continue
            with contextlib.suppress(OSError):
                netns.unpin(netns.PinnedNamespaces(net=info.netns_path, ipc=info.ipc_ns_path,
                                                   uts=info.uts_ns_path))
        return found

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def cri(self):  # type: ignore[no-untyped-def]
        from pykubelet.kubelet.cri.cri_client import CRIClient

        return CRIClient(f"unix://{self.base / 'run' / 'cri.sock'}", timeout=10)

    def cleanup(self) -> None:
        """Let the agent remove its pods (their containers, sandboxes, volumes, cgroups),
        then remove whatever is left over CRI, stop the agent and its runtime, and remove
        the host's traces."""
        from pykubelet.kubelet.cri.cri_client import CRICallError

        sock = self.base / "run" / "cri.sock"
        if self.proc is None and sock.exists():
            self.start()  # a killed agent: its runtime serves; the agent cleans up
        for f in (self.base / "manifests").glob("*"):
            f.unlink()
        with contextlib.suppress(Exception):
            # a grace period of 1 s, not a forced deletion: the agent kills with the
            # deletion's grace period, where a forced one (0) leaves it the pod spec's (30 s
            # by default, for a shell that ignores SIGTERM), as kubelet does
            self.cp.kubectl("delete", "pods", "-A", "--field-selector",
                            f"spec.nodeName={self.name}", "--grace-period=1", "--wait=false",
                            check=False, timeout=30)
        end = time.monotonic() + 60
        while sock.exists() and time.monotonic() < end:
            try:
                with self.cri() as cri:
                    if not cri.list_pod_sandbox():
                        break
            except (CRICallError, OSError):
                break
            time.sleep(0.5)
        if sock.exists():
            with contextlib.suppress(CRICallError, OSError), self.cri() as cri:
                for c in cri.list_containers():
                    with contextlib.suppress(CRICallError):
                        cri.stop_container(c.id, 0)
                        cri.remove_container(c.id)
                for s in cri.list_pod_sandbox():
                    with contextlib.suppress(CRICallError):
                        cri.stop_pod_sandbox(s.id)
                        cri.remove_pod_sandbox(s.id)
        self.stop()
        from pykubelet import state_lock

        runtime_pid = state_lock.holder(self.base / "root" / state_lock.RUNTIME_LOCK)
        if runtime_pid:
            _terminate(runtime_pid)
        # what no runtime was left to stop (an agent and runtime gone before the node was
        # Ready leave their containers' monitors running): the lab teardown's own steps
        from pykubelet.lab.teardown import remove_pod_cgroups, remove_runc_containers

        remove_runc_containers(self.base / "root")
        self.release_sandboxes()
        remove_pod_cgroups(self.base / "root", self.base / "logs")
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
            mounts = [ln.split()[4] for ln in f if ln.split()[4].startswith(str(self.base))]
        for m in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)


def node_ready(cp: ControlPlaneProcess, name: str) -> str:
    """The status of node ``name``'s Ready condition ("True", "False", "Unknown"); "" while
    the node or the condition is not there."""
    out = cp.kubectl("get", "node", name, "-o", "json", check=False)
    if out.returncode != 0:
        return ""
    for c in json.loads(out.stdout).get("status", {}).get("conditions", []):
        if c["type"] == "Ready":
            return str(c["status"])
    return ""


@contextlib.contextmanager
def node_cluster(work: Path, name: str, index: int, *, cp_args: Sequence[str] = (),
                 image: str = IMAGE, static_pods: Mapping[str, str] | None = None,
                 extra_config: Mapping[str, object] | None = None,
                 ) -> Iterator[tuple[ControlPlaneProcess, NodeProcess]]:
    """A control plane process under ``work`` and one node ``name`` joined to it with the
    offline busybox ``image``, once the node is Ready (its log's tail printed when it never
    is); the node and the control plane are removed afterwards, whatever failed."""
    from pykubelet.runtime.image_build import build_busybox_image

    cp = ControlPlaneProcess(work / "cp", extra_args=list(cp_args))
    cp.start()
    try:
        archive = work / "busybox.tar"
        build_busybox_image(archive, name=image)
        node = NodeProcess(Path(tempfile.mkdtemp(prefix=f"{name}-", dir="/tmp")), name, index,
                           cp, static_pods=dict(static_pods or {}),
                           extra_config=dict(extra_config or {}))
        try:
            node.prepare(archive)
            node.start()
            try:
                wait_for(lambda: node_ready(cp, name) == "True", timeout=60, what="node Ready")
            except AssertionError:
                print(node.log_path.read_text()[-4000:])
                raise
            yield cp, node
        finally:
            node.cleanup()
    finally:
        cp.stop()


@contextlib.contextmanager
def namespace_for(cp: ControlPlaneProcess, request: pytest.FixtureRequest,
                  prefix: str) -> Iterator[str]:
    """A namespace named after the test (``prefix-<test name>``), deleted afterwards: its
    pods first with a 1 s grace period (the namespace's deletion gives each its spec's, 30 s
    by default, which a shell ignoring SIGTERM waits out on the node, and the node's
    cleanup at the module's end waited for)."""
    name = f"{prefix}-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[5:40].strip("-")
    cp.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        cp.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=1", "--wait=false",
                   check=False)
        cp.kubectl("delete", "namespace", name, "--wait=false", check=False)
