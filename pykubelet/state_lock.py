"""One daemon per state directory: an exclusive flock on a file that holds the owner's pid.

As kubelet's ``--lock-file`` and containerd's root: the first ``pykubelet run`` (or
``pykubelet runtime``) on a rootDir/runDir locks ``<dir>/<name>.lock`` and writes its pid
there; a second one on the same directory fails to lock it and refuses to start, naming
the holder. The kernel drops a flock when its process dies, SIGKILL included, so a crash
never leaves a stale lock behind, and the pid left in the file of a *held* lock tells a
successor which process it is (the agent adopts the embedded runtime that outlived it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path

KUBELET_LOCK = "kubelet.lock"  # in rootDir and in runDir, held by `pykubelet run`
RUNTIME_LOCK = "runtime.lock"  # in the root, held by `pykubelet runtime`
_ATTEMPTS = 5


class StateLocked(Exception):
    """Another live process holds the lock; the message names it."""

    def __init__(self, path: Path, pid: int) -> None:
        self.path = path
        self.pid = pid
        holder = f"pid {pid} ({describe(pid)})" if pid > 0 else "another process"
        super().__init__(f"{path} is held by {holder}")


def describe(pid: int) -> str:
    """A process's command line on one line, for messages ('?' when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    # `python -m pykubelet.cli.main runtime ...` reads better as `pykubelet runtime ...`
    for i, a in enumerate(args):
        if a in ("pykubelet.cli.main",) or a.endswith("/pykubelet"):
            args = ["pykubelet", *args[i + 1:]]
            break
    text = " ".join(" ".join(a.split()) for a in args)  # one line, whatever the args hold
    return (text[:157] + "...") if len(text) > 160 else text or "?"


@dataclass
class StateLock:
    """A held lock; ``release`` (or process exit) frees it."""

    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def acquire(path: Path) -> StateLock:
    """Lock ``path`` (created 0644, its directory 0700 if missing) and write our pid in it;
    raises StateLocked when a live process holds it, OSError when it cannot be made."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        for attempt in range(_ATTEMPTS):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                # a `holder` look takes the lock shared for an instant: try a few times
                if attempt == _ATTEMPTS - 1:
                    raise StateLocked(path, _read_pid(fd)) from None
                time.sleep(0.05)
    except BaseException:
        os.close(fd)
        raise
    data = f"{os.getpid()}\n".encode()
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))
    return StateLock(path, fd)


def holder(path: Path) -> int | None:
    """The pid of the live process holding ``path`` (0 if it wrote none yet), None if free."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_pid(fd: int) -> int:
    try:
        return int(os.pread(fd, 32, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return 0
