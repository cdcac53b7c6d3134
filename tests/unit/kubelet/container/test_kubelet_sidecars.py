"""Sidecar containers (init containers with restartPolicy Always, KEP-753): validation,
computeInitContainerActions, pod status and resource requests, as tables."""

from __future__ import annotations

from typing import Any

import pytest
from kubelet_builders import UID, FakeClock, ctr, observed, sandbox

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.errors import ValidationError
from pykubelet.api.types import Pod, is_restartable_init_container
from pykubelet.api.validation import pod_errors, validate_pod
from pykubelet.kubelet.container.runtime_state import (
    ContainerRuntimeStatus,
    ContainerState,
    PodRuntimeStatus,
)
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.kuberuntime.actions import (
    PROBE_FAILURE,
    PROBE_SUCCESS,
    backoff_key,
    compute_pod_actions,
    should_container_be_restarted,
)
from pykubelet.kubelet.lifecycle.predicate import pod_requests
from pykubelet.kubelet.status.generate import WaitingReason, generate_pod_status
from pykubelet.kubelet.util.backoff import Backoff

RUNNING = ContainerState.RUNNING
EXITED = ContainerState.EXITED
UNKNOWN = ContainerState.UNKNOWN
NOW = 1_700_000_000.0
EXEC = {"exec": {"command": ["true"]}}


def sidecar_pod(
    restart: str = "Always",
    side: dict[str, Any] | None = None,
    inits: tuple[str, ...] = ("init1", "side", "init2"),
) -> Pod:
    """initContainers: init1 (regular), side (sidecar), init2 (regular); app."""
    init_specs = []
    for name in inits:
        spec: dict[str, Any] = {"name": name, "image": "busybox:1.36"}
        if name.startswith("side"):
            spec["restartPolicy"] = "Always"
            spec.update(side or {})
        init_specs.append(spec)
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": UID},
        "spec": {
            "restartPolicy": restart,
            "initContainers": init_specs,
            "containers": [{"name": "app", "image": "busybox:1.36"}],
        },
    }
    return set_defaults_pod(decode_pod(obj))


def in_sandbox(*containers: ContainerRuntimeStatus) -> PodRuntimeStatus:
    for c in containers:
        c.sandbox_id = "sb1"
    return observed(*containers)


# --------------------------------------------------------------------------- validation


def test_sidecar_decodes_and_validates_with_probes_and_lifecycle() -> None:
    pod = sidecar_pod(
        side={
            "readinessProbe": EXEC,
            "livenessProbe": EXEC,
            "startupProbe": EXEC,
            "lifecycle": {"preStop": EXEC},
        }
    )
    validate_pod(pod)
    assert [is_restartable_init_container(c) for c in pod.spec.init_containers] == [
        False,
        True,
        False,
    ]
    assert pod.sidecar_names() == {"side"}


@pytest.mark.parametrize(
    ("where", "extra", "error"),
    [
        (
            "init",
            {"restartPolicy": "OnFailure"},
            'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": '
            'supported values: "Always"',
        ),
        (
            "init",
            {"restartPolicy": "Never"},
            'spec.initContainers[0].restartPolicy: Unsupported value: "Never": '
            'supported values: "Always"',
        ),
        (
            "app",
            {"restartPolicy": "Always"},
            "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
        ),
        (
            "init",
            {"readinessProbe": EXEC},
            "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init "
            "containers without restartPolicy=Always",
        ),
        (
            "init",
            {"lifecycle": {"preStop": EXEC}},
            "spec.initContainers[0].lifecycle: Forbidden: may not be set for init "
            "containers without restartPolicy=Always",
        ),
        (
            "init",
            {"restartPolicy": "Always", "livenessProbe": {**EXEC, "successThreshold": 2}},
            "spec.initContainers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        ),
    ],
)
def test_container_restart_policy_validation(
    where: str, extra: dict[str, Any], error: str
) -> None:
    init = {"name": "i", "image": "busybox", **(extra if where == "init" else {})}
    app = {"name": "a", "image": "busybox", **(extra if where == "app" else {})}
    pod = set_defaults_pod(
        decode_pod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"initContainers": [init], "containers": [app]},
            }
        )
    )
    assert error in [str(e) for e in pod_errors(pod)]
    with pytest.raises(ValidationError):
        validate_pod(pod)


