"""The harness of the agent's integration tests (what they create starts with ``kle``):
real CRI runtimes, real runc. The fixtures are re-exported by conftest.py.

* ``containerd_endpoint`` (session): the containerd peer from ``../shared/peers/containerd``
  (beside the clone; ``/work/shared`` here), copied to /tmp, set up and started. If the
  peer daemon was already running it is used and left running; otherwise it is stopped
  and cleaned (bridge, NAT chains, IPAM) at the end.
* ``pykubelet_endpoint`` (session): ``pykubelet runtime`` as a subprocess on a temp root and
  socket with its own CNI conf dir (reference bridge ``kle-br0`` + host-local on
  10.96.0.0/24, no masquerade) and the offline busybox image imported.
* ``endpoint``: parametrised over both runtimes.
* ``agent_factory``: an in-process ``Kubelet`` on temp dirs with a static pod directory, and
  a teardown that removes every pod it created (over CRI), its volumes and cgroups.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from pykubelet.config import KubeletConfig
from pykubelet.kubelet.cri.cri_client import CRICallError, CRIClient
from pykubelet.kubelet.kuberuntime.labels import NODE_NAME_ANNOTATION, POD_UID_LABEL

REPO = Path(__file__).resolve().parents[3]
PYKUBELET = REPO / ".venv" / "bin" / "pykubelet"
IMAGE = "localhost/busybox:latest"
CONTAINERD_SOCK = "/run/peer-containerd/containerd.sock"
CONTAINERD_ENDPOINT = f"unix://{CONTAINERD_SOCK}"
CONTAINERD_SUBNET = "10.200.0.0/24"
PEER_COPY = Path("/tmp/kle-peer-containerd")
PYK_BRIDGE = "kle-br0"
PYK_SUBNET = "10.96.0.0/24"
PYK_NETNS_PREFIX = "kle-"
CGROUP_ROOT = Path("/sys/fs/cgroup")


def free_port() -> int:
    """A free TCP port on loopback for an agent's HTTP server."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def shared_dir() -> Path:
    beside = REPO.parent / "shared"
    return beside if (beside / "peers" / "containerd").is_dir() else Path("/work/shared")


def _peer_running() -> bool:
    pidfile = Path("/run/peer-containerd/containerd.pid")
    try:
        pid = int(pidfile.read_text().strip())
        cmd = psutil.Process(pid).cmdline()
    except (OSError, ValueError, psutil.Error):
        return False
    return "/etc/peer-containerd/config.toml" in cmd


@pytest.fixture(scope="session")
def containerd_endpoint() -> Iterator[str]:
    src = shared_dir() / "peers" / "containerd"
    if not src.is_dir():
        pytest.fail(f"containerd peer not found at {src}")
    shutil.copytree(
        src, PEER_COPY, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".venv", "_gen", "out")
    )
    was_running = _peer_running()
    subprocess.run([str(PEER_COPY / "setup.sh")], check=True, capture_output=True)
    if not was_running:
        subprocess.run([str(PEER_COPY / "start.sh")], check=True, capture_output=True)
    try:
        with CRIClient(CONTAINERD_ENDPOINT) as c:
            c.wait_ready(30)
        yield CONTAINERD_ENDPOINT
    finally:
        if not was_running and not _peer_used_by_others():
            subprocess.run([str(PEER_COPY / "clean.sh")], capture_output=True)
            kill_orphan_shims()


def _peer_used_by_others() -> bool:
    """Someone else's pods on the shared peer daemon: then it is left running."""
    try:
        with CRIClient(CONTAINERD_ENDPOINT, timeout=10) as c:
            return any(not s.annotations.get(NODE_NAME_ANNOTATION, "").startswith("kle-")
                       for s in c.list_pod_sandbox())
    except CRICallError:
        return False


