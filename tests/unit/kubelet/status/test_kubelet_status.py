"""generate_pod_status: phase, conditions and container statuses as kubelet reports them."""

from __future__ import annotations

import pytest
from kubelet_builders import POD_IP, ctr, make_pod, observed

from pykubelet.api.decode import encode
from pykubelet.api.types import PodStatus
from pykubelet.kubelet.container.runtime_state import ContainerState, PodRuntimeStatus
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.prober.probes import FAILURE, SUCCESS
from pykubelet.kubelet.status.generate import (
    WaitingReason,
    active_deadline_eviction,
    generate_pod_status,
    qos_class,
    rfc3339,
)

RUNNING = ContainerState.RUNNING
EXITED = ContainerState.EXITED
NOW = 1_700_000_000.0


def conds(status: PodStatus) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status, c.reason, c.message) for c in status.conditions}


def test_new_pod_is_pending_container_creating() -> None:
    pod = make_pod()
    s = generate_pod_status(pod, PodRuntimeStatus(uid=pod.uid), NOW)
    assert s.phase == "Pending"
    assert s.container_statuses[0].state.waiting.reason == reasons.CONTAINER_CREATING
    assert s.container_statuses[0].ready is False
    assert s.container_statuses[0].started is False
    assert [c.type for c in s.conditions] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    c = conds(s)
    assert c["PodReadyToStartContainers"][0] == "False"
    assert c["Initialized"] == ("True", "", "")
    assert c["Ready"] == ("False", "ContainersNotReady", "containers with unready status: [app]")
    assert c["PodScheduled"][0] == "True"
    assert s.start_time == rfc3339(NOW)
    assert s.qos_class == "BestEffort"
    assert all(cond.last_transition_time == rfc3339(NOW) for cond in s.conditions)


def test_pod_initializing_while_init_containers_run() -> None:
    pod = make_pod(init=("i1", "i2"))
    s = generate_pod_status(pod, observed(ctr(pod, "i1", RUNNING)), NOW)
    assert s.phase == "Pending"
    init = {st.name: st for st in s.init_container_statuses}
    assert init["i1"].state.running is not None
    assert init["i2"].state.waiting.reason == reasons.POD_INITIALIZING
    assert s.container_statuses[0].state.waiting.reason == reasons.POD_INITIALIZING
    assert conds(s)["Initialized"] == (
        "False",
        "ContainersNotInitialized",
        "containers with incomplete status: [i1 i2]",
    )
    # Init statuses keep spec order.
    assert [st.name for st in s.init_container_statuses] == ["i1", "i2"]


def test_running_pod_ready_without_probes() -> None:
    pod = make_pod(containers=("b", "a"))
    obs = observed(ctr(pod, "a", RUNNING, cid="ca"), ctr(pod, "b", RUNNING, cid="cb"))
    s = generate_pod_status(pod, obs, NOW)
    assert s.phase == "Running"
    assert [st.name for st in s.container_statuses] == ["a", "b"]  # sorted by name
    a = s.container_statuses[0]
    assert a.ready
    assert a.started
    assert a.container_id == "containerd://ca"
    assert a.image_id == "sha256:abc"
    assert a.state.running.started_at == rfc3339(201.0)
    assert conds(s)["Ready"] == ("True", "", "")
    assert conds(s)["ContainersReady"] == ("True", "", "")
    assert conds(s)["PodReadyToStartContainers"][0] == "True"
    assert s.pod_ip == POD_IP
    assert [ip.ip for ip in s.pod_ips] == [POD_IP]


def test_readiness_probe_drives_ready() -> None:
    pod = make_pod(containers=("app",))
    pod.spec.containers[0].readiness_probe = _probe()
    obs = observed(ctr(pod, "app", RUNNING, cid="c1"))
    s = generate_pod_status(pod, obs, NOW)
    assert s.container_statuses[0].started
    assert not s.container_statuses[0].ready
    assert conds(s)["Ready"][0] == "False"
    s = generate_pod_status(pod, obs, NOW, readiness={"c1": SUCCESS})
    assert s.container_statuses[0].ready
    assert conds(s)["Ready"][0] == "True"
    s = generate_pod_status(pod, obs, NOW, readiness={"c1": FAILURE})
    assert not s.container_statuses[0].ready


