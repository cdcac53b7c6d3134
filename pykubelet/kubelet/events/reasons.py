"""Reason strings and message formats exactly as upstream kubelet spells them.

Users grep for these (`kubectl get pods` STATUS, `describe` events), so they are
constants, never retyped inline.
"""

from __future__ import annotations

# Container waiting reasons (pkg/kubelet/kubelet_pods.go, container/sync_result.go,
# images/types.go).
CONTAINER_CREATING = "ContainerCreating"
POD_INITIALIZING = "PodInitializing"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"
CREATE_CONTAINER_ERROR = "CreateContainerError"
RUN_CONTAINER_ERROR = "RunContainerError"
PRE_START_HOOK_ERROR = "PreStartHookError"
POST_START_HOOK_ERROR = "PostStartHookError"
ERR_IMAGE_PULL = "ErrImagePull"
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
ERR_IMAGE_NEVER_PULL = "ErrImageNeverPull"
INVALID_IMAGE_NAME = "InvalidImageName"
KILL_CONTAINER_ERROR = "KillContainerError"
CREATE_POD_SANDBOX_ERROR = "CreatePodSandboxError"
CONFIG_POD_SANDBOX_ERROR = "ConfigPodSandboxError"
KILL_POD_SANDBOX_ERROR = "KillPodSandboxError"

# Container terminated reasons (CRI runtimes; kubelet_pods.go for the synthesized ones).
COMPLETED = "Completed"
ERROR = "Error"
OOM_KILLED = "OOMKilled"
CONTAINER_STATUS_UNKNOWN = "ContainerStatusUnknown"
CONTAINER_CANNOT_RUN = "ContainerCannotRun"

# Why a running container is killed (kuberuntime_manager.go containerKillReason).
KILL_REASON_STARTUP_PROBE = "StartupProbe"
KILL_REASON_LIVENESS_PROBE = "LivenessProbe"
KILL_REASON_FAILED_POST_START_HOOK = "FailedPostStartHook"
KILL_REASON_UNKNOWN = "Unknown"

# Pod conditions' reasons (pkg/kubelet/status/generate.go).
UNKNOWN_CONTAINER_STATUSES = "UnknownContainerStatuses"
POD_COMPLETED = "PodCompleted"
POD_FAILED = "PodFailed"
CONTAINERS_NOT_READY = "ContainersNotReady"
CONTAINERS_NOT_INITIALIZED = "ContainersNotInitialized"
READINESS_GATES_NOT_READY = "ReadinessGatesNotReady"

# Pod-level reasons.
DEADLINE_EXCEEDED = "DeadlineExceeded"
DEADLINE_EXCEEDED_MESSAGE = "Pod was active on the node longer than the specified deadline"
EVICTED = "Evicted"
NODE_AFFINITY = "NodeAffinity"

# Events (pkg/kubelet/events/event.go).
EVENT_CREATED = "Created"
EVENT_STARTED = "Started"
EVENT_FAILED = "Failed"
EVENT_KILLING = "Killing"
EVENT_PULLING = "Pulling"
EVENT_PULLED = "Pulled"
EVENT_BACK_OFF = "BackOff"
EVENT_UNHEALTHY = "Unhealthy"
EVENT_ERR_IMAGE_NEVER_PULL = "ErrImageNeverPull"
EVENT_SANDBOX_CHANGED = "SandboxChanged"
EVENT_FAILED_CREATE_POD_SANDBOX = "FailedCreatePodSandBox"
EVENT_FAILED_MOUNT = "FailedMount"
EVENT_SCHEDULED = "Scheduled"


def image_never_pull_message(image: str) -> str:
    """images/image_manager.go: the ErrImageNeverPull message."""
    return f'Container image "{image}" is not present with pull policy of Never'


def image_present_message(image: str) -> str:
    return f'Container image "{image}" already present on machine'


def back_off_message(delay_seconds: float, container: str, pod_format: str) -> str:
    """kuberuntime doBackOff's error: `back-off 20s restarting failed container=c pod=p_ns(uid)`."""
    return (
        f"back-off {format_duration(delay_seconds)} restarting failed "
        f"container={container} pod={pod_format}"
    )


def back_off_event_message(container: str, pod_format: str) -> str:
    return f"Back-off restarting failed container {container} in pod {pod_format}"


def format_duration(seconds: float) -> str:
    """Go's time.Duration.String() for the whole-second and sub-second values we use."""
    if seconds == 0:
        return "0s"
    negative = seconds < 0
    seconds = abs(seconds)
    if seconds < 1:
        ms = seconds * 1000
        text = f"{ms:g}ms" if ms >= 1 else f"{seconds * 1e6:g}µs"
        return ("-" if negative else "") + text
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    sec_text = f"{secs:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        text = f"{int(hours)}h{int(minutes)}m{sec_text}"
    elif minutes:
        text = f"{int(minutes)}m{sec_text}"
    else:
        text = sec_text
    return ("-" if negative else "") + text


# Event messages (kuberuntime_manager.go, kuberuntime_container.go, images/image_manager.go).
SANDBOX_CHANGED_MESSAGE = "Pod sandbox changed, it will be killed and re-created."


def failed_create_sandbox_message(err: str) -> str:
    return f"Failed to create pod sandbox: {err}"


def created_container_message(name: str) -> str:
    return f"Created container: {name}"


def started_container_message(name: str) -> str:
    return f"Started container {name}"


def killing_container_message(name: str) -> str:
    return f"Stopping container {name}"


def pulling_image_message(image: str) -> str:
    return f'Pulling image "{image}"'


def image_pull_back_off_message(image: str) -> str:
    return f'Back-off pulling image "{image}"'
