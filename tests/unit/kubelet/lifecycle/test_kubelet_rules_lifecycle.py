"""The rules together: compute_pod_actions driven to convergence over an in-memory
record of what a runtime would hold, with status generated after every sync.

This is not a runtime double for the engine (that one runs on real runc): it only
replays PodActions on plain data, so a pod's whole life (init containers in order,
restarts under each policy with their back-off, the final phase) can be checked
against kubelet's rules in milliseconds.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from kubelet_builders import POD_IP, UID, FakeClock, make_pod

from pykubelet.api.types import Pod, PodStatus
from pykubelet.kubelet.container.hashing import hash_container_hex
from pykubelet.kubelet.container.runtime_state import (
    ContainerRuntimeStatus,
    ContainerState,
    PodRuntimeStatus,
    SandboxRuntimeStatus,
    SandboxState,
)
from pykubelet.kubelet.events.reasons import CRASH_LOOP_BACK_OFF
from pykubelet.kubelet.kuberuntime.actions import PodActions, compute_pod_actions
from pykubelet.kubelet.status.generate import WaitingReason, generate_pod_status
from pykubelet.kubelet.util.backoff import Backoff


@dataclass
class Replay:
    """Containers' scripted exit codes per run (None: keeps running)."""

    pod: Pod
    script: dict[str, list[int | None]]
    clock: FakeClock = field(default_factory=FakeClock)
    sandboxes: list[SandboxRuntimeStatus] = field(default_factory=list)
    containers: list[ContainerRuntimeStatus] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)
    serial: int = 0

    def observed(self) -> PodRuntimeStatus:
        ready = [s for s in self.sandboxes if s.state is SandboxState.READY]
        return PodRuntimeStatus(
            uid=UID,
            ips=[POD_IP] if ready else [],
            sandboxes=list(self.sandboxes),
            containers=list(self.containers),
        )

    def _stop(self, c: ContainerRuntimeStatus, code: int) -> None:
        if c.state is ContainerState.RUNNING:
            c.state = ContainerState.EXITED
            c.exit_code = code
            c.reason = "Completed" if code == 0 else "Error"
            c.finished_at = self.clock.now

    def _start(self, name: str, observed: PodRuntimeStatus) -> None:
        spec = next(c for c in self.pod.all_containers() if c.name == name)
        previous = observed.find_container(name)
        run = self.runs.get(name, 0)
        self.runs[name] = run + 1
        self.serial += 1
        self.containers.append(
            ContainerRuntimeStatus(
                id=f"{name}-{self.serial}",
                name=name,
                state=ContainerState.RUNNING,
                created_at=self.clock.now + self.serial * 1e-3,
                started_at=self.clock.now,
                image=spec.image,
                hash=hash_container_hex(spec),
                restart_count=previous.restart_count + 1 if previous else 0,
            )
        )

    def apply(self, actions: PodActions, observed: PodRuntimeStatus) -> None:
        if actions.kill_pod:
            for c in self.containers:
                self._stop(c, 137)
            for s in self.sandboxes:
                s.state = SandboxState.NOT_READY
        else:
            for cid in actions.containers_to_kill:
                for c in self.containers:
                    if c.id == cid:
                        self._stop(c, 137)
        if actions.create_sandbox:
            self.sandboxes.append(
                SandboxRuntimeStatus(
                    id=f"sb{actions.attempt}",
                    state=SandboxState.READY,
                    attempt=actions.attempt,
                    ip=POD_IP,
                    created_at=self.clock.now,
                )
            )
        if actions.next_init_container_to_start is not None:
            self._start(
                self.pod.spec.init_containers[actions.next_init_container_to_start].name, observed
            )
        for idx in actions.containers_to_start:
            self._start(self.pod.spec.containers[idx].name, observed)

    def tick(self) -> None:
        """A second passes; containers whose script says so exit now."""
        self.clock.now += 1.0
        for c in self.containers:
            if c.state is not ContainerState.RUNNING:
                continue
            script = self.script.get(c.name, [None])
            code = script[min(c.restart_count, len(script) - 1)]
            if code is not None:
                self._stop(c, code)


