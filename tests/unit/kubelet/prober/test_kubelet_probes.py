"""The prober worker state machine and the exec/tcp/http probers over fake runners."""

from __future__ import annotations

import errno

import pytest

from pykubelet.api.types import (
    Container,
    ContainerPort,
    ExecAction,
    HTTPGetAction,
    HTTPHeader,
    Probe,
)
from pykubelet.kubelet.prober.probes import (
    FAILURE,
    SUCCESS,
    UNKNOWN,
    WARNING,
    ContainerView,
    PortError,
    ProbeOutcome,
    ProbeType,
    ProbeWorker,
    exec_probe,
    first_probe_delay,
    http_probe,
    http_probe_headers,
    http_probe_url,
    probe_event_message,
    resolve_container_port,
    tcp_probe,
)


def probe(**kw: int) -> Probe:
    values = {
        "initial_delay_seconds": 0,
        "period_seconds": 10,
        "timeout_seconds": 1,
        "success_threshold": 1,
        "failure_threshold": 3,
    }
    values.update(kw)
    return Probe(exec=ExecAction(command=["true"]), **values)


def running(cid: str = "c1", since: float = 0.0, started: bool = True) -> ContainerView:
    return ContainerView(
        pod_phase="Running", container_id=cid, running=True, running_since=since, started=started
    )


class Runs:
    """A scripted prober: returns the given outcomes in turn, counting calls."""

    def __init__(self, *results: str) -> None:
        self.results = list(results)
        self.calls = 0

    def __call__(self) -> ProbeOutcome:
        self.calls += 1
        return ProbeOutcome(self.results.pop(0))


@pytest.mark.parametrize(
    ("ptype", "initial"),
    [
        (ProbeType.LIVENESS, SUCCESS),
        (ProbeType.READINESS, FAILURE),
        (ProbeType.STARTUP, UNKNOWN),
    ],
)
def test_initial_result_published_for_a_new_container(ptype: ProbeType, initial: str) -> None:
    w = ProbeWorker(ptype, probe(initial_delay_seconds=100), "Always")
    started = ptype is not ProbeType.STARTUP
    step = w.step(running(started=started), now=1.0, run=Runs())
    assert step.changed
    assert not step.probed  # initial delay
    assert w.result == initial


def test_initial_delay_then_probe() -> None:
    w = ProbeWorker(ProbeType.READINESS, probe(initial_delay_seconds=5), "Always")
    runs = Runs(SUCCESS)
    assert not w.step(running(since=100.0), now=104.9, run=runs).probed
    step = w.step(running(since=100.0), now=105.0, run=runs)
    assert step.probed
    assert step.changed
    assert w.result == SUCCESS


# failureThreshold / successThreshold: results published only after N in a row
THRESHOLD_TABLE = [
    # probe type, thresholds, sequence of outcomes, published result after each step
    (
        ProbeType.READINESS,
        {"failure_threshold": 3},
        [SUCCESS, FAILURE, FAILURE, FAILURE],
        [SUCCESS, SUCCESS, SUCCESS, FAILURE],
    ),
    (
        ProbeType.READINESS,
        {"success_threshold": 2},
        [SUCCESS, SUCCESS, FAILURE, SUCCESS, SUCCESS],
        [FAILURE, SUCCESS, SUCCESS, SUCCESS, SUCCESS],
    ),
    (
        ProbeType.LIVENESS,
        {"failure_threshold": 2},
        [FAILURE, SUCCESS, FAILURE, FAILURE],
        [SUCCESS, SUCCESS, SUCCESS, FAILURE],
    ),
    (
        ProbeType.READINESS,
        {"failure_threshold": 1},
        [SUCCESS, FAILURE],
        [SUCCESS, FAILURE],
    ),
]


@pytest.mark.parametrize(("ptype", "thresholds", "outcomes", "published"), THRESHOLD_TABLE)
def test_thresholds(
    ptype: ProbeType, thresholds: dict, outcomes: list[str], published: list[str]
) -> None:
    w = ProbeWorker(ptype, probe(**thresholds), "Always")
    runs = Runs(*outcomes)
    seen = []
    for i in range(len(outcomes)):
        w.step(running(), now=float(i * 10), run=runs)
        seen.append(w.result)
    assert seen == published
    assert runs.calls == len(outcomes)


