"""Probes: kubelet's prober worker state machine and the exec/tcp/http probers.

One `ProbeWorker` per (pod, container, probe type), as pkg/kubelet/prober/worker.go.
The engine's prober manager calls `worker.step(view, now, run)` every
periodSeconds (after a random first delay when the kubelet has just started, see
`first_probe_delay`); `run` performs the probe through CRI/the pod's network and
returns a `ProbeOutcome`. The worker decides whether to probe at all (container
not running yet, initialDelaySeconds not elapsed, startup not finished, on hold after
a liveness failure), counts consecutive results against successThreshold /
failureThreshold, and publishes a result per container id:

  liveness  starts Success; Failure -> the container is killed and restarted
            (compute_pod_actions reads it), the worker holds until a new container
  readiness starts Failure; drives the container's ready flag and the Ready condition
  startup   starts Unknown; until Success the other probes are off; Failure kills

The probers are small functions over injected runners, so they are pure here.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pykubelet.api.types import RESTART_NEVER, Container, HTTPGetAction, IntOrString, Probe

SUCCESS = "Success"
FAILURE = "Failure"
UNKNOWN = "Unknown"
WARNING = "Warning"  # an http probe that stopped at a redirect: counts as success

MAX_RESPONSE_BODY = 10 * 1024  # prober/http: maxRespBodyLength
USER_AGENT = "kube-probe/1.31"


class ProbeType(enum.Enum):
    LIVENESS = "Liveness"
    READINESS = "Readiness"
    STARTUP = "Startup"


INITIAL_RESULT = {
    ProbeType.LIVENESS: SUCCESS,
    ProbeType.READINESS: FAILURE,
    ProbeType.STARTUP: UNKNOWN,
}


@dataclass(frozen=True)
class ProbeOutcome:
    """What one probe run found: SUCCESS, FAILURE or WARNING, and its output."""

    result: str
    output: str = ""


@dataclass(frozen=True)
class ContainerView:
    """The pod's API status as the worker reads it for its container."""

    pod_phase: str
    container_id: str = ""  # "" until the container is created
    running: bool = False
    running_since: float = 0.0  # state.running.startedAt
    terminated: bool = False
    started: bool = False  # ContainerStatus.started
    pod_deleting: bool = False  # deletionTimestamp set


@dataclass(frozen=True)
class StepResult:
    keep_going: bool  # False: the worker is done (terminal pod, never restarting)
    probed: bool  # a probe ran
    outcome: ProbeOutcome | None = None
    changed: bool = False  # the published result changed (the pod needs a sync)


class ProbeWorker:
    """worker.go's doProbe, with the probe itself injected."""

    def __init__(self, probe_type: ProbeType, probe: Probe, restart_policy: str) -> None:
        self.probe_type = probe_type
        self.probe = probe
        self.restart_policy = restart_policy
        self.initial_value = INITIAL_RESULT[probe_type]
        self.container_id = ""
        self.result: str | None = None  # published for container_id
        self.last_result: str | None = None
        self.result_run = 0
        self.on_hold = False

    def _publish(self, result: str) -> bool:
        changed = self.result != result
        self.result = result
        return changed

    def step(
        self, view: ContainerView, now: float, run: Callable[[], ProbeOutcome | None]
    ) -> StepResult:
        """One tick. `run` returns None on a prober error (the result is thrown away)."""
        if view.pod_phase in ("Failed", "Succeeded"):
            return StepResult(keep_going=False, probed=False)
        if not view.container_id:
            return StepResult(keep_going=True, probed=False)
        changed = False
        if view.container_id != self.container_id:
            # A new container: start from the initial value and resume probing.
            self.container_id = view.container_id
            changed = self._publish(self.initial_value)
            self.on_hold = False
        if self.on_hold:
            return StepResult(keep_going=True, probed=False, changed=changed)
        if not view.running:
            changed = self._publish(FAILURE) or changed
            keep = not view.terminated or self.restart_policy != RESTART_NEVER
            return StepResult(keep_going=keep, probed=False, changed=changed)
        if view.pod_deleting and self.probe_type in (ProbeType.LIVENESS, ProbeType.STARTUP):
            changed = self._publish(SUCCESS) or changed
            return StepResult(keep_going=False, probed=False, changed=changed)
        if int(now - view.running_since) < self.probe.initial_delay_seconds:
            return StepResult(keep_going=True, probed=False, changed=changed)
        if view.started:
            if self.probe_type is ProbeType.STARTUP:
                return StepResult(keep_going=True, probed=False, changed=changed)
        elif self.probe_type is not ProbeType.STARTUP:
            return StepResult(keep_going=True, probed=False, changed=changed)

        outcome = run()
        if outcome is None:
            return StepResult(keep_going=True, probed=True, changed=changed)
        result = SUCCESS if outcome.result == WARNING else outcome.result
        if self.last_result == result:
            self.result_run += 1
        else:
            self.last_result = result
            self.result_run = 1
        if (result == FAILURE and self.result_run < self.probe.failure_threshold) or (
            result == SUCCESS and self.result_run < self.probe.success_threshold
        ):
            return StepResult(keep_going=True, probed=True, outcome=outcome, changed=changed)
        changed = self._publish(result) or changed
        if self.probe_type in (ProbeType.LIVENESS, ProbeType.STARTUP) and result == FAILURE:
            # The container will be restarted: hold until a new container id shows up.
            self.on_hold = True
            self.result_run = 0
        return StepResult(keep_going=True, probed=True, outcome=outcome, changed=changed)


