"""The pod lifecycle event generator: relist the runtime every second, diff, emit events.

As kubelet's pleg/generic.go: list every sandbox and container over CRI, compare each
container's (and sandbox's) state with the previous relist, and report one event per
change, keyed by the pod UID found in kubelet's labels. Objects without the pod UID
label are not ours and are ignored. The agent turns events into pod syncs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from pykubelet.kubelet.cri.runtime_service import CRICallError, RuntimeService
from pykubelet.kubelet.kuberuntime.labels import POD_UID_LABEL
from pykubelet.kubelet.metrics import KubeletMetrics
from pykubelet.kubelet.util.periodic import Periodic

log = logging.getLogger(__name__)

RELIST_PERIOD_S = 1.0

# event types, as upstream's PodLifeCycleEventType
CONTAINER_STARTED = "ContainerStarted"
CONTAINER_DIED = "ContainerDied"
CONTAINER_REMOVED = "ContainerRemoved"
CONTAINER_CHANGED = "ContainerChanged"
SANDBOX_CHANGED = "SandboxChanged"


@dataclass(frozen=True)
class PodLifecycleEvent:
    pod_uid: str
    type: str
    data: str  # the container or sandbox id


@dataclass(frozen=True)
class RelistSnapshot:
    """What one relist saw: id -> (pod uid, state name), for containers and sandboxes."""

    containers: dict[str, tuple[str, str]]
    sandboxes: dict[str, tuple[str, str]]
    at: float


def _container_event(uid: str, cid: str, old: str | None, new: str | None) -> str | None:
    if new == old:
        return None
    if new == "CONTAINER_RUNNING":
        return CONTAINER_STARTED
    if new == "CONTAINER_EXITED":
        return CONTAINER_DIED
    if new is None:
        return CONTAINER_REMOVED if old == "CONTAINER_EXITED" else CONTAINER_DIED
    return CONTAINER_CHANGED


def diff(prev: RelistSnapshot | None, cur: RelistSnapshot) -> list[PodLifecycleEvent]:
    """Events between two relists (pure, so it is unit tested)."""
    events: list[PodLifecycleEvent] = []
    old_c = prev.containers if prev else {}
    for cid in sorted(set(old_c) | set(cur.containers)):
        o = old_c.get(cid)
        n = cur.containers.get(cid)
        uid = (n or o)[0]  # type: ignore[index]
        kind = _container_event(uid, cid, o[1] if o else None, n[1] if n else None)
        if kind is not None:
            events.append(PodLifecycleEvent(uid, kind, cid))
    old_s = prev.sandboxes if prev else {}
    for sid in sorted(set(old_s) | set(cur.sandboxes)):
        o = old_s.get(sid)
        n = cur.sandboxes.get(sid)
        if (o and o[1]) != (n and n[1]):
            uid = (n or o)[0]  # type: ignore[index]
            events.append(PodLifecycleEvent(uid, SANDBOX_CHANGED, sid))
    return events


class GenericPLEG:
    """Relists ``cri`` every ``period`` seconds in a thread and calls ``on_event``."""

    def __init__(
        self,
        cri: RuntimeService,
        on_event: Callable[[PodLifecycleEvent], None],
        period: float = RELIST_PERIOD_S,
        metrics: KubeletMetrics | None = None,
    ) -> None:
        self._cri = cri
        self._on_event = on_event
        self._metrics = metrics
        self._prev: RelistSnapshot | None = None
        self._loop = Periodic("pleg", self._relist_and_notify, period, immediately=True,
                              expected=(CRICallError,))
        self.last_relist: float = 0.0
        self.relists = 0
        # the error of the last relist while relisting fails (the runtime is unreachable),
        # and since when; "" once a relist succeeds again
        self.relist_error = ""
        self.failing_since = 0.0

    def relist(self) -> list[PodLifecycleEvent]:
        """One relist: the events since the last one. A failing relist is recorded (for
        ``healthy``) and raised, so the loop reports it."""
        start = time.monotonic()
        try:
            sandboxes = self._cri.list_pod_sandbox()
            containers = self._cri.list_containers()
        except Exception as exc:
            if not self.relist_error:
                self.failing_since = start
            self.relist_error = str(exc) if isinstance(exc, CRICallError) else repr(exc)
            raise
        self.relist_error = ""
        cur = RelistSnapshot(
            containers={
                c.id: (c.labels[POD_UID_LABEL], _state_name(c.state, container=True))
                for c in containers
                if POD_UID_LABEL in c.labels
            },
            sandboxes={
                s.id: (s.labels[POD_UID_LABEL], _state_name(s.state, container=False))
                for s in sandboxes
                if POD_UID_LABEL in s.labels
            },
            at=time.time(),
        )
        events = diff(self._prev, cur)
        self._prev = cur
        self.last_relist = time.monotonic()
        self.relists += 1
        if self._metrics is not None:
            self._metrics.observe_pleg_relist(self.last_relist - start)
        return events

    @property
    def snapshot(self) -> RelistSnapshot | None:
        return self._prev

    def healthy(self, threshold_s: float = 180.0) -> bool:
        """Upstream's relist threshold (unhealthy after 3 min without a relist), and
        unhealthy at once while relisting fails: the runtime does not answer."""
        return (
            not self.relist_error
            and self.last_relist > 0
            and time.monotonic() - self.last_relist < threshold_s
        )

    def health_message(self, threshold_s: float = 180.0) -> str:
        """Why ``healthy`` is False, in upstream's words where it has them."""
        if self.relist_error:
            since = time.monotonic() - self.failing_since
            return f"PLEG is not healthy: relist failing for {since:.0f}s: {self.relist_error}"
        if self.last_relist <= 0:
            return "PLEG is not healthy: no relist yet"
        ago = time.monotonic() - self.last_relist
        return (f"PLEG is not healthy: pleg was last seen active {ago:.0f}s ago; "
                f"threshold is {threshold_s:.0f}s")

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _relist_and_notify(self) -> None:
        for ev in self.relist():
            self._on_event(ev)


def _state_name(value: int, container: bool) -> str:
    from pykubelet._proto.runtime.v1 import api_pb2 as pb

    enum = pb.ContainerState if container else pb.PodSandboxState
    return enum.Name(value)