def test_liveness_failure_holds_until_a_new_container() -> None:
    w = ProbeWorker(ProbeType.LIVENESS, probe(failure_threshold=1), "Always")
    runs = Runs(FAILURE, SUCCESS)
    w.step(running("c1"), now=0.0, run=runs)
    assert w.result == FAILURE
    assert w.on_hold
    # Still the same container: no probing while it is being restarted.
    step = w.step(running("c1"), now=10.0, run=runs)
    assert not step.probed
    assert w.result == FAILURE
    # The restarted container: initial value again, probing resumes.
    step = w.step(running("c2", since=15.0), now=20.0, run=runs)
    assert step.probed
    assert w.result == SUCCESS
    assert w.container_id == "c2"


def test_startup_gates_other_probes_and_stops_once_started() -> None:
    startup = ProbeWorker(ProbeType.STARTUP, probe(), "Always")
    liveness = ProbeWorker(ProbeType.LIVENESS, probe(), "Always")
    runs = Runs(SUCCESS)
    # Not started: liveness does not run, startup does.
    assert not liveness.step(running(started=False), 0.0, Runs()).probed
    assert startup.step(running(started=False), 0.0, runs).probed
    assert startup.result == SUCCESS
    # Started: startup stops probing, liveness begins.
    assert not startup.step(running(started=True), 10.0, Runs()).probed
    assert liveness.step(running(started=True), 10.0, Runs(SUCCESS)).probed


def test_not_running_container_publishes_failure_and_stops_under_never() -> None:
    w = ProbeWorker(ProbeType.READINESS, probe(), "Never")
    w.step(running(), 0.0, Runs(SUCCESS))
    assert w.result == SUCCESS
    view = ContainerView(pod_phase="Running", container_id="c1", terminated=True)
    step = w.step(view, 10.0, Runs())
    assert w.result == FAILURE
    assert not step.keep_going
    always = ProbeWorker(ProbeType.READINESS, probe(), "Always")
    assert always.step(view, 10.0, Runs()).keep_going


def test_terminal_pod_stops_worker_and_deleting_pod_passes_liveness() -> None:
    w = ProbeWorker(ProbeType.LIVENESS, probe(), "Always")
    assert not w.step(ContainerView(pod_phase="Succeeded"), 0.0, Runs()).keep_going
    w = ProbeWorker(ProbeType.LIVENESS, probe(), "Always")
    view = ContainerView(
        pod_phase="Running", container_id="c1", running=True, started=True, pod_deleting=True
    )
    step = w.step(view, 0.0, Runs())
    assert not step.keep_going
    assert w.result == SUCCESS


def test_no_container_yet_and_prober_errors_are_ignored() -> None:
    w = ProbeWorker(ProbeType.READINESS, probe(), "Always")
    assert not w.step(ContainerView(pod_phase="Pending"), 0.0, Runs()).probed
    assert w.result is None
    step = w.step(running(), 0.0, lambda: None)
    assert step.probed
    assert w.result == FAILURE  # the initial value, unchanged by the error
    assert w.result_run == 0


def test_http_warning_counts_as_success() -> None:
    w = ProbeWorker(ProbeType.READINESS, probe(), "Always")
    w.step(running(), 0.0, Runs(WARNING))
    assert w.result == SUCCESS


def test_first_probe_delay() -> None:
    assert first_probe_delay(10, since_kubelet_start=2.0, rand=0.5) == 5.0
    assert first_probe_delay(10, since_kubelet_start=60.0, rand=0.5) == 0.0


# --------------------------------------------------------------------------- probers

EXEC_TABLE = [
    # exit code, output, timed out, result, output
    (0, b"ok", False, SUCCESS, "ok"),
    (1, b"bad", False, FAILURE, "bad"),
    (0, b"", True, FAILURE, 'command "cat /tmp/healthy" timed out'),
]


