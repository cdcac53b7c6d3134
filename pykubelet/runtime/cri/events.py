"""GetContainerEvents: container lifecycle events for kubelet's evented PLEG and `crictl events`.

The container side records state in its own files (conmon writes exits even while the runtime
is down), so events are derived the way a PLEG relist derives them: a poller lists containers
every ``interval`` seconds *while at least one client listens*, compares with the previous
list and emits CREATED, STARTED, STOPPED and DELETED, each with the pod's status and its
containers' statuses, as containerd sends them. A transition that happened between two polls
still yields every step in order (a container created, run and exited in one interval gives
CREATED, STARTED, STOPPED).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from pykubelet._proto.runtime.v1 import api_pb2 as pb

log = logging.getLogger(__name__)

CREATED, STARTED, STOPPED, DELETED = (pb.CONTAINER_CREATED_EVENT, pb.CONTAINER_STARTED_EVENT,
                                      pb.CONTAINER_STOPPED_EVENT, pb.CONTAINER_DELETED_EVENT)
_BACKLOG = 10000  # events kept for a slow listener before it is dropped


def transitions(before: pb.Container | None, after: pb.Container | None,
                started: bool) -> list[pb.ContainerEventType]:
    """The events between two observations of one container (None: absent)."""
    if before is None and after is None:
        return []
    if after is None:  # removed; if it was running, it stopped first
        running = before is not None and before.state == pb.CONTAINER_RUNNING
        return [STOPPED, DELETED] if running else [DELETED]
    out: list[pb.ContainerEventType] = []
    old = before.state if before is not None else None
    if before is None:
        out.append(CREATED)
    if after.state in (pb.CONTAINER_RUNNING, pb.CONTAINER_EXITED) and old in (
            None, pb.CONTAINER_CREATED) and (after.state == pb.CONTAINER_RUNNING or started):
        out.append(STARTED)
    if after.state == pb.CONTAINER_EXITED and old != pb.CONTAINER_EXITED:
        out.append(STOPPED)
    return out


class ContainerEvents:
    """Fan-out of polled container events to every GetContainerEvents stream."""

    wants_context = True  # the servicer passes the gRPC context (to end with the client)

    def __init__(
        self,
        list_containers: Callable[[], list[pb.Container]],
        container_status: Callable[[str], pb.ContainerStatus | None],
        sandbox_status: Callable[[str], pb.PodSandboxStatus | None],
        statuses_in_sandbox: Callable[[str], list[pb.ContainerStatus]],
        interval: float = 0.5,
    ) -> None:
        self.list_containers = list_containers
        self.container_status = container_status
        self.sandbox_status = sandbox_status
        self.statuses_in_sandbox = statuses_in_sandbox
        self.interval = interval
        self._lock = threading.Lock()
        self._subscribers: list[queue.Queue] = []
        self._poller: threading.Thread | None = None

    # -- the RPC ----------------------------------------------------------------------------

    def GetContainerEvents(self, req: pb.GetEventsRequest,
                           context: grpc.ServicerContext) -> Iterator[pb.ContainerEventResponse]:
        q: queue.Queue = queue.Queue(_BACKLOG)
        self._subscribe(q)
        try:
            while context.is_active():
                try:
                    event = q.get(timeout=0.5)
                except queue.Empty:
                    continue
                if event is None:  # dropped: too far behind
                    return
                yield event
        finally:
            self._unsubscribe(q)

    # -- subscribers and the poller --------------------------------------------------------

    def _subscribe(self, q: queue.Queue) -> None:
        with self._lock:
            self._subscribers.append(q)
            if self._poller is None:
                self._poller = threading.Thread(target=self._poll, name="cri-events",
                                                daemon=True)
                self._poller.start()

    def _unsubscribe(self, q: queue.Queue) -> None:
        with self._lock:
            if q in self._subscribers:
                self._subscribers.remove(q)

    def _snapshot(self) -> dict[str, pb.Container]:
        return {c.id: c for c in self.list_containers()}

    def _poll(self) -> None:
        try:
            seen = self._snapshot()
        except Exception:
            log.exception("container events: first listing failed")
            seen = {}
        while True:
            time.sleep(self.interval)
            with self._lock:
                if not self._subscribers:
                    self._poller = None
                    return
            try:
                now = self._snapshot()
                self._emit_changes(seen, now)
                seen = now
            except Exception:
                log.exception("container events: polling failed")

    def _emit_changes(self, seen: dict[str, pb.Container], now: dict[str, pb.Container]) -> None:
        for cid in list(seen) + [c for c in now if c not in seen]:
            before, after = seen.get(cid), now.get(cid)
            started = False
            if (after is not None and after.state == pb.CONTAINER_EXITED
                    and (before is None or before.state == pb.CONTAINER_CREATED)):
                status = self.container_status(cid)  # did it run, or fail to start?
                started = bool(status and status.started_at)
            kinds = transitions(before, after, started)
            if not kinds:
                continue
            sandbox_id = (after or before).pod_sandbox_id  # type: ignore[union-attr]
            pod = self.sandbox_status(sandbox_id)
            statuses = self.statuses_in_sandbox(sandbox_id) if pod is not None else []
            for kind in kinds:
                event = pb.ContainerEventResponse(
                    container_id=cid, container_event_type=kind, created_at=time.time_ns(),
                    containers_statuses=statuses)
                if pod is not None:
                    event.pod_sandbox_status.CopyFrom(pod)
                self._publish(event)

    def _publish(self, event: Any) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for q in subscribers:
            try:
                q.put_nowait(event)
            except queue.Full:
                log.warning("container events: a listener fell %d events behind; dropping it",
                            _BACKLOG)
                self._unsubscribe(q)
                q.queue.clear()
                q.put_nowait(None)
