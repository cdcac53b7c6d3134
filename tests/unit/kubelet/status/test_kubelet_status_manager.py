"""The status manager: versioned statuses, and the patcher hook a control plane plugs in."""

from __future__ import annotations

import threading
import time

from kubelet_builders import make_pod

from pykubelet.api.decode import decode_object
from pykubelet.api.types import PodStatus
from pykubelet.kubelet.cluster.apistatus import APIStatusPatcher
from pykubelet.kubelet.status.status_manager import StatusManager, VersionedPodStatus


class Patcher:
    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.written: list[VersionedPodStatus] = []
        self.event = threading.Event()

    def patch_pod_status(self, status: VersionedPodStatus) -> None:
        if self.fail:
            self.fail -= 1
            raise TimeoutError("apiserver timeout")
        self.written.append(status)
        self.event.set()


def test_a_changed_status_gets_the_next_version_an_equal_one_does_not() -> None:
    sm = StatusManager(clock=lambda: 100.0)
    pod = make_pod()
    v1 = sm.set_pod_status(pod, PodStatus(phase="Pending"))
    assert (v1.version, v1.name, v1.namespace, v1.at) == (1, "web", "default", 100.0)
    assert sm.set_pod_status(pod, PodStatus(phase="Pending")) is v1
    v2 = sm.set_pod_status(pod, PodStatus(phase="Running"))
    assert v2.version == 2
    assert sm.get_pod_status(pod.uid) == PodStatus(phase="Running")
    assert not sm.is_terminal(pod.uid)
    sm.set_pod_status(pod, PodStatus(phase="Succeeded"))
    assert sm.is_terminal(pod.uid)


def test_without_a_patcher_nothing_is_written_and_no_thread_runs() -> None:
    sm = StatusManager()
    sm.start()
    sm.set_pod_status(make_pod(), PodStatus(phase="Running"))
    assert sm.sync_batch() == 0
    assert not any(t.name == "status-manager" for t in threading.enumerate())
    sm.stop()


def test_only_newer_versions_are_written_and_failures_are_retried() -> None:
    patcher = Patcher(fail=1)
    sm = StatusManager(patcher)
    a, b = make_pod(), make_pod()
    b.metadata.uid = "uid-2"
    sm.set_pod_status(a, PodStatus(phase="Running"))
    sm.set_pod_status(b, PodStatus(phase="Pending"))
    assert sm.sync_batch() == 1  # one write failed
    assert len(sm.unwritten()) == 1
    assert sm.sync_batch() == 1
    assert sorted(w.uid for w in patcher.written) == ["uid-1", "uid-2"]
    assert sm.sync_batch() == 0
    sm.set_pod_status(b, PodStatus(phase="Running"))
    assert sm.sync_batch() == 1
    assert (patcher.written[-1].uid, patcher.written[-1].version) == ("uid-2", 2)


def test_forgotten_pods_are_not_written() -> None:
    patcher = Patcher()
    sm = StatusManager(patcher)
    a, b = make_pod(), make_pod()
    b.metadata.uid = "uid-2"
    sm.set_pod_status(a, PodStatus(phase="Running"))
    sm.set_pod_status(b, PodStatus(phase="Running"))
    sm.remove_orphaned_statuses({"uid-2"})
    sm.remove_pod_status("uid-2")
    assert sm.statuses() == {}
    assert sm.sync_batch() == 0


def test_the_sync_thread_writes_a_change_without_waiting_for_the_period() -> None:
    patcher = Patcher()
    sm = StatusManager(patcher, sync_period=60.0)
    sm.start()
    try:
        t0 = time.monotonic()
        sm.set_pod_status(make_pod(), PodStatus(phase="Running"))
        assert patcher.event.wait(5)
        assert time.monotonic() - t0 < 5
        assert [w.version for w in patcher.written] == [1]
    finally:
        sm.stop()


def test_every_period_written_statuses_are_offered_again_to_reconcile() -> None:
    """syncBatch's needsReconcile: a status already written is offered again each period,
    so the patcher can put back what another writer changed in the API."""
    patcher = Patcher()
    sm = StatusManager(patcher, sync_period=0.2)
    sm.start()
    try:
        sm.set_pod_status(make_pod(), PodStatus(phase="Running"))
        deadline = time.monotonic() + 5
        while len(patcher.written) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [w.version for w in patcher.written][:3] == [1, 1, 1]
    finally:
        sm.stop()


