"""Starts a dead agent left behind: a start still completing is waited for, and a
container the runtime refuses to remove does not wedge the pod's sync.

containerd 1.6/1.7 keeps the task of a StartContainer whose client went away at the
wrong moment (containerd/containerd#11037): CRI then reports the container EXITED with
reason StartError and refuses every RemoveContainer with FailedPrecondition. CI met it
once when the agent was SIGKILLed inside StartContainer; the real daemon produces it only
by a race, so these rules are tested against the fake runtime service told to refuse
removal the way containerd does (the integration tests in tests/integration/kubelet drive
the real runtimes, including a start held in flight by a slow runc).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kubelet_builders import ctr, make_pod, observed, sandbox

from pykubelet.kubelet.container.runtime_state import ContainerState, SandboxState
from pykubelet.kubelet.cri.runtime_service import CRICallError
from pykubelet.kubelet.kuberuntime.actions import compute_pod_actions
from pykubelet.kubelet.kuberuntime.interrupted_starts import (
    LEFTOVER_REMOVE_ATTEMPTS,
    START_SETTLE_S,
)
from pykubelet.kubelet.kuberuntime.kuberuntime_manager import RuntimeManager
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService
from pykubelet.kubelet.util.backoff import Backoff
from pykubelet.kubelet.volumemanager.volumes import pod_dir


def refusing(stuck: set[str]) -> FakeRuntimeService:
    """A runtime that refuses to remove the containers ``stuck``, as containerd does."""
    return FakeRuntimeService(runtime_name="containerd", refuse_removal=stuck)


def attempts(cri: FakeRuntimeService, method: str = "RemoveContainer") -> list[str]:
    return cri.targets.get(method, [])


def removed(cri: FakeRuntimeService) -> list[str]:
    return [c for c in attempts(cri) if c not in cri.refuse_removal]


def manager(cri: FakeRuntimeService, root: Path) -> RuntimeManager:
    return RuntimeManager(
        cri,
        cri,
        node_name="n1", root_dir=str(root), pod_logs_dir=str(root / "logs"),
        memory_capacity=1 << 30, backoff=Backoff(clock=lambda: 1000.0),
        image_backoff=Backoff(clock=lambda: 1000.0),
    )


def aborted_start(pod, cid: str = "a-stuck"):
    return ctr(pod, "a", ContainerState.EXITED, exit_code=128, cid=cid, reason="StartError",
               started=0.0, created=300.0)


def test_interrupted_start_that_cannot_be_removed_is_kept_once(tmp_path: Path) -> None:
    pod = make_pod(("a",))
    cri = refusing({"a-stuck"})
    m = manager(cri, tmp_path)
    marker = pod_dir(str(tmp_path), pod.uid) / "starting" / "a-stuck"
    marker.parent.mkdir(parents=True)
    marker.touch()
    obs = observed(aborted_start(pod))
    obs.containers[0].started_at = 0.0

    # a refusal first fails the sync (the worker retries), the marker kept ...
    for attempt in range(1, LEFTOVER_REMOVE_ATTEMPTS):
        with pytest.raises(CRICallError):
            m.remove_leftover_created(obs)
        assert marker.exists()
        assert len(attempts(cri)) == attempt
    # ... until the last attempt: then the instance is kept, and never tried again
    assert m.remove_leftover_created(obs) is False
    assert attempts(cri) == ["a-stuck"] * LEFTOVER_REMOVE_ATTEMPTS
    assert not marker.exists()
    assert m.remove_leftover_created(obs) is False
    assert len(attempts(cri)) == LEFTOVER_REMOVE_ATTEMPTS


def test_a_removal_refused_only_while_a_start_settles_succeeds_later(tmp_path: Path) -> None:
    pod = make_pod(("a",))
    cri = refusing({"a-stuck"})
    m = manager(cri, tmp_path)
    marker = pod_dir(str(tmp_path), pod.uid) / "starting" / "a-stuck"
    marker.parent.mkdir(parents=True)
    marker.touch()
    obs = observed(aborted_start(pod))
    obs.containers[0].started_at = 0.0
    with pytest.raises(CRICallError):
        m.remove_leftover_created(obs)
    cri.refuse_removal.clear()  # containerd lets go once the start has settled
    assert m.remove_leftover_created(obs) is True
    assert attempts(cri) == ["a-stuck", "a-stuck"]  # refused once, then removed
    assert not marker.exists()


def test_the_container_is_started_again_under_the_next_attempt(tmp_path: Path) -> None:
    pod = make_pod(("a",))
    obs = observed(aborted_start(pod))
    obs.containers[0].started_at = 0.0
    actions = compute_pod_actions(pod, obs, now=1000.0, backoff=Backoff(clock=lambda: 1000.0))
    assert actions.containers_to_start == [0]
    assert not actions.create_sandbox
    assert not actions.kill_pod


def test_garbage_collection_goes_on_past_a_refused_removal(tmp_path: Path) -> None:
    pod = make_pod(("a", "b"))
    cri = refusing({"a-stuck"})
    m = manager(cri, tmp_path)
    obs = observed(
        ctr(pod, "a", ContainerState.RUNNING, cid="a-new", created=400.0),
        ctr(pod, "a", ContainerState.EXITED, cid="a-exited", created=350.0),
        aborted_start(pod),
        ctr(pod, "b", ContainerState.EXITED, cid="b-new", created=320.0),
        ctr(pod, "b", ContainerState.EXITED, cid="b-old", created=250.0),
    )
    m.garbage_collect(obs)  # must not raise
    assert sorted(attempts(cri)) == ["a-stuck", "b-old"]
    assert removed(cri) == ["b-old"]


def test_pod_removal_removes_everything_it_can_then_reports(tmp_path: Path) -> None:
    pod = make_pod(("a", "b"))
    cri = refusing({"a-stuck"})
    m = manager(cri, tmp_path)
    obs = observed(
        aborted_start(pod),
        ctr(pod, "b", ContainerState.EXITED, cid="b-1", created=320.0),
        sandboxes=(sandbox(SandboxState.NOT_READY, sid="sb1"),),
    )
    with pytest.raises(CRICallError, match="cannot delete running task"):
        m.remove_pod(obs)  # the pod worker tries again later
    assert removed(cri) == ["b-1"]
    assert attempts(cri, "RemovePodSandbox") == ["sb1"]


def test_a_fresh_marker_on_a_created_container_means_wait(tmp_path: Path) -> None:
    import os

    pod = make_pod(("a", "b"))
    m = manager(refusing(set()), tmp_path)
    obs = observed(ctr(pod, "a", ContainerState.CREATED, cid="a-0"),
                   ctr(pod, "b", ContainerState.RUNNING, cid="b-0"))
    markers = pod_dir(str(tmp_path), pod.uid) / "starting"
    markers.mkdir(parents=True)
    assert m.start_in_flight(obs, now=1000.0) is None  # no marker: nothing in flight
    (markers / "b-0").touch()
    os.utime(markers / "b-0", (1000.0, 1000.0))
    assert m.start_in_flight(obs, now=1000.0) is None  # b's start already completed
    (markers / "a-0").touch()
    os.utime(markers / "a-0", (1000.0, 1000.0))
    assert m.start_in_flight(obs, now=1001.0) is not None
    assert m.start_in_flight(obs, now=1000.0 + START_SETTLE_S - 0.1) is not None
    # the runtime never finished it: the leftover is removed and created again
    assert m.start_in_flight(obs, now=1000.0 + START_SETTLE_S + 0.1) is None
