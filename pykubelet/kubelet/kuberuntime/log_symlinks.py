"""kubelet's legacy container log symlinks, for log shippers that read
``/var/log/containers/<pod>_<namespace>_<container>-<containerID>.log``.

Each points at the container's CRI log file (``<podLogsDir>/<ns>_<pod>_<uid>/<ctr>/<n>.log``).
The directory is the ``containers`` sibling of podLogsDir (``/var/log/containers`` for the
default ``/var/log/pods``), so a node with its logs elsewhere keeps both together. The link
is made after StartContainer (kuberuntime startContainer) and removed with the container
(removeContainerLog); links whose target is gone are swept by ``remove_dangling``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

EXT4_MAX_FILENAME = 255
SUFFIX = ".log"


def container_logs_dir(pod_logs_dir: str) -> Path:
    """The symlink directory: ``<podLogsDir>/../containers``."""
    return Path(os.path.normpath(pod_logs_dir)).parent / "containers"


def log_symlink_path(
    logs_dir: Path, pod_name: str, namespace: str, container_name: str, container_id: str
) -> Path:
    """logSymlink: ``<pod>_<ns>_<container>-<id>.log``, the name cut to 255 bytes."""
    base = f"{pod_name}_{namespace}_{container_name}-{container_id}"
    limit = EXT4_MAX_FILENAME - len(SUFFIX)
    if len(base.encode()) > limit:
        base = base.encode()[:limit].decode(errors="ignore")
    return logs_dir / (base + SUFFIX)


def create_log_symlink(link: Path, target: str) -> None:
    """Link `link` -> `target` if the log file exists (a dangling link is pointless)."""
    if not target or not os.path.lexists(target):
        return
    try:
        link.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        link.symlink_to(target)
    except OSError as exc:
        log.warning("container log symlink %s -> %s: %s", link, target, exc)


def remove_log_symlink(link: Path) -> None:
    try:
        link.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("removing container log symlink %s: %s", link, exc)


def remove_dangling(logs_dir: Path, live_ids: set[str]) -> list[Path]:
    """Remove links whose target is gone and whose container is not in `live_ids`
    (containerGC's removal of stale legacy symlinks); the links removed."""
    removed: list[Path] = []
    try:
        entries = list(logs_dir.iterdir())
    except OSError:
        return removed
    for link in entries:
        if not link.is_symlink() or not link.name.endswith(SUFFIX):
            continue
        cid = link.name[: -len(SUFFIX)].rsplit("-", 1)[-1]
        if cid in live_ids or link.exists():
            continue
        remove_log_symlink(link)
        removed.append(link)
    return removed