def kill_orphan_shims() -> None:
    """Shims of the (now stopped) peer daemon that run nothing any more. containerd 1.6
    leaves one behind when a client dies inside RunPodSandbox (its context is cancelled
    half-way), which the SIGKILL tests do on purpose."""
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = p.info["cmdline"] or []
        if not cmd or "containerd-shim" not in cmd[0] or CONTAINERD_SOCK not in cmd:
            continue
        with contextlib.suppress(psutil.Error):
            if not p.children():
                p.kill()
    shim_dir = Path("/run/containerd/s")
    if shim_dir.is_dir() and not any(
        "containerd-shim" in " ".join(p.info["cmdline"] or [])
        for p in psutil.process_iter(["cmdline"])
    ):
        for f in shim_dir.iterdir():
            with contextlib.suppress(OSError):
                f.unlink()
        for d in (shim_dir, shim_dir.parent):
            with contextlib.suppress(OSError):
                d.rmdir()


@dataclass
class PykRuntime:
    base: Path
    proc: subprocess.Popen[bytes] | None = None
    bridge: str = PYK_BRIDGE
    subnet: str = PYK_SUBNET
    netns_prefix: str = PYK_NETNS_PREFIX
    runc: str = ""  # --runc (default: the runtime's own default)

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def sock(self) -> str:
        return str(self.base / "cri.sock")

    @property
    def endpoint(self) -> str:
        return f"unix://{self.sock}"

    def write_conf(self) -> None:
        conf_dir = self.base / "net.d"
        conf_dir.mkdir(parents=True, exist_ok=True)
        conf = {
            "cniVersion": "1.0.0",
            "name": "kle-net",
            "plugins": [{
                "type": "bridge", "bridge": self.bridge, "isGateway": True, "ipMasq": False,
                "hairpinMode": True,
                "ipam": {"type": "host-local", "dataDir": str(self.base / "ipam"),
                         "ranges": [[{"subnet": self.subnet}]], "routes": [{"dst": "0.0.0.0/0"}]},
            }],
        }
        (conf_dir / "10-kle.conflist").write_text(json.dumps(conf))

    def import_image(self) -> None:
        from pykubelet.runtime.image_build import build_busybox_image

        tar = self.base / "busybox.tar"
        build_busybox_image(tar, name=IMAGE)
        subprocess.run(
            [str(PYKUBELET), "image", "--root", str(self.root), "import", str(tar)],
            check=True, capture_output=True,
        )

    def start(self) -> None:
        with open(self.base / "runtime.log", "ab") as log:
            self.proc = subprocess.Popen(
                [str(PYKUBELET), "runtime", "--root", str(self.root), "--listen", self.endpoint,
                 "--cni-conf-dir", str(self.base / "net.d"), "--cni-bin-dir", "/usr/lib/cni",
                 "--cni-cache-dir", str(self.base / "cni-cache"),
                 "--netns-prefix", self.netns_prefix,
                 *(["--runc", self.runc] if self.runc else [])],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        with CRIClient(self.endpoint) as c:
            c.wait_ready(30)

    def destroy(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(CRICallError), CRIClient(self.endpoint, timeout=30) as c:
                remove_all(c)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.destroy_leftovers()
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)

    def destroy_leftovers(self, netns_prefix: str | None = "") -> None:
        """Whatever a failed test left under ``base``: runc containers, monitors, mounts,
        and pinned namespaces of ``netns_prefix`` (default: this runtime's own prefix;
        None: leave pins alone)."""
        if netns_prefix == "":
            netns_prefix = self.netns_prefix
        if not self.base.exists():
            return
        for runc_root in [p for p in self.base.rglob("runc") if p.is_dir()]:
            for child in runc_root.iterdir():
                if (child / "state.json").exists():
                    subprocess.run(["runc", "--root", str(runc_root), "delete", "--force",
                                    child.name], capture_output=True)
        for p in psutil.process_iter(["pid", "cmdline"]):
            if p.pid != os.getpid() and str(self.root) in " ".join(p.info["cmdline"] or []):
                with contextlib.suppress(psutil.Error):
                    p.kill()
        with open("/proc/self/mountinfo") as f:
            mounts = [ln.split()[4] for ln in f]
        prefixes = [str(self.base) + "/"]
        if netns_prefix:
            prefixes.append(f"/run/netns/{netns_prefix}")
        ours = [m for m in mounts if m.startswith(tuple(prefixes))]
        for m in sorted(ours, key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        if netns_prefix and os.path.isdir("/run/netns"):
            for n in os.listdir("/run/netns"):
                if n.startswith(netns_prefix):
                    with contextlib.suppress(OSError):
                        os.unlink(f"/run/netns/{n}")


def delete_stuck_task(container_id: str) -> bool:
    """containerd keeps the task of a StartContainer whose client went away in the middle
    (containerd/containerd#11037); CRI reports the container exited but can never remove
    it. Its own API can: kill and delete the task, so the test leaves nothing behind."""
    if not Path(CONTAINERD_SOCK).exists():
        return False
    r = subprocess.run(
        ["ctr", "-a", CONTAINERD_SOCK, "-n", "k8s.io", "task", "delete", "-f", container_id],
        capture_output=True, timeout=30,
    )
    return r.returncode == 0


def remove_all(cri: CRIClient, node_name: str | None = None) -> None:
    """Stop and remove sandboxes (and so their containers); only a node's when given."""
    for s in cri.list_pod_sandbox():
        if node_name is not None and s.annotations.get(NODE_NAME_ANNOTATION) != node_name:
            continue
        for c in cri.list_containers(sandbox_id=s.id):
            with contextlib.suppress(CRICallError):
                cri.stop_container(c.id, 0)
            try:
                cri.remove_container(c.id)
            except CRICallError as exc:
                if "cannot delete running task" in exc.details and delete_stuck_task(c.id):
                    with contextlib.suppress(CRICallError):
                        cri.remove_container(c.id)
        with contextlib.suppress(CRICallError):
            cri.stop_pod_sandbox(s.id)
        with contextlib.suppress(CRICallError):
            cri.remove_pod_sandbox(s.id)


@pytest.fixture(scope="session")
def pykubelet_endpoint() -> Iterator[str]:
    rt = PykRuntime(Path(tempfile.mkdtemp(prefix="kle-rt-", dir="/tmp")))
    try:
        rt.write_conf()
        rt.import_image()
        rt.start()
        yield rt.endpoint
    finally:
        rt.destroy()


RUNTIMES = ["containerd", "pykubelet"]
SUBNETS = {"containerd": CONTAINERD_SUBNET, "pykubelet": PYK_SUBNET}


@pytest.fixture(params=RUNTIMES)
def runtime_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def endpoint(request: pytest.FixtureRequest, runtime_name: str) -> str:
    return str(request.getfixturevalue(f"{runtime_name}_endpoint"))


# --------------------------------------------------------------------------- the agent


@dataclass
class AgentHarness:
    """An agent on temp dirs plus helpers to drive it through its static pod directory."""

    base: Path
    node: str
    endpoint: str
    agent: Any = None
    cri: CRIClient | None = None
    uids: set[str] = field(default_factory=set)

    @property
    def manifests(self) -> Path:
        return self.base / "manifests"

    def config(self, **over: Any) -> KubeletConfig:
        fields: dict[str, Any] = {
            "nodeName": self.node,
            "rootDir": str(self.base / "root"),
            "runDir": str(self.base / "run"),
            "containerRuntimeEndpoint": self.endpoint,
            "staticPodPath": str(self.manifests),
            "podLogsDir": str(self.base / "logs"),
            "healthzPort": 0,
        }
        fields.update(over)
        return KubeletConfig(**fields)

    def config_file(self, **over: Any) -> Path:
        cfg = self.config(**over)
        data = {k: v for k, v in dataclasses.asdict(cfg).items() if v not in ("", None, {}, [])}
        data["healthzPort"] = cfg.healthzPort
        path = self.base / "config.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    def start(self, config: KubeletConfig | None = None, **kw: Any) -> Any:
        from pykubelet.kubelet.agent import Kubelet

        self.manifests.mkdir(parents=True, exist_ok=True)
        self.agent = Kubelet(config or self.config(), **kw)
        self.agent.start()
        return self.agent

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.stop()
            self.agent = None

    def client(self) -> CRIClient:
        if self.cri is None:
            self.cri = CRIClient(self.endpoint)
        return self.cri

    def write(self, name: str, pod: dict[str, Any]) -> None:
        """Drop a manifest into the static pod dir atomically (hidden temp, then rename)."""
        self.manifests.mkdir(parents=True, exist_ok=True)
        tmp = self.manifests / f".{name}.tmp"
        tmp.write_text(yaml.safe_dump(pod))
        os.replace(tmp, self.manifests / f"{name}.yaml")

    def remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.manifests / f"{name}.yaml").unlink()

    def pods(self) -> dict[str, dict[str, Any]]:
        items = self.agent.pod_list()["items"]
        for p in items:
            self.uids.add(p["metadata"]["uid"])
        return {p["metadata"]["name"]: p for p in items}

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.pods().get(f"{name}-{self.node}")

    def wait(self, what: Callable[[], Any], timeout: float = 60.0, desc: str = "") -> Any:
        end = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < end:
            last = what()
            if last:
                return last
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {desc or what}: {last!r}")

    def wait_phase(self, name: str, phase: str, timeout: float = 60.0) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            p = self.pod(name)
            return p if p is not None and p["status"].get("phase") == phase else None

        return self.wait(check, timeout, f"{name} phase {phase} (now {self.pod(name)})")

    def wait_running(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            p = self.pod(name)
            if p is None or p["status"].get("phase") != "Running":
                return None
            cs = p["status"].get("containerStatuses", [])
            return p if cs and all("running" in c["state"] for c in cs) else None

        return self.wait(check, timeout, f"{name} running (now {self.pod(name)})")

    def sandboxes(self, pod_uid: str) -> list[Any]:
        return self.client().list_pod_sandbox({POD_UID_LABEL: pod_uid})

    def containers(self, pod_uid: str) -> list[Any]:
        return self.client().list_containers(label_selector={POD_UID_LABEL: pod_uid})

    def exec(self, pod_uid: str, container: str, cmd: list[str]) -> tuple[int, str]:
        cs = [c for c in self.containers(pod_uid)
              if c.metadata.name == container and c.state == 1]
        assert cs, f"no running container {container}"
        resp = self.client().exec_sync(cs[0].id, cmd, 10)
        return resp.exit_code, (resp.stdout + resp.stderr).decode()

    def cleanup(self) -> None:
        self.stop()
        with contextlib.suppress(Exception), CRIClient(self.endpoint, timeout=60) as c:
            remove_all(c, self.node)
        from pykubelet.kubelet.kuberuntime.sandbox_config import remove_pod_cgroups
        from pykubelet.kubelet.volumemanager.volumes import teardown_pod_dir

        pods_dir = self.base / "root" / "pods"
        uids = set(self.uids)
        if pods_dir.is_dir():
            uids |= {p.name for p in pods_dir.iterdir()}
        for uid in uids:
            teardown_pod_dir(str(self.base / "root"), uid)
            remove_pod_cgroups(uid)
        if self.cri is not None:
            self.cri.close()
        remove_empty_kubepods()
        shutil.rmtree(self.base, ignore_errors=True)


def remove_empty_kubepods() -> None:
    """The /kubepods QoS parents agents create, once empty (rmdir fails while in use)."""
    for hier in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else []:
        for rel in ("kubepods/besteffort", "kubepods/burstable", "kubepods"):
            with contextlib.suppress(OSError):
                (hier / rel).rmdir()


@pytest.fixture
def agent_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., AgentHarness]]:
    made: list[AgentHarness] = []

    def make(endpoint: str, node: str | None = None) -> AgentHarness:
        short = request.node.name.replace("test_", "")[:10].replace("[", "-").strip("-_]")
        name = node or f"kle-{short}-{len(made)}".lower().replace("_", "-")
        h = AgentHarness(Path(tempfile.mkdtemp(prefix="kle-", dir="/tmp")), name, endpoint)
        made.append(h)
        return h

    try:
        yield make
    finally:
        for h in made:
            h.cleanup()


def busybox_pod(name: str, command: str, **spec: Any) -> dict[str, Any]:
    """A one-container busybox pod (IfNotPresent: the image is only in the node's store)."""
    container: dict[str, Any] = {
        "name": spec.pop("container_name", "app"),
        "image": IMAGE,
        "imagePullPolicy": spec.pop("pull_policy", "IfNotPresent"),
        "command": ["sh", "-c", command],
    }
    container.update(spec.pop("container", {}))
    pod_spec: dict[str, Any] = {"terminationGracePeriodSeconds": 1, "containers": [container]}
    pod_spec.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod_spec}
