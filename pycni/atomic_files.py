"""One way to replace a file's contents so that a reader, or a crash, never sees half of it.

``write_atomic`` writes a temporary file in the same directory, flushes it to disk,
renames it over the target and flushes the directory, as kubelet's filestore and
containerd's atomic writers do: after a crash the path holds the old contents or the
new ones, never a mix, and no temporary file is left behind by a failed write.
``durable=False`` skips both flushes for state a host crash takes away anyway (files
under /run, records of processes that die with the host): the rename still makes the
write all-or-nothing for readers and for a crash of the writing process.

It lives in pycni, the lowest floor, because both pycni (its result cache, its
installed executables, host-local's last reserved IP) and pykubelet (checkpoints, image
store indexes, container records, pid files, bootstrap credentials, systemd units, the
lab's state and node configs, the load balancer's state, kubectl's discovery cache) persist
state with it, and pycni never imports pykubelet.
"""

from __future__ import annotations

import os
import tempfile


def fsync_dir(directory: str) -> None:
    """Flush a directory's entries (a rename into it) to disk."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(
    path: str | os.PathLike[str], data: bytes | str, *, mode: int = 0o644, durable: bool = True
) -> None:
    """Replace ``path`` with ``data`` (str is written as UTF-8), file mode ``mode``."""
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data.encode() if isinstance(data, str) else data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_dir(directory)
