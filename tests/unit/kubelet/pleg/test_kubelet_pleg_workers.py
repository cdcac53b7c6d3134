"""PLEG's relist diff, and pod workers: serial per pod, parallel across pods, newest
update wins, requeue after the delay a sync asks for, kill ends the worker."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from pykubelet.kubelet.cri.cri_client import CRICallError
from pykubelet.kubelet.pleg.generic import (
    CONTAINER_DIED,
    CONTAINER_REMOVED,
    CONTAINER_STARTED,
    SANDBOX_CHANGED,
    GenericPLEG,
    RelistSnapshot,
    diff,
)
from pykubelet.kubelet.pod_workers import PodWorkers, UpdateType


def snap(containers=None, sandboxes=None):
    return RelistSnapshot(containers=containers or {}, sandboxes=sandboxes or {}, at=0.0)


def test_diff_events():
    a = snap({"c1": ("u1", "CONTAINER_CREATED")}, {"s1": ("u1", "SANDBOX_READY")})
    b = snap({"c1": ("u1", "CONTAINER_RUNNING"), "c2": ("u2", "CONTAINER_EXITED")},
             {"s1": ("u1", "SANDBOX_NOTREADY")})
    ev = {(e.pod_uid, e.type, e.data) for e in diff(a, b)}
    assert ev == {("u1", CONTAINER_STARTED, "c1"), ("u2", CONTAINER_DIED, "c2"),
                  ("u1", SANDBOX_CHANGED, "s1")}
    c = snap({"c1": ("u1", "CONTAINER_EXITED")}, {"s1": ("u1", "SANDBOX_NOTREADY")})
    assert [(e.type, e.data) for e in diff(b, c)] == [
        (CONTAINER_DIED, "c1"), (CONTAINER_REMOVED, "c2")]
    assert diff(c, c) == []
    assert {e.type for e in diff(None, a)} == {"ContainerChanged", SANDBOX_CHANGED}


@dataclass
class P:
    uid: str
    version: int = 0


def test_workers_serial_per_pod_parallel_across():
    active: dict[str, int] = {}
    max_per_pod: dict[str, int] = {}
    overlap = threading.Event()
    seen: list[tuple[str, int]] = []
    lock = threading.Lock()

    def sync(pod, kind):
        with lock:
            active[pod.uid] = active.get(pod.uid, 0) + 1
            max_per_pod[pod.uid] = max(max_per_pod.get(pod.uid, 0), active[pod.uid])
            if len([u for u, n in active.items() if n]) > 1:
                overlap.set()
            seen.append((pod.uid, pod.version))
        time.sleep(0.2)
        with lock:
            active[pod.uid] -= 1
        return None

    w = PodWorkers(sync, lambda pod: None)
    w.update_pod(P("a", 0), UpdateType.CREATE)
    w.update_pod(P("b", 0), UpdateType.CREATE)
    time.sleep(0.05)
    for v in range(1, 6):  # while "a" syncs: only the newest is kept
        w.update_pod(P("a", v), UpdateType.UPDATE)
    end = time.monotonic() + 5
    while not w.idle() and time.monotonic() < end:
        time.sleep(0.02)
    w.stop()
    assert max_per_pod == {"a": 1, "b": 1}
    assert overlap.is_set()
    assert [v for u, v in seen if u == "a"] == [0, 5]


def test_requeue_and_kill():
    calls: list[str] = []
    killed = threading.Event()

    def sync(pod, kind):
        calls.append(kind.value)
        return 0.1

    def terminate(pod):
        killed.set()

    w = PodWorkers(sync, terminate)
    w.update_pod(P("a"), UpdateType.CREATE)
    time.sleep(0.45)
    assert calls[0] == "create"
    assert calls.count("sync") >= 2  # requeued after each 0.1 s
    w.kill_pod(P("a"))
    assert killed.wait(2)
    end = time.monotonic() + 2
    while w.is_known("a") and time.monotonic() < end:
        time.sleep(0.02)
    assert not w.is_known("a")
    n = len(calls)
    time.sleep(0.3)
    assert len(calls) == n  # no more syncs after the kill
    w.stop()


def test_failing_sync_is_retried():
    calls = []

    def sync(pod, kind):
        calls.append(kind)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return None

    import pykubelet.kubelet.pod_workers as workers_mod

    old = workers_mod.ERROR_RETRY_S
    workers_mod.ERROR_RETRY_S = 0.05
    try:
        w = PodWorkers(sync, lambda p: None)
        w.update_pod(P("a"), UpdateType.CREATE)
        end = time.monotonic() + 2
        while len(calls) < 2 and time.monotonic() < end:
            time.sleep(0.02)
        w.stop()
    finally:
        workers_mod.ERROR_RETRY_S = old
    assert len(calls) == 2


def test_readded_during_termination_starts_after_it():
    events: list[str] = []
    gate = threading.Event()

    def sync(pod, kind):
        events.append(f"sync-{kind.value}")
        return None

    def terminate(pod):
        events.append("terminate-start")
        gate.wait(2)
        events.append("terminate-end")

    w = PodWorkers(sync, terminate)
    w.update_pod(P("a"), UpdateType.CREATE)
    time.sleep(0.1)
    w.kill_pod(P("a"))
    time.sleep(0.1)
    w.update_pod(P("a", 1), UpdateType.CREATE)  # the same uid comes back meanwhile
    time.sleep(0.1)
    assert events == ["sync-create", "terminate-start"]
    gate.set()
    end = time.monotonic() + 2
    while len(events) < 4 and time.monotonic() < end:
        time.sleep(0.02)
    w.stop()
    assert events == ["sync-create", "terminate-start", "terminate-end", "sync-create"]


class FlakyRuntime:
    """A CRI client whose runtime can be made unreachable (every list fails)."""

    def __init__(self) -> None:
        self.down = False

    def _check(self, method: str) -> list:
        if self.down:
            raise CRICallError(method, "UNAVAILABLE", "connection refused")
        return []

    def list_pod_sandbox(self) -> list:
        return self._check("ListPodSandbox")

    def list_containers(self) -> list:
        return self._check("ListContainers")


def test_pleg_is_unhealthy_while_the_runtime_does_not_answer():
    """As kubelet's PLEG health: relisting that fails (the runtime is unreachable) makes
    the agent unhealthy at once, with why; one good relist makes it healthy again."""
    rt = FlakyRuntime()
    pleg = GenericPLEG(rt, lambda ev: None, period=0.02)  # type: ignore[arg-type]
    assert not pleg.healthy()
    assert pleg.health_message() == "PLEG is not healthy: no relist yet"
    pleg.start()
    try:
        deadline = time.monotonic() + 5
        while not pleg.healthy() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pleg.healthy()
        rt.down = True
        while pleg.healthy() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not pleg.healthy()
        message = pleg.health_message()
        assert message.startswith("PLEG is not healthy: relist failing for ")
        assert "UNAVAILABLE: connection refused" in message
        rt.down = False
        while not pleg.healthy() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pleg.healthy()
    finally:
        pleg.stop()


def test_pleg_is_unhealthy_when_relists_stop():
    """Upstream's threshold: no successful relist for too long."""
    pleg = GenericPLEG(FlakyRuntime(), lambda ev: None)  # type: ignore[arg-type]
    pleg.relist()
    assert pleg.healthy(threshold_s=180)
    time.sleep(0.05)
    assert not pleg.healthy(threshold_s=0.01)
    assert "pleg was last seen active 0s ago; threshold is 0s" in pleg.health_message(0.01)
