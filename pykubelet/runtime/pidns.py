"""A shared PID namespace for a pod (CRI ``pid=POD``, shareProcessNamespace): catatonit as init.

Unlike net/IPC/UTS, a PID namespace cannot be pinned by a bind mount alone: once its init
exits, no process can join it. So only pods that ask for a shared PID namespace get a
process: Debian's ``catatonit -P`` started as PID 1 of a fresh namespace (it reaps the
orphans of every container in the pod). A throw-away thread unshares CLONE_NEWPID so the
next child it forks is that init; the runtime itself never changes namespace.
The holder runs in its own session, so it survives a runtime restart; it is identified by
pid *and* start time, so a recycled pid is never mistaken for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass

from pykubelet.runtime.netns import _check, _libc, in_throwaway_thread

CLONE_NEWPID = 0x20000000
DEFAULT_HOLDER = "/usr/bin/catatonit"

_children: dict[int, subprocess.Popen] = {}  # holders we started in this process (to reap)


@dataclass(frozen=True)
class PidHolder:
    pid: int
    start_time: int  # /proc/<pid>/stat field 22, in clock ticks since boot

    @property
    def ns_path(self) -> str:
        return f"/proc/{self.pid}/ns/pid"


def _start_time(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def start_holder(binary: str = DEFAULT_HOLDER) -> PidHolder:
    """Start ``binary -P`` as PID 1 of a new PID namespace."""

    def worker() -> subprocess.Popen:
        _check(_libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
        return subprocess.Popen(
            [binary, "-P"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
        )

    proc = in_throwaway_thread(worker, "pidns-holder")
    _children[proc.pid] = proc
    return PidHolder(proc.pid, _start_time(proc.pid))


def alive(holder: PidHolder) -> bool:
    try:
        return _start_time(holder.pid) == holder.start_time
    except (OSError, ValueError, IndexError):
        return False


def stop_holder(holder: PidHolder, timeout: float = 5.0) -> None:
    """SIGKILL the holder (the kernel then kills everything in its namespace); idempotent."""
    if alive(holder):
        with contextlib.suppress(ProcessLookupError):
            os.kill(holder.pid, signal.SIGKILL)
    proc = _children.pop(holder.pid, None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
        return
    deadline = time.monotonic() + timeout
    while alive(holder) and time.monotonic() < deadline:
        time.sleep(0.01)
