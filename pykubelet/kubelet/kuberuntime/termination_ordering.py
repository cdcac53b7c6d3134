"""kuberuntime's terminationOrdering: when a pod with sidecars is killed, its app
containers stop first, then the sidecars in reverse spec order.

Every container is killed in parallel (its preStop hook runs at once); before
StopContainer a sidecar waits, within its grace period, until the app containers and
the sidecars after it have stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from pykubelet.api.types import Pod, is_restartable_init_container


class TerminationOrdering:
    """Which running container waits for which (newTerminationOrdering)."""

    def __init__(self, pod: Pod, running: Iterable[str]) -> None:
        running_names = set(running)
        self._done = {name: threading.Event() for name in running_names}
        self._deps: dict[str, list[str]] = {}
        apps = [c.name for c in pod.spec.containers if c.name in running_names]
        later_sidecars: list[str] = []
        for c in reversed(pod.spec.init_containers):
            if not is_restartable_init_container(c) or c.name not in running_names:
                continue
            self._deps[c.name] = [*apps, *later_sidecars]
            later_sidecars.append(c.name)

    def dependencies(self, name: str) -> list[str]:
        """The containers `name` waits for (none for an app container)."""
        return list(self._deps.get(name, ()))

    def wait_for_turn(self, name: str, grace_s: float) -> float:
        """Block until `name`'s dependencies stopped or `grace_s` passed; the seconds
        waited."""
        start = time.monotonic()
        for dep in self._deps.get(name, ()):
            left = grace_s - (time.monotonic() - start)
            if left <= 0:
                break
            self._done[dep].wait(left)
        return time.monotonic() - start

    def container_terminated(self, name: str) -> None:
        event = self._done.get(name)
        if event is not None:
            event.set()
