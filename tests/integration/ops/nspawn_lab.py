"""systemd-nspawn nodes: the cheapest faithful lab for the Vagrant provisioning.

Each node boots the debootstrapped rootfs (``vagrant/box/build-rootfs.sh``, cached under
``PYKUBE_VMLAB_CACHE``, default /var/tmp/pykube-vmlab) with a real systemd as PID 1, its
own network namespace on a lab bridge, and the repository mounted read-only at /vagrant
as Vagrant's synced folder would be. Tests then run the real ``vagrant/provision.sh`` and
the real unit in them.

What the host needs (Debian 12): systemd-container, debootstrap. Everything the lab
creates is named after this module (``opslab``): the network namespace holding the
bridge, the per-node cgroups (``pykube-opslab/<node>`` in every hierarchy), the state
under the cache's ``run/`` directory. ``down`` removes all of it, even after a failure.

Two things nspawn does differently from a VM, handled here and nowhere else:
- on this host's hybrid cgroup layout nspawn mounts the v1 controllers read-only in the
  node, so runc could not make a container's cgroups; each node gets its own cgroup in
  every hierarchy (its cgroup namespace's root) and its controllers are remounted
  read-write inside it;
- the node's root is an overlay (``--volatile=overlay``), which overlayfs cannot use as
  an upper layer, so /var/lib/pykubelet (container rootfs layers) is a real directory
  bound in from the host.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CACHE = Path(os.environ.get("PYKUBE_VMLAB_CACHE", "/var/tmp/pykube-vmlab"))
NAME = "opslab"
NETNS = NAME
BRIDGE = "opslab0"
SUBNET = "10.203.0"
CGROUP_ROOT = Path("/sys/fs/cgroup")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def run(cmd: Sequence[str], check: bool = True, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), check=check, text=True, capture_output=True, **kw)  # type: ignore[call-overload]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _key(*paths: Path, extra: str = "") -> str:
    h = hashlib.sha1(extra.encode())
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def rootfs(cache: Path = CACHE, log: object = None) -> tuple[Path, float]:
    """The cached node rootfs, built when the builder script changed; (path, seconds
    spent building: 0 when cached). Older builds are removed."""
    script = REPO / "vagrant" / "box" / "build-rootfs.sh"
    dest = cache / f"rootfs-ct-{_key(script)}"
    with locked(cache / ".rootfs.lock"):
        if dest.is_dir():
            return dest, 0.0
        for old in cache.glob("rootfs-ct-*"):
            shutil.rmtree(old, ignore_errors=True)
        t0 = time.monotonic()
        subprocess.run([str(script), str(dest), "--cache-dir", str(cache / "debcache")],
                       check=True, stdout=log or sys.stderr, stderr=subprocess.STDOUT)  # type: ignore[arg-type]
        return dest, time.monotonic() - t0


def wheelhouse(cache: Path = CACHE, log: object = None) -> tuple[Path, float]:
    """Wheels of the project's dependencies (and of its build backend), so that a node
    installs the project offline; keyed by pyproject.toml."""
    dest = cache / f"wheels-{_key(REPO / 'pyproject.toml', extra=sys.version[:4])}"
    with locked(cache / ".wheels.lock"):
        if dest.is_dir():
            return dest, 0.0
        for old in cache.glob("wheels-*"):
            shutil.rmtree(old, ignore_errors=True)
        t0 = time.monotonic()
        tmp = dest.with_name(dest.name + ".part")
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
                        "-w", str(tmp), str(REPO), "setuptools>=68", "wheel"],
                       check=True, stdout=log or sys.stderr, stderr=subprocess.STDOUT)  # type: ignore[arg-type]
        for own in tmp.glob("pykube_node-*.whl"):
            own.unlink()  # the node builds the project from /vagrant
        shutil.rmtree(REPO / "build", ignore_errors=True)
        tmp.rename(dest)
        return dest, time.monotonic() - t0


@dataclass
class Node:
    name: str
    index: int
    state: Path
    pid: int = 0  # systemd-nspawn's

    @property
    def address(self) -> str:
        return f"{SUBNET}.{10 + self.index}"

    @property
    def pod_cidr(self) -> str:
        return f"10.244.{self.index}.0/24"

    @property
    def leader(self) -> int:
        """The node's PID 1 (systemd), nspawn's only child."""
        kids = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        if not kids:
            raise RuntimeError(f"{self.name}: nspawn {self.pid} has no child yet")
        return int(kids[0])

    def sh(self, script: str, check: bool = True, timeout: float = 600,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run a shell script as root inside the node (all its namespaces)."""
        base = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb"}
        cmd = ["nsenter", "-t", str(self.leader), "-a", "env", "-i",
               *(f"{k}={v}" for k, v in {**base, **(env or {})}.items()),
               "/bin/bash", "-c", script]
        res = subprocess.run(cmd, text=True, capture_output=True, timeout=timeout, check=False)
        if check and res.returncode != 0:
            raise AssertionError(f"{self.name}: `{script}` exited {res.returncode}:\n"
                                 f"{res.stdout[-4000:]}\n{res.stderr[-4000:]}")
        return res


