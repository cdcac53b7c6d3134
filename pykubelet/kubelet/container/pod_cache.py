"""What the runtime showed of each pod at its last sync (kubelet's kubecontainer.Cache),
and why each container's last start failed (kubelet's reason cache).

SyncPod writes both; the prober reads a container's state from ``PodCache`` between
syncs, /metrics counts running pods and containers from it, and status generation reads
``ReasonCache`` to show a start failure (CrashLoopBackOff, ErrImagePull, ...) as the
container's waiting reason until the container runs again. The reason cache also keeps
why the pod's sandbox could not be made (CreatePodSandboxError, FailedMount) until a
sandbox is ready: the pod's status shows it, where a user looks first.
"""

from __future__ import annotations

import threading

from pykubelet.kubelet.container.runtime_state import PodRuntimeStatus
from pykubelet.kubelet.status.generate import WaitingReason


class PodCache:
    """The latest observed ``PodRuntimeStatus`` by pod UID; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._observed: dict[str, PodRuntimeStatus] = {}

    def set(self, uid: str, observed: PodRuntimeStatus) -> None:
        with self._lock:
            self._observed[uid] = observed

    def get(self, uid: str) -> PodRuntimeStatus | None:
        with self._lock:
            return self._observed.get(uid)

    def delete(self, uid: str) -> None:
        with self._lock:
            self._observed.pop(uid, None)

    def all(self) -> list[PodRuntimeStatus]:
        with self._lock:
            return list(self._observed.values())


class ReasonCache:
    """Container name -> why its last start failed, per pod UID; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reasons: dict[str, dict[str, WaitingReason]] = {}
        self._sandbox: dict[str, WaitingReason] = {}

    def get(self, uid: str) -> dict[str, WaitingReason]:
        """A copy of the pod's table."""
        with self._lock:
            return dict(self._reasons.get(uid, {}))

    def update(
        self,
        uid: str,
        failures: dict[str, WaitingReason],
        cleared: list[str],
        running: list[str],
    ) -> None:
        """Forget ``cleared`` (started now) and ``running`` containers' reasons (a container
        that runs again has no start failure to report), then record ``failures``."""
        with self._lock:
            table = self._reasons.setdefault(uid, {})
            for name in cleared:
                table.pop(name, None)
            table.update(failures)
            for name in running:
                table.pop(name, None)

    def sandbox_failure(self, uid: str) -> WaitingReason | None:
        """Why the pod's sandbox could not be made, until one is ready."""
        with self._lock:
            return self._sandbox.get(uid)

    def set_sandbox_failure(self, uid: str, failure: WaitingReason | None) -> WaitingReason | None:
        """Record (or clear, with None) the pod's sandbox failure; returns the one before."""
        with self._lock:
            old = self._sandbox.pop(uid, None)
            if failure is not None:
                self._sandbox[uid] = failure
            return old

    def delete(self, uid: str) -> None:
        with self._lock:
            self._reasons.pop(uid, None)
            self._sandbox.pop(uid, None)
