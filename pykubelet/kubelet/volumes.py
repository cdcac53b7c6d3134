"""Pod volumes on the node: emptyDir (a directory, or tmpfs for medium Memory) and
hostPath (with its type checks), under ``<rootDir>/pods/<uid>/volumes`` as kubelet lays
them out, plus the kubelet-managed /etc/hosts file. Setup is idempotent (a restarted agent
finds the volumes in place); teardown unmounts tmpfs and removes the pod directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import stat
from pathlib import Path

from pycni.atomic_files import write_atomic
from pykubelet.api.types import STORAGE_MEDIUM_MEMORY, Pod, Volume

EMPTY_DIR_PLUGIN = "kubernetes.io~empty-dir"
HOST_PATH_PLUGIN = "kubernetes.io~host-path"

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
MS_NOSUID, MS_NODEV = 2, 4
MNT_DETACH = 2


class VolumeError(Exception):
    """A volume cannot be set up; the message names the volume and the problem."""


def pod_dir(root_dir: str, uid: str) -> Path:
    return Path(root_dir) / "pods" / uid


def empty_dir_path(root_dir: str, uid: str, name: str) -> Path:
    return pod_dir(root_dir, uid) / "volumes" / EMPTY_DIR_PLUGIN / name


def termination_log_path(root_dir: str, uid: str, container: str, restart_count: int) -> Path:
    """Where a container's terminationMessagePath is backed on the host (kubelet keeps it
    under the pod's containers/<name>/ directory; one file per attempt)."""
    return pod_dir(root_dir, uid) / "containers" / container / str(restart_count)


def ensure_termination_log(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o666)
    os.close(fd)
    os.chmod(path, 0o666)
    return str(path)


def etc_hosts_path(root_dir: str, uid: str) -> Path:
    return pod_dir(root_dir, uid) / "etc-hosts"


def _is_mountpoint(path: Path) -> bool:
    try:
        return os.path.ismount(path)
    except OSError:
        return False


def _mount_tmpfs(target: Path, size_bytes: int | None) -> None:
    opts = "mode=0777" + (f",size={size_bytes}" if size_bytes else "")
    rc = _libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode())
    if rc != 0:
        err = ctypes.get_errno()
        raise VolumeError(f"mount tmpfs on {target}: {os.strerror(err)}")


def _umount(target: Path) -> None:
    if _libc.umount2(str(target).encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise VolumeError(f"umount {target}: {os.strerror(err)}")


def _host_path(vol: Volume) -> str:
    assert vol.host_path is not None
    path = vol.host_path.path
    kind = vol.host_path.type or ""
    where = f"volumes[{vol.name}].hostPath"
    p = Path(path)
    if kind == "DirectoryOrCreate":
        p.mkdir(mode=0o755, parents=True, exist_ok=True)
    elif kind == "FileOrCreate":
        p.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            p.touch(mode=0o644, exist_ok=False)
    checks = {
        "Directory": stat.S_ISDIR,
        "DirectoryOrCreate": stat.S_ISDIR,
        "File": stat.S_ISREG,
        "FileOrCreate": stat.S_ISREG,
        "Socket": stat.S_ISSOCK,
        "CharDevice": stat.S_ISCHR,
        "BlockDevice": stat.S_ISBLK,
    }
    if kind in checks:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise VolumeError(f"{where}: {kind} {path} does not exist") from None
        if not checks[kind](mode):
            raise VolumeError(f"{where}: {path} is not a {kind}")
    elif kind not in ("",):
        raise VolumeError(f"{where}.type: unsupported type {kind!r}")
    return path


def setup_volumes(pod: Pod, root_dir: str) -> dict[str, str]:
    """Make every volume of the pod exist on the host; returns name -> host path."""
    out: dict[str, str] = {}
    for vol in pod.spec.volumes:
        if vol.empty_dir is not None:
            p = empty_dir_path(root_dir, pod.uid, vol.name)
            p.mkdir(mode=0o777, parents=True, exist_ok=True)
            os.chmod(p, 0o777)
            if vol.empty_dir.medium == STORAGE_MEDIUM_MEMORY and not _is_mountpoint(p):
                limit = vol.empty_dir.size_limit
                _mount_tmpfs(p, limit.value() if limit is not None else None)
            out[vol.name] = str(p)
        elif vol.host_path is not None:
            out[vol.name] = _host_path(vol)
        else:
            raise VolumeError(f"volumes[{vol.name}]: only emptyDir and hostPath are supported")
    return out


def write_etc_hosts(pod: Pod, root_dir: str, pod_ip: str, hostname: str, domain: str) -> Path:
    """kubelet's managed hosts file: localhost entries, then the pod's IP and names."""
    lines = [
        "# Kubernetes-managed hosts file.",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
    ]
    if pod_ip:
        names = f"{hostname}.{domain}\t{hostname}" if domain else hostname
        lines.append(f"{pod_ip}\t{names}")
    for alias in pod.spec.host_aliases:
        lines.append(f"{alias.ip}\t" + "\t".join(alias.hostnames))
    path = etc_hosts_path(root_dir, pod.uid)
    path.parent.mkdir(parents=True, exist_ok=True)
    # written again before every container start: no need to survive a host crash
    write_atomic(path, "\n".join(lines) + "\n", durable=False)
    return path


def teardown_pod_dir(root_dir: str, uid: str) -> None:
    """Unmount tmpfs emptyDirs and remove the pod's directory (after its containers)."""
    base = pod_dir(root_dir, uid)
    ed = base / "volumes" / EMPTY_DIR_PLUGIN
    if ed.is_dir():
        for child in ed.iterdir():
            if _is_mountpoint(child):
                _umount(child)
    if base.exists():
        shutil.rmtree(base, ignore_errors=True)
