"""compute_pod_actions: kuberuntime's computePodActions as tables."""

from __future__ import annotations

import pytest
from kubelet_builders import UID, FakeClock, ctr, make_pod, observed, sandbox

from pykubelet.api.types import ExecAction, Probe
from pykubelet.kubelet.container.runtime_state import ContainerState, PodRuntimeStatus, SandboxState
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.kuberuntime.actions import (
    PROBE_FAILURE,
    PROBE_SUCCESS,
    backoff_key,
    compute_pod_actions,
    find_next_init_container_to_run,
    image_pull_decision,
    past_active_deadline,
    pod_sandbox_changed,
    termination_grace_period,
)
from pykubelet.kubelet.util.backoff import Backoff

RUNNING = ContainerState.RUNNING
EXITED = ContainerState.EXITED


# restart policy x exit code, for an app container that exited in a live sandbox
APP_EXIT_TABLE = [
    # policy, exit code, restarted?
    ("Always", 0, True),
    ("Always", 1, True),
    ("Always", 137, True),
    ("OnFailure", 0, False),
    ("OnFailure", 1, True),
    ("OnFailure", 137, True),
    ("Never", 0, False),
    ("Never", 1, False),
    ("Never", 137, False),
]


@pytest.mark.parametrize(("policy", "code", "restarted"), APP_EXIT_TABLE)
def test_app_container_exit_by_restart_policy(policy: str, code: int, restarted: bool) -> None:
    pod = make_pod(restart=policy)
    obs = observed(ctr(pod, "app", EXITED, exit_code=code))
    actions = compute_pod_actions(pod, obs, 0.0)
    assert not actions.create_sandbox
    assert actions.sandbox_id == "sb1"
    assert actions.containers_to_start == ([0] if restarted else [])
    # Nothing left running and nothing to start: the pod (its sandbox) is killed.
    assert actions.kill_pod is (not restarted)
    assert actions.containers_to_kill == {}


# restart policy x exit code, for an init container (no app container created yet)
INIT_EXIT_TABLE = [
    # policy, exit code, next init to start, app containers to start, kill pod
    ("Always", 0, None, [0], False),
    ("OnFailure", 0, None, [0], False),
    ("Never", 0, None, [0], False),
    ("Always", 1, 0, [], False),
    ("OnFailure", 1, 0, [], False),
    ("Never", 1, None, [], True),
    ("Always", 137, 0, [], False),
    ("Never", 137, None, [], True),
]


@pytest.mark.parametrize(("policy", "code", "next_init", "to_start", "kill"), INIT_EXIT_TABLE)
def test_init_container_exit_by_restart_policy(
    policy: str, code: int, next_init: int | None, to_start: list[int], kill: bool
) -> None:
    pod = make_pod(init=("init",), restart=policy)
    obs = observed(ctr(pod, "init", EXITED, exit_code=code))
    actions = compute_pod_actions(pod, obs, 0.0)
    assert actions.next_init_container_to_start == next_init
    assert actions.containers_to_start == to_start
    assert actions.kill_pod is kill
    assert not actions.create_sandbox


def test_oom_killed_init_container_counts_as_failed_even_with_exit_0() -> None:
    pod = make_pod(init=("init",), restart="Never")
    obs = observed(ctr(pod, "init", EXITED, exit_code=0, reason=reasons.OOM_KILLED))
    actions = compute_pod_actions(pod, obs, 0.0)
    assert actions.kill_pod
    assert actions.next_init_container_to_start is None


def test_new_pod_creates_sandbox_and_starts_all_app_containers() -> None:
    pod = make_pod(containers=("a", "b"))
    actions = compute_pod_actions(pod, PodRuntimeStatus(uid=UID), 0.0)
    assert actions.create_sandbox
    assert actions.kill_pod
    assert actions.attempt == 0
    assert actions.sandbox_id == ""
    assert actions.containers_to_start == [0, 1]
    assert actions.next_init_container_to_start is None


