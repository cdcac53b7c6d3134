"""A pod being deleted whose containers all stopped is terminal (syncTerminatingPod's
podIsTerminal): Succeeded/Failed whatever the restartPolicy; static pods stay as they are."""

from __future__ import annotations

import pytest
from kubelet_builders import ctr, make_pod, observed

from pykubelet.kubelet.container.runtime_state import ContainerState
from pykubelet.kubelet.status.generate import deleted_and_stopped, generate_pod_status

RUNNING = ContainerState.RUNNING
EXITED = ContainerState.EXITED
NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("policy", "codes", "phase"),
    [
        ("Always", (0, 0), "Succeeded"),
        ("Always", (0, 137), "Failed"),
        ("OnFailure", (143, 0), "Failed"),
        ("Never", (0, 0), "Succeeded"),
    ],
)
def test_deleted_stopped_pod_is_terminal(policy: str, codes: tuple[int, int], phase: str) -> None:
    pod = make_pod(containers=("a", "b"), restart=policy)
    obs = observed(
        ctr(pod, "a", EXITED, exit_code=codes[0], created=200.0),
        ctr(pod, "b", EXITED, exit_code=codes[1], created=201.0),
    )
    # not deleted: restartPolicy Always/OnFailure keeps it Running (restarting)
    if policy != "Never":
        before = generate_pod_status(pod, obs, NOW, pod_is_terminal=deleted_and_stopped(pod, obs))
        assert before.phase == "Running"
    pod.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    assert deleted_and_stopped(pod, obs)
    s = generate_pod_status(pod, obs, NOW, pod_is_terminal=deleted_and_stopped(pod, obs))
    assert s.phase == phase
    ready = {c.type: (c.status, c.reason) for c in s.conditions}["ContainersReady"]
    assert ready == ("False", "PodCompleted" if phase == "Succeeded" else "PodFailed")


def test_deleted_pod_with_a_running_container_is_not_terminal_yet() -> None:
    pod = make_pod(containers=("a", "b"))
    pod.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    obs = observed(
        ctr(pod, "a", EXITED, exit_code=0, created=200.0),
        ctr(pod, "b", RUNNING, created=201.0),
    )
    assert not deleted_and_stopped(pod, obs)
    assert generate_pod_status(pod, obs, NOW).phase == "Running"


def test_static_pod_is_not_given_a_terminal_phase() -> None:
    pod = make_pod(restart="Always")
    pod.metadata.annotations["kubernetes.io/config.source"] = "file"
    pod.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    obs = observed(ctr(pod, "app", EXITED, exit_code=0))
    assert deleted_and_stopped(pod, obs)
    s = generate_pod_status(pod, obs, NOW, pod_is_terminal=True)
    assert s.phase == "Running"  # upstream TODO(#116484): static pods excepted
