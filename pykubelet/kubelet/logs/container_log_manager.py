"""Container log rotation, as kubelet's logs/container_log_manager.go.

Every 10 s, for each running container: once its log reaches ``max_size`` (10 MiB), the
log is renamed to ``<log>.<YYYYMMDD-hhmmss>`` and the runtime is told to reopen it
(CRI ReopenContainerLog; if that fails the rename is undone). Older rotated files are
gzipped (all but the newest), and only ``max_files - 2`` rotated files are kept, so with the
live log and the newest uncompressed one at most ``max_files`` files exist.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from pykubelet.kubelet.cri.runtime_service import CRICallError, RuntimeService
from pykubelet.kubelet.kuberuntime.labels import POD_UID_LABEL
from pykubelet.kubelet.util.periodic import Periodic

log = logging.getLogger(__name__)

DEFAULT_MAX_SIZE = 10 * 1024 * 1024  # containerLogMaxSize 10Mi
DEFAULT_MAX_FILES = 5  # containerLogMaxFiles
MONITOR_PERIOD_S = 10.0
TIMESTAMP_FORMAT = "%Y%m%d-%H%M%S"
COMPRESS_SUFFIX = ".gz"
TMP_SUFFIX = ".tmp"


class ContainerLogManager:
    """Rotates the logs of running containers that carry kubelet's labels."""

    def __init__(
        self,
        cri: RuntimeService,
        max_size: int = DEFAULT_MAX_SIZE,
        max_files: int = DEFAULT_MAX_FILES,
        period: float = MONITOR_PERIOD_S,
        clock: Callable[[], float] = time.time,
        owns: Callable[[str], bool] = lambda pod_uid: True,
    ) -> None:
        if max_files < 2:
            raise ValueError("containerLogMaxFiles: must be at least 2")
        self.cri = cri
        self.max_size = max_size
        self.max_files = max_files
        self.period = period
        self._clock = clock
        self._owns = owns  # pod uid -> is it this agent's pod (runtimes may be shared)
        self._loop = Periodic("container-logs", self.rotate_logs, period,
                              expected=(CRICallError,))

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def rotate_logs(self) -> None:
        """One pass over the running containers."""
        for c in self.cri.list_containers():
            uid = c.labels.get(POD_UID_LABEL)
            if not uid or c.state != 1 or not self._owns(uid):  # 1: CONTAINER_RUNNING
                continue
            try:
                path = self.cri.container_status(c.id).log_path
            except CRICallError:
                continue
            if not path:
                continue
            try:
                if os.stat(path).st_size < self.max_size:
                    continue
            except OSError:
                continue
            self.rotate_log(c.id, path)

    def rotate_log(self, container_id: str, path: str) -> None:
        """rotateLog: clean up, drop excess rotated files, compress, rotate the live one."""
        logs = sorted(glob.glob(glob.escape(path) + ".*"))
        logs = self._cleanup_unused(logs)
        logs = self._remove_excess(logs)
        self._compress(logs)
        self._rotate_latest(container_id, path)

    @staticmethod
    def _cleanup_unused(logs: list[str]) -> list[str]:
        """Temp files of an interrupted compression go; an uncompressed file whose .gz
        exists goes too."""
        keep = []
        names = set(logs)
        for name in logs:
            if name.endswith(TMP_SUFFIX) or (
                not name.endswith(COMPRESS_SUFFIX) and name + COMPRESS_SUFFIX in names
            ):
                with contextlib.suppress(OSError):
                    os.remove(name)
                continue
            keep.append(name)
        return keep

    def _remove_excess(self, logs: list[str]) -> list[str]:
        """Keep max_files - 2 rotated files (room for the live log and the new one)."""
        logs = sorted(logs)  # the timestamp suffix sorts by age
        excess = len(logs) - (self.max_files - 2)
        for name in logs[: max(0, excess)]:
            with contextlib.suppress(OSError):
                os.remove(name)
        return logs[max(0, excess):]

    @staticmethod
    def _compress(logs: list[str]) -> None:
        """gzip every rotated file but the newest (a reader may still follow it)."""
        for name in logs[:-1]:
            if name.endswith(COMPRESS_SUFFIX):
                continue
            tmp = name + COMPRESS_SUFFIX + TMP_SUFFIX
            try:
                with open(name, "rb") as src, gzip.open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.replace(tmp, name + COMPRESS_SUFFIX)
                os.remove(name)
            except OSError as exc:
                log.warning("compress %s: %s", name, exc)
                with contextlib.suppress(OSError):
                    os.remove(tmp)

    def _rotate_latest(self, container_id: str, path: str) -> None:
        stamp = time.strftime(TIMESTAMP_FORMAT, time.gmtime(self._clock()))
        rotated = f"{path}.{stamp}"
        if Path(rotated).exists():
            return  # rotated this second already
        os.rename(path, rotated)
        try:
            self.cri.reopen_container_log(container_id)
        except CRICallError as exc:
            log.warning("reopen log of %s: %s; undoing the rotation", container_id, exc)
            with contextlib.suppress(OSError):
                os.rename(rotated, path)