def test_new_pod_with_init_containers_starts_only_the_first_init() -> None:
    pod = make_pod(init=("i1", "i2"))
    actions = compute_pod_actions(pod, PodRuntimeStatus(uid=UID), 0.0)
    assert actions.create_sandbox
    assert actions.next_init_container_to_start == 0
    assert actions.containers_to_start == []


def test_init_containers_run_one_at_a_time_in_order() -> None:
    pod = make_pod(init=("i1", "i2", "i3"))
    # i1 running: wait
    a = compute_pod_actions(pod, observed(ctr(pod, "i1", RUNNING)), 0.0)
    assert a.next_init_container_to_start is None
    assert a.containers_to_start == []
    assert a.is_noop()
    # i1 done: i2 next
    a = compute_pod_actions(pod, observed(ctr(pod, "i1", EXITED)), 0.0)
    assert a.next_init_container_to_start == 1
    # i1, i2 done: i3 next
    obs = observed(ctr(pod, "i1", EXITED, created=200), ctr(pod, "i2", EXITED, created=300))
    assert compute_pod_actions(pod, obs, 0.0).next_init_container_to_start == 2
    # all done: app containers
    obs = observed(
        ctr(pod, "i1", EXITED, created=200),
        ctr(pod, "i2", EXITED, created=300),
        ctr(pod, "i3", EXITED, created=400),
    )
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.next_init_container_to_start is None
    assert a.containers_to_start == [0]


def test_running_app_container_means_init_is_done_even_if_inits_were_removed() -> None:
    pod = make_pod(init=("i1",))
    progress = find_next_init_container_to_run(pod, observed(ctr(pod, "app", RUNNING)))
    assert progress.done
    assert compute_pod_actions(pod, observed(ctr(pod, "app", RUNNING)), 0.0).is_noop()


def test_init_container_in_unknown_state_is_killed_before_restart() -> None:
    pod = make_pod(init=("i1",))
    obs = observed(ctr(pod, "i1", ContainerState.UNKNOWN, cid="x1"))
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.next_init_container_to_start == 0
    assert a.containers_to_kill["x1"].reason == reasons.KILL_REASON_UNKNOWN
    assert a.containers_to_kill["x1"].message == (
        'Init container is in "unknown" state, try killing it before restart'
    )


# --------------------------------------------------------------------------- sandbox


SANDBOX_TABLE = [
    # description, sandboxes, host_network, create, attempt, sandbox id
    ("none", (), False, True, 0, ""),
    ("ready", (sandbox(attempt=2),), False, False, 2, "sb1"),
    ("not ready", (sandbox(SandboxState.NOT_READY, attempt=2),), False, True, 3, "sb1"),
    ("no ip", (sandbox(ip=""),), False, True, 1, "sb1"),
    ("no ip but host network", (sandbox(ip="", host_network=True),), True, False, 0, "sb1"),
    ("network mode changed", (sandbox(attempt=1),), True, True, 2, ""),
    (
        "two ready",
        (sandbox(sid="old", created=50), sandbox(sid="new", created=90, attempt=1)),
        False,
        True,
        2,
        "new",
    ),
]


@pytest.mark.parametrize(
    ("desc", "sandboxes", "host_network", "create", "attempt", "sid"), SANDBOX_TABLE
)
def test_pod_sandbox_changed(
    desc: str,
    sandboxes: tuple,
    host_network: bool,
    create: bool,
    attempt: int,
    sid: str,
) -> None:
    pod = make_pod(hostNetwork=host_network)
    change = pod_sandbox_changed(pod, observed(sandboxes=sandboxes))
    assert (change.create, change.attempt, change.sandbox_id) == (create, attempt, sid), desc


def test_dead_sandbox_recreated_and_containers_restarted() -> None:
    pod = make_pod(containers=("a", "b"))
    obs = observed(
        ctr(pod, "a", EXITED, exit_code=137),
        sandboxes=(sandbox(SandboxState.NOT_READY, attempt=0),),
    )
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.kill_pod
    assert a.create_sandbox
    assert a.attempt == 1
    assert a.containers_to_start == [0, 1]


