"""The pod statuses this agent computed, and where they go: kubelet's status manager.

SyncPod computes a pod's status from the runtime (``status.generate_pod_status``) and
hands it to ``StatusManager.set_pod_status``; every reader (the /pods listing, the
prober's view of a container, admission's count of active pods, the next SyncPod's
three-way phase merge) asks it through ``PodStatusProvider``. As in
pkg/kubelet/status/status_manager.go, each pod's status carries a version that grows by
one whenever the status changes, so a writer to the API server knows what it already
sent: ``sync_batch`` hands every status newer than the last one written to the
``StatusPatcher`` (the control plane's pods/status client, when the agent has one), and
keeps the version written only once the patcher returned. A failed write is retried on
the next pass; a newer status replaces an unwritten older one (newest wins). Without a
patcher nothing is written anywhere and no thread runs. The sync thread hands each pod's
newest unwritten status to a small pool as soon as that pod has no write in flight, so a
burst's statuses do not queue behind each other's round trips (issue 23 item 2).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from pykubelet import podtrace
from pykubelet.api.types import PHASE_FAILED, PHASE_RUNNING, PHASE_SUCCEEDED, Pod, PodStatus

log = logging.getLogger(__name__)

STATUS_SYNC_PERIOD_S = 10.0  # kubelet's syncPeriod for statuses
PATCHES_IN_FLIGHT = 8  # status writes at once in one batch (the client pools 16 connections)
TERMINAL_PHASES = (PHASE_SUCCEEDED, PHASE_FAILED)


@dataclass(frozen=True)
class VersionedPodStatus:
    """A pod's status with the version it was given (kubelet's versionedPodStatus)."""

    uid: str
    name: str
    namespace: str
    status: PodStatus
    version: int
    at: float  # when it was set (time.time())


class PodStatusProvider(Protocol):
    """What readers of pod statuses depend on (kubelet's status.PodStatusProvider)."""

    def get_pod_status(self, uid: str) -> PodStatus | None: ...


class StatusPatcher(Protocol):
    """Writes one pod's status where users read it (the API server's pods/status).

    Called from the status manager's sync threads, several pods at once (never two
    versions of one pod at once), with a status whose version is newer than the last one
    written for that pod. Raising means "not
    written": the same or a newer version is offered again on the next pass.
    """

    def patch_pod_status(self, status: VersionedPodStatus) -> None: ...


class StatusManager:
    """The cached status of every pod, versioned; optionally synced to a patcher."""

    def __init__(
        self,
        patcher: StatusPatcher | None = None,
        sync_period: float = STATUS_SYNC_PERIOD_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.patcher = patcher
        self.sync_period = sync_period
        self._clock = clock
        self._lock = threading.Lock()
        self._statuses: dict[str, VersionedPodStatus] = {}
        self._written: dict[str, int] = {}  # uid -> version the patcher accepted
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._in_flight: set[str] = set()  # pods with a write under way (from the pool)

    # ------------------------------------------------------------------ cache
    def set_pod_status(self, pod: Pod, status: PodStatus) -> VersionedPodStatus:
        """Cache ``status`` for ``pod``; a changed status gets the next version."""
        with self._lock:
            old = self._statuses.get(pod.uid)
            if old is not None and old.status == status:
                return old
            entry = VersionedPodStatus(
                uid=pod.uid, name=pod.name, namespace=pod.namespace, status=status,
                version=(old.version + 1) if old is not None else 1, at=self._clock(),
            )
            self._statuses[pod.uid] = entry
        if podtrace.enabled() and status.phase == PHASE_RUNNING and status.container_statuses \
                and all(c.ready for c in status.container_statuses):
            podtrace.stage("status_set", pod.uid)
        if self.patcher is not None:
            self._wake.set()
        return entry

    def get_pod_status(self, uid: str) -> PodStatus | None:
        with self._lock:
            entry = self._statuses.get(uid)
        return entry.status if entry is not None else None

    def get_versioned(self, uid: str) -> VersionedPodStatus | None:
        with self._lock:
            return self._statuses.get(uid)

    def is_terminal(self, uid: str) -> bool:
        """The pod's last status has phase Succeeded or Failed."""
        status = self.get_pod_status(uid)
        return status is not None and status.phase in TERMINAL_PHASES

    def statuses(self) -> dict[str, PodStatus]:
        """Every cached status by UID (a copy of the mapping, not of the statuses)."""
        with self._lock:
            return {uid: e.status for uid, e in self._statuses.items()}

    def remove_pod_status(self, uid: str) -> None:
        """Forget a pod that is gone for good."""
        with self._lock:
            self._statuses.pop(uid, None)
            self._written.pop(uid, None)

    def remove_orphaned_statuses(self, wanted: Iterable[str]) -> None:
        """Forget every status whose pod is not in ``wanted`` (RemoveOrphanedStatuses)."""
        keep = set(wanted)
        with self._lock:
            for uid in [u for u in self._statuses if u not in keep]:
                del self._statuses[uid]
                self._written.pop(uid, None)

    # ------------------------------------------------------------------ sync
    def unwritten(self) -> list[VersionedPodStatus]:
        """Statuses newer than the version the patcher last accepted (needsUpdate)."""
        with self._lock:
            return [e for uid, e in self._statuses.items()
                    if e.version > self._written.get(uid, 0)]

    def sync_batch(self, reconcile: bool = False) -> int:
        """Offer every unwritten status to the patcher (with ``reconcile``, every status);
        returns how many it accepted. Up to ``PATCHES_IN_FLIGHT`` pods are written at once:
        each write is a round trip to the API server, and a burst's pods waited on each
        other's; one pod appears once per batch, so its versions still go out in order."""
        if self.patcher is None:
            return 0
        if reconcile:
            with self._lock:
                entries = list(self._statuses.values())
        else:
            entries = self.unwritten()
        if len(entries) <= 1:
            return sum(self._write(e) for e in entries)
        with ThreadPoolExecutor(min(len(entries), PATCHES_IN_FLIGHT),
                                thread_name_prefix="status-patch") as pool:
            return sum(pool.map(self._write, entries))

    def _write(self, entry: VersionedPodStatus) -> bool:
        """One status to the patcher; its version is marked written once accepted."""
        assert self.patcher is not None
        try:
            self.patcher.patch_pod_status(entry)
        except Exception as exc:
            log.warning("status of %s/%s (version %d) not written: %s",
                        entry.namespace, entry.name, entry.version, exc)
            return False
        with self._lock:
            if entry.uid in self._statuses:
                self._written[entry.uid] = max(self._written.get(entry.uid, 0),
                                               entry.version)
        return True

    def start(self) -> None:
        """Sync in a thread on every change and every ``sync_period`` (with a patcher)."""
        if self.patcher is None or self._thread is not None:
            return
        self._pool = ThreadPoolExecutor(PATCHES_IN_FLIGHT, thread_name_prefix="status-patch")
        self._thread = threading.Thread(target=self._loop, name="status-manager", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _loop(self) -> None:
        """Hand each pod's newest unwritten status to the pool as soon as the pod has no
        write in flight: a change never waits for other pods' writes to end."""
        next_reconcile = time.monotonic() + self.sync_period
        while not self._stop.is_set():
            self._wake.wait(max(0.0, next_reconcile - time.monotonic()))
            self._wake.clear()
            if self._stop.is_set():
                return
            reconcile = time.monotonic() >= next_reconcile
            if reconcile:
                next_reconcile = time.monotonic() + self.sync_period
            try:
                self._dispatch(reconcile)
            except Exception:
                log.exception("status sync failed")

    def _dispatch(self, reconcile: bool) -> None:
        if reconcile:
            with self._lock:
                entries = list(self._statuses.values())
        else:
            entries = self.unwritten()
        pool = self._pool
        for entry in entries:
            with self._lock:
                if entry.uid in self._in_flight:
                    continue  # its write's end wakes us again
                self._in_flight.add(entry.uid)
            if pool is None:
                return
            pool.submit(self._write_in_flight, entry)

    def _write_in_flight(self, entry: VersionedPodStatus) -> None:
        ok = False
        try:
            ok = self._write(entry)
        finally:
            with self._lock:
                self._in_flight.discard(entry.uid)
                current = self._statuses.get(entry.uid)
                newer = current is not None and current.version > entry.version
            if ok and newer:
                self._wake.set()  # set while this one was in flight: its turn now
