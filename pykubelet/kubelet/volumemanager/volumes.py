"""Pod volumes on the node: emptyDir (a directory, or tmpfs for medium Memory), hostPath
(with its type checks), configMap and secret (files projected from the objects, secrets on
tmpfs), downwardAPI (the pod's fields and resources, ``downward_api``) and projected
(configMap, secret, downwardAPI and serviceAccountToken sources in one directory: the token
from the kubelet's token manager, bound to the pod), both on tmpfs as kubelet's, under
``<rootDir>/pods/<uid>/volumes`` as kubelet lays them out, plus the kubelet-managed
/etc/hosts file. Setup is idempotent (a restarted agent finds the volumes
in place) and refreshes configMap and secret files; teardown unmounts tmpfs and removes the
pod directory.

ConfigMap, secret, downwardAPI and projected files are written as kubelet's AtomicWriter
writes them: into a new
``..<timestamp>`` directory, then the ``..data`` symlink is swapped to it in one rename, and
the names users see are symlinks through ``..data``; a container reading the volume sees
the old set or the new one, never half of each.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import shutil
import stat
import time
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

from pycni.atomic_files import write_atomic
from pykubelet.api.types import (
    STORAGE_MEDIUM_MEMORY,
    ConfigMapVolumeSource,
    KeyToPath,
    Pod,
    ServiceAccountTokenProjection,
    Volume,
)
from pykubelet.kubelet.cluster.object_refs import ObjectRefs, RefError
from pykubelet.kubelet.token.manager import TokenFetchError, TokenManager
from pykubelet.kubelet.volumemanager import downward_api

log = logging.getLogger(__name__)

EMPTY_DIR_PLUGIN = "kubernetes.io~empty-dir"
HOST_PATH_PLUGIN = "kubernetes.io~host-path"
CONFIGMAP_PLUGIN = "kubernetes.io~configmap"
SECRET_PLUGIN = "kubernetes.io~secret"
DOWNWARD_API_PLUGIN = "kubernetes.io~downward-api"
PROJECTED_PLUGIN = "kubernetes.io~projected"
TMPFS_PLUGINS = (EMPTY_DIR_PLUGIN, SECRET_PLUGIN, DOWNWARD_API_PLUGIN, PROJECTED_PLUGIN)
DATA_DIR = "..data"

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


def _projection(data: dict[str, bytes], items: list[KeyToPath], default_mode: int,
                optional: bool, what: str) -> dict[str, tuple[bytes, int]]:
    """The files a configMap/secret volume holds: every key, or the listed items."""
    if not items:
        return {k: (v, default_mode) for k, v in data.items()}
    out: dict[str, tuple[bytes, int]] = {}
    for item in items:
        if item.key not in data:
            if optional:
                continue
            raise VolumeError(f"{what} references non-existent config key: {item.key}")
        out[item.path] = (data[item.key], item.mode if item.mode is not None else default_mode)
    return out


def write_projected(target: Path, files: dict[str, tuple[bytes, int]]) -> bool:
    """AtomicWriter: make ``target`` hold exactly ``files``; False if it already did."""
    target.mkdir(parents=True, exist_ok=True)
    data_link = target / DATA_DIR
    current = target / os.readlink(data_link) if data_link.is_symlink() else None
    if current is not None and current.is_dir() and _same_files(current, files):
        return False
    stamp = target / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{os.getpid()}{time.monotonic_ns()}"
    stamp.mkdir(mode=0o755)
    for rel, (content, mode) in files.items():
        path = stamp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        os.chmod(path, mode)
    tmp = target / "..data_tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    os.symlink(stamp.name, tmp)
    os.replace(tmp, data_link)
    tops = {Path(rel).parts[0] for rel in files}
    for top in tops:
        link = target / top
        if not link.is_symlink():
            os.symlink(f"{DATA_DIR}/{top}", link)
    for child in target.iterdir():
        if child.name.startswith(".."):
            if child.is_dir() and not child.is_symlink() and child != stamp:
                shutil.rmtree(child, ignore_errors=True)
        elif child.is_symlink() and child.name not in tops:
            child.unlink()
    return True


def _same_files(directory: Path, files: dict[str, tuple[bytes, int]]) -> bool:
    have = {str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file()}
    if have != set(files):
        return False
    for rel, (content, mode) in files.items():
        p = directory / rel
        if p.read_bytes() != content or stat.S_IMODE(p.stat().st_mode) != mode:
            return False
    return True


def _object_volume(pod: Pod, vol: Volume, root_dir: str, refs: ObjectRefs | None) -> str:
    """A configMap or secret volume, projected from its object (secrets on tmpfs)."""
    is_cm = vol.config_map is not None
    src = vol.config_map if is_cm else vol.secret
    assert src is not None
    name = src.name if isinstance(src, ConfigMapVolumeSource) else src.secret_name
    kind = "configmap" if is_cm else "secret"
    if refs is None:
        raise VolumeError(f"volumes[{vol.name}]: {kind} volumes need a control plane (this "
                          "node has none)")
    try:
        data = refs.configmap(pod.namespace, name) if is_cm else refs.secret(pod.namespace, name)
    except RefError as exc:
        raise VolumeError(f'MountVolume.SetUp failed for volume "{vol.name}" : {exc}') from None
    optional = bool(src.optional)
    if data is None and not optional:
        raise VolumeError(f'MountVolume.SetUp failed for volume "{vol.name}" : {kind} '
                          f'"{name}" not found')
    target = pod_dir(root_dir, pod.uid) / "volumes" / (
        CONFIGMAP_PLUGIN if is_cm else SECRET_PLUGIN) / vol.name
    target.mkdir(parents=True, exist_ok=True)
    if not is_cm and not _is_mountpoint(target):
        _mount_tmpfs(target, None)  # secrets never touch the disk
    mode = src.default_mode if src.default_mode is not None else 0o644
    files = _projection(data or {}, src.items, mode, optional,
                        f'MountVolume.SetUp failed for volume "{vol.name}" : {kind} {name}')
    write_projected(target, files)
    return str(target)


def _set_up_error(vol: Volume, message: str) -> VolumeError:
    return VolumeError(f'MountVolume.SetUp failed for volume "{vol.name}" : {message}')


def _object_data(pod: Pod, vol: Volume, refs: ObjectRefs | None, kind: str, name: str,
                 optional: bool) -> dict[str, bytes] | None:
    if refs is None:
        raise VolumeError(f"volumes[{vol.name}]: {kind} volumes need a control plane (this "
                          "node has none)")
    try:
        data = refs.configmap(pod.namespace, name) if kind == "configmap" else refs.secret(
            pod.namespace, name)
    except RefError as exc:
        raise _set_up_error(vol, str(exc)) from None
    if data is None and not optional:
        raise _set_up_error(vol, f'{kind} "{name}" not found')
    return data


def _projected_files(pod: Pod, vol: Volume, refs: ObjectRefs | None,
                     allocatable: Mapping[str, Fraction]) -> dict[str, tuple[bytes, int]]:
    """projected.collectData: every source's files in one set (later sources win)."""
    src = vol.projected
    assert src is not None
    mode = src.default_mode if src.default_mode is not None else 0o644
    out: dict[str, tuple[bytes, int]] = {}
    for source in src.sources:
        if source.config_map is not None or source.secret is not None:
            proj = source.config_map or source.secret
            assert proj is not None
            kind = "configmap" if source.config_map is not None else "secret"
            optional = bool(proj.optional)
            data = _object_data(pod, vol, refs, kind, proj.name, optional)
            out.update(_projection(data or {}, proj.items, mode, optional,
                                   f'MountVolume.SetUp failed for volume "{vol.name}" : '
                                   f"{kind} {proj.name}"))
        elif source.downward_api is not None:
            try:
                out.update(downward_api.files(pod, source.downward_api.items, mode,
                                              allocatable))
            except downward_api.DownwardAPIError as exc:
                raise _set_up_error(vol, str(exc)) from None
        elif source.service_account_token is not None:
            out.update(_token_file(pod, vol, refs, source.service_account_token, mode))
    return out


