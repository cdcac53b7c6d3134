"""The pod status users read, from the observed runtime state (generateAPIPodStatus).

`generate_pod_status` follows kubelet: container statuses (convertToAPIContainerStatuses:
the default waiting reason ContainerCreating / PodInitializing, up to two instances
per container for state and lastState, the last start failure from the reason cache
as the waiting reason, CrashLoopBackOff included), the phase (getPhase, with the
three-way merge that keeps a terminal phase terminal), ready/started from the probe
results (prober manager's UpdatePodStatus), and the conditions of status/generate.go
in kubelet's order: PodReadyToStartContainers, Initialized, Ready, ContainersReady,
PodScheduled. Transition times are kept while a condition's status does not change
(the status manager's rule). Timestamps are RFC 3339, from the injected `now`.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pykubelet.api.machinery.timeutil import parse_time, rfc3339
from pykubelet.api.qos import qos_class as qos_class
from pykubelet.api.types import (
    CONDITION_FALSE,
    CONDITION_TRUE,
    CONTAINERS_READY,
    PHASE_FAILED,
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_SUCCEEDED,
    POD_INITIALIZED,
    POD_READY,
    POD_READY_TO_START_CONTAINERS,
    POD_SCHEDULED,
    RESTART_ALWAYS,
    RESTART_NEVER,
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    HostIP,
    Pod,
    PodCondition,
    PodIP,
    PodStatus,
    is_restartable_init_container,
)
from pykubelet.kubelet.container.runtime_state import (
    ContainerRuntimeStatus,
    PodRuntimeStatus,
)
from pykubelet.kubelet.container.runtime_state import (
    ContainerState as RuntimeState,
)
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.kuberuntime.actions import pod_sandbox_changed, should_container_be_restarted
from pykubelet.kubelet.prober import probes

KUBELET_CONDITIONS = (
    POD_SCHEDULED,
    POD_READY,
    POD_INITIALIZED,
    CONTAINERS_READY,
    POD_READY_TO_START_CONTAINERS,
)
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"

_UNLOCATED_DELETED = (
    "The container could not be located when the pod was deleted.  The container used to be Running"
)
_UNLOCATED_TERMINATED = "The container could not be located when the pod was terminated"
_INIT_ASSUMED_DONE = (
    "Unable to get init container status from container runtime and pod has been "
    "initialized, treat it as exited normally"
)


@dataclass(frozen=True)
class WaitingReason:
    """kubelet's reasonCache entry: why the last start of a container failed."""

    reason: str
    message: str = ""


# pod-level reasons generate_pod_status sets while the sandbox cannot be made
SANDBOX_FAILURE_REASONS = (reasons.CREATE_POD_SANDBOX_ERROR, reasons.EVENT_FAILED_MOUNT)


def _time_or_none(ts: float) -> str | None:
    return rfc3339(ts) if ts else None


def is_static_pod(pod: Pod) -> bool:
    return pod.metadata.annotations.get(CONFIG_SOURCE_ANNOTATION, "api") != "api"


def sort_pod_ips(ips: Sequence[str], node_ipv6: bool = False) -> list[str]:
    """kubelet sortPodIPs: first IP of the node's family, then first of the other."""
    out: list[str] = []
    parsed = []
    for ip in ips:
        try:
            parsed.append(ipaddress.ip_address(ip))
        except ValueError:
            continue
    for want_v6 in (node_ipv6, not node_ipv6):
        for addr in parsed:
            if (addr.version == 6) == want_v6:
                out.append(str(addr))
                break
    return out


# --------------------------------------------------------------------------- containers


