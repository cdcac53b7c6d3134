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

The temporary file is made with ``os.open(O_CREAT | O_EXCL)`` under a random name, as
``tempfile.mkstemp`` makes it, without importing tempfile: the exec'd CNI plugins write
through here (host-local's reservations), and tempfile's imports (shutil, random, bz2,
lzma) cost every plugin start ~9 ms.
"""

from __future__ import annotations

import os

_TEMP_ATTEMPTS = 100  # tempfile.TMP_MAX is 10000; a collision of 64 random bits is rare


def _create_temp(directory: str, base: str) -> tuple[int, str]:
    """An exclusive new file ``.<base>.<random>.tmp`` in ``directory``: (fd, path)."""
    for _ in range(_TEMP_ATTEMPTS):
        path = os.path.join(directory, f".{base}.{os.urandom(8).hex()}.tmp")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        return fd, path
    raise FileExistsError(f"no unused temporary name for {base!r} in {directory!r}")


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
    fd, tmp = _create_temp(directory, os.path.basename(target))
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