def test_startup_probe_gates_started_and_ready() -> None:
    pod = make_pod()
    pod.spec.containers[0].startup_probe = _probe()
    obs = observed(ctr(pod, "app", RUNNING, cid="c1"))
    s = generate_pod_status(pod, obs, NOW)
    assert s.container_statuses[0].started is False
    assert s.container_statuses[0].ready is False
    s = generate_pod_status(pod, obs, NOW, startup={"c1": SUCCESS})
    assert s.container_statuses[0].started is True
    assert s.container_statuses[0].ready is True


def test_crash_loop_back_off_shows_waiting_and_last_state() -> None:
    pod = make_pod()
    obs = observed(
        ctr(pod, "app", EXITED, exit_code=1, created=300, reason="Error", restart_count=3),
        ctr(pod, "app", EXITED, exit_code=1, created=200, reason="Error", restart_count=2),
    )
    msg = "back-off 40s restarting failed container=app pod=web_default(uid-1)"
    s = generate_pod_status(
        pod, obs, NOW, waiting_reasons={"app": WaitingReason(reasons.CRASH_LOOP_BACK_OFF, msg)}
    )
    st = s.container_statuses[0]
    assert st.state.waiting.reason == "CrashLoopBackOff"
    assert st.state.waiting.message == msg
    assert st.last_state.terminated.reason == "Error"
    assert st.last_state.terminated.exit_code == 1
    assert st.last_state.terminated.container_id == "containerd://app-300"
    assert st.restart_count == 3
    assert s.phase == "Running"  # restartPolicy Always: restarting
    assert conds(s)["Ready"][1] == "ContainersNotReady"


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        (
            reasons.ERR_IMAGE_NEVER_PULL,
            'Container image "x" is not present with pull policy of Never',
        ),
        (reasons.CREATE_CONTAINER_ERROR, "failed to create"),
    ],
)
def test_start_failures_show_as_waiting_reason(reason: str, message: str) -> None:
    pod = make_pod()
    s = generate_pod_status(
        pod, observed(), NOW, waiting_reasons={"app": WaitingReason(reason, message)}
    )
    assert s.container_statuses[0].state.waiting.reason == reason
    assert s.container_statuses[0].state.waiting.message == message
    assert s.phase == "Pending"


# restart policy x exit code x init/app -> phase and the container's terminated reason
PHASE_TABLE = [
    # kind, policy, exit code, phase
    ("app", "Always", 0, "Running"),
    ("app", "Always", 1, "Running"),
    ("app", "OnFailure", 0, "Succeeded"),
    ("app", "OnFailure", 1, "Running"),
    ("app", "Never", 0, "Succeeded"),
    ("app", "Never", 1, "Failed"),
    ("app", "Never", 137, "Failed"),
    ("init", "Always", 1, "Pending"),
    ("init", "OnFailure", 1, "Pending"),
    ("init", "Never", 1, "Failed"),
    ("init", "Never", 0, "Pending"),
    ("init", "Always", 0, "Pending"),
]


@pytest.mark.parametrize(("kind", "policy", "code", "phase"), PHASE_TABLE)
def test_phase_by_restart_policy_and_exit_code(
    kind: str, policy: str, code: int, phase: str
) -> None:
    reason = "Completed" if code == 0 else "Error"
    if kind == "app":
        pod = make_pod(restart=policy)
        obs = observed(ctr(pod, "app", EXITED, exit_code=code, reason=reason))
    else:
        pod = make_pod(init=("init",), restart=policy)
        obs = observed(ctr(pod, "init", EXITED, exit_code=code, reason=reason))
    s = generate_pod_status(pod, obs, NOW)
    assert s.phase == phase
    statuses = s.container_statuses if kind == "app" else s.init_container_statuses
    term = statuses[0].state.terminated
    assert term is not None
    assert term.exit_code == code
    assert term.reason == reason
    if phase == "Succeeded":
        assert conds(s)["ContainersReady"] == ("False", "PodCompleted", "")
        assert conds(s)["Ready"] == ("False", "PodCompleted", "")
        assert conds(s)["Initialized"] == ("True", "PodCompleted", "")
    if phase == "Failed":
        assert conds(s)["ContainersReady"] == ("False", "PodFailed", "")
    if kind == "init" and code == 0:
        assert s.init_container_statuses[0].ready is True
        assert s.container_statuses[0].state.waiting.reason == reasons.POD_INITIALIZING