@dataclass
class NspawnLab:
    """``up(n)`` boots n nodes; ``down()`` removes everything the lab made."""

    image: Path
    wheels: Path
    run_dir: Path = field(default_factory=lambda: CACHE / "run" / NAME)
    nodes: list[Node] = field(default_factory=list)
    # the nspawn processes this lab started, waited for by ``down``
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    # ------------------------------------------------------------------ network
    def _netns_up(self) -> None:
        run(["ip", "netns", "add", NETNS])
        for cmd in (["link", "set", "lo", "up"],
                    ["link", "add", BRIDGE, "type", "bridge"],
                    ["addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE],
                    ["link", "set", BRIDGE, "up"]):
            run(["ip", "-n", NETNS, *cmd])

    # ------------------------------------------------------------------ cgroups
    @staticmethod
    def _hierarchies() -> list[tuple[Path, str]]:
        """(mount point, this process's cgroup in it) for every cgroup hierarchy."""
        mine: dict[str, str] = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            mine[controllers] = path
        out = []
        for mnt in sorted(CGROUP_ROOT.iterdir()):
            if not (mnt / "cgroup.procs").exists():
                continue
            if mnt.name == "unified":
                key = ""
            elif mnt.name == "systemd":
                key = "name=systemd"
            else:
                key = next((k for k in mine if mnt.name in k.split(",")), mnt.name)
            out.append((mnt, mine.get(key, "/")))
        return out

    def _cgroup_dirs(self, node: Node) -> list[Path]:
        return [mnt / here.lstrip("/") / f"pykube-{NAME}" / node.name
                for mnt, here in self._hierarchies()]

    def _make_cgroups(self, node: Node) -> list[Path]:
        dirs = self._cgroup_dirs(node)
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
            if (d / "cpuset.cpus").exists():  # a v1 cpuset child starts empty
                for p in (d.parent, d):
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        if not (p / f).read_text().strip():
                            (p / f).write_text((p.parent / f).read_text())
        return dirs

    @staticmethod
    def _remove_cgroup_tree(d: Path) -> None:
        if not d.is_dir():
            return
        for sub in sorted((p for p in d.rglob("*") if p.is_dir()),
                          key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                sub.rmdir()
        with contextlib.suppress(OSError):
            d.rmdir()
        with contextlib.suppress(OSError):
            d.parent.rmdir()  # pykube-opslab, once empty

    # ------------------------------------------------------------------ nodes
    def up(self, count: int, boot_timeout: float = 60) -> float:
        """Boot ``count`` nodes; seconds until every one reached multi-user.target."""
        self.down()  # a crashed earlier run
        t0 = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._netns_up()
        keys = self.run_dir / "lab-key"
        keys.mkdir()
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pykube-lab-join",
             "-f", str(keys / "join")])
        for i in range(1, count + 1):
            node = Node(f"node{i}", i, self.run_dir / f"node{i}")
            (node.state / "var-lib-pykubelet").mkdir(parents=True)
            net = node.state / "10-lab.network"
            net.write_text(f"[Match]\nName=host0\n\n[Network]\nAddress={node.address}/24\n")
            dirs = self._make_cgroups(node)
            # move into the node's cgroups, then become nspawn inside the lab's netns
            enter = "".join(f'echo $$ > "{d}/cgroup.procs"; ' for d in dirs)
            nspawn = [
                "nsenter", f"--net=/run/netns/{NETNS}", "systemd-nspawn", "-q",
                "-D", str(self.image), "--volatile=overlay", "--boot", "--register=no",
                "--keep-unit", f"--machine=ops{node.name}", f"--hostname={node.name}",
                f"--network-bridge={BRIDGE}",
                # runc gives each container a session keyring; nspawn filters keyctl out
                "--system-call-filter=@keyring",
                f"--bind-ro={net}:/etc/systemd/network/10-lab.network",
                f"--bind={node.state / 'var-lib-pykubelet'}:/var/lib/pykubelet",
                f"--bind-ro={REPO}:/vagrant",
                f"--bind-ro={self.wheels}:/var/cache/pykube-wheels",
                f"--bind-ro={keys}:/etc/pykube-lab",
            ]
            console = (node.state / "console.log").open("wb")
            proc = subprocess.Popen(["/bin/sh", "-c", enter + 'exec "$@"', "sh", *nspawn],
                                    stdin=subprocess.DEVNULL, stdout=console,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            console.close()
            self.procs.append(proc)
            node.pid = proc.pid
            (node.state / "nspawn.pid").write_text(f"{proc.pid}\n")
            self.nodes.append(node)
        for node in self.nodes:
            end = time.monotonic() + boot_timeout
            while True:
                with contextlib.suppress(RuntimeError, AssertionError, FileNotFoundError):
                    state = node.sh("systemctl is-system-running --wait; true", timeout=30)
                    if state.stdout.strip() in ("running", "degraded"):
                        break
                if time.monotonic() > end:
                    raise RuntimeError(f"{node.name} did not boot:\n"
                                       + (node.state / "console.log").read_text()[-3000:])
                time.sleep(0.2)
            (node.state / "leader.pid").write_text(f"{node.leader}\n")
            # nspawn's v1 controllers are read-only in the node: let runc use them
            node.sh("for c in /sys/fs/cgroup/*/; do c=${c%/}; case $c in "
                    "*/systemd|*/unified) ;; *) mount -o remount,bind,rw \"$c\" ;; esac; done")
        return time.monotonic() - t0

    def down(self, grace: float = 5) -> None:
        """Power every node off (SIGTERM to nspawn: the node's systemd shuts down; after
        ``grace`` seconds SIGKILL to the node's PID 1, which ends its whole PID namespace),
        then remove the cgroups, the network namespace and the state; safe to call twice."""
        pids: list[tuple[int, int]] = []  # (nspawn, the node's PID 1)
        for pidfile in sorted(self.run_dir.glob("node*/nspawn.pid")):
            with contextlib.suppress(ValueError, OSError):
                pid = int(pidfile.read_text())
                leader = int((pidfile.parent / "leader.pid").read_text() or 0) \
                    if (pidfile.parent / "leader.pid").exists() else 0
                if self._is_our_nspawn(pid):
                    os.kill(pid, signal.SIGTERM)
                    pids.append((pid, leader))
        end = time.monotonic() + grace
        while any(self._alive(p) for p, _ in pids) and time.monotonic() < end:
            time.sleep(0.1)
        for pid, leader in pids:
            for victim in (leader, pid):
                if victim and self._alive(victim):
                    with contextlib.suppress(OSError):
                        os.kill(victim, signal.SIGKILL)
        end = time.monotonic() + 10
        while any(self._alive(p) for p, _ in pids) and time.monotonic() < end:
            time.sleep(0.1)
        # a killed node's processes leave its cgroups a moment after nspawn exits
        dirs = [d for node_dir in sorted(self.run_dir.glob("node*"))
                for d in self._cgroup_dirs(Node(node_dir.name, 0, node_dir))]
        end = time.monotonic() + 10
        while True:
            for d in dirs:
                self._remove_cgroup_tree(d)
            if not any(d.exists() for d in dirs) or time.monotonic() > end:
                break
            time.sleep(0.2)
        for proc in self.procs:  # reaped above or now; either way Popen knows it ended
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self.procs.clear()
        run(["ip", "netns", "del", NETNS], check=False)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        self.nodes.clear()

    @staticmethod
    def _alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        return Path(f"/proc/{pid}").exists() and "Z" not in _proc_state(pid)

    @staticmethod
    def _is_our_nspawn(pid: int) -> bool:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return b"systemd-nspawn" in cmdline and f"--network-bridge={BRIDGE}".encode() in cmdline


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


if __name__ == "__main__":  # python nspawn_lab.py up N | down  (by hand, as root)
    if sys.argv[1] == "up":
        lab = NspawnLab(rootfs()[0], wheelhouse()[0])
        print(f"booted in {lab.up(int(sys.argv[2])):.1f}s:",
              ", ".join(f"{n.name}={n.address} (nspawn {n.pid})" for n in lab.nodes))
    else:
        NspawnLab(Path("/"), Path("/")).down()
