"""SyncPod step 1: what must change to bring a pod's runtime state to its spec.

`compute_pod_actions` is kuberuntime's computePodActions, pure: it reads the pod,
the observed `PodRuntimeStatus`, probe results and the restart back-off, and returns
a `PodActions` the engine carries out in SyncPod's order:

  2. kill the pod (all containers, then the sandbox) if `kill_pod`;
     else kill `containers_to_kill`;
  4. create the sandbox if `create_sandbox` (with `attempt`);
  5. start `ephemeral_containers_to_start` (those never started: an ephemeral container
     is never restarted), even while initialization is in progress;
     start `init_containers_to_start` in spec order (computeInitContainerActions, the
     SidecarContainers path: the next init container once the one before it completed,
     or, for a sidecar (restartPolicy Always), once it is started; exited sidecars are
     restarted whatever the pod's restartPolicy);
  6. start `containers_to_start`.

The back-off check (kuberuntime's doBackOff, done inside SyncPod's start step
upstream) is folded in here as a read: a container whose restart is still backing off
is left out of the start lists and reported in `in_backoff` with kubelet's message
(the engine records it as the CrashLoopBackOff waiting reason). For every container
that is to start after an exit, `backoff_to_record` holds the key and the exit time:
the engine calls `record_backoff(backoff)` (Backoff.next) right before it starts them,
as doBackOff does, so computing actions never changes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pykubelet.api.types import (
    PULL_ALWAYS,
    PULL_IF_NOT_PRESENT,
    PULL_NEVER,
    RESTART_NEVER,
    RESTART_ON_FAILURE,
    Container,
    Pod,
    is_restartable_init_container,
)
from pykubelet.kubelet.container.hashing import hash_container_hex
from pykubelet.kubelet.container.runtime_state import (
    ContainerRuntimeStatus,
    ContainerState,
    PodRuntimeStatus,
    SandboxState,
)
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.prober import probes

# Probe results as the probers' results manager holds them (see probes.py).
PROBE_SUCCESS = probes.SUCCESS
PROBE_FAILURE = probes.FAILURE
PROBE_UNKNOWN = probes.UNKNOWN


class BackoffView(Protocol):
    """The read side of backoff.Backoff that computing actions needs."""

    def get(self, key: str) -> float: ...

    def is_in_backoff_since(self, key: str, event_time: float) -> bool: ...


class BackoffRecorder(Protocol):
    def next(self, key: str, event_time: float) -> None: ...


@dataclass(frozen=True)
class ContainerToKill:
    """kuberuntime's containerToKillInfo."""

    name: str
    container: Container | None
    message: str
    reason: str = ""  # reasons.KILL_REASON_* or ""


@dataclass(frozen=True)
class BackoffEntry:
    key: str
    since: float  # finished_at of the latest exited instance


@dataclass
class PodActions:
    """kuberuntime's podActions, plus the back-off outcome (see module doc)."""

    kill_pod: bool = False
    create_sandbox: bool = False
    sandbox_id: str = ""
    attempt: int = 0
    # indexes into pod.spec.init_containers, in spec order (sidecars to (re)start and
    # the next regular init container)
    init_containers_to_start: list[int] = field(default_factory=list)
    # indexes into pod.spec.containers, in spec order
    containers_to_start: list[int] = field(default_factory=list)
    # indexes into pod.spec.ephemeral_containers of those never started
    ephemeral_containers_to_start: list[int] = field(default_factory=list)
    # CRI container id -> why
    containers_to_kill: dict[str, ContainerToKill] = field(default_factory=dict)
    # container name -> kubelet's "back-off 20s restarting failed container=..." message
    in_backoff: dict[str, str] = field(default_factory=dict)
    # container name -> what Backoff.next must be told when it starts
    backoff_to_record: dict[str, BackoffEntry] = field(default_factory=dict)

    def record_backoff(self, backoff: BackoffRecorder, names: list[str] | None = None) -> None:
        """Advance the back-off of the containers about to start (all, or `names`)."""
        for name, entry in self.backoff_to_record.items():
            if names is None or name in names:
                backoff.next(entry.key, entry.since)

    @property
    def next_init_container_to_start(self) -> int | None:
        """The init container that advances initialization: the last one to start."""
        return self.init_containers_to_start[-1] if self.init_containers_to_start else None

    def is_noop(self) -> bool:
        return (
            not self.kill_pod
            and not self.create_sandbox
            and not self.init_containers_to_start
            and not self.containers_to_start
            and not self.ephemeral_containers_to_start
            and not self.containers_to_kill
        )