@pytest.mark.parametrize(("code", "out", "timeout", "result", "text"), EXEC_TABLE)
def test_exec_probe(code: int, out: bytes, timeout: bool, result: str, text: str) -> None:
    seen = {}

    def run(command: list[str], t: float) -> tuple[int, bytes]:
        seen["args"] = (command, t)
        if timeout:
            raise TimeoutError
        return code, out

    outcome = exec_probe(run, ["cat", "/tmp/healthy"], 1.0)
    assert outcome == ProbeOutcome(result, text)
    assert seen["args"] == (["cat", "/tmp/healthy"], 1.0)


def test_tcp_probe() -> None:
    def ok(host: str, port: int, timeout: float) -> None:
        return None

    def refused(host: str, port: int, timeout: float) -> None:
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")

    def slow(host: str, port: int, timeout: float) -> None:
        raise TimeoutError

    assert tcp_probe(ok, "10.0.0.1", 80, 1.0).result == SUCCESS
    assert tcp_probe(refused, "10.0.0.1", 80, 1.0) == ProbeOutcome(
        FAILURE, "dial tcp 10.0.0.1:80: connect: connection refused"
    )
    assert tcp_probe(slow, "fd00::1", 80, 1.0) == ProbeOutcome(
        FAILURE, "dial tcp [fd00::1]:80: i/o timeout"
    )


HTTP_TABLE = [
    # status, stopped at redirect, result
    (200, False, SUCCESS),
    (204, False, SUCCESS),
    (302, True, WARNING),
    (399, False, WARNING),
    (400, False, FAILURE),
    (500, False, FAILURE),
]


@pytest.mark.parametrize(("status", "redirect", "result"), HTTP_TABLE)
def test_http_probe_status_codes(status: int, redirect: bool, result: str) -> None:
    def get(url: str, headers: dict[str, str], timeout: float) -> tuple[int, bytes, bool]:
        return status, b"body", redirect

    outcome = http_probe(get, "http://10.0.0.1:80/", {}, 1.0)
    assert outcome.result == result
    if result == FAILURE:
        assert outcome.output == f"HTTP probe failed with statuscode: {status}"


def test_http_probe_connection_error_and_body_limit() -> None:
    def refused(url: str, headers: dict[str, str], timeout: float) -> tuple[int, bytes, bool]:
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")

    out = http_probe(refused, "http://10.0.0.1:80/", {}, 1.0)
    assert out.result == FAILURE
    assert out.output.startswith('Get "http://10.0.0.1:80/": ')

    def big(url: str, headers: dict[str, str], timeout: float) -> tuple[int, bytes, bool]:
        return 200, b"x" * 20000, False

    assert len(http_probe(big, "http://x/", {}, 1.0).output) == 10 * 1024


def test_http_url_headers_and_ports() -> None:
    c = Container(name="app", ports=[ContainerPort(name="http", container_port=8080)])
    action = HTTPGetAction(path="healthz", port="http", scheme="HTTPS")
    assert http_probe_url(action, "10.244.1.5", c) == "https://10.244.1.5:8080/healthz"
    action = HTTPGetAction(port=80, host="127.0.0.1")
    assert http_probe_url(action, "10.244.1.5", c) == "http://127.0.0.1:80/"
    headers = http_probe_headers(
        HTTPGetAction(port=80, http_headers=[HTTPHeader(name="Accept", value="text/plain")])
    )
    assert headers["Accept"] == "text/plain"
    assert headers["User-Agent"].startswith("kube-probe/")
    assert resolve_container_port("8081", c) == 8081
    with pytest.raises(PortError, match="port metrics not found"):
        resolve_container_port("metrics", c)
    with pytest.raises(PortError, match="invalid port number: 70000"):
        resolve_container_port(70000, c)


def test_probe_event_message() -> None:
    msg = probe_event_message(ProbeType.LIVENESS, ProbeOutcome(FAILURE, "HTTP probe failed"))
    assert msg == "Liveness probe failed: HTTP probe failed"
