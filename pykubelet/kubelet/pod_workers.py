"""Pod workers: one worker thread per pod, serialised per pod, parallel across pods.

As kubelet's pod_workers.go: an update arriving while the worker is busy is kept as the
pod's single pending work item (the newest update wins), so a pod is never synced by two
threads at once and bursts of events collapse into one sync. After each sync the worker
waits for new work or for the requeue delay the sync asked for (kubelet's work queue),
which is how restart back-off and periodic resync re-enter SyncPod. A kill update runs the
terminate function; once it succeeds the worker ends and forgets the pod.

All workers share one lock, but each waits on a condition of its own: an update wakes the
one worker it is for, not every pod's thread (with one shared condition a burst of n pods
woke n threads per update and per finished sync, n^2 wake-ups fighting for the GIL).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

ERROR_RETRY_S = 2.0


class UpdateType(Enum):
    CREATE = "create"
    UPDATE = "update"
    SYNC = "sync"
    KILL = "kill"


class PodRef(Protocol):
    """What a pod worker needs of the pod it works for: its UID (a Pod, or the agent's
    record of an orphan the runtime still holds)."""

    @property
    def uid(self) -> str: ...


P = TypeVar("P", bound=PodRef)


@dataclass
class PodWork(Generic[P]):
    pod: P
    update_type: UpdateType


class _Worker(Generic[P]):
    def __init__(self, uid: str, pod: P, lock: threading.Lock) -> None:
        self.uid = uid
        self.pending: PodWork[P] | None = None
        self.last_pod: P = pod
        self.requeue_at: float | None = None
        self.terminating = False
        self.thread: threading.Thread | None = None
        self.busy = False
        self.syncs = 0
        self.after_termination: PodWork[P] | None = None
        self.wake = threading.Condition(lock)


class PodWorkers(Generic[P]):
    """Dispatches pod updates to per-pod worker threads."""

    def __init__(
        self,
        sync_fn: Callable[[P, UpdateType], float | None],
        terminate_fn: Callable[[P], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sync_fn = sync_fn
        self._terminate_fn = terminate_fn
        self._clock = clock
        self._lock = threading.Lock()
        self._workers: dict[str, _Worker[P]] = {}
        self._stopping = False

    # ------------------------------------------------------------------ public
    def update_pod(self, pod: P, update_type: UpdateType) -> None:
        """Queue work for the pod; starts its worker on first sight. Newest update wins."""
        uid = pod.uid
        with self._lock:
            if self._stopping:
                return
            worker = self._workers.get(uid)
            if worker is None:
                worker = _Worker(uid, pod, self._lock)
                self._workers[uid] = worker
                worker.thread = threading.Thread(
                    target=self._run, args=(worker,), name=f"pod-worker-{uid[:8]}", daemon=True
                )
                worker.thread.start()
            if worker.terminating and update_type is not UpdateType.KILL:
                # a pod being torn down is not started again under the same uid until its
                # teardown finished; then this update starts it afresh
                worker.after_termination = PodWork(pod, update_type)
                return
            if update_type is UpdateType.KILL:
                worker.terminating = True
                worker.after_termination = None
            elif worker.pending is not None and worker.pending.update_type is UpdateType.KILL:
                return
            worker.pending = PodWork(pod, update_type)
            worker.last_pod = pod
            worker.wake.notify()

    def kill_pod(self, pod: P) -> None:
        self.update_pod(pod, UpdateType.KILL)

    def known_uids(self) -> set[str]:
        with self._lock:
            return set(self._workers)

    def is_known(self, uid: str) -> bool:
        with self._lock:
            return uid in self._workers

    def sync_count(self, uid: str) -> int:
        with self._lock:
            w = self._workers.get(uid)
            return w.syncs if w else 0

    def idle(self) -> bool:
        """True when no worker is syncing and none has work pending now."""
        with self._lock:
            return all(not w.busy and w.pending is None for w in self._workers.values())

    def stop(self, timeout: float = 10.0) -> None:
        """Stop all workers after their current sync; pods keep running in the runtime."""
        with self._lock:
            self._stopping = True
            for w in self._workers.values():
                w.wake.notify()
            threads = [w.thread for w in self._workers.values() if w.thread is not None]
        end = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, end - time.monotonic()))

    # ------------------------------------------------------------------ worker loop
    def _next_work(self, worker: _Worker[P]) -> PodWork[P] | None:
        with self._lock:
            while True:
                if self._stopping:
                    return None
                if worker.pending is not None:
                    work, worker.pending = worker.pending, None
                    worker.requeue_at = None
                    worker.busy = True
                    return work
                now = self._clock()
                if worker.requeue_at is not None and now >= worker.requeue_at:
                    worker.requeue_at = None
                    worker.busy = True
                    kind = UpdateType.KILL if worker.terminating else UpdateType.SYNC
                    return PodWork(worker.last_pod, kind)
                wait = None if worker.requeue_at is None else worker.requeue_at - now
                worker.wake.wait(timeout=wait if wait is None else min(wait, 1.0))

    def _run(self, worker: _Worker[P]) -> None:
        while True:
            work = self._next_work(worker)
            if work is None:
                return
            try:
                if work.update_type is UpdateType.KILL:
                    self._terminate_fn(work.pod)
                    with self._lock:
                        worker.busy = False
                        worker.syncs += 1
                        again = worker.after_termination
                        if again is not None and (
                            worker.pending is None
                            or worker.pending.update_type is not UpdateType.KILL
                        ):
                            worker.terminating = False
                            worker.after_termination = None
                            worker.pending = again
                            worker.last_pod = again.pod
                            continue
                        if worker.pending is None or worker.pending.update_type is UpdateType.KILL:
                            self._workers.pop(worker.uid, None)
                            return
                    continue
                delay = self._sync_fn(work.pod, work.update_type)
            except Exception:
                log.exception("pod worker %s: %s failed", worker.uid, work.update_type.value)
                delay = ERROR_RETRY_S
            with self._lock:
                worker.busy = False
                worker.syncs += 1
                if delay is not None and worker.pending is None:
                    worker.requeue_at = self._clock() + max(0.0, delay)