def _convert(cs: ContainerRuntimeStatus, old: ContainerStatus | None) -> ContainerStatus:
    status = ContainerStatus(
        name=cs.name,
        restart_count=cs.restart_count,
        image=cs.image,
        image_id=cs.image_ref,
        container_id=cs.container_id,
    )
    if cs.state is RuntimeState.RUNNING:
        status.state = ContainerState(
            running=ContainerStateRunning(started_at=_time_or_none(cs.started_at))
        )
    elif cs.state is RuntimeState.CREATED:
        status.state = ContainerState(waiting=ContainerStateWaiting())
    elif cs.state is RuntimeState.EXITED:
        reason = cs.reason or (reasons.COMPLETED if cs.exit_code == 0 else reasons.ERROR)
        status.state = ContainerState(
            terminated=ContainerStateTerminated(
                exit_code=cs.exit_code,
                reason=reason,
                message=cs.message,
                started_at=_time_or_none(cs.started_at),
                finished_at=_time_or_none(cs.finished_at),
                container_id=cs.container_id,
            )
        )
    elif old is not None and old.state.running is not None:
        status.state = ContainerState(
            terminated=ContainerStateTerminated(
                reason=reasons.CONTAINER_STATUS_UNKNOWN,
                message=_UNLOCATED_TERMINATED,
                exit_code=137,
            )
        )
        status.restart_count = old.restart_count + 1
    else:
        status.state = ContainerState(waiting=ContainerStateWaiting())
    return status


def convert_container_statuses(
    pod: Pod,
    observed: PodRuntimeStatus,
    previous: Sequence[ContainerStatus],
    containers: Sequence[Container],
    *,
    has_init_containers: bool,
    is_init: bool,
    waiting_reasons: Mapping[str, WaitingReason],
) -> list[ContainerStatus]:
    """convertToAPIContainerStatuses."""
    old_statuses = {s.name: s for s in previous}
    default_reason = reasons.POD_INITIALIZING if has_init_containers else reasons.CONTAINER_CREATING
    statuses: dict[str, ContainerStatus] = {}
    for c in containers:
        status = ContainerStatus(
            name=c.name,
            image=c.image,
            state=ContainerState(waiting=ContainerStateWaiting(reason=default_reason)),
        )
        old = old_statuses.get(c.name)
        if old is not None:
            if old.state.terminated is not None:
                status = copy.deepcopy(old)
            else:
                status.restart_count = old.restart_count
                status.last_state = copy.deepcopy(old.last_state)
        statuses[c.name] = status

    # Containers the runtime lost track of while they were running.
    known = {cs.name for cs in observed.containers}
    for c in containers:
        old = old_statuses.get(c.name)
        if c.name in known or old is None:
            continue
        if old.state.terminated is not None or old.state.running is None:
            continue
        status = statuses[c.name]
        waiting = status.state.waiting
        if waiting is None or waiting.reason != default_reason:
            continue
        if status.last_state.terminated is not None:
            continue
        status.last_state = ContainerState(
            terminated=ContainerStateTerminated(
                reason=reasons.CONTAINER_STATUS_UNKNOWN,
                message=_UNLOCATED_DELETED,
                exit_code=137,
            )
        )
        if pod.metadata.deletion_timestamp is None:
            status.restart_count += 1

    # The runtime's instances, newest first: the first is state, the second lastState.
    seen: dict[str, int] = {}
    for cs in observed.containers:
        if cs.name not in statuses or seen.get(cs.name, 0) >= 2:
            continue
        converted = _convert(cs, old_statuses.get(cs.name))
        if not converted.image:
            converted.image = statuses[cs.name].image
        if cs.state is RuntimeState.RUNNING:
            old = old_statuses.get(cs.name)
            if old is not None and old.started is not None:
                converted.started = old.started
        if seen.get(cs.name, 0) == 0:
            statuses[cs.name] = converted
        else:
            statuses[cs.name].last_state = converted.state
        seen[cs.name] = seen.get(cs.name, 0) + 1

    # Containers that failed to start, or wait to restart: the reason cache's word.
    any_regular_created = any(
        (inst := observed.find_container(c.name)) is not None
        and inst.state is not RuntimeState.UNKNOWN
        for c in pod.spec.containers
    )
    for c in containers:
        # a sidecar is never "done": like an app container it waits to restart
        if is_init and not is_restartable_init_container(c):
            newest = observed.find_container(c.name)
            if newest is not None and newest.state is RuntimeState.EXITED and newest.exit_code == 0:
                continue
            if (
                newest is None
                and any_regular_created
                and statuses[c.name].state.waiting is not None
            ):
                statuses[c.name].state = ContainerState(
                    terminated=ContainerStateTerminated(
                        reason=reasons.COMPLETED, message=_INIT_ASSUMED_DONE, exit_code=0
                    )
                )
                continue
        if not should_container_be_restarted(c, pod, observed):
            continue
        cached = waiting_reasons.get(c.name)
        if cached is None:
            continue
        status = statuses[c.name]
        if status.state.terminated is not None:
            status.last_state = status.state
        status.state = ContainerState(
            waiting=ContainerStateWaiting(reason=cached.reason, message=cached.message)
        )

    if is_init:
        return [statuses[c.name] for c in containers]
    return [statuses[name] for name in sorted(statuses)]


