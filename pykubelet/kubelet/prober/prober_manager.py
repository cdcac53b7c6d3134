"""Runs the probes: one worker thread per (pod, container, probe type), as
pkg/kubelet/prober/prober_manager.go.

The state machine is ``probes.ProbeWorker`` (pure); this module gives it real probers:
exec through CRI ExecSync in the container, tcpSocket and httpGet against the pod IP
from the host (the pod network is routed from the node, as kubelet probes it). Results
are kept per container id; a change calls ``on_change(pod_uid)`` so the agent syncs the
pod (a liveness or startup failure restarts the container; readiness feeds status).
"""

from __future__ import annotations

import http.client
import logging
import random
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from pykubelet.api.types import Container, Pod, Probe, is_restartable_init_container
from pykubelet.kubelet.cri.runtime_service import CRICallError, RuntimeService
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.events.recorder import WARNING, EventRecorder
from pykubelet.kubelet.prober import probes
from pykubelet.kubelet.prober.probes import ContainerView, ProbeOutcome, ProbeType, ProbeWorker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeTarget:
    """What a probe needs about its container right now."""

    view: ContainerView
    pod_ip: str


ViewFn = Callable[[str, str], ProbeTarget | None]  # (pod uid, container name)


def _tcp_connect(host: str, port: int, timeout: float) -> None:
    with socket.create_connection((host, port), timeout=timeout):
        pass


def _http_get(url: str, headers: dict[str, str], timeout: float) -> tuple[int, bytes, bool]:
    parts = urllib.parse.urlsplit(url)
    https = parts.scheme == "https"
    conn_cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
    conn = conn_cls(parts.hostname or "", parts.port, timeout=timeout)
    try:
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read(probes.MAX_RESPONSE_BODY)
        return resp.status, body, 300 <= resp.status < 400
    except (http.client.HTTPException, TimeoutError) as exc:
        raise OSError(str(exc)) from exc
    finally:
        conn.close()


class _Worker(threading.Thread):
    def __init__(
        self,
        mgr: ProberManager,
        pod: Pod,
        container: Container,
        ptype: ProbeType,
        probe: Probe,
    ) -> None:
        super().__init__(name=f"probe-{ptype.value}-{container.name}", daemon=True)
        self.mgr = mgr
        self.pod = pod
        self.container = container
        self.ptype = ptype
        self.probe = probe
        # a sidecar restarts whatever the pod's restartPolicy: keep probing it
        policy = "Always" if is_restartable_init_container(container) else pod.spec.restart_policy
        self.state = ProbeWorker(ptype, probe, policy)
        self.stop_event = threading.Event()

    def run(self) -> None:
        period = max(1, self.probe.period_seconds or 10)
        delay = probes.first_probe_delay(
            period, time.monotonic() - self.mgr.started, random.random()
        )
        if self.stop_event.wait(delay):
            return
        while not self.stop_event.is_set():
            try:
                if not self._tick():
                    break
            except Exception:
                log.exception("probe worker %s failed", self.name)
            self.stop_event.wait(period)

    def _tick(self) -> bool:
        target = self.mgr.view(self.pod.uid, self.container.name)
        if target is None:
            return True
        step = self.state.step(target.view, time.time(), lambda: self._run(target))
        if step.outcome is not None and step.outcome.result in (probes.FAILURE, probes.WARNING):
            message = probes.probe_event_message(self.ptype, step.outcome)
            log.info("%s %s: %s", self.pod.format(), self.container.name, message)
            if self.mgr.recorder is not None:
                self.mgr.recorder.event(
                    self.pod, WARNING, reasons.EVENT_UNHEALTHY, message, self.container.name
                )
        if self.state.result is not None and self.state.container_id:
            self.mgr.publish(self.ptype, self.state.container_id, self.state.result)
        if step.changed:
            self.mgr.on_change(self.pod.uid)
        return step.keep_going

    def _run(self, target: ProbeTarget) -> ProbeOutcome | None:
        timeout = float(max(1, self.probe.timeout_seconds or 1))
        p = self.probe
        cid = target.view.container_id
        if p.exec is not None:

            def run(command: list[str], timeout: float) -> tuple[int, bytes]:
                resp = self.mgr.cri.exec_sync(cid, command, timeout)
                return resp.exit_code, resp.stdout + resp.stderr

            try:
                return probes.exec_probe(run, p.exec.command, timeout)
            except CRICallError as exc:
                if exc.code == "DEADLINE_EXCEEDED":
                    return ProbeOutcome(probes.FAILURE, f"command timed out after {timeout}s")
                log.warning("exec probe in %s: %s", cid, exc)
                return None
        if p.tcp_socket is not None:
            try:
                port = probes.resolve_container_port(p.tcp_socket.port, self.container)
            except probes.PortError as exc:
                return ProbeOutcome(probes.FAILURE, str(exc))
            host = p.tcp_socket.host or target.pod_ip
            return probes.tcp_probe(_tcp_connect, host, port, timeout)
        if p.http_get is not None:
            try:
                url = probes.http_probe_url(p.http_get, target.pod_ip, self.container)
            except probes.PortError as exc:
                return ProbeOutcome(probes.FAILURE, str(exc))
            headers = probes.http_probe_headers(p.http_get)
            return probes.http_probe(_http_get, url, headers, timeout)
        return None