# --------------------------------------------------------------------------- rules


def should_restart_on_failure(pod: Pod) -> bool:
    return pod.spec.restart_policy != RESTART_NEVER


def container_changed(container: Container, status: ContainerRuntimeStatus) -> bool:
    """The spec hash differs from the one the running instance was created with."""
    return status.hash != hash_container_hex(container)


def container_succeeded(container: Container, observed: PodRuntimeStatus) -> bool:
    status = observed.find_container(container.name)
    if status is None or status.state is ContainerState.RUNNING:
        return False
    return status.exit_code == 0


def should_container_be_restarted(
    container: Container, pod: Pod, observed: PodRuntimeStatus
) -> bool:
    """kubecontainer.ShouldContainerBeRestarted."""
    if pod.metadata.deletion_timestamp is not None:
        return False
    status = observed.find_container(container.name)
    if status is None:
        return True
    if status.state is ContainerState.RUNNING:
        return False
    if status.state in (ContainerState.UNKNOWN, ContainerState.CREATED):
        return True
    if is_restartable_init_container(container):
        return True  # a sidecar restarts whatever the pod's restartPolicy
    if pod.spec.restart_policy == RESTART_NEVER:
        return False
    return not (pod.spec.restart_policy == RESTART_ON_FAILURE and status.exit_code == 0)


def is_init_container_failed(status: ContainerRuntimeStatus) -> bool:
    if status.reason == reasons.OOM_KILLED:
        return True
    if status.state is ContainerState.EXITED and status.exit_code != 0:
        return True
    return status.state is ContainerState.UNKNOWN


@dataclass(frozen=True)
class InitProgress:
    """findNextInitContainerToRun's (status, next, done)."""

    last_status: ContainerRuntimeStatus | None
    next_index: int | None
    done: bool


def find_next_init_container_to_run(pod: Pod, observed: PodRuntimeStatus) -> InitProgress:
    """Which init container runs next, or whether initialization is done."""
    inits = pod.spec.init_containers
    if not inits:
        return InitProgress(None, None, True)
    # A running app container means every init container ran at some point, even if
    # the runtime has since removed them: do not run them again.
    for container in pod.spec.containers:
        status = observed.find_container(container.name)
        if status is not None and status.state is ContainerState.RUNNING:
            return InitProgress(None, None, True)
    # The last failed one, if any.
    for i in range(len(inits) - 1, -1, -1):
        status = observed.find_container(inits[i].name)
        if status is not None and is_init_container_failed(status):
            return InitProgress(status, i, False)
    for i in range(len(inits) - 1, -1, -1):
        status = observed.find_container(inits[i].name)
        if status is None:
            continue
        if status.state is ContainerState.RUNNING:
            return InitProgress(None, None, False)
        if status.state is ContainerState.EXITED:
            if i == len(inits) - 1:
                return InitProgress(None, None, True)
            return InitProgress(None, i + 1, False)
    return InitProgress(None, 0, False)


def has_any_regular_container_created(pod: Pod, observed: PodRuntimeStatus) -> bool:
    """hasAnyRegularContainerCreated: an app container exists in this sandbox's life.

    Exited ones do not count: after a node reboot every container is exited and the new
    sandbox must not be taken as initialized.
    """
    for container in pod.spec.containers:
        status = observed.find_container(container.name)
        if status is not None and status.state in (
            ContainerState.CREATED,
            ContainerState.RUNNING,
            ContainerState.UNKNOWN,
        ):
            return True
    return False


