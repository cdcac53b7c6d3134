"""Network namespace handles: enter one for the calling thread, create and delete named ones.

setns(CLONE_NEWNET) changes only the calling thread, so :func:`entered` is safe
inside a multi-threaded server as long as the work inside the ``with`` block stays
on this thread; it always switches back, even on error. Netlink sockets keep the
namespace they were created in, so the usual pattern is to open a socket inside
the block and use it after.

Only os and errno at import: this module is imported by the exec'd plugins, where every
millisecond of import time counts. :func:`entered` is a small class rather than a
``contextlib.contextmanager`` (contextlib and the collections it imports are ~4 ms), and
libc is reached through ctypes only when a call needs it: ``os.setns`` where Python has
it (3.12), ctypes for the rest.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    import ctypes
    from types import TracebackType

CLONE_NEWNET = 0x40000000
MS_BIND = 4096
MNT_DETACH = 2
NETNS_RUN_DIR = "/run/netns"

_libc: ctypes.CDLL | None = None


class NetNSNotFound(Exception):
    """The netns path does not exist (the reference's NSPathNotExistErr)."""


class NotANetNS(Exception):
    """The path exists but is not a network namespace."""


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def setns(fd: int, nstype: int = CLONE_NEWNET) -> None:
    """Move the calling thread into the namespace behind ``fd``."""
    if hasattr(os, "setns"):  # Python 3.12+: no ctypes
        os.setns(fd, nstype)
        return
    _check(_c().setns(fd, nstype), "setns")


def open_netns(path: str) -> int:
    """An O_RDONLY fd on the netns at ``path``; NetNSNotFound if it does not exist."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise NetNSNotFound(f'failed to Statfs "{path}": no such file or directory') from exc


def current_netns_fd() -> int:
    """An fd on the calling thread's own netns (to switch back to)."""
    return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)


class _Entered:
    """The with-statement of :func:`entered`: fds on the target and on the thread's own
    netns are held for the block, and both closed after switching back."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._target = -1
        self._orig = -1

    def __enter__(self) -> None:
        target = open_netns(self.path)
        try:
            orig = current_netns_fd()
            try:
                setns(target)
            except OSError as exc:
                os.close(orig)
                if exc.errno == errno.EINVAL:
                    raise NotANetNS(f'"{self.path}" is not a network namespace') from exc
                raise
        except BaseException:
            os.close(target)
            raise
        self._target, self._orig = target, orig

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            try:
                setns(self._orig)
            finally:
                os.close(self._orig)
        finally:
            os.close(self._target)


def entered(path: str) -> _Entered:
    """Run the block with this thread in the netns at ``path``; always switch back."""
    return _Entered(path)


def same_netns(path: str) -> bool:
    """Whether ``path`` is the calling thread's current netns."""
    a, b = os.stat(path), os.stat("/proc/thread-self/ns/net")
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def create_netns(name: str, run_dir: str = NETNS_RUN_DIR) -> str:
    """Create a named netns pinned by a bind mount at ``run_dir/name`` (like ``ip netns add``)."""
    import threading

    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, name)
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o444)
    os.close(fd)
    failure: list[BaseException] = []

    def pin() -> None:  # a throwaway thread, so unshare never touches the caller's netns
        try:
            _check(_c().unshare(CLONE_NEWNET), "unshare")
            src = f"/proc/self/task/{threading.get_native_id()}/ns/net".encode()
            _check(_c().mount(src, path.encode(), b"none", MS_BIND, None), "mount")
        except BaseException as exc:
            failure.append(exc)

    t = threading.Thread(target=pin, name=f"netns-{name}")
    t.start()
    t.join()
    if failure:
        os.unlink(path)
        raise failure[0]
    return path


def delete_netns(name_or_path: str, run_dir: str = NETNS_RUN_DIR) -> None:
    """Unmount and remove a named netns; a missing one is fine."""
    path = name_or_path if "/" in name_or_path else os.path.join(run_dir, name_or_path)
    _c().umount2(path.encode(), MNT_DETACH)  # EINVAL when not mounted: ignored
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
