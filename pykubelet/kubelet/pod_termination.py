"""Is this pod done, and why: the pure step SyncPod takes before (and after) it acts.

A pod stops being run for one of three reasons (kubelet's syncPod and podIsTerminal):
it is being deleted (its deletionTimestamp is set; the pod worker's kill follows), its
phase is already Succeeded or Failed (a terminal pod stays terminal), or it ran past its
activeDeadlineSeconds (the status then says DeadlineExceeded). For each, SyncPod takes
one path: stop what still runs, look at the runtime again, record the status.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pykubelet.api.types import PHASE_FAILED, PHASE_SUCCEEDED, Pod, PodStatus
from pykubelet.kubelet.container.runtime_state import PodRuntimeStatus, SandboxState
from pykubelet.kubelet.status.generate import WaitingReason, active_deadline_eviction

TERMINAL_PHASES = (PHASE_SUCCEEDED, PHASE_FAILED)


class TerminationReason(enum.Enum):
    DELETING = "Deleting"
    TERMINAL_PHASE = "TerminalPhase"
    ACTIVE_DEADLINE = "DeadlineExceeded"


@dataclass(frozen=True)
class Termination:
    """Why the pod is not to run, and whether something of it must still be stopped."""

    reason: TerminationReason
    must_kill: bool
    eviction: WaitingReason | None = None  # the status' reason and message, if any


def pod_termination(
    pod: Pod, status: PodStatus | None, observed: PodRuntimeStatus, now: float
) -> Termination | None:
    """None while the pod is to run; else why not (``status`` is its last known status)."""
    running = bool(observed.running_containers())
    if pod.metadata.deletion_timestamp is not None:
        # the containers stop; the sandbox goes with the pod worker's kill
        return Termination(TerminationReason.DELETING, must_kill=running)
    if status is not None and status.phase in TERMINAL_PHASES:
        ready_sandbox = any(s.state is SandboxState.READY for s in observed.sandboxes)
        return Termination(TerminationReason.TERMINAL_PHASE, must_kill=running or ready_sandbox)
    if status is not None and status.start_time:
        # activeDeadlineSeconds counts from the status' startTime
        eviction = active_deadline_eviction(
            Pod(metadata=pod.metadata, spec=pod.spec, status=status), now
        )
        if eviction is not None:
            return Termination(TerminationReason.ACTIVE_DEADLINE, must_kill=True,
                               eviction=eviction)
    return None
