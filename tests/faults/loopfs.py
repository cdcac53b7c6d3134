"""A small ext4 filesystem on a loop device for one test: a store or an image store put
on it can be filled to the last block and freed again. Always unmounted (lazily if
something still holds it) and its file removed, whatever the test did."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def loop_filesystem(image: Path, mountpoint: Path, size_mib: int = 16) -> Iterator[Path]:
    image.parent.mkdir(parents=True, exist_ok=True)
    with open(image, "wb") as f:
        f.truncate(size_mib << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True)
    mountpoint.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mountpoint)], check=True)
    try:
        yield mountpoint
    finally:
        if subprocess.run(["umount", str(mountpoint)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True)
        image.unlink(missing_ok=True)


def fill(path: Path, leave: int = 0, chunk: int = 1 << 20) -> int:
    """Write ``path`` until the filesystem has ``leave`` bytes or fewer free, then stop
    (ENOSPC ends it too). Returns the bytes written."""
    written = 0
    with open(path, "wb") as f:
        while True:
            st = os.statvfs(path)
            free = st.f_bavail * st.f_frsize
            if free <= leave:
                break
            try:
                f.write(b"\0" * min(chunk, max(free - leave, 4096)))
                f.flush()
                os.fsync(f.fileno())
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
            written += min(chunk, max(free - leave, 4096))
    return written


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
