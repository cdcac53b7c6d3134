"""Fixtures for CRI-level tests: a real `pykubelet runtime` subprocess on a temp socket.

``cri`` starts ``.venv/bin/pykubelet runtime --root <tmp>/root --listen unix://<tmp>/cri.sock
--cni-conf-dir <tmp>/net.d --cni-bin-dir /usr/lib/cni`` with its own bridge ``rcri<N>`` on
10.94.<N>.0/24 (reference bridge + host-local + portmap), the offline busybox image imported,
and a gRPC client on the socket. Teardown removes everything even when a test failed: pods and
containers over CRI, then the process, runc state, conmon processes, mounts, pinned
namespaces, the bridge, iptables rules naming our network and cgroups under our parent.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import psutil
import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc

REPO = Path(__file__).resolve().parents[3]
PYKUBELET = REPO / ".venv" / "bin" / "pykubelet"
CNI_BIN = "/usr/lib/cni"
IMAGE = "docker.io/library/busybox:latest"
CGROUP_ROOT = Path("/sys/fs/cgroup")


def _free_index() -> int:
    """A bridge index N whose rcri<N> does not exist (leftovers are never reused)."""
    taken = set(os.listdir("/sys/class/net"))
    start = (os.getpid() * 7) % 200
    for i in range(200):
        n = 10 + (start + i) % 240
        if f"rcri{n}" not in taken:
            return n
    raise RuntimeError("no free rcri<N> bridge name")


def conflist(name: str, bridge: str, subnet: str, ipam_dir: str, plugin_types: tuple[str, ...] = (
        "bridge", "host-local", "portmap")) -> dict:
    bridge_t, ipam_t, portmap_t = plugin_types
    plugins: list[dict] = [{
        "type": bridge_t, "bridge": bridge, "isGateway": True, "ipMasq": True,
        "hairpinMode": True,
        "ipam": {"type": ipam_t, "dataDir": ipam_dir, "ranges": [[{"subnet": subnet}]],
                 "routes": [{"dst": "0.0.0.0/0"}]},
    }]
    if portmap_t:
        plugins.append({"type": portmap_t, "capabilities": {"portMappings": True}})
    return {"cniVersion": "1.0.0", "name": name, "plugins": plugins}


@pytest.fixture(scope="session")
def busybox_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pykubelet.runtime.image_build import build_busybox_image

    out = tmp_path_factory.mktemp("rtcri-image") / "busybox-oci.tar"
    build_busybox_image(out, name=IMAGE)
    return out


@dataclass
class CRIRuntime:
    """One runtime under test, with a client, and the names it may leave behind."""

    base: Path
    index: int
    proc: subprocess.Popen | None = None
    channel: grpc.Channel | None = None
    runtime: pb_grpc.RuntimeServiceStub | None = None
    images: pb_grpc.ImageServiceStub | None = None
    extra_args: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def sock(self) -> str:
        return str(self.base / "cri.sock")

    @property
    def conf_dir(self) -> Path:
        return self.base / "net.d"

    @property
    def ipam_dir(self) -> Path:
        return self.base / "ipam"

    @property
    def log_root(self) -> Path:
        return self.base / "logs"

    @property
    def bridge(self) -> str:
        return f"rcri{self.index}"

    @property
    def subnet(self) -> str:
        return f"10.94.{self.index}.0/24"

    @property
    def gateway(self) -> str:
        return f"10.94.{self.index}.1"

    @property
    def net_name(self) -> str:
        return f"rtcri-net{self.index}"

    @property
    def netns_prefix(self) -> str:
        return f"rtcri{self.index}-"

    @property
    def cgroup_parent(self) -> str:
        return f"/rtcri-{self.index}"

    def write_conf(self, plugin_types: tuple[str, ...] = ("bridge", "host-local", "portmap"),
                   filename: str = "10-rtcri.conflist") -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        conf = conflist(self.net_name, self.bridge, self.subnet, str(self.ipam_dir), plugin_types)
        (self.conf_dir / filename).write_text(json.dumps(conf, indent=1))

    # -- process --------------------------------------------------------------------------

    def start(self, timeout: float = 20.0) -> None:
        log = open(self.base / "runtime.log", "ab")  # noqa: SIM115 (the child owns it)
        self.proc = subprocess.Popen(
            [str(PYKUBELET), "runtime", "--root", str(self.root), "--listen", f"unix://{self.sock}",
             "--cni-conf-dir", str(self.conf_dir), "--cni-bin-dir", CNI_BIN,
             "--cni-cache-dir", str(self.base / "cni-cache"), "--netns-prefix", self.netns_prefix,
             "--log-level", "debug", *self.extra_args],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        self.channel = grpc.insecure_channel(f"unix://{self.sock}")
        self.runtime = pb_grpc.RuntimeServiceStub(self.channel)
        self.images = pb_grpc.ImageServiceStub(self.channel)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"runtime exited with {self.proc.returncode}:\n{self.log()}")
            try:
                self.runtime.Version(pb.VersionRequest(version="v1"), timeout=1)
                return
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def log(self) -> str:
        try:
            return (self.base / "runtime.log").read_text(errors="replace")[-6000:]
        except FileNotFoundError:
            return ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    # -- requests -------------------------------------------------------------------------

    def pod_config(self, name: str, uid: str | None = None, **kw: object) -> pb.PodSandboxConfig:
        uid = uid or f"uid-{name}"
        log_dir = self.log_root / f"default_{name}_{uid}"
        log_dir.mkdir(parents=True, exist_ok=True)
        ns = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace="default"),
            hostname=name, log_directory=str(log_dir),
            labels={"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default",
                    "io.kubernetes.pod.uid": uid, "rtcri-test": "1"},
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=self.cgroup_parent,
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=ns,
                    seccomp=pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault)),
            ),
        )
        for k, v in kw.items():
            if isinstance(v, list):
                getattr(cfg, k).extend(v)
            elif isinstance(v, dict):
                getattr(cfg, k).update(v)
            elif hasattr(v, "CopyFrom"):
                getattr(cfg, k).CopyFrom(v)
            else:
                setattr(cfg, k, v)
        return cfg

    def run_pod(self, name: str, **kw: object) -> tuple[str, pb.PodSandboxConfig]:
        cfg = self.pod_config(name, **kw)
        resp = self.runtime.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=60)
        return resp.pod_sandbox_id, cfg

    def pod_status(self, pod_id: str, verbose: bool = False) -> pb.PodSandboxStatusResponse:
        return self.runtime.PodSandboxStatus(
            pb.PodSandboxStatusRequest(pod_sandbox_id=pod_id, verbose=verbose), timeout=30)

    def container_config(self, name: str, command: list[str], attempt: int = 0,
                         memory_limit: int = 0) -> pb.ContainerConfig:
        ns = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
        return pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=attempt),
            image=pb.ImageSpec(image=IMAGE),
            command=command,
            labels={"io.kubernetes.container.name": name},
            log_path=f"{name}/{attempt}.log",
            linux=pb.LinuxContainerConfig(
                resources=pb.LinuxContainerResources(
                    cpu_period=100000, cpu_shares=2, oom_score_adj=1000,
                    memory_limit_in_bytes=memory_limit),
                security_context=pb.LinuxContainerSecurityContext(
                    namespace_options=ns,
                    seccomp=pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault)),
            ),
        )

    def start_container(self, pod_id: str, pod_cfg: pb.PodSandboxConfig, name: str,
                        command: list[str], **kw: object) -> str:
        cc = self.container_config(name, command, **kw)  # type: ignore[arg-type]
        cid = self.runtime.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=pod_id, config=cc, sandbox_config=pod_cfg), timeout=60).container_id
        self.runtime.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
        return cid

    def container_status(self, cid: str) -> pb.ContainerStatus:
        return self.runtime.ContainerStatus(
            pb.ContainerStatusRequest(container_id=cid), timeout=30).status

    def wait_exited(self, cid: str, timeout: float = 30) -> pb.ContainerStatus:
        deadline = time.monotonic() + timeout
        while True:
            st = self.container_status(cid)
            if st.state == pb.CONTAINER_EXITED or time.monotonic() > deadline:
                return st
            time.sleep(0.05)

    def remove_all(self) -> None:
        """Stop and remove every container and pod over CRI (best effort)."""
        with contextlib.suppress(grpc.RpcError):
            for c in self.runtime.ListContainers(pb.ListContainersRequest(), timeout=30).containers:
                with contextlib.suppress(grpc.RpcError):
                    self.runtime.StopContainer(
                        pb.StopContainerRequest(container_id=c.id, timeout=0), timeout=60)
                with contextlib.suppress(grpc.RpcError):
                    self.runtime.RemoveContainer(
                        pb.RemoveContainerRequest(container_id=c.id), timeout=60)
        with contextlib.suppress(grpc.RpcError):
            for p in self.runtime.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30).items:
                with contextlib.suppress(grpc.RpcError):
                    self.runtime.StopPodSandbox(
                        pb.StopPodSandboxRequest(pod_sandbox_id=p.id), timeout=60)
                with contextlib.suppress(grpc.RpcError):
                    self.runtime.RemovePodSandbox(
                        pb.RemovePodSandboxRequest(pod_sandbox_id=p.id), timeout=60)

    # -- what may be left behind -----------------------------------------------------------

    def mounts(self) -> list[str]:
        """Mount points under our root or our netns pins (deepest first)."""
        found = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                mp = line.split()[4].replace("\\040", " ")
                if mp.startswith((str(self.base) + "/", f"/run/netns/{self.netns_prefix}")):
                    found.append(mp)
        return sorted(found, key=len, reverse=True)

    def netns_pins(self) -> list[str]:
        return sorted(n for n in os.listdir("/run/netns") if n.startswith(self.netns_prefix)) \
            if os.path.isdir("/run/netns") else []

    def veths(self) -> list[str]:
        out = subprocess.run(["ip", "-o", "link", "show", "master", self.bridge],
                             capture_output=True, text=True)
        return [ln.split(":")[1].strip().split("@")[0] for ln in out.stdout.splitlines()]

    def ipam_files(self) -> list[str]:
        d = self.ipam_dir / self.net_name
        if not d.is_dir():
            return []
        return sorted(p.name for p in d.iterdir()
                      if p.name != "lock" and not p.name.startswith("last_reserved_ip"))

    def cni_cache_files(self) -> list[str]:
        """libcni's cached results (one per attachment: loopback and the pod network)."""
        d = self.base / "cni-cache" / "results"
        return sorted(os.listdir(d)) if d.is_dir() else []

    def iptables_lines(self) -> list[str]:
        out = subprocess.run(["iptables", "-w", "-t", "nat", "-S"], capture_output=True,
                             text=True).stdout
        return [ln for ln in out.splitlines() if self.net_name in ln]

    def runc_roots(self) -> list[Path]:
        roots = []
        if self.root.exists():
            for p in self.root.rglob("*"):
                if p.is_dir() and p.name == "runc":
                    roots.append(p)
        return roots

    def runc_containers(self) -> list[tuple[Path, str]]:
        out = []
        for r in self.runc_roots():
            for child in r.iterdir():
                if (child / "state.json").exists():
                    out.append((r, child.name))
        return out

    def cgroups(self) -> list[str]:
        found = []
        for hier in CGROUP_ROOT.iterdir():
            d = hier / self.cgroup_parent.lstrip("/")
            if d.is_dir():
                found.extend(str(p) for p in d.rglob("*") if p.is_dir())
        return found

    def our_processes(self) -> list[psutil.Process]:
        """conmon / container processes started for this runtime (their cmdline names root)."""
        procs = []
        me = os.getpid()
        for p in psutil.process_iter(["pid", "cmdline"]):
            if p.pid == me or (self.proc is not None and p.pid == self.proc.pid):
                continue
            cmd = " ".join(p.info["cmdline"] or [])
            if str(self.root) in cmd:
                procs.append(p)
        return procs

    def leftovers(self) -> dict[str, list]:
        """Everything a removed pod must not leave; empty lists when clean."""
        return {
            "mounts": self.mounts(), "netns": self.netns_pins(), "veths": self.veths(),
            "ipam": self.ipam_files(), "cni-cache": self.cni_cache_files(),
            "iptables": self.iptables_lines(),
            "runc": [c for _, c in self.runc_containers()], "cgroups": self.cgroups(),
            "processes": [p.pid for p in self.our_processes()],
        }

    # -- teardown -------------------------------------------------------------------------

    def destroy(self) -> None:
        """Leave nothing behind, whatever state the test left."""
        if self.proc is not None and self.proc.poll() is None and self.runtime is not None:
            self.remove_all()
        self.kill(signal.SIGTERM)
        for r, cid in self.runc_containers():
            subprocess.run(["runc", "--root", str(r), "delete", "--force", cid],
                           capture_output=True)
        for p in self.our_processes():
            with contextlib.suppress(psutil.Error):
                p.kill()
        for mp in self.mounts():
            subprocess.run(["umount", "-l", mp], capture_output=True)
        for name in self.netns_pins():
            with contextlib.suppress(OSError):
                os.unlink(f"/run/netns/{name}")
        for veth in self.veths():
            subprocess.run(["ip", "link", "del", veth], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        _drop_iptables(self.net_name)
        for hier in CGROUP_ROOT.iterdir():
            d = hier / self.cgroup_parent.lstrip("/")
            if d.is_dir():
                for sub in sorted((p for p in d.rglob("*") if p.is_dir()),
                                  key=lambda p: len(str(p)), reverse=True):
                    with contextlib.suppress(OSError):
                        sub.rmdir()
                with contextlib.suppress(OSError):
                    d.rmdir()
        shutil.rmtree(self.base, ignore_errors=True)


def _drop_iptables(net_name: str) -> None:
    """Delete nat rules whose comment names our network, then the chains they jumped to."""
    out = subprocess.run(["iptables", "-w", "-t", "nat", "-S"], capture_output=True,
                         text=True).stdout
    chains = set()
    for line in out.splitlines():
        if net_name in line and line.startswith("-A "):
            m = re.search(r"-j (CNI-[\w-]+)", line)
            if m and m.group(1) not in ("CNI-HOSTPORT-SETMARK", "CNI-HOSTPORT-MASQ"):
                chains.add(m.group(1))
            args = line.split()
            args[0] = "-D"
            subprocess.run(["iptables", "-w", "-t", "nat", *_unquote(" ".join(args))],
                           capture_output=True)
    for chain in chains:
        if chain in ("CNI-HOSTPORT-DNAT",):
            continue
        subprocess.run(["iptables", "-w", "-t", "nat", "-F", chain], capture_output=True)
        subprocess.run(["iptables", "-w", "-t", "nat", "-X", chain], capture_output=True)


def _unquote(line: str) -> list[str]:
    import shlex

    return shlex.split(line)


@pytest.fixture
def cri_factory(tmp_path: Path, busybox_archive: Path) -> Iterator:
    """Make runtimes (started, image imported); every one is destroyed at teardown."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    made: list[CRIRuntime] = []

    def make(start: bool = True, conf: bool = True, extra_args: list[str] | None = None
             ) -> CRIRuntime:
        base = tmp_path / f"rt{len(made)}"
        base.mkdir()
        rt = CRIRuntime(base=base, index=_free_index(), extra_args=extra_args or [])
        made.append(rt)
        # Hold the bridge name now, so a second runtime in this test picks another index.
        subprocess.run(["ip", "link", "add", rt.bridge, "type", "bridge"], check=True)
        if conf:
            rt.write_conf()
        from pykubelet.runtime.images import ImageStore

        ImageStore(rt.root / "images").import_archive(busybox_archive)
        if start:
            rt.start()
        return rt

    try:
        yield make
    finally:
        failures = []
        for rt in made:
            try:
                rt.destroy()
            except Exception as exc:  # keep cleaning the others
                failures.append(exc)
                print(f"cleanup of {rt.base} failed: {exc}", file=sys.stderr)
        if failures:
            raise failures[0]


@pytest.fixture
def cri(cri_factory) -> CRIRuntime:
    """One started runtime with the reference CNI plugins."""
    return cri_factory()
