"""Container logs as kubelet reads them: the tail of a CRI-format log file, for the
termination message of a container that failed with ``FallbackToLogsOnError``."""

from __future__ import annotations

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