# --------------------------------------------------------------------------- phase


def get_phase(
    pod: Pod,
    info: Sequence[ContainerStatus],
    pod_is_terminal: bool,
    pod_has_initialized: bool = False,
) -> str:
    """kubelet getPhase (without the alpha ContainerRestartRules).

    Sidecars count like app containers, except that a stopped sidecar is ignored and a
    sidecar not yet started keeps the pod Pending until it was initialized
    (`pod_has_initialized`: an app container exists in the current sandbox).
    """
    by_name = {s.name: s for s in info}
    spec = pod.spec
    pending_init = 0
    pending_sidecars = 0
    failed_init = 0
    unknown = running = waiting = stopped = succeeded = 0
    for c in spec.init_containers:
        s = by_name.get(c.name)
        if is_restartable_init_container(c):
            if s is None:
                unknown += 1
            elif s.state.running is not None:
                if not s.started:
                    pending_sidecars += 1
                running += 1
            elif s.state.terminated is not None:
                pass  # a stopped sidecar does not decide the phase
            elif s.state.waiting is not None:
                if s.last_state.terminated is None:
                    pending_sidecars += 1
            else:
                pending_sidecars += 1
            continue
        if s is None or s.state.running is not None:
            pending_init += 1
        elif s.state.terminated is not None:
            if s.state.terminated.exit_code != 0:
                failed_init += 1
        elif s.state.waiting is not None:
            last = s.last_state.terminated
            if last is not None:
                if last.exit_code != 0:
                    failed_init += 1
            else:
                pending_init += 1
        else:
            pending_init += 1

    for c in spec.containers:
        s = by_name.get(c.name)
        if s is None:
            unknown += 1
        elif s.state.running is not None:
            running += 1
        elif s.state.terminated is not None:
            stopped += 1
            if s.state.terminated.exit_code == 0:
                succeeded += 1
        elif s.state.waiting is not None:
            if s.last_state.terminated is not None:
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1

    if failed_init > 0 and spec.restart_policy == RESTART_NEVER:
        return PHASE_FAILED
    if pending_init > 0 or (pending_sidecars > 0 and not pod_has_initialized) or waiting > 0:
        return PHASE_PENDING
    if running > 0 and unknown == 0:
        return PHASE_RUNNING
    if running == 0 and stopped > 0 and unknown == 0:
        if pod_is_terminal and not is_static_pod(pod):
            return PHASE_SUCCEEDED if stopped == succeeded else PHASE_FAILED
        if spec.restart_policy == RESTART_ALWAYS:
            return PHASE_RUNNING
        if stopped == succeeded:
            return PHASE_SUCCEEDED
        if spec.restart_policy == RESTART_NEVER:
            return PHASE_FAILED
        return PHASE_RUNNING
    return PHASE_PENDING


def has_any_active_regular_container_started(pod: Pod, observed: PodRuntimeStatus) -> bool:
    """kubecontainer.HasAnyActiveRegularContainerStarted: an app container exists in
    the current (newest) sandbox."""
    if not observed.sandboxes:
        return False
    current = observed.sandboxes[0].id
    names = {c.name for c in pod.spec.containers}
    return any(c.name in names and c.sandbox_id == current for c in observed.containers)


# --------------------------------------------------------------------------- probes