def test_terminated_reason_filled_when_runtime_gives_none() -> None:
    pod = make_pod(restart="Never")
    s = generate_pod_status(pod, observed(ctr(pod, "app", EXITED, exit_code=2)), NOW)
    assert s.container_statuses[0].state.terminated.reason == "Error"
    s = generate_pod_status(pod, observed(ctr(pod, "app", EXITED, exit_code=0)), NOW)
    assert s.container_statuses[0].state.terminated.reason == "Completed"


def test_oom_killed_reason_passes_through() -> None:
    pod = make_pod(restart="Never")
    obs = observed(ctr(pod, "app", EXITED, exit_code=137, reason="OOMKilled"))
    s = generate_pod_status(pod, obs, NOW)
    assert s.container_statuses[0].state.terminated.reason == "OOMKilled"
    assert s.phase == "Failed"


def test_terminal_phase_sticks_and_reason_is_kept() -> None:
    pod = make_pod(restart="Never")
    old = PodStatus(phase="Failed", reason="DeadlineExceeded", message="m")
    obs = observed(ctr(pod, "app", RUNNING))
    s = generate_pod_status(pod, obs, NOW, old_status=old)
    assert s.phase == "Failed"
    assert (s.reason, s.message) == ("DeadlineExceeded", "m")


def test_active_deadline_eviction_fails_the_pod() -> None:
    pod = make_pod(activeDeadlineSeconds=60)
    pod.status.start_time = rfc3339(NOW - 61)
    eviction = active_deadline_eviction(pod, NOW)
    assert eviction is not None
    s = generate_pod_status(pod, observed(ctr(pod, "app", RUNNING)), NOW, eviction=eviction)
    assert s.phase == "Failed"
    assert s.reason == "DeadlineExceeded"
    assert s.message == "Pod was active on the node longer than the specified deadline"
    assert s.start_time == rfc3339(NOW - 61)
    pod.status.start_time = rfc3339(NOW - 59)
    assert active_deadline_eviction(pod, NOW) is None


def test_transition_times_are_kept_while_status_unchanged() -> None:
    pod = make_pod()
    obs = observed(ctr(pod, "app", RUNNING))
    first = generate_pod_status(pod, PodRuntimeStatus(uid=pod.uid), NOW)
    second = generate_pod_status(pod, obs, NOW + 50, old_status=first)
    times = {c.type: c.last_transition_time for c in second.conditions}
    assert times["PodScheduled"] == rfc3339(NOW)  # unchanged True
    assert times["Ready"] == rfc3339(NOW + 50)  # False -> True
    assert second.start_time == rfc3339(NOW)


def test_restart_count_and_last_state_survive_a_missing_container() -> None:
    """The runtime lost a container that was running: lastState ContainerStatusUnknown."""
    pod = make_pod()
    before = generate_pod_status(pod, observed(ctr(pod, "app", RUNNING, restart_count=2)), NOW)
    s = generate_pod_status(pod, observed(), NOW + 1, old_status=before)
    st = s.container_statuses[0]
    assert st.restart_count == 3
    assert st.last_state.terminated.reason == reasons.CONTAINER_STATUS_UNKNOWN
    assert st.last_state.terminated.exit_code == 137
    assert s.phase == "Running"


def test_host_network_pod_gets_the_host_ip() -> None:
    pod = make_pod(hostNetwork=True)
    obs = PodRuntimeStatus(uid=pod.uid)
    s = generate_pod_status(pod, obs, NOW, host_ips=["192.168.1.10"])
    assert s.pod_ip == "192.168.1.10"
    assert s.host_ip == "192.168.1.10"
    assert [h.ip for h in s.host_ips] == ["192.168.1.10"]