def compute_init_container_actions(
    pod: Pod,
    observed: PodRuntimeStatus,
    actions: PodActions,
    liveness: Mapping[str, str],
    startup: Mapping[str, str],
) -> bool:
    """computeInitContainerActions (SidecarContainers): fill `actions` with the init
    containers to (re)start and the sidecars to kill; True once the pod is initialized.

    Init containers are walked backwards (completed ones may have been removed by the
    runtime, so the last one known tells the progress); once the next one to run is
    found, the earlier ones are only checked for sidecars to restart.
    """
    inits = pod.spec.init_containers
    if not inits:
        return True
    pod_has_initialized = has_any_regular_container_created(pod, observed)
    previously_initialized = pod_has_initialized
    restart_on_failure = should_restart_on_failure(pod)
    to_start: list[int] = []

    def kill(status: ContainerRuntimeStatus, c: Container, message: str, reason: str) -> None:
        actions.containers_to_kill[status.id] = ContainerToKill(
            name=c.name, container=c, message=message, reason=reason
        )

    for i in range(len(inits) - 1, -1, -1):
        container = inits[i]
        sidecar = is_restartable_init_container(container)
        status = observed.find_container(container.name)
        if status is None:
            # Initialized before, its status since removed: a sidecar must run again.
            if previously_initialized and sidecar:
                to_start.append(i)
            continue
        if previously_initialized and not sidecar:
            continue  # after initialization only sidecars are kept running

        if status.state is ContainerState.CREATED:
            # created but never started (the start failed): start it again
            to_start.append(i)
        elif status.state is ContainerState.RUNNING:
            started = sidecar and _running_sidecar_actions(
                container, status, i, to_start, kill, liveness, startup
            )
            if started and i == len(inits) - 1:
                pod_has_initialized = True
            elif started and not previously_initialized:
                to_start.append(i + 1)  # started for the first time: start the next
            # a regular init container: wait for it to finish
        elif status.state is ContainerState.EXITED:
            if sidecar:
                to_start.append(i)
            elif is_init_container_failed(status):
                if not restart_on_failure:
                    actions.kill_pod = True
                    actions.init_containers_to_start = []
                    return False
                to_start.append(i)
            elif i == len(inits) - 1:
                pod_has_initialized = True
            else:
                to_start.append(i + 1)  # completed for the first time: start the next
        else:  # UNKNOWN
            if not sidecar and not restart_on_failure:
                actions.kill_pod = True
                actions.init_containers_to_start = []
                return False
            kill(
                status,
                container,
                f'Init container is in "{status.state.value}" state, '
                "try killing it before restart",
                reasons.KILL_REASON_UNKNOWN,
            )
            to_start.append(i)
        previously_initialized = True

    if not previously_initialized:
        to_start.append(0)  # nothing ran yet: the first one
    actions.init_containers_to_start = sorted(set(to_start))
    return pod_has_initialized


def _running_sidecar_actions(
    container: Container,
    status: ContainerRuntimeStatus,
    index: int,
    to_start: list[int],
    kill: Callable[[ContainerRuntimeStatus, Container, str, str], None],
    liveness: Mapping[str, str],
    startup: Mapping[str, str],
) -> bool:
    """The RUNNING case of computeInitContainerActions for a sidecar: restart it on a
    failed startup/liveness probe or a changed spec. True once it counts as started
    (its startup probe, if any, succeeded), which lets the next init container start."""
    if container.startup_probe is not None:
        result = startup.get(status.id)
        if result is None:
            return False  # the startup probe has not run yet: wait for it
        if result != PROBE_SUCCESS:
            if result == PROBE_FAILURE:
                kill(status, container, f"Init container {container.name} failed startup probe",
                     reasons.KILL_REASON_STARTUP_PROBE)
                to_start.append(index)
            return False
    if container_changed(container, status):
        kill(status, container, f"Init container {container.name} definition changed", "")
        to_start.append(index)
    elif container.liveness_probe is not None and liveness.get(status.id) == PROBE_FAILURE:
        # a sidecar's liveness does not hold back the next init container
        kill(status, container, f"Init container {container.name} failed liveness probe",
             reasons.KILL_REASON_LIVENESS_PROBE)
        to_start.append(index)
    return True


@dataclass(frozen=True)
class SandboxChange:
    create: bool
    attempt: int
    sandbox_id: str


def pod_sandbox_changed(pod: Pod, observed: PodRuntimeStatus) -> SandboxChange:
    """runtimeutil.PodSandboxChanged: must the sandbox be (re)created?"""
    if not observed.sandboxes:
        return SandboxChange(True, 0, "")
    ready = sum(1 for s in observed.sandboxes if s.state is SandboxState.READY)
    latest = observed.sandboxes[0]
    if ready > 1:
        return SandboxChange(True, latest.attempt + 1, latest.id)
    if latest.state is not SandboxState.READY:
        return SandboxChange(True, latest.attempt + 1, latest.id)
    if latest.host_network != pod.spec.host_network:
        return SandboxChange(True, latest.attempt + 1, "")
    if not pod.spec.host_network and not latest.ip:
        return SandboxChange(True, latest.attempt + 1, latest.id)
    return SandboxChange(False, latest.attempt, latest.id)


def backoff_key(pod: Pod, container: Container) -> str:
    """kuberuntime getStableKey: `name_namespace_uid_container_hash`."""
    return (
        f"{pod.metadata.name}_{pod.metadata.namespace}_{pod.metadata.uid}_"
        f"{container.name}_{hash_container_hex(container)}"
    )