# --------------------------------------------------------------------------- actions


def _side_probe_pod(probe: str) -> Pod:
    return sidecar_pod(side={probe: EXEC})


SIDECAR_ACTIONS = [
    # id, pod restartPolicy, observed (name, state, exit) list, startup/liveness results,
    # init containers to start, app containers to start, containers killed, kill pod
    ("fresh", "Always", [], {}, [0], [], [], False),
    ("init1 done: start the sidecar", "Always", [("init1", EXITED, 0)], {}, [1], [], [], False),
    (
        "sidecar started: next init",
        "Never",
        [("init1", EXITED, 0), ("side", RUNNING, 0)],
        {},
        [2],
        [],
        [],
        False,
    ),
    (
        "next init runs beside the sidecar",
        "Never",
        [("init1", EXITED, 0), ("side", RUNNING, 0), ("init2", RUNNING, 0)],
        {},
        [],
        [],
        [],
        False,
    ),
    (
        "all initialized: the app starts",
        "Never",
        [("init1", EXITED, 0), ("side", RUNNING, 0), ("init2", EXITED, 0)],
        {},
        [],
        [0],
        [],
        False,
    ),
    (
        "sidecar exited during init: restarted even under Never",
        "Never",
        [("init1", EXITED, 0), ("side", EXITED, 1)],
        {},
        [1],
        [],
        [],
        False,
    ),
    (
        "sidecar exited 0 while the app runs: restarted, app kept",
        "Never",
        [("init1", EXITED, 0), ("side", EXITED, 0), ("init2", EXITED, 0), ("app", RUNNING, 0)],
        {},
        [1],
        [],
        [],
        False,
    ),
    (
        "sidecar removed by the runtime while the app runs: started again",
        "Always",
        [("app", RUNNING, 0)],
        {},
        [1],
        [],
        [],
        False,
    ),
    (
        "sidecar in unknown state: killed and restarted",
        "Always",
        [("init1", EXITED, 0), ("side", UNKNOWN, 0), ("init2", EXITED, 0), ("app", RUNNING, 0)],
        {},
        [1],
        [],
        ["side"],
        False,
    ),
    (
        "app finished under Never: pod killed, sidecar not restarted",
        "Never",
        [("init1", EXITED, 0), ("side", RUNNING, 0), ("init2", EXITED, 0), ("app", EXITED, 0)],
        {},
        [],
        [],
        [],
        True,
    ),
    (
        "app finished under Never, sidecar exited too: nothing restarts",
        "Never",
        [("init1", EXITED, 0), ("side", EXITED, 0), ("init2", EXITED, 0), ("app", EXITED, 0)],
        {},
        [],
        [],
        [],
        True,
    ),
    (
        "regular init failed under Never: pod killed",
        "Never",
        [("init1", EXITED, 0), ("side", RUNNING, 0), ("init2", EXITED, 1)],
        {},
        [],
        [],
        [],
        True,
    ),
    (
        "regular init failed under OnFailure: retried beside the sidecar",
        "OnFailure",
        [("init1", EXITED, 0), ("side", RUNNING, 0), ("init2", EXITED, 1)],
        {},
        [2],
        [],
        [],
        False,
    ),
]


@pytest.mark.parametrize(
    ("policy", "seen", "probes", "inits", "apps", "killed", "kill_pod"),
    [pytest.param(*row[1:], id=row[0]) for row in SIDECAR_ACTIONS],
)
def test_sidecar_actions(
    policy: str,
    seen: list[tuple[str, ContainerState, int]],
    probes: dict[str, str],
    inits: list[int],
    apps: list[int],
    killed: list[str],
    kill_pod: bool,
) -> None:
    pod = sidecar_pod(restart=policy)
    obs = in_sandbox(
        *(ctr(pod, n, st, exit_code=code, created=200.0 + i) for i, (n, st, code) in
          enumerate(seen))
    )
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.init_containers_to_start == inits
    assert a.containers_to_start == apps
    assert sorted(k.name for k in a.containers_to_kill.values()) == killed
    assert a.kill_pod is kill_pod
    assert not a.create_sandbox


