"""Container garbage collection of one pod, as kuberuntime_gc.go with kubelet's defaults
(MaxPerPodContainer=1): running containers stay, and the newest exited instance of each
container name (``lastState``, ``kubectl logs --previous``); older exited instances go, and
stopped sandboxes (not the newest) that no longer hold a kept container."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pykubelet.kubelet.container.runtime_state import (
    ContainerState,
    PodRuntimeStatus,
    SandboxState,
)
from pykubelet.kubelet.cri.runtime_service import CRICallError, RuntimeService

log = logging.getLogger(__name__)


def garbage_collect(
    cri: RuntimeService, observed: PodRuntimeStatus, remove_container: Callable[[str], None]
) -> None:
    """Keep running containers and the newest exited instance per container name;
    drop older exited ones (``remove_container``), and stopped sandboxes (not the newest)
    that no longer hold a kept container."""
    dead_kept: set[str] = set()
    keep_sandboxes = {observed.sandboxes[0].id} if observed.sandboxes else set()
    for c in observed.containers:  # newest first
        if c.state is not ContainerState.EXITED:
            keep_sandboxes.add(c.sandbox_id)
            continue
        # kubelet's MaxPerPodContainer=1: the newest dead instance per name stays
        # (lastState, logs --previous); older ones go
        if c.name not in dead_kept:
            dead_kept.add(c.name)
            keep_sandboxes.add(c.sandbox_id)
            continue
        try:
            remove_container(c.id)
        except CRICallError as exc:
            # kubelet's container GC logs and tries again on its next pass
            log.warning("removing exited container %s (%s): %s", c.id, c.name, exc.details)
    for s in observed.sandboxes:
        if s.id not in keep_sandboxes and s.state is SandboxState.NOT_READY:
            try:
                cri.remove_pod_sandbox(s.id)
            except CRICallError as exc:
                if not exc.not_found:
                    log.warning("removing sandbox %s: %s", s.id, exc)