def test_dead_sandbox_with_never_policy_is_only_killed() -> None:
    pod = make_pod(restart="Never")
    obs = observed(
        ctr(pod, "app", EXITED, exit_code=1), sandboxes=(sandbox(SandboxState.NOT_READY),)
    )
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.kill_pod
    assert not a.create_sandbox
    assert a.containers_to_start == []


def test_dead_sandbox_on_failure_skips_succeeded_containers() -> None:
    pod = make_pod(containers=("ok", "bad"), restart="OnFailure")
    obs = observed(
        ctr(pod, "ok", EXITED, exit_code=0),
        ctr(pod, "bad", EXITED, exit_code=2, created=210),
        sandboxes=(sandbox(SandboxState.NOT_READY),),
    )
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.create_sandbox
    assert a.containers_to_start == [1]
    # All succeeded: nothing to recreate the sandbox for.
    obs = observed(
        ctr(pod, "ok", EXITED, exit_code=0),
        ctr(pod, "bad", EXITED, exit_code=0, created=210),
        sandboxes=(sandbox(SandboxState.NOT_READY),),
    )
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.kill_pod
    assert not a.create_sandbox
    assert a.containers_to_start == []


# --------------------------------------------------------------------------- running containers


@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never"])
def test_changed_spec_hash_restarts_whatever_the_policy(policy: str) -> None:
    pod = make_pod(restart=policy)
    obs = observed(ctr(pod, "app", RUNNING, cid="c1", hash_="deadbeef"))
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.containers_to_start == [0]
    kill = a.containers_to_kill["c1"]
    assert kill.message == "Container app definition changed, will be restarted"
    assert kill.reason == ""
    assert not a.kill_pod


LIVENESS_TABLE = [
    # policy, restarted
    ("Always", True),
    ("OnFailure", True),
    ("Never", False),
]


@pytest.mark.parametrize(("policy", "restarted"), LIVENESS_TABLE)
def test_failed_liveness_probe_kills_and_restarts_per_policy(policy: str, restarted: bool) -> None:
    pod = make_pod(restart=policy)
    obs = observed(ctr(pod, "app", RUNNING, cid="c1"))
    a = compute_pod_actions(pod, obs, 0.0, liveness={"c1": PROBE_FAILURE})
    kill = a.containers_to_kill["c1"]
    assert kill.reason == reasons.KILL_REASON_LIVENESS_PROBE
    suffix = ", will be restarted" if restarted else ""
    assert kill.message == f"Container app failed liveness probe{suffix}"
    assert a.containers_to_start == ([0] if restarted else [])
    assert a.kill_pod is (not restarted)


def test_failed_startup_probe_kills() -> None:
    pod = make_pod()
    obs = observed(ctr(pod, "app", RUNNING, cid="c1"))
    a = compute_pod_actions(pod, obs, 0.0, startup={"c1": PROBE_FAILURE})
    assert a.containers_to_kill["c1"].reason == reasons.KILL_REASON_STARTUP_PROBE
    assert a.containers_to_kill["c1"].message == (
        "Container app failed startup probe, will be restarted"
    )


def test_healthy_running_pod_is_left_alone() -> None:
    pod = make_pod(containers=("a", "b"))
    obs = observed(ctr(pod, "a", RUNNING), ctr(pod, "b", RUNNING))
    a = compute_pod_actions(pod, obs, 0.0, liveness={"a-200": PROBE_SUCCESS})
    assert a.is_noop()
    assert not a.kill_pod


def test_unknown_app_container_is_killed_then_restarted() -> None:
    pod = make_pod()
    obs = observed(ctr(pod, "app", ContainerState.UNKNOWN, cid="u1"))
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.containers_to_start == [0]
    assert a.containers_to_kill["u1"].message == (
        'Container is in "unknown" state, try killing it before restart'
    )


def test_created_but_not_started_container_is_started_even_under_never() -> None:
    pod = make_pod(restart="Never")
    a = compute_pod_actions(pod, observed(ctr(pod, "app", ContainerState.CREATED)), 0.0)
    assert a.containers_to_start == [0]


def test_deleted_pod_restarts_nothing() -> None:
    pod = make_pod()
    pod.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    a = compute_pod_actions(pod, observed(ctr(pod, "app", EXITED, exit_code=1)), 0.0)
    assert a.containers_to_start == []
    assert a.kill_pod


