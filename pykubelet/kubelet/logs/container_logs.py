"""Container logs as kubelet reads them: which instance ``kubectl logs [-p]`` reads
(``log_container_id``, kubelet's validateContainerLogStatus over the pod's status), and the
tail of a CRI-format log file, for the termination message of a container that failed
with ``FallbackToLogsOnError``."""

from __future__ import annotations

from pykubelet.api.types import ContainerStatus

ERR_IMAGE_PULL = "ErrImagePull"
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"


class ContainerLogError(Exception):
    """No instance of the container has the logs asked for (upstream's wording)."""


def _runtime_id(container_id: str) -> str:
    return container_id.split("://", 1)[-1]


def log_container_id(status: ContainerStatus, pod: str, previous: bool) -> str:
    """The runtime ID of the instance whose logs are wanted, from the container's status:
    ``previous`` is ``lastState.terminated`` (the newest dead instance, the one container
    GC keeps); else the running or terminated instance, or, while the container waits
    (CrashLoopBackOff), the last one that ended."""
    name = status.name
    running, terminated, waiting = (status.state.running, status.state.terminated,
                                    status.state.waiting)
    last = status.last_state.terminated
    if previous:
        if last is None or not last.container_id:
            raise ContainerLogError(
                f'previous terminated container "{name}" in pod "{pod}" not found')
        return _runtime_id(last.container_id)
    if running is not None:
        return _runtime_id(status.container_id)
    if terminated is not None:
        if terminated.container_id:
            return _runtime_id(terminated.container_id)
        if last is not None and last.container_id:
            return _runtime_id(last.container_id)
        raise ContainerLogError(f'container "{name}" in pod "{pod}" is terminated')
    if last is not None:
        if not last.container_id:
            raise ContainerLogError(f'container "{name}" in pod "{pod}" is terminated')
        return _runtime_id(last.container_id)
    reason = waiting.reason if waiting is not None and waiting.reason else "ContainerCreating"
    if reason == ERR_IMAGE_PULL:
        raise ContainerLogError(
            f'container "{name}" in pod "{pod}" is waiting to start: image can\'t be pulled')
    if reason == IMAGE_PULL_BACK_OFF:
        raise ContainerLogError(f'container "{name}" in pod "{pod}" is waiting to start: '
                                "trying and failing to pull image")
    raise ContainerLogError(f'container "{name}" in pod "{pod}" is waiting to start: {reason}')

MAX_TERMINATION_MESSAGE = 4096  # kubelet's maxMessageLength
FALLBACK_LOG_LINES = 80  # kubecontainer.MaxContainerTerminationMessageLogLines
FALLBACK_LOG_BYTES = 2048  # MaxContainerTerminationMessageLogLength


def tail_cri_log(path: str, lines: int, max_bytes: int) -> str:
    """The last ``lines`` messages of a CRI-format log (``<time> <stream> <P|F> <msg>``),
    partial lines joined, at most ``max_bytes`` from the end."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            raw = f.read().decode(errors="replace")
    except OSError:
        return ""
    out: list[str] = []
    partial = ""
    for line in raw.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        partial += parts[3]
        if parts[2] == "F":
            out.append(partial)
            partial = ""
    text = "\n".join(out[-lines:]) + ("\n" if out else "")
    return text[-max_bytes:]