@pytest.mark.parametrize(
    ("result", "inits", "killed"),
    [
        (None, [], []),  # the startup probe has not run: init2 waits
        (PROBE_SUCCESS, [2], []),
        (PROBE_FAILURE, [1], ["side"]),
    ],
)
def test_sidecar_startup_probe_gates_the_next_init(
    result: str | None, inits: list[int], killed: list[str]
) -> None:
    pod = _side_probe_pod("startupProbe")
    side = ctr(pod, "side", RUNNING, created=201.0)
    obs = in_sandbox(ctr(pod, "init1", EXITED, created=200.0), side)
    startup = {side.id: result} if result else {}
    a = compute_pod_actions(pod, obs, 0.0, startup=startup)
    assert a.init_containers_to_start == inits
    assert [k.name for k in a.containers_to_kill.values()] == killed
    if killed:
        info = next(iter(a.containers_to_kill.values()))
        assert info.message == "Init container side failed startup probe"
        assert info.reason == reasons.KILL_REASON_STARTUP_PROBE


def test_sidecar_liveness_failure_restarts_only_the_sidecar() -> None:
    pod = _side_probe_pod("livenessProbe")
    side = ctr(pod, "side", RUNNING, created=201.0)
    obs = in_sandbox(
        ctr(pod, "init1", EXITED, created=200.0),
        side,
        ctr(pod, "init2", EXITED, created=202.0),
        ctr(pod, "app", RUNNING, created=203.0),
    )
    a = compute_pod_actions(pod, obs, 0.0, liveness={side.id: PROBE_FAILURE})
    assert a.init_containers_to_start == [1]
    assert a.containers_to_start == []
    assert not a.kill_pod
    info = a.containers_to_kill[side.id]
    assert info.message == "Init container side failed liveness probe"
    assert info.reason == reasons.KILL_REASON_LIVENESS_PROBE
    # the liveness probe does not hold back initialization before it ran
    early = in_sandbox(ctr(pod, "init1", EXITED, created=200.0), side)
    assert compute_pod_actions(pod, early, 0.0).init_containers_to_start == [2]


def test_sidecar_with_changed_spec_is_restarted() -> None:
    pod = sidecar_pod()
    side = ctr(pod, "side", RUNNING, created=201.0, hash_="0000beef")
    obs = in_sandbox(
        ctr(pod, "init1", EXITED, created=200.0),
        side,
        ctr(pod, "init2", EXITED, created=202.0),
        ctr(pod, "app", RUNNING, created=203.0),
    )
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.init_containers_to_start == [1]
    assert a.containers_to_kill[side.id].message == "Init container side definition changed"


def test_new_sandbox_starts_from_the_first_init_container() -> None:
    pod = sidecar_pod()
    a = compute_pod_actions(pod, PodRuntimeStatus(uid=UID), 0.0)
    assert a.create_sandbox
    assert a.init_containers_to_start == [0]


def test_sidecar_in_backoff_is_skipped_while_the_app_runs() -> None:
    pod = sidecar_pod(inits=("side",))
    clock = FakeClock(1000.0)
    backoff = Backoff(clock=clock)
    side_exit = ctr(pod, "side", EXITED, exit_code=1, created=900.0, finished=995.0)
    backoff.next(backoff_key(pod, pod.spec.init_containers[0]), 995.0)
    obs = in_sandbox(side_exit, ctr(pod, "app", RUNNING, created=901.0))
    a = compute_pod_actions(pod, obs, clock.now, backoff)
    assert a.init_containers_to_start == []
    assert a.containers_to_start == []
    assert not a.kill_pod
    assert not a.containers_to_kill
    assert a.in_backoff["side"].startswith("back-off 10s restarting failed container=side pod=")
    # once the back-off passed it starts again, recorded for the next back-off
    clock.now = 1006.0
    a = compute_pod_actions(pod, obs, clock.now, backoff)
    assert a.init_containers_to_start == [0]
    assert a.backoff_to_record["side"].since == 995.0