def _token_file(pod: Pod, vol: Volume, refs: ObjectRefs | None,
                src: ServiceAccountTokenProjection, mode: int) -> dict[str, tuple[bytes, int]]:
    """A serviceAccountToken source's file: a token bound to the pod, from the node's
    token manager (the API object refs' ``tokens``; a node without a control plane has
    none, and writes no token)."""
    tokens: TokenManager | None = getattr(refs, "tokens", None)
    if tokens is None:
        log.debug("%s: volume %s: no control plane, serviceAccountToken source skipped",
                  pod.format(), vol.name)
        return {}
    try:
        token = tokens.pod_token(pod.namespace, pod.spec.service_account_name or "default",
                                 src.audience, src.expiration_seconds or 3600, pod.name,
                                 pod.uid)
    except TokenFetchError as exc:
        raise _set_up_error(vol, str(exc)) from None
    return {src.path: (token, mode)}


def _memory_backed(pod: Pod, vol: Volume, root_dir: str, plugin: str,
                   files: dict[str, tuple[bytes, int]]) -> str:
    """A downwardAPI or projected volume: tmpfs (kubelet wraps them in a memory-backed
    emptyDir), its files written atomically."""
    target = pod_dir(root_dir, pod.uid) / "volumes" / plugin / vol.name
    target.mkdir(parents=True, exist_ok=True)
    if not _is_mountpoint(target):
        _mount_tmpfs(target, None)
    write_projected(target, files)
    return str(target)


def setup_volumes(pod: Pod, root_dir: str, refs: ObjectRefs | None = None,
                  allocatable: Mapping[str, Fraction] | None = None) -> dict[str, str]:
    """Make every volume of the pod exist on the host (refreshing configMap, secret,
    downwardAPI and projected files); returns name -> host path. ``allocatable`` is the
    node's (cpu in cores, memory and ephemeral-storage in bytes), for the downward API's
    limits a container does not set."""
    alloc = allocatable or {}
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
        elif vol.config_map is not None or vol.secret is not None:
            out[vol.name] = _object_volume(pod, vol, root_dir, refs)
        elif vol.downward_api is not None:
            dapi = vol.downward_api
            mode = dapi.default_mode if dapi.default_mode is not None else 0o644
            try:
                files = downward_api.files(pod, dapi.items, mode, alloc)
            except downward_api.DownwardAPIError as exc:
                raise _set_up_error(vol, str(exc)) from None
            out[vol.name] = _memory_backed(pod, vol, root_dir, DOWNWARD_API_PLUGIN, files)
        elif vol.projected is not None:
            out[vol.name] = _memory_backed(pod, vol, root_dir, PROJECTED_PLUGIN,
                                           _projected_files(pod, vol, refs, alloc))
        else:
            raise VolumeError(f"volumes[{vol.name}]: only emptyDir, hostPath, configMap, "
                              "secret, downwardAPI and projected are supported")
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
    for plugin in TMPFS_PLUGINS:
        d = base / "volumes" / plugin
        if d.is_dir():
            for child in d.iterdir():
                if _is_mountpoint(child):
                    _umount(child)
    if base.exists():
        shutil.rmtree(base, ignore_errors=True)