def _latest_exited(observed: PodRuntimeStatus, name: str) -> ContainerRuntimeStatus | None:
    for status in observed.containers:
        if status.name == name and status.state is ContainerState.EXITED:
            return status
    return None


# --------------------------------------------------------------------------- the step


def compute_pod_actions(
    pod: Pod,
    observed: PodRuntimeStatus,
    now: float,
    backoff: BackoffView | None = None,
    *,
    liveness: Mapping[str, str] | None = None,
    startup: Mapping[str, str] | None = None,
) -> PodActions:
    """kuberuntime computePodActions (+ doBackOff as a read).

    `liveness` / `startup` map CRI container ids to probe results (PROBE_*), as the
    probe workers published them. `now` is the clock the back-off is read against
    (the Backoff carries its own clock; `now` is kept for rules that need it).
    """
    del now  # the back-off reads its own injected clock; kept for the contract
    actions = _compute(pod, observed, liveness or {}, startup or {})
    if backoff is not None:
        _apply_backoff(pod, observed, actions, backoff)
    return actions


def _compute(
    pod: Pod,
    observed: PodRuntimeStatus,
    liveness: Mapping[str, str],
    startup: Mapping[str, str],
) -> PodActions:
    change = pod_sandbox_changed(pod, observed)
    actions = PodActions(
        kill_pod=change.create,
        create_sandbox=change.create,
        sandbox_id=change.sandbox_id,
        attempt=change.attempt,
    )

    # A new sandbox: everything is killed and recreated, init containers first.
    if change.create:
        if not should_restart_on_failure(pod) and change.attempt != 0 and observed.containers:
            # Never restart: just kill the pod; no point in a sandbox for nothing.
            actions.create_sandbox = False
            return actions
        on_failure = pod.spec.restart_policy == RESTART_ON_FAILURE
        to_start = [
            i
            for i, c in enumerate(pod.spec.containers)
            if not (on_failure and container_succeeded(c, observed))
        ]
        # initialization is done and nothing is to start: no sandbox for nothing
        if not to_start and find_next_init_container_to_run(pod, observed).done:
            actions.create_sandbox = False
            return actions
        if pod.spec.init_containers:
            actions.init_containers_to_start = [0]
            return actions
        actions.containers_to_start = to_start
        return actions

    # Ephemeral containers start even before initialization completes, and never again.
    actions.ephemeral_containers_to_start = [
        i for i, ec in enumerate(pod.spec.ephemeral_containers)
        if observed.find_container(ec.name) is None
    ]

    # Initialization in progress or failed: app containers wait.
    initialized = compute_init_container_actions(pod, observed, actions, liveness, startup)
    if actions.kill_pod or not initialized:
        return actions

    keep_count = 0
    for idx, container in enumerate(pod.spec.containers):
        status = observed.find_container(container.name)
        if status is None or status.state is not ContainerState.RUNNING:
            if should_container_be_restarted(container, pod, observed):
                actions.containers_to_start.append(idx)
                if status is not None and status.state is ContainerState.UNKNOWN:
                    actions.containers_to_kill[status.id] = ContainerToKill(
                        name=status.name,
                        container=container,
                        message=(
                            f'Container is in "{status.state.value}" state, '
                            "try killing it before restart"
                        ),
                        reason=reasons.KILL_REASON_UNKNOWN,
                    )
            continue

        restart = should_restart_on_failure(pod)
        reason = ""
        if container_changed(container, status):
            message = f"Container {container.name} definition changed"
            restart = True  # a changed spec restarts whatever the policy
        elif liveness.get(status.id) == PROBE_FAILURE:
            message = f"Container {container.name} failed liveness probe"
            reason = reasons.KILL_REASON_LIVENESS_PROBE
        elif startup.get(status.id) == PROBE_FAILURE:
            message = f"Container {container.name} failed startup probe"
            reason = reasons.KILL_REASON_STARTUP_PROBE
        else:
            keep_count += 1
            continue

        if restart:
            message = f"{message}, will be restarted"
            actions.containers_to_start.append(idx)
        actions.containers_to_kill[status.id] = ContainerToKill(
            name=status.name, container=container, message=message, reason=reason
        )

    if keep_count == 0 and not actions.containers_to_start:
        actions.kill_pod = True
        # sidecars must not keep a finished pod alive
        actions.init_containers_to_start = []
    return actions