def test_only_newest_instance_counts() -> None:
    pod = make_pod(restart="OnFailure")
    obs = observed(
        ctr(pod, "app", EXITED, exit_code=1, created=100),
        ctr(pod, "app", EXITED, exit_code=0, created=300),
    )
    assert compute_pod_actions(pod, obs, 0.0).containers_to_start == []


# --------------------------------------------------------------------------- back-off


def test_crash_loop_back_off_doubles_to_five_minutes() -> None:
    """A container that exits right away waits 10s, 20s, 40s ... 300s between starts."""
    pod = make_pod()
    clock = FakeClock(1000.0)
    backoff = Backoff(clock)
    delays = []
    finished = 1000.0
    for restarts in range(8):
        obs = observed(
            ctr(
                pod,
                "app",
                EXITED,
                exit_code=1,
                created=finished - 1,
                finished=finished,
                restart_count=restarts,
            )
        )
        clock.now = finished
        waited = 0.0
        while True:
            a = compute_pod_actions(pod, obs, clock.now, backoff)
            if a.containers_to_start == [0]:
                break
            assert a.in_backoff["app"].startswith("back-off ")
            clock.now += 1.0
            waited += 1.0
        delays.append(waited)
        a.record_backoff(backoff)
        finished = clock.now + 0.5  # it crashes again half a second later
    assert delays == [0, 10, 20, 40, 80, 160, 300, 300]


def test_back_off_message_and_key() -> None:
    pod = make_pod()
    clock = FakeClock(1000.0)
    backoff = Backoff(clock)
    obs = observed(ctr(pod, "app", EXITED, exit_code=1, finished=1000.0))
    first = compute_pod_actions(pod, obs, clock.now, backoff)
    assert first.containers_to_start == [0]
    entry = first.backoff_to_record["app"]
    assert entry.key == backoff_key(pod, pod.spec.containers[0])
    assert entry.key.startswith(f"web_default_{UID}_app_")
    first.record_backoff(backoff)
    clock.now = 1003.0
    second = compute_pod_actions(pod, obs, clock.now, backoff)
    assert second.containers_to_start == []
    assert second.in_backoff["app"] == (
        f"back-off 10s restarting failed container=app pod=web_default({UID})"
    )
    # Computing actions changed nothing: asking again gives the same answer.
    assert compute_pod_actions(pod, obs, clock.now, backoff).in_backoff == second.in_backoff


def test_back_off_resets_after_ten_minutes_of_running() -> None:
    pod = make_pod()
    clock = FakeClock(1000.0)
    backoff = Backoff(clock)
    key = backoff_key(pod, pod.spec.containers[0])
    for _ in range(4):  # 10, 20, 40, 80
        backoff.next(key, clock.now)
    assert backoff.get(key) == 80
    # It then ran for more than 2 x 300 s before exiting: treated as fresh.
    clock.now = 1000.0 + 601
    obs = observed(ctr(pod, "app", EXITED, exit_code=1, finished=clock.now))
    a = compute_pod_actions(pod, obs, clock.now, backoff)
    assert a.containers_to_start == [0]
    a.record_backoff(backoff)
    assert backoff.get(key) == 10


def test_init_container_restart_is_backed_off_too() -> None:
    pod = make_pod(init=("init",))
    clock = FakeClock(1000.0)
    backoff = Backoff(clock)
    obs = observed(ctr(pod, "init", EXITED, exit_code=1, finished=1000.0))
    a = compute_pod_actions(pod, obs, clock.now, backoff)
    assert a.next_init_container_to_start == 0
    a.record_backoff(backoff)
    a = compute_pod_actions(pod, obs, clock.now + 1, backoff)
    assert a.next_init_container_to_start is None
    assert "container=init" in a.in_backoff["init"]


# --------------------------------------------------------------------------- images, deadline

PULL_TABLE = [
    # policy, present, pull, error reason
    ("Always", True, True, ""),
    ("Always", False, True, ""),
    ("IfNotPresent", True, False, ""),
    ("IfNotPresent", False, True, ""),
    ("Never", True, False, ""),
    ("Never", False, False, reasons.ERR_IMAGE_NEVER_PULL),
]