def test_reconcile_puts_back_a_ready_condition_the_node_controller_set_false() -> None:
    """After an outage the API holds Ready=False (MarkPodsNotReady) while the agent's own
    status says True: the reconcile pass patches it back; an equal copy is not patched."""
    pod = make_pod()
    t = "2026-12-03T10:00:00Z"
    mine = decode_object(PodStatus, {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": t}]})
    api = {"metadata": {"uid": pod.uid, "name": pod.name, "namespace": pod.namespace},
           "status": {"phase": "Running", "conditions": [
               {"type": "Ready", "status": "True", "lastTransitionTime": t}]}}
    patches: list[dict[str, object]] = []

    class Client:
        def patch(self, resource: object, name: str, body: dict[str, object], ns: str,
                  **kw: object) -> None:
            patches.append(body)

    patcher = APIStatusPatcher(Client(), lambda ns, n: api, lambda uid: None)  # type: ignore[arg-type]
    sm = StatusManager(patcher)
    sm.set_pod_status(pod, mine)
    sm.sync_batch()
    assert patches == []  # the API already has it
    api["status"]["conditions"][0].update(status="False")  # type: ignore[index]
    sm.sync_batch()
    assert patches == []  # nothing new of its own to write
    sm.sync_batch(reconcile=True)
    assert patches[0]["status"]["conditions"][0]["status"] == "True"  # type: ignore[index]


def test_a_batch_writes_its_pods_side_by_side() -> None:
    """A burst's statuses go out together, not one round trip after another (issue 23
    item 2: on the lab a Running status waited ~1 s behind its node's other pods'). Four
    writes meet at a barrier that only four patches in flight at once can pass; each pod's
    versions still go out in order (one write per pod per batch)."""
    barrier = threading.Barrier(4, timeout=5)
    patcher = Patcher()
    real = patcher.patch_pod_status

    def patch(status: VersionedPodStatus) -> None:
        barrier.wait()
        real(status)

    patcher.patch_pod_status = patch  # type: ignore[method-assign]
    sm = StatusManager(patcher)
    for i in range(4):
        pod = make_pod()
        pod.metadata.uid = f"uid-{i}"
        sm.set_pod_status(pod, PodStatus(phase="Running"))
    assert sm.sync_batch() == 4
    assert sorted(w.uid for w in patcher.written) == [f"uid-{i}" for i in range(4)]
    assert sm.unwritten() == []


def test_a_status_set_while_another_pods_write_hangs_goes_out_at_once() -> None:
    """The sync thread does not wait for a batch to end before it writes the next change:
    pod b's status, set while a's write hangs, is written without waiting for a's; a's
    newer version, set meanwhile, follows its first once that returns (never two of one
    pod's writes at once)."""
    release = threading.Event()
    patcher = Patcher()
    real = patcher.patch_pod_status
    in_flight: dict[str, int] = {}
    overlapped: list[str] = []
    lock = threading.Lock()

    def patch(status: VersionedPodStatus) -> None:
        with lock:
            if in_flight.get(status.uid):
                overlapped.append(status.uid)
            in_flight[status.uid] = in_flight.get(status.uid, 0) + 1
        try:
            if status.uid == "uid-a" and status.version == 1:
                assert release.wait(10)
            real(status)
        finally:
            with lock:
                in_flight[status.uid] -= 1

    patcher.patch_pod_status = patch  # type: ignore[method-assign]
    sm = StatusManager(patcher)
    a, b = make_pod(), make_pod()
    a.metadata.uid, b.metadata.uid = "uid-a", "uid-b"
    sm.start()
    try:
        sm.set_pod_status(a, PodStatus(phase="Pending"))
        time.sleep(0.1)  # a's write is hanging now
        sm.set_pod_status(a, PodStatus(phase="Running"))
        sm.set_pod_status(b, PodStatus(phase="Running"))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(w.uid == "uid-b"
                                                      for w in patcher.written):
            time.sleep(0.01)
        assert [(w.uid, w.version) for w in patcher.written] == [("uid-b", 1)]
        release.set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and sm.unwritten():
            time.sleep(0.01)
        assert [(w.uid, w.version) for w in patcher.written] == [
            ("uid-b", 1), ("uid-a", 1), ("uid-a", 2)]
        assert overlapped == []
    finally:
        release.set()
        sm.stop()
