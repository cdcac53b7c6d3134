"""Starts the agent died inside: CRI cannot tell a container whose StartContainer was cut
short by a crash from one that never started, so the agent leaves a marker file beside the
pod (``<pod dir>/starting/<container id>``) for the length of the call.

After a restart, a container still CREATED with a fresh marker may still be starting in the
runtime: the sync waits (``start_in_flight``). Otherwise a CREATED container, or one whose
start the agent's death aborted, is removed with its empty log and created again under the
same attempt (``remove_leftovers``), so the restart count stays right. Ours, not upstream's:
kubelet does not survive its own death inside StartContainer this way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pykubelet.kubelet.container.runtime_state import ContainerState, PodRuntimeStatus
from pykubelet.kubelet.cri.runtime_service import CRICallError, RuntimeService
from pykubelet.kubelet.volumemanager.volumes import pod_dir

log = logging.getLogger(__name__)

# refused removals of an interrupted start before it is kept as an exited instance
# (syncs retry every 2 s: long enough for a start that is still settling)
LEFTOVER_REMOVE_ATTEMPTS = 5
# how long a start the previous agent died inside may still be completing in the runtime
START_SETTLE_S = 15.0
START_SETTLE_POLL_S = 0.5


class InterruptedStarts:
    """The start markers of one node's pods, and the interrupted starts the runtime refused
    to remove."""

    def __init__(self, root_dir: str) -> None:
        self.root_dir = root_dir
        self._leftover_failures: dict[str, int] = {}
        self._unremovable: set[str] = set()

    def marker(self, uid: str, container_id: str) -> Path:
        """Written before StartContainer, removed once it returned: its presence after a
        restart means the agent died inside that call, which CRI cannot tell us."""
        return pod_dir(self.root_dir, uid) / "starting" / container_id

    def forget(self, container_id: str) -> None:
        """The container is removed: nothing to remember of it."""
        self._unremovable.discard(container_id)
        self._leftover_failures.pop(container_id, None)

    def start_in_flight(self, observed: PodRuntimeStatus, now: float) -> float | None:
        """A container still CREATED with a fresh start marker: the previous agent died
        inside StartContainer, and the runtime may still be starting it (a pod's own
        worker never overlaps its starts, so the marker is not ours). Removing it now
        would kill a container the runtime is about to run and create it again; the sync
        waits instead, up to START_SETTLE_S from the marker. Returns when to look again,
        or None."""
        markers = pod_dir(self.root_dir, observed.uid) / "starting"
        for c in observed.containers:
            if c.state is not ContainerState.CREATED:
                continue
            try:
                since = (markers / c.id).stat().st_mtime
            except OSError:
                continue
            if now - since < START_SETTLE_S:
                return START_SETTLE_POLL_S
        return None

    def remove_leftovers(
        self, observed: PodRuntimeStatus, cri: RuntimeService, remove: Callable[[str], None]
    ) -> bool:
        """Undo starts a crash interrupted, so the restart count stays right. Containers
        still CREATED (the agent died between CreateContainer and StartContainer; a pod's
        worker always starts what it creates), and containers whose start the agent's
        death aborted (a start marker is left and the runtime reports a start error: a
        runtime such as containerd cancels StartContainer with its client's context) are
        removed (``remove``), with their empty logs, and created again under the same
        attempt. True if any was removed.

        A refused removal fails the sync (the worker retries: containerd refuses while a
        start is still settling) until LEFTOVER_REMOVE_ATTEMPTS; then the instance is
        kept as an exited one and the container starts again under the next attempt, as
        kubelet would. containerd 1.6/1.7 can keep the task of a StartContainer whose
        context was cancelled and refuse every RemoveContainer for good
        (containerd/containerd#11037)."""
        removed = False
        markers = pod_dir(self.root_dir, observed.uid) / "starting"
        for c in observed.containers:
            marker = markers / c.id
            interrupted = marker.exists()
            aborted = interrupted and c.state is ContainerState.EXITED and (
                c.started_at == 0.0 or c.reason == "StartError"
            )
            if (c.state is ContainerState.CREATED or aborted) and c.id not in self._unremovable:
                log.info("removing container %s (%s) whose start was interrupted (%s)",
                         c.id, c.name, c.state.value)
                try:
                    _remove_with_empty_log(cri, c.id, remove)
                    removed = True
                except CRICallError as exc:
                    failures = self._leftover_failures.get(c.id, 0) + 1
                    self._leftover_failures[c.id] = failures
                    if failures < LEFTOVER_REMOVE_ATTEMPTS:
                        raise
                    log.warning("container %s (%s) whose start was interrupted cannot be "
                                "removed (%d attempts), keeping it as an exited instance: %s",
                                c.id, c.name, failures, exc.details)
                    self._unremovable.add(c.id)
                    self._leftover_failures.pop(c.id, None)
            if interrupted:
                marker.unlink(missing_ok=True)
        if markers.is_dir():
            known = {c.id for c in observed.containers}
            for m in markers.iterdir():
                if m.name not in known:
                    m.unlink(missing_ok=True)
        return removed


def _remove_with_empty_log(
    cri: RuntimeService, container_id: str, remove: Callable[[str], None]
) -> None:
    """Remove a container that never ran, and first its empty log: an empty log left
    behind would make the next attempt count it as a restart (calcRestartCountByLogDir),
    and removing it first keeps that true if the agent dies during the removal."""
    try:
        log_path = cri.container_status(container_id).log_path
    except CRICallError:
        log_path = ""
    if log_path:
        p = Path(log_path)
        try:
            if p.is_file() and p.stat().st_size == 0:
                p.unlink()
        except OSError:
            pass
    remove(container_id)