def test_status_encodes_like_kubectl_shows_it() -> None:
    pod = make_pod(restart="Never")
    s = generate_pod_status(pod, observed(ctr(pod, "app", EXITED, exit_code=0)), NOW)
    data = encode(s)
    cs = data["containerStatuses"][0]
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert cs["restartCount"] == 0
    assert cs["ready"] is False
    assert cs["lastState"] == {}
    assert data["podIP"] == POD_IP
    assert data["podIPs"] == [{"ip": POD_IP}]
    assert data["qosClass"] == "BestEffort"


QOS_TABLE = [
    ({}, {}, "BestEffort"),
    ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, "Guaranteed"),
    ({"cpu": "500m"}, {"cpu": "1", "memory": "1Gi"}, "Burstable"),
    ({"cpu": "1"}, {}, "Burstable"),
]


@pytest.mark.parametrize(("requests", "limits", "expected"), QOS_TABLE)
def test_qos_class(requests: dict, limits: dict, expected: str) -> None:
    pod = make_pod()
    from pykubelet.api.machinery.quantity import Quantity

    res = pod.spec.containers[0].resources
    res.requests = {k: Quantity.parse(v) for k, v in requests.items()}
    res.limits = {k: Quantity.parse(v) for k, v in limits.items()}
    assert qos_class(pod) == expected


def _probe():
    from pykubelet.api.types import ExecAction, Probe

    return Probe(
        exec=ExecAction(command=["true"]),
        period_seconds=10,
        timeout_seconds=1,
        success_threshold=1,
        failure_threshold=3,
    )


def test_a_sandbox_that_cannot_be_made_shows_why_until_it_is_made() -> None:
    """The pod's reason and message say why its sandbox failed (the FailedCreatePodSandBox
    event's words), while its containers wait in ContainerCreating as upstream's do; once
    a sandbox exists the pod no longer claims it failed."""
    pod = make_pod()
    failure = WaitingReason(reasons.CREATE_POD_SANDBOX_ERROR,
                            reasons.failed_create_sandbox_message("CNI ADD failed: no plugin"))
    none = PodRuntimeStatus(uid=pod.uid)
    s = generate_pod_status(pod, none, NOW, sandbox_failure=failure)
    assert (s.phase, s.reason) == ("Pending", "CreatePodSandboxError")
    assert s.message == "Failed to create pod sandbox: CNI ADD failed: no plugin"
    assert s.container_statuses[0].state.waiting.reason == reasons.CONTAINER_CREATING
    # the next status, with no failure any more (the sandbox was made), drops it
    later = generate_pod_status(pod, observed(), NOW + 2, old_status=s)
    assert (later.reason, later.message) == ("", "")
    # a status carried over from before keeps other reasons (an eviction's, say)
    other = PodStatus(phase="Pending", reason="Other", message="kept")
    assert generate_pod_status(pod, none, NOW, old_status=other).reason == "Other"


def test_exited_containers_are_reported_once() -> None:
    """Each exit is logged once: a container newly terminated (as state, or as last state
    after a quick restart), never again on later statuses, nothing without an old status."""
    from pykubelet.kubelet.status.generate import exited_containers

    pod = make_pod(containers=("a", "b"))
    running = generate_pod_status(
        pod, observed(ctr(pod, "a", RUNNING, cid="a1"), ctr(pod, "b", RUNNING, cid="b1")), NOW)
    assert exited_containers(None, running) == []
    exited = generate_pod_status(
        pod, observed(ctr(pod, "a", EXITED, cid="a1", exit_code=3),
                      ctr(pod, "b", RUNNING, cid="b1")), NOW + 1, old_status=running)
    gone = exited_containers(running, exited)
    assert [(c.name, c.container_id, c.state.terminated.exit_code) for c in gone] == [
        ("a", "containerd://a1", 3)]
    assert exited_containers(exited, exited) == []
    # restarted before the next status: the exit shows as the last state
    restarted = generate_pod_status(
        pod, observed(ctr(pod, "a", EXITED, cid="a1", exit_code=3),
                      ctr(pod, "b", EXITED, cid="b1", created=200.0),
                      ctr(pod, "b", RUNNING, cid="b2", created=300.0, restart_count=1)),
        NOW + 2, old_status=exited)
    assert [c.container_id for c in exited_containers(exited, restarted)] == ["containerd://b1"]