def apply_probe_results(
    pod: Pod,
    status: PodStatus,
    readiness: Mapping[str, str],
    startup: Mapping[str, str],
) -> None:
    """prober manager UpdatePodStatus: `started` and `ready` on each container status."""
    specs = {c.name: c for c in pod.spec.containers}

    def cid(s: ContainerStatus) -> str:
        return s.container_id.split("://", 1)[-1]

    def started(s: ContainerStatus, spec: Container | None) -> bool:
        # running, and its startup probe (if any) succeeded
        if s.state.running is None:
            return False
        result = startup.get(cid(s))
        if result is not None:
            return result == probes.SUCCESS
        return spec is None or spec.startup_probe is None

    def ready(s: ContainerStatus, spec: Container | None) -> bool:
        # started, running, and its readiness probe (if any) succeeded
        if not s.started or s.state.running is None:
            return False
        if readiness.get(cid(s)) == probes.SUCCESS:
            return True
        return spec is None or spec.readiness_probe is None

    for s in status.container_statuses:
        spec = specs.get(s.name)
        s.started = started(s, spec)
        s.ready = ready(s, spec)
    init_specs = {c.name: c for c in pod.spec.init_containers}
    for s in status.init_container_statuses:
        spec = init_specs.get(s.name)
        s.started = started(s, spec)
        if spec is None or not is_restartable_init_container(spec):
            s.ready = s.state.terminated is not None and s.state.terminated.exit_code == 0
        else:
            s.ready = ready(s, spec)  # a sidecar is ready like an app container


# --------------------------------------------------------------------------- conditions


def _names(names: list[str]) -> str:
    """Go's %s of a []string: [a b]."""
    return "[" + " ".join(names) + "]"


def _condition_of(
    type_: str, reason: str, unknown: list[str], kind: str, names: list[str]
) -> PodCondition:
    """True, or False with ``reason`` and the message upstream's generators write: the
    containers of unknown status, then those of ``kind`` status."""
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_names(unknown)}")
    if names:
        messages.append(f"containers with {kind} status: {_names(names)}")
    if messages:
        return PodCondition(
            type=type_, status=CONDITION_FALSE, reason=reason, message=", ".join(messages)
        )
    return PodCondition(type=type_, status=CONDITION_TRUE)


def containers_ready_condition(
    pod: Pod, statuses: Sequence[ContainerStatus], phase: str
) -> PodCondition:
    by_name = {s.name: s for s in statuses}
    # sidecars first, as GenerateContainersReadyCondition walks them
    sidecars = [c for c in pod.spec.init_containers if is_restartable_init_container(c)]
    watched = [*sidecars, *pod.spec.containers]
    unknown = [c.name for c in watched if c.name not in by_name]
    unready = [c.name for c in watched if c.name in by_name and not by_name[c.name].ready]
    if (phase == PHASE_SUCCEEDED and not unknown) or phase == PHASE_FAILED:
        reason = reasons.POD_COMPLETED if phase == PHASE_SUCCEEDED else reasons.POD_FAILED
        return PodCondition(type=CONTAINERS_READY, status=CONDITION_FALSE, reason=reason)
    return _condition_of(CONTAINERS_READY, reasons.CONTAINERS_NOT_READY, unknown,
                         "unready", unready)


def pod_ready_condition(pod: Pod, statuses: Sequence[ContainerStatus], phase: str) -> PodCondition:
    cr = containers_ready_condition(pod, statuses, phase)
    if cr.status != CONDITION_TRUE:
        return PodCondition(type=POD_READY, status=cr.status, reason=cr.reason, message=cr.message)
    return PodCondition(type=POD_READY, status=CONDITION_TRUE)