def live(
    pod: Pod, script: dict[str, list[int | None]], seconds: int
) -> tuple[Replay, PodStatus, list[str]]:
    """Sync every second for `seconds`; return the replay, last status, reasons seen."""
    replay = Replay(pod, script)
    backoff = Backoff(replay.clock)
    status = PodStatus()
    seen: list[str] = []
    for _ in range(seconds):
        observed = replay.observed()
        actions = compute_pod_actions(pod, observed, replay.clock.now, backoff)
        waiting = {n: WaitingReason(CRASH_LOOP_BACK_OFF, m) for n, m in actions.in_backoff.items()}
        actions.record_backoff(backoff)
        replay.apply(actions, observed)
        status = generate_pod_status(
            pod, replay.observed(), replay.clock.now, old_status=status, waiting_reasons=waiting
        )
        for cs in (*status.init_container_statuses, *status.container_statuses):
            if cs.state.waiting and cs.state.waiting.reason:
                seen.append(cs.state.waiting.reason)
        if status.phase in ("Succeeded", "Failed"):
            break
        replay.tick()
    return replay, status, seen


def test_init_containers_in_order_then_app_runs() -> None:
    pod = make_pod(init=("i1", "i2"))
    replay, status, _ = live(pod, {"i1": [0], "i2": [1, 0], "app": [None]}, 40)
    assert replay.runs == {"i1": 1, "i2": 2, "app": 1}
    # i1 ran before i2, and app only after i2 succeeded
    order = [c.name for c in sorted(replay.containers, key=lambda c: c.created_at)]
    assert order == ["i1", "i2", "i2", "app"]
    assert status.phase == "Running"
    i2 = status.init_container_statuses[1]
    assert i2.state.terminated.reason == "Completed"
    assert i2.restart_count == 1
    conditions = {c.type: c.status for c in status.conditions}
    assert conditions == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
        "PodScheduled": "True",
    }


def test_failed_init_container_under_never_fails_the_pod() -> None:
    pod = make_pod(init=("i1",), restart="Never")
    replay, status, _ = live(pod, {"i1": [1]}, 20)
    assert status.phase == "Failed"
    assert replay.runs == {"i1": 1}
    assert status.init_container_statuses[0].state.terminated.reason == "Error"
    assert status.container_statuses[0].state.waiting.reason == "PodInitializing"


def test_on_failure_restarts_with_back_off_until_success() -> None:
    pod = make_pod(restart="OnFailure")
    replay, status, seen = live(pod, {"app": [1, 1, 0]}, 120)
    assert status.phase == "Succeeded"
    assert replay.runs == {"app": 3}
    assert CRASH_LOOP_BACK_OFF in seen
    starts = sorted(c.started_at for c in replay.containers)
    # each run exits a second after it starts; the first restart is immediate (no
    # back-off entry yet, as in doBackOff), the second waits the initial 10 s
    assert [b - a for a, b in itertools.pairwise(starts)] == [1.0, 11.0]
    final = status.container_statuses[0]
    assert final.state.terminated.reason == "Completed"
    assert final.restart_count == 2
    assert final.last_state.terminated.exit_code == 1


def test_always_keeps_restarting_a_completed_container() -> None:
    pod = make_pod(restart="Always")
    replay, status, _ = live(pod, {"app": [0]}, 60)
    assert replay.runs["app"] >= 3
    assert status.phase == "Running"


def test_never_leaves_a_failed_container_and_fails() -> None:
    pod = make_pod(containers=("a", "b"), restart="Never")
    replay, status, _ = live(pod, {"a": [0], "b": [3]}, 10)
    assert status.phase == "Failed"
    assert replay.runs == {"a": 1, "b": 1}
    by_name = {c.name: c for c in status.container_statuses}
    assert by_name["b"].state.terminated.exit_code == 3
    assert by_name["a"].state.terminated.reason == "Completed"