def test_app_exited_with_sidecar_exited_waits_for_the_sidecar() -> None:
    # no app container alive in the sandbox: the pod is not initialized again until
    # the sidecar runs (hasAnyRegularContainerCreated ignores exited ones)
    pod = sidecar_pod(inits=("side",))
    obs = in_sandbox(
        ctr(pod, "side", EXITED, exit_code=1, created=900.0),
        ctr(pod, "app", EXITED, exit_code=1, created=901.0),
    )
    a = compute_pod_actions(pod, obs, 0.0)
    assert a.init_containers_to_start == [0]
    assert a.containers_to_start == []


def test_regular_init_in_backoff_stops_later_init_containers() -> None:
    pod = sidecar_pod(inits=("init1", "side"))
    clock = FakeClock(1000.0)
    backoff = Backoff(clock=clock)
    backoff.next(backoff_key(pod, pod.spec.init_containers[0]), 995.0)
    obs = in_sandbox(ctr(pod, "init1", EXITED, exit_code=1, created=900.0, finished=995.0))
    a = compute_pod_actions(pod, obs, clock.now, backoff)
    assert a.init_containers_to_start == []
    assert "init1" in a.in_backoff


def test_exited_sidecar_should_be_restarted_whatever_the_policy() -> None:
    pod = sidecar_pod(restart="Never")
    obs = in_sandbox(ctr(pod, "side", EXITED, exit_code=0))
    assert should_container_be_restarted(pod.spec.init_containers[1], pod, obs)
    assert not should_container_be_restarted(
        pod.spec.containers[0], pod, in_sandbox(ctr(pod, "app", EXITED))
    )


# --------------------------------------------------------------------------- status


def conds(status: Any) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status, c.reason, c.message) for c in status.conditions}


def _status(pod: Pod, obs: PodRuntimeStatus, rounds: int = 2, **kw: Any) -> Any:
    """Generate the status `rounds` times, each from the last (as the agent does):
    a running sidecar's `started` comes from the previous round's probe results."""
    old = None
    for _ in range(rounds):
        old = generate_pod_status(pod, obs, NOW, old_status=old, **kw)
    return old


def test_running_sidecar_status_started_ready_and_pod_pending_until_app() -> None:
    pod = sidecar_pod(inits=("side",))
    obs = in_sandbox(ctr(pod, "side", RUNNING))
    first = generate_pod_status(pod, obs, NOW)
    assert first.phase == "Pending"  # started not known yet
    s = _status(pod, obs)
    side = s.init_container_statuses[0]
    assert side.state.running is not None
    assert side.started is True
    assert side.ready is True
    assert s.phase == "Pending"  # the app container has not been created
    c = conds(s)
    assert c["Initialized"][0] == "True"
    assert c["ContainersReady"] == (
        "False",
        reasons.CONTAINERS_NOT_READY,
        "containers with unready status: [app]",
    )
    assert s.container_statuses[0].state.waiting.reason == reasons.POD_INITIALIZING


def test_sidecar_readiness_counts_in_containers_ready() -> None:
    pod = sidecar_pod(inits=("side",), side={"readinessProbe": EXEC})
    side = ctr(pod, "side", RUNNING, created=200.0)
    app = ctr(pod, "app", RUNNING, created=201.0)
    obs = in_sandbox(side, app)
    s = _status(pod, obs, readiness={side.id: PROBE_FAILURE})
    assert s.phase == "Running"
    assert s.init_container_statuses[0].ready is False
    assert conds(s)["ContainersReady"] == (
        "False",
        reasons.CONTAINERS_NOT_READY,
        "containers with unready status: [side]",
    )
    assert conds(s)["Ready"][0] == "False"
    s = _status(pod, obs, readiness={side.id: PROBE_SUCCESS})
    assert s.init_container_statuses[0].ready is True
    assert conds(s)["ContainersReady"][0] == "True"
    assert conds(s)["Ready"][0] == "True"


