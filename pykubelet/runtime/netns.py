"""Pin a pod's network, IPC and UTS namespaces with bind mounts: no holder process.

containerd's pkg/netns approach: a throw-away OS thread calls ``unshare`` for the new
namespaces (per-task namespaces, so the rest of the process is untouched), sets the
hostname inside the new UTS namespace, and bind-mounts ``/proc/thread-self/ns/{net,ipc,uts}``
onto plain files. The thread then exits; the bind mounts keep the namespaces alive until
``unpin`` unmounts them. Net pins live in a directory ``ip netns`` reads (``/run/netns``),
so operators see pod namespaces as they do containerd's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUTS = 0x04000000
MS_BIND = 4096
MNT_DETACH = 2

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.unshare.argtypes = [ctypes.c_int]
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_void_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


class NamespaceError(OSError):
    """A namespace could not be created, pinned or released."""


T = TypeVar("T")


def in_throwaway_thread(fn: Callable[[], T], name: str) -> T:
    """Run ``fn`` in a fresh OS thread that ends right after, and return its result or
    raise its exception here. Namespace changes (unshare, setns) are per thread: the
    thread is never reused, so the rest of the process never changes namespace."""
    out: list[T] = []
    err: list[BaseException] = []

    def worker() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # handed to the caller's thread
            err.append(exc)

    t = threading.Thread(target=worker, name=name, daemon=True)
    t.start()
    t.join()
    if err:
        raise err[0]
    return out[0]


def _enter(path: str, flag: int) -> None:
    """setns the calling thread into the namespace pinned at ``path``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        _check(_libc.setns(fd, flag), f"setns {path}")
    finally:
        os.close(fd)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise NamespaceError(err, f"{what}: {os.strerror(err)}")


def bind_mount(source: str, target: str) -> None:
    _check(_libc.mount(source.encode(), target.encode(), None, MS_BIND, None),
           f"bind mount {source} -> {target}")


def unmount(target: str) -> None:
    """Lazily unmount ``target``; not mounted or missing counts as done."""
    if _libc.umount2(target.encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOENT):
            raise NamespaceError(err, f"umount {target}: {os.strerror(err)}")


def is_mountpoint(path: str) -> bool:
    """True when ``path`` is itself a mount (a live pin), by /proc/self/mountinfo."""
    want = os.path.realpath(path)
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4 and fields[4].replace("\\040", " ") == want:
                return True
    return False


@dataclass(frozen=True)
class PinnedNamespaces:
    """Files whose bind mounts hold a sandbox's namespaces; "" means the host's is used."""

    net: str
    ipc: str
    uts: str

    def paths(self) -> list[str]:
        return [p for p in (self.net, self.ipc, self.uts) if p]

    def flags(self) -> int:
        return ((CLONE_NEWNET if self.net else 0) | (CLONE_NEWIPC if self.ipc else 0)
                | (CLONE_NEWUTS if self.uts else 0))


def _touch(path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o444)
    os.close(fd)


def pin(pins: PinnedNamespaces, hostname: str = "") -> PinnedNamespaces:
    """Create fresh net/ipc/uts namespaces, set ``hostname`` in the UTS one, pin all three.

    Raises NamespaceError (nothing left behind) when any step fails; FileExistsError when a
    pin file already exists (never reuse another sandbox's namespace).
    """
    created: list[str] = []
    mounted: list[str] = []
    if not pins.paths():
        return pins
    try:
        for p in pins.paths():
            _touch(p)
            created.append(p)

        def worker() -> None:
            # This OS thread ends right after; its namespaces stay reachable via the pins.
            _check(_libc.unshare(pins.flags()), "unshare")
            if hostname and pins.uts:
                name = hostname.encode()
                _check(_libc.sethostname(name, len(name)), f"sethostname {hostname!r}")
            tid = threading.get_native_id()
            for kind, target in (("net", pins.net), ("ipc", pins.ipc), ("uts", pins.uts)):
                if not target:
                    continue
                bind_mount(f"/proc/self/task/{tid}/ns/{kind}", target)
                mounted.append(target)

        in_throwaway_thread(worker, "netns-pin")
        return pins
    except BaseException:
        for p in mounted:
            unmount(p)
        for p in created:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        raise


def unpin(pins: PinnedNamespaces) -> None:
    """Unmount and delete every pin file; idempotent."""
    for p in pins.paths():
        unmount(p)
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            os.rmdir(p)


def entered_hostname(uts_path: str) -> str:
    """Read the hostname inside a pinned UTS namespace (a check for tests and status)."""

    def worker() -> str:
        _enter(uts_path, CLONE_NEWUTS)
        return os.uname().nodename

    return in_throwaway_thread(worker, "netns-peek")


# sysctls a pod may set (Kubernetes' namespaced sysctls): which pinned namespace owns them
IPC_SYSCTLS = ("kernel.shm_rmid_forced", "kernel.shmmax", "kernel.shmall", "kernel.shmmni",
               "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem")


def sysctl_namespace(key: str) -> str:
    """"net" or "ipc" for a namespaced sysctl (dotted form); "" for a node-wide one."""
    if key.startswith("net."):
        return "net"
    if key in IPC_SYSCTLS or key.startswith("fs.mqueue."):
        return "ipc"
    return ""


def normalize_sysctl(key: str) -> str:
    """``net/ipv4/ip_forward`` -> ``net.ipv4.ip_forward`` (Kubernetes accepts both forms)."""
    return key.replace("/", ".") if "/" in key and "." not in key.split("/")[0] else key


def apply_sysctls(pins: PinnedNamespaces, sysctls: dict[str, str]) -> None:
    """Write namespaced sysctls inside the pod's pinned net/IPC namespaces.

    A throw-away thread joins the namespaces (``setns`` is per thread), so /proc/sys resolves
    to the pod's values; the rest of the process never changes namespace. Raises OSError
    naming the key when the kernel refuses a value.
    """
    if not sysctls:
        return

    def worker() -> None:
        for kind, flag, path in (("net", CLONE_NEWNET, pins.net),
                                 ("ipc", CLONE_NEWIPC, pins.ipc)):
            if path and any(sysctl_namespace(k) == kind for k in sysctls):
                _enter(path, flag)
        for key, value in sysctls.items():
            proc_path = "/proc/sys/" + key.replace(".", "/")
            try:
                with open(proc_path, "w") as f:
                    f.write(value)
            except OSError as exc:
                raise OSError(exc.errno, f"sysctl {key}={value!r}: {exc.strerror}") from exc

    in_throwaway_thread(worker, "netns-sysctl")


def interface_counters(net_path: str) -> dict[str, tuple[int, int, int, int]]:
    """{ifname: (rx_bytes, rx_errors, tx_bytes, tx_errors)} inside a pinned network namespace.

    Read from /proc/thread-self/net/dev in a throw-away thread that joined the namespace
    (/proc/<tid>/net follows the thread's namespace; /sys/class/net would show the host's).
    """

    def worker() -> dict[str, tuple[int, int, int, int]]:
        _enter(net_path, CLONE_NEWNET)
        with open(f"/proc/self/task/{threading.get_native_id()}/net/dev") as f:
            lines = f.read().splitlines()[2:]
        out: dict[str, tuple[int, int, int, int]] = {}
        for line in lines:
            name, _, rest = line.partition(":")
            v = [int(x) for x in rest.split()]
            out[name.strip()] = (v[0], v[2], v[8], v[10])
        return out

    return in_throwaway_thread(worker, "netns-stats")