def first_probe_delay(period_seconds: int, since_kubelet_start: float, rand: float) -> float:
    """worker.run: right after the kubelet starts, spread first probes over one period."""
    period = float(period_seconds)
    return rand * period if period > since_kubelet_start else 0.0


# --------------------------------------------------------------------------- probers


class ExecRunner(Protocol):
    def __call__(self, command: list[str], timeout: float) -> tuple[int, bytes]:
        """Run in the container; return (exit code, combined output); raise TimeoutError."""
        ...


def exec_probe(run: ExecRunner, command: list[str], timeout: float) -> ProbeOutcome:
    try:
        code, output = run(command, timeout)
    except TimeoutError:
        return ProbeOutcome(FAILURE, f'command "{" ".join(command)}" timed out')
    text = output.decode(errors="replace")
    return ProbeOutcome(SUCCESS if code == 0 else FAILURE, text)


class TCPConnector(Protocol):
    def __call__(self, host: str, port: int, timeout: float) -> None:
        """Connect and close; raise OSError (TimeoutError on timeout)."""
        ...


def join_host_port(host: str, port: int) -> str:
    """Go's net.JoinHostPort: brackets around IPv6 literals."""
    try:
        if isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address):
            return f"[{host}]:{port}"
    except ValueError:
        pass
    return f"{host}:{port}"


def tcp_probe(connect: TCPConnector, host: str, port: int, timeout: float) -> ProbeOutcome:
    try:
        connect(host, port, timeout)
    except TimeoutError:
        return ProbeOutcome(FAILURE, f"dial tcp {join_host_port(host, port)}: i/o timeout")
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        return ProbeOutcome(FAILURE, f"dial tcp {join_host_port(host, port)}: connect: {reason}")
    return ProbeOutcome(SUCCESS)


class HTTPGetter(Protocol):
    def __call__(
        self, url: str, headers: dict[str, str], timeout: float
    ) -> tuple[int, bytes, bool]:
        """GET following same-host redirects; return (status, body, stopped_at_redirect);
        raise OSError on a connection problem."""
        ...


def http_probe(get: HTTPGetter, url: str, headers: dict[str, str], timeout: float) -> ProbeOutcome:
    """prober/http DoHTTPProbe: 200..399 succeed (a stopped redirect warns), else fail."""
    try:
        status, body, stopped_at_redirect = get(url, headers, timeout)
    except OSError as exc:
        return ProbeOutcome(FAILURE, f'Get "{url}": {exc}')
    text = body[:MAX_RESPONSE_BODY].decode(errors="replace")
    if 200 <= status < 400:
        if stopped_at_redirect or status >= 300:
            return ProbeOutcome(WARNING, f"Probe terminated redirects, Response body: {text}")
        return ProbeOutcome(SUCCESS, text)
    return ProbeOutcome(FAILURE, f"HTTP probe failed with statuscode: {status}")


def http_probe_headers(action: HTTPGetAction) -> dict[str, str]:
    """The user's headers, plus kubelet's User-Agent and Accept unless given."""
    headers: dict[str, str] = {}
    for header in action.http_headers:
        headers[header.name] = header.value
    lower = {k.lower() for k in headers}
    if "user-agent" not in lower:
        headers["User-Agent"] = USER_AGENT
    if "accept" not in lower:
        headers["Accept"] = "*/*"
    return headers


class PortError(ValueError):
    pass


def resolve_container_port(port: IntOrString, container: Container) -> int:
    """probe.ResolveContainerPort: a number, a named container port, or a numeric string."""
    if isinstance(port, int):
        value = port
    else:
        named = [p.container_port for p in container.ports if p.name == port]
        if named:
            value = named[0]
        else:
            try:
                value = int(port)
            except ValueError:
                raise PortError(f"port {port} not found") from None
    if 0 < value < 65536:
        return value
    raise PortError(f"invalid port number: {value}")


def http_probe_url(action: HTTPGetAction, pod_ip: str, container: Container) -> str:
    """The URL kubelet probes: scheme://host:port/path (host defaults to the pod IP)."""
    port = resolve_container_port(action.port, container)
    host = action.host or pod_ip
    scheme = (action.scheme or "HTTP").lower()
    path = action.path or "/"
    if not path.startswith("/"):
        path = "/" + path
    return f"{scheme}://{join_host_port(host, port)}{path}"


def probe_event_message(probe_type: ProbeType, outcome: ProbeOutcome) -> str:
    """The Unhealthy event: `Liveness probe failed: <output>` (or a warning)."""
    if outcome.result == WARNING:
        return f"{probe_type.value} probe warning: {outcome.output}"
    return f"{probe_type.value} probe failed: {outcome.output}"