class ProberManager:
    """Starts and stops probe workers with the pods; holds their results."""

    def __init__(
        self,
        cri: RuntimeService,
        view: ViewFn,
        on_change: Callable[[str], None],
        recorder: EventRecorder | None = None,
    ) -> None:
        self.cri = cri
        self.recorder = recorder
        self.view = view
        self.on_change = on_change
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._workers: dict[tuple[str, str, ProbeType], _Worker] = {}
        self._results: dict[ProbeType, dict[str, str]] = {t: {} for t in ProbeType}
        self._published_at: dict[str, float] = {}

    def add_pod(self, pod: Pod) -> None:
        # sidecars (restartable init containers) are probed like app containers
        sidecars = [c for c in pod.spec.init_containers if is_restartable_init_container(c)]
        for c in (*sidecars, *pod.spec.containers):
            for ptype, probe in (
                (ProbeType.LIVENESS, c.liveness_probe),
                (ProbeType.READINESS, c.readiness_probe),
                (ProbeType.STARTUP, c.startup_probe),
            ):
                if probe is None:
                    continue
                key = (pod.uid, c.name, ptype)
                with self._lock:
                    if key in self._workers and self._workers[key].is_alive():
                        continue
                    w = _Worker(self, pod, c, ptype, probe)
                    self._workers[key] = w
                w.start()

    def remove_pod(self, uid: str) -> None:
        with self._lock:
            keys = [k for k in self._workers if k[0] == uid]
            workers = [self._workers.pop(k) for k in keys]
        for w in workers:
            w.stop_event.set()

    def stop(self) -> None:
        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
        for w in workers:
            w.stop_event.set()

    def publish(self, ptype: ProbeType, container_id: str, result: str) -> None:
        with self._lock:
            self._results[ptype][container_id] = result
            self._published_at[container_id] = time.time()

    def results(self, ptype: ProbeType) -> dict[str, str]:
        with self._lock:
            return dict(self._results[ptype])

    def has_probe(self, uid: str, name: str, ptype: ProbeType) -> bool:
        with self._lock:
            return (uid, name, ptype) in self._workers

    def is_ready(self, uid: str, container: Container, container_id: str) -> bool:
        """Readiness: the probe's result, or running-means-ready without a probe."""
        if container.readiness_probe is None:
            return True
        with self._lock:
            return self._results[ProbeType.READINESS].get(container_id) == probes.SUCCESS

    def is_started(self, container: Container, container_id: str) -> bool:
        if container.startup_probe is None:
            return True
        with self._lock:
            return self._results[ProbeType.STARTUP].get(container_id) == probes.SUCCESS

    def forget_containers(self, live_ids: set[str], seen_at: float) -> None:
        """Drop results of containers a relist taken at ``seen_at`` no longer showed
        (results published after that relist may be for containers it could not see)."""
        with self._lock:
            gone = [c for c, t in self._published_at.items()
                    if c not in live_ids and t < seen_at - 1.0]
            for cid in gone:
                del self._published_at[cid]
                for table in self._results.values():
                    table.pop(cid, None)