def test_sidecar_startup_probe_keeps_pod_uninitialized() -> None:
    pod = sidecar_pod(inits=("side",), side={"startupProbe": EXEC})
    side = ctr(pod, "side", RUNNING)
    s = _status(pod, in_sandbox(side))
    assert s.init_container_statuses[0].started is False
    assert conds(s)["Initialized"] == (
        "False",
        reasons.CONTAINERS_NOT_INITIALIZED,
        "containers with incomplete status: [side]",
    )
    s = _status(pod, in_sandbox(side), startup={side.id: PROBE_SUCCESS})
    assert s.init_container_statuses[0].started is True
    assert conds(s)["Initialized"][0] == "True"


def test_crashing_sidecar_shows_crash_loop_back_off_under_never() -> None:
    pod = sidecar_pod(restart="Never", inits=("side",))
    obs = in_sandbox(
        ctr(pod, "side", EXITED, exit_code=2, created=200.0, restart_count=3),
        ctr(pod, "app", RUNNING, created=201.0),
    )
    msg = "back-off 40s restarting failed container=side pod=web_default(uid-1)"
    s = _status(
        pod, obs, waiting_reasons={"side": WaitingReason(reasons.CRASH_LOOP_BACK_OFF, msg)}
    )
    side = s.init_container_statuses[0]
    assert side.state.waiting.reason == reasons.CRASH_LOOP_BACK_OFF
    assert side.state.waiting.message == msg
    assert side.last_state.terminated.exit_code == 2
    assert side.restart_count == 3
    assert side.ready is False
    assert s.phase == "Running"  # the app runs; a stopped sidecar does not decide


@pytest.mark.parametrize(
    ("side_state", "app_code", "phase"),
    [
        (RUNNING, 0, "Running"),  # sidecar still running: not done yet
        (EXITED, 0, "Succeeded"),  # the sidecar's exit (SIGTERM) does not count
        (EXITED, 1, "Failed"),
    ],
)
def test_phase_when_the_app_finished_under_never(
    side_state: ContainerState, app_code: int, phase: str
) -> None:
    pod = sidecar_pod(restart="Never", inits=("side",))
    obs = in_sandbox(
        ctr(pod, "side", side_state, exit_code=143, created=200.0),
        ctr(pod, "app", EXITED, exit_code=app_code, created=201.0),
    )
    assert _status(pod, obs).phase == phase


# --------------------------------------------------------------------------- resources


@pytest.mark.parametrize(
    ("inits", "app_cpu", "expect"),
    [
        # (name, cpu milli, sidecar?) in spec order
        ([("init", 500, False), ("side", 200, True)], 100, 500),  # max(500, 100+200)
        ([("side", 200, True), ("init", 500, False)], 100, 700),  # init runs beside side
        ([("side", 200, True)], 100, 300),  # sidecars add to the apps
        ([("s1", 200, True), ("s2", 300, True), ("init", 100, False)], 50, 600),
        ([("init", 900, False)], 100, 900),
    ],
)
def test_pod_requests_with_sidecars(
    inits: list[tuple[str, int, bool]], app_cpu: int, expect: int
) -> None:
    init_specs = [
        {
            "name": n,
            "image": "busybox",
            "resources": {"requests": {"cpu": f"{m}m"}},
            **({"restartPolicy": "Always"} if side else {}),
        }
        for n, m, side in inits
    ]
    pod = set_defaults_pod(
        decode_pod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "initContainers": init_specs,
                    "containers": [
                        {
                            "name": "app",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": f"{app_cpu}m"}},
                        }
                    ],
                },
            }
        )
    )
    assert pod_requests(pod)["cpu"] == expect


def test_sandbox_fixture_builds_ready_sandbox() -> None:
    # the builder the tables rely on: a READY sandbox with an IP
    assert sandbox().ip
