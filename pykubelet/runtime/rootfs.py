"""A container's root filesystem: overlayfs over the image's unpacked layers.

The mount is made with mount(2) directly (no ``mount`` subprocess on the create path).
``upper`` and ``work`` live in the container's directory, so removing the container
removes its writable layer; the image layers stay shared and read-only.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Sequence
from pathlib import Path

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

MNT_DETACH = 2


def mount_overlay(lowers: Sequence[Path], upper: Path, work: Path, target: Path) -> None:
    """Mount ``lowers`` (bottom layer first) + ``upper`` at ``target``."""
    if not lowers:
        raise ValueError("an overlay needs at least one lower layer")
    for d in (upper, work, target):
        d.mkdir(parents=True, exist_ok=True)
    # overlayfs lists lower dirs top first
    lowerdir = ":".join(str(p) for p in reversed(lowers))
    data = f"lowerdir={lowerdir},upperdir={upper},workdir={work}"
    if len(data) >= 4096:
        raise OSError(errno.E2BIG, f"overlay options too long ({len(lowers)} layers)")
    if _libc.mount(b"overlay", str(target).encode(), b"overlay", 0, data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount overlay at {target}: {os.strerror(err)}")


def mount_tmpfs(target: Path, options: str, flags: int = 0) -> None:
    """Mount a tmpfs at ``target`` (made if missing)."""
    target.mkdir(parents=True, exist_ok=True)
    if _libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", flags, options.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs at {target}: {os.strerror(err)}")


MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8


def is_mountpoint(path: Path) -> bool:
    target = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo") as f:
            return any(line.split()[4] == target for line in f)
    except OSError:
        return False


def unmount(target: Path) -> None:
    """Unmount ``target`` if mounted (a lazy detach when it is still busy)."""
    path = str(target).encode()
    if _libc.umount2(path, 0) == 0:
        return
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOENT):  # not mounted / gone
        return
    if err == errno.EBUSY and _libc.umount2(path, MNT_DETACH) == 0:
        return
    raise OSError(err, f"unmount {target}: {os.strerror(err)}")