@pytest.mark.parametrize(("policy", "present", "pull", "error"), PULL_TABLE)
def test_image_pull_policy(policy: str, present: bool, pull: bool, error: str) -> None:
    pod = make_pod()
    c = pod.spec.containers[0]
    c.image_pull_policy = policy
    decision = image_pull_decision(c, present)
    assert decision.pull is pull
    assert decision.error_reason == error
    if error:
        assert decision.message == (
            'Container image "busybox:1.36" is not present with pull policy of Never'
        )


def test_past_active_deadline() -> None:
    pod = make_pod(activeDeadlineSeconds=30)
    assert not past_active_deadline(pod, 100.0, 129.0)
    assert past_active_deadline(pod, 100.0, 130.0)
    assert not past_active_deadline(make_pod(), 100.0, 1e9)


GRACE_TABLE = [
    # pod grace, deletion grace, probe grace, reason, override, expected
    (30, None, None, "", None, 30),
    (0, None, None, "", None, 2),  # at least 2 s unless overridden
    (30, 5, None, "", None, 5),
    (30, None, 7, reasons.KILL_REASON_LIVENESS_PROBE, None, 7),
    (30, None, 7, "", None, 30),  # the probe's grace only for its own kills
    (30, 5, 7, reasons.KILL_REASON_LIVENESS_PROBE, None, 5),
    (30, None, None, "", 0, 0),
    # the API takes any int64 (issue 24 item 9); the node's waits stop at 68 years
    (10**15, None, None, "", None, 2**31 - 1),
    (30, 2**63 - 1, None, "", None, 2**31 - 1),
    (30, None, None, "", 2**63 - 1, 2**31 - 1),
]


@pytest.mark.parametrize(
    ("pod_grace", "deletion", "probe_grace", "reason", "override", "expected"), GRACE_TABLE
)
def test_termination_grace_period(
    pod_grace: int,
    deletion: int | None,
    probe_grace: int | None,
    reason: str,
    override: int | None,
    expected: int,
) -> None:
    pod = make_pod(terminationGracePeriodSeconds=pod_grace)
    pod.metadata.deletion_grace_period_seconds = deletion
    c = pod.spec.containers[0]
    c.liveness_probe = Probe(
        exec=ExecAction(command=["true"]), termination_grace_period_seconds=probe_grace
    )
    assert termination_grace_period(pod, c, reason, override) == expected


DEBUGGERS = [{"name": "d1", "image": "busybox:1.36", "targetContainerName": "app"},
             {"name": "d2", "image": "busybox:1.36"}]


def test_ephemeral_containers_start_once_and_are_never_restarted() -> None:
    """computePodActions' EphemeralContainersToStart: those with no status yet."""
    pod = make_pod(("app",), ephemeralContainers=DEBUGGERS)
    a = compute_pod_actions(pod, observed(ctr(pod, "app", RUNNING)), 0.0)
    assert a.ephemeral_containers_to_start == [0, 1]
    assert not a.is_noop()
    obs = observed(ctr(pod, "app", RUNNING), ctr(pod, "d1", EXITED, exit_code=1),
                   ctr(pod, "d2", RUNNING))
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.ephemeral_containers_to_start == []
    assert a.is_noop()  # an exited one stays exited, whatever the restartPolicy


def test_ephemeral_containers_start_while_initialization_is_in_progress() -> None:
    pod = make_pod(("app",), init=("i1",), ephemeralContainers=DEBUGGERS[1:])
    a = compute_pod_actions(pod, observed(ctr(pod, "i1", RUNNING)), 0.0)
    assert a.ephemeral_containers_to_start == [0]
    assert a.containers_to_start == []


def test_a_new_sandbox_does_not_start_ephemeral_containers() -> None:
    pod = make_pod(("app",), ephemeralContainers=DEBUGGERS[1:])
    a = compute_pod_actions(pod, PodRuntimeStatus(uid=UID), 0.0)
    assert a.create_sandbox
    assert a.ephemeral_containers_to_start == []
