"""Fixtures for the ContainerManager's integration tests (what they create starts with ``rtc``).

A ContainerManager on a private root (runc root, cgroup parent, socket dir all private),
the busybox image built once per session, a minimal sandbox, and a cleanup that kills
leftover runc containers and conmon monitors, unmounts and removes cgroups even when a
test fails.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pykubelet.runtime import cgroups, rootfs
from pykubelet.runtime.containers import ContainerManager
from pykubelet.runtime.errors import NotFound
from pykubelet.runtime.image_build import build_busybox_image
from pykubelet.runtime.images import ImageStore


@dataclass
class Sandbox:
    """The fields of sandbox.SandboxInfo the container side reads."""

    id: str = field(default_factory=lambda: "rtcsb" + secrets.token_hex(8))
    name: str = "pod"
    namespace: str = "default"
    uid: str = field(default_factory=lambda: secrets.token_hex(4))
    attempt: int = 0
    netns_path: str = ""
    ipc_ns_path: str = ""
    uts_ns_path: str = ""
    hostname: str = "rtc-pod"
    hosts_path: str = ""
    resolv_path: str = ""
    hostname_path: str = ""
    log_directory: str = ""
    cgroup_parent: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    state: str = "SANDBOX_READY"
    ip: str = ""
    pid_ns_mode: str = "CONTAINER"
    network_mode: str = "POD"
    ipc_mode: str = "POD"
    security: dict = field(default_factory=dict)


@dataclass
class Env:
    root: Path
    store: ImageStore
    manager: ContainerManager
    sandboxes: dict[str, Sandbox]
    cgroup_parent: str
    socket_dir: Path

    def sandbox(self, **kw: object) -> Sandbox:
        sb = Sandbox(**kw)  # type: ignore[arg-type]
        if not sb.log_directory:
            sb.log_directory = str(self.root / "logs" / sb.id)
        self.sandboxes[sb.id] = sb
        return sb

    def new_manager(self) -> ContainerManager:
        """Another manager on the same root: what a restarted runtime builds."""
        return make_manager(self.root, self.store, self.sandboxes, self.cgroup_parent,
                            self.socket_dir)


def make_manager(root: Path, store: ImageStore, sandboxes: dict[str, Sandbox],
                 cgroup_parent: str, socket_dir: Path) -> ContainerManager:
    def lookup(sid: str) -> Sandbox:
        try:
            return sandboxes[sid]
        except KeyError:
            raise NotFound(f"pod sandbox {sid!r} not found") from None

    return ContainerManager(root / "containers", store, lookup, runc_root=root / "runc",
                            socket_dir=socket_dir, default_cgroup_parent=cgroup_parent)


@pytest.fixture(scope="session")
def busybox_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rtc-image") / "busybox.tar"
    build_busybox_image(out)
    return out


def cleanup_root(root: Path, cgroup_parent: str) -> None:
    """Kill and delete whatever a test left: runc containers, conmons, mounts, cgroups."""
    runc_root = root / "runc"
    if runc_root.is_dir():
        for d in runc_root.iterdir():
            if (d / "state.json").exists():
                subprocess.run(["runc", "--root", str(runc_root), "delete", "--force", d.name],
                               capture_output=True, timeout=30)
    cdir = root / "containers"
    if cdir.is_dir():
        for c in cdir.iterdir():
            pidfile = c / "conmon.pid"
            with contextlib.suppress(OSError, ValueError):
                pid = int(pidfile.read_text())
                if b"conmon" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split()[4] for line in f]
    for m in sorted((m for m in mounts if m.startswith(str(root))), key=len, reverse=True):
        with contextlib.suppress(OSError):
            rootfs.unmount(Path(m))
    deadline = time.monotonic() + 5
    while True:
        left = cgroups.existing_dirs(cgroup_parent)
        for d in left:
            for child in sorted(d.glob("*/"), reverse=True):
                with contextlib.suppress(OSError):
                    os.rmdir(child)
            with contextlib.suppress(OSError):
                os.rmdir(d)
        if not cgroups.existing_dirs(cgroup_parent) or time.monotonic() > deadline:
            break
        time.sleep(0.05)


@pytest.fixture
def env(tmp_path: Path, busybox_archive: Path) -> Iterator[Env]:
    root = tmp_path / "root"
    root.mkdir()
    socket_dir = Path(tempfile.mkdtemp(prefix="rtc", dir="/tmp"))
    cgroup_parent = "/rtc-" + secrets.token_hex(4)
    store = ImageStore(root / "images")
    store.import_archive(busybox_archive)
    sandboxes: dict[str, Sandbox] = {}
    manager = make_manager(root, store, sandboxes, cgroup_parent, socket_dir)
    try:
        yield Env(root, store, manager, sandboxes, cgroup_parent, socket_dir)
    finally:
        cleanup_root(root, cgroup_parent)
        shutil.rmtree(socket_dir, ignore_errors=True)


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
        time.sleep(interval)
