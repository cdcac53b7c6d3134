"""A pod's /dev/shm: one tmpfs per sandbox (64 MiB, as containerd's default), shared by
the pod's containers through their IPC namespace's /dev/shm mount, or the node's own for a
hostIPC pod. Mounted at the first container's create and released with the sandbox, under
``<containers root>/.shm/<sandbox id>``.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from pykubelet.runtime import rootfs
from pykubelet.runtime.container_request import NS_NODE, NS_POD, SecurityContext

SHM_SIZE = 64 << 20  # as containerd's default /dev/shm


class PodShm:
    """The /dev/shm mounts of this runtime's sandboxes, under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()  # I/O under it
        self._mounted: set[str] = set()  # sandboxes whose /dev/shm we know is mounted

    def dir(self, sandbox_id: str) -> Path:
        return self.root / sandbox_id

    def for_sandbox(self, sandbox_id: str, security: SecurityContext) -> str:
        """The pod's /dev/shm: the node's for hostIPC, else one tmpfs per sandbox."""
        if security.ipc_mode == NS_NODE:
            return "/dev/shm"
        if security.ipc_mode != NS_POD:
            return ""
        d = self.dir(sandbox_id)
        with self._lock:
            if sandbox_id not in self._mounted and not rootfs.is_mountpoint(d):
                rootfs.mount_tmpfs(d, f"mode=1777,size={SHM_SIZE}",
                                   rootfs.MS_NOSUID | rootfs.MS_NODEV | rootfs.MS_NOEXEC)
            self._mounted.add(sandbox_id)
        return str(d)

    def release(self, sandbox_id: str) -> None:
        d = self.dir(sandbox_id)
        with self._lock:
            self._mounted.discard(sandbox_id)
            if d.exists():
                rootfs.unmount(d)
                with contextlib.suppress(OSError):
                    d.rmdir()

    def sandbox_ids(self) -> list[str]:
        """The sandboxes with a /dev/shm directory here (recovery checks they still exist)."""
        return [d.name for d in sorted(self.root.iterdir())] if self.root.is_dir() else []