def initialized_condition(
    pod: Pod, statuses: Sequence[ContainerStatus], phase: str
) -> PodCondition:
    by_name = {s.name: s for s in statuses}
    unknown: list[str] = []
    incomplete: list[str] = []
    for c in pod.spec.init_containers:
        s = by_name.get(c.name)
        if s is None:
            unknown.append(c.name)
        elif is_restartable_init_container(c):
            if not s.started:  # a sidecar initializes once started
                incomplete.append(c.name)
        elif not s.ready:
            incomplete.append(c.name)
    if phase == PHASE_SUCCEEDED and not unknown:
        return PodCondition(
            type=POD_INITIALIZED, status=CONDITION_TRUE, reason=reasons.POD_COMPLETED
        )
    app_names = {c.name for c in pod.spec.containers}
    if any(
        s.name in app_names and (s.state.running is not None or s.state.terminated is not None)
        for s in statuses
    ):
        return PodCondition(type=POD_INITIALIZED, status=CONDITION_TRUE)
    return _condition_of(POD_INITIALIZED, reasons.CONTAINERS_NOT_INITIALIZED, unknown,
                         "incomplete", incomplete)


def ready_to_start_containers_condition(pod: Pod, observed: PodRuntimeStatus) -> PodCondition:
    ok = not pod_sandbox_changed(pod, observed).create
    return PodCondition(
        type=POD_READY_TO_START_CONTAINERS, status=CONDITION_TRUE if ok else CONDITION_FALSE
    )


def _stamp_transitions(
    conditions: list[PodCondition], old: Sequence[PodCondition], now: float
) -> None:
    """Keep lastTransitionTime while a condition's status is unchanged, else now."""
    previous = {c.type: c for c in old}
    for cond in conditions:
        before = previous.get(cond.type)
        if before is not None and before.status == cond.status and before.last_transition_time:
            cond.last_transition_time = before.last_transition_time
        elif cond.last_transition_time is None:
            cond.last_transition_time = rfc3339(now)


# --------------------------------------------------------------------------- the pod


def generate_pod_status(
    pod: Pod,
    observed: PodRuntimeStatus,
    now: float,
    *,
    old_status: PodStatus | None = None,
    waiting_reasons: Mapping[str, WaitingReason] | None = None,
    readiness: Mapping[str, str] | None = None,
    startup: Mapping[str, str] | None = None,
    pod_is_terminal: bool = False,
    host_ips: Sequence[str] = (),
    eviction: WaitingReason | None = None,
    sandbox_failure: WaitingReason | None = None,
) -> PodStatus:
    """generateAPIPodStatus.

    `old_status` is the last status this node generated (the status manager's), else
    the pod's own `status`; `waiting_reasons` maps container names to their last
    start failure (reasons.CRASH_LOOP_BACK_OFF, CREATE_CONTAINER_ERROR,
    ERR_IMAGE_NEVER_PULL ...); `readiness`/`startup` map CRI container ids to probe
    results; `eviction` (reason, message), e.g. DeadlineExceeded, fails the pod;
    `sandbox_failure` is why the pod's sandbox could not be made (CreatePodSandboxError,
    FailedMount), shown as the pod's reason and message until it is made (upstream shows
    it only as an event, which a node without an API server keeps to itself).
    """
    old = old_status if old_status is not None else pod.status
    waiting_reasons = waiting_reasons or {}
    node_v6 = bool(host_ips) and ":" in host_ips[0]

    s = PodStatus()
    ips = sort_pod_ips(observed.ips, node_v6)
    s.pod_ips = [PodIP(ip=ip) for ip in ips]
    s.pod_ip = ips[0] if ips else ""
    s.qos_class = qos_class(pod)
    has_init = bool(pod.spec.init_containers)

    def convert(previous: Sequence[ContainerStatus], containers: Sequence[Container],
                is_init: bool = False) -> list[ContainerStatus]:
        """convertToAPIContainerStatuses of one of the pod's container lists."""
        return convert_container_statuses(pod, observed, previous, containers,
                                          has_init_containers=has_init, is_init=is_init,
                                          waiting_reasons=waiting_reasons)

    s.container_statuses = convert(old.container_statuses, pod.spec.containers)
    s.init_container_statuses = convert(old.init_container_statuses, pod.spec.init_containers,
                                        is_init=True)
    if pod.spec.ephemeral_containers:
        # reported as app containers are; they count for neither phase nor readiness
        s.ephemeral_container_statuses = convert(old.ephemeral_container_statuses,
                                                 pod.spec.ephemeral_containers)

    s.phase = get_phase(
        pod,
        [*s.container_statuses, *s.init_container_statuses],
        pod_is_terminal,
        has_any_active_regular_container_started(pod, observed),
    )
    terminal = (PHASE_FAILED, PHASE_SUCCEEDED)
    if s.phase not in terminal:
        if old.phase in terminal:
            s.phase = old.phase
        elif pod.status.phase in terminal:
            s.phase = pod.status.phase
    if s.phase == old.phase:
        s.reason = old.reason or pod.status.reason
        s.message = old.message or pod.status.message
    if sandbox_failure is not None and s.phase not in terminal:
        s.reason, s.message = sandbox_failure.reason, sandbox_failure.message
    elif s.reason in SANDBOX_FAILURE_REASONS:
        s.reason = s.message = ""  # the sandbox exists now
    if eviction is not None:
        s.phase = PHASE_FAILED
        s.reason = eviction.reason
        s.message = eviction.message
    if pod.status.phase in terminal and s.phase != pod.status.phase:
        s.phase = pod.status.phase

    apply_probe_results(pod, s, readiness or {}, startup or {})

    conditions = [
        copy.deepcopy(c) for c in pod.status.conditions if c.type not in KUBELET_CONDITIONS
    ]
    all_statuses = [*s.init_container_statuses, *s.container_statuses]
    conditions.append(ready_to_start_containers_condition(pod, observed))
    conditions.append(initialized_condition(pod, all_statuses, s.phase))
    conditions.append(pod_ready_condition(pod, all_statuses, s.phase))
    conditions.append(containers_ready_condition(pod, all_statuses, s.phase))
    conditions.append(PodCondition(type=POD_SCHEDULED, status=CONDITION_TRUE))
    _stamp_transitions(conditions, old.conditions, now)
    s.conditions = conditions

    if host_ips:
        s.host_ip = host_ips[0]
        s.host_ips = [HostIP(ip=ip) for ip in host_ips[:2]]
        if pod.spec.host_network and not s.pod_ip:
            s.pod_ip = host_ips[0]
            s.pod_ips = [PodIP(ip=ip) for ip in host_ips[:2]]

    s.start_time = old.start_time or pod.status.start_time or rfc3339(now)
    return s