def _apply_backoff(
    pod: Pod, observed: PodRuntimeStatus, actions: PodActions, backoff: BackoffView
) -> None:
    """doBackOff for each container the actions would start."""

    def check(container: Container) -> bool:
        """True if `container` may start now."""
        exited = _latest_exited(observed, container.name)
        if exited is None:
            return True
        key = backoff_key(pod, container)
        if backoff.is_in_backoff_since(key, exited.finished_at):
            actions.in_backoff[container.name] = reasons.back_off_message(
                backoff.get(key), container.name, pod.format()
            )
            return False
        actions.backoff_to_record[container.name] = BackoffEntry(key, exited.finished_at)
        return True

    # SyncPod step 6: a sidecar in back-off is skipped, a regular init container in
    # back-off stops the walk.
    inits: list[int] = []
    for i in actions.init_containers_to_start:
        init = pod.spec.init_containers[i]
        if check(init):
            inits.append(i)
        elif not is_restartable_init_container(init):
            break
    actions.init_containers_to_start = inits
    actions.containers_to_start = [
        i for i in actions.containers_to_start if check(pod.spec.containers[i])
    ]


# --------------------------------------------------------------------------- images


@dataclass(frozen=True)
class PullDecision:
    """What to do about a container's image given the node's store."""

    pull: bool
    error_reason: str = ""  # reasons.ERR_IMAGE_NEVER_PULL when it cannot be had
    message: str = ""


def image_pull_decision(container: Container, present: bool) -> PullDecision:
    """images.ImageManager.EnsureImageExists's policy part (shouldPullImage)."""
    policy = container.image_pull_policy or PULL_IF_NOT_PRESENT
    if policy == PULL_ALWAYS or (policy == PULL_IF_NOT_PRESENT and not present):
        return PullDecision(pull=True)
    if present:
        return PullDecision(pull=False, message=reasons.image_present_message(container.image))
    assert policy == PULL_NEVER
    return PullDecision(
        pull=False,
        error_reason=reasons.ERR_IMAGE_NEVER_PULL,
        message=reasons.image_never_pull_message(container.image),
    )


# --------------------------------------------------------------------------- deadline


def past_active_deadline(pod: Pod, start_time: float | None, now: float) -> bool:
    """kubelet's activeDeadlineHandler.ShouldEvict: ran longer than activeDeadlineSeconds."""
    deadline = pod.spec.active_deadline_seconds
    if deadline is None or start_time is None:
        return False
    return now - start_time >= deadline


# --------------------------------------------------------------------------- grace period

MINIMUM_GRACE_PERIOD_SECONDS = 2  # kuberuntime minimumGracePeriodInSeconds
# The API takes any int64 grace period (and caps deletionTimestamp at year 9999); the
# node's waits cannot: threading's waits stop at TIMEOUT_MAX (~292 years) and a gRPC
# deadline counts nanoseconds in an int64. 2^31-1 s (68 years) is "never" for a node and
# fits both.
MAXIMUM_GRACE_PERIOD_SECONDS = 2**31 - 1


def bounded_grace(seconds: int) -> int:
    """A grace period the node can wait for: 0 .. MAXIMUM_GRACE_PERIOD_SECONDS."""
    return min(max(0, seconds), MAXIMUM_GRACE_PERIOD_SECONDS)


def termination_grace_period(
    pod: Pod, container: Container | None, reason: str = "", override: int | None = None
) -> int:
    """killContainer's grace period: setTerminationGracePeriod, then the override, then
    at least 2 s unless overridden.

    The pod's deletionGracePeriodSeconds wins, then a failed liveness/startup probe's own
    terminationGracePeriodSeconds (for a kill with that reason), then the pod's
    terminationGracePeriodSeconds. The engine subtracts the preStop hook's run time.
    """
    grace = MINIMUM_GRACE_PERIOD_SECONDS
    if pod.metadata.deletion_grace_period_seconds is not None:
        grace = pod.metadata.deletion_grace_period_seconds
    elif pod.spec.termination_grace_period_seconds is not None:
        grace = pod.spec.termination_grace_period_seconds
        probe = None
        if container is not None and reason == reasons.KILL_REASON_LIVENESS_PROBE:
            probe = container.liveness_probe
        elif container is not None and reason == reasons.KILL_REASON_STARTUP_PROBE:
            probe = container.startup_probe
        if probe is not None and probe.termination_grace_period_seconds is not None:
            grace = probe.termination_grace_period_seconds
    if override is not None:
        return bounded_grace(override)
    return bounded_grace(max(grace, MINIMUM_GRACE_PERIOD_SECONDS))