def exited_containers(old: PodStatus | None, new: PodStatus) -> list[ContainerStatus]:
    """Containers ``new`` reports terminated (now or as their last state) that ``old`` did
    not: each exit once, for the log. Nothing without an old status (a restarted agent
    cannot tell new exits from old ones)."""
    if old is None:
        return []

    def terminated(status: PodStatus) -> dict[str, ContainerStatus]:
        out: dict[str, ContainerStatus] = {}
        for cs in (*status.init_container_statuses, *status.container_statuses):
            for st in (cs.state, cs.last_state):
                t = st.terminated
                if t is not None and t.container_id:
                    out[t.container_id] = ContainerStatus(
                        name=cs.name, state=ContainerState(terminated=t),
                        container_id=t.container_id)
        return out

    before = terminated(old)
    return [cs for cid, cs in terminated(new).items() if cid not in before]


def deleted_and_stopped(pod: Pod, observed: PodRuntimeStatus) -> bool:
    """The podIsTerminal of syncTerminatingPod: the pod is being deleted
    (deletionTimestamp set) and none of its containers runs any more, so its phase
    becomes Succeeded/Failed whatever the restartPolicy (static pods excepted, in
    get_phase)."""
    if pod.metadata.deletion_timestamp is None:
        return False
    return all(c.state in (RuntimeState.EXITED,) for c in observed.containers)


def active_deadline_eviction(pod: Pod, now: float) -> WaitingReason | None:
    """activeDeadlineHandler.ShouldEvict, from the pod's status.startTime."""
    deadline = pod.spec.active_deadline_seconds
    start = pod.status.start_time
    if deadline is None or not start:
        return None
    started = parse_time(start).timestamp()
    if now - started >= deadline:
        return WaitingReason(reasons.DEADLINE_EXCEEDED, reasons.DEADLINE_EXCEEDED_MESSAGE)
    return None
