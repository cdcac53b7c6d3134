"""The Kubelet: pod sources, admission, pod workers, PLEG, probes, status, housekeeping.

Wiring as pkg/kubelet/kubelet.go: pod additions are admitted and handed to their pod
worker; PLEG events, probe result changes and each worker's requeue (back-off, periodic
resync) re-enter ``sync_pod``, which computes the pod's actions (the pure rules) from the
runtime's state, carries them out (``RuntimeManager``) and regenerates the pod's status.
Housekeeping kills and removes what the runtime holds for pods this node no longer
wants (orphans after a restart, deleted static pods). Nothing needed for correctness is
held only in memory: after a crash the runtime's labels and annotations rebuild it.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from pykubelet.api.decode import encode_pod
from pykubelet.api.quantity import Quantity
from pykubelet.api.types import PHASE_FAILED, PHASE_SUCCEEDED, Pod, PodStatus
from pykubelet.config import KubeletConfig
from pykubelet.kubelet import reasons
from pykubelet.kubelet.actions import backoff_key, compute_pod_actions
from pykubelet.kubelet.admission import NodeInfo, admit
from pykubelet.kubelet.backoff import Backoff
from pykubelet.kubelet.cri_client import CRICallError, CRIClient
from pykubelet.kubelet.events import WARNING, EventRecorder
from pykubelet.kubelet.http import AgentHTTPServer
from pykubelet.kubelet.image_gc import ImageGCManager
from pykubelet.kubelet.labels import NODE_NAME_ANNOTATION, POD_UID_LABEL
from pykubelet.kubelet.log_manager import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_SIZE,
    MONITOR_PERIOD_S,
    ContainerLogManager,
)
from pykubelet.kubelet.log_symlinks import remove_dangling
from pykubelet.kubelet.manager import RuntimeManager
from pykubelet.kubelet.pleg import GenericPLEG, PodLifecycleEvent
from pykubelet.kubelet.prober_manager import ProberManager, ProbeTarget
from pykubelet.kubelet.probes import ContainerView, ProbeType
from pykubelet.kubelet.runtime_state import ContainerState, PodRuntimeStatus
from pykubelet.kubelet.sandbox_config import remove_pod_cgroups
from pykubelet.kubelet.static_pods import StaticPodSource
from pykubelet.kubelet.status import (
    WaitingReason,
    active_deadline_eviction,
    deleted_and_stopped,
    generate_pod_status,
    is_static_pod,
)
from pykubelet.kubelet.volumes import teardown_pod_dir
from pykubelet.kubelet.workers import PodWorkers, UpdateType

log = logging.getLogger(__name__)

RESYNC_PERIOD_S = 10.0
ERROR_REQUEUE_S = 2.0
HOUSEKEEPING_PERIOD_S = 2.0
TERMINAL = (PHASE_SUCCEEDED, PHASE_FAILED)


@dataclass
class OrphanPod:
    """A pod the runtime holds but this node no longer wants (no spec known)."""

    uid: str
    name: str = ""
    namespace: str = ""


def _uid_of(pod: Any) -> str:
    return str(pod.uid)


def host_ips() -> list[str]:
    """The node's address: the one on the default route's interface, else any global."""
    dev = ""
    try:
        with open("/proc/net/route") as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                if len(parts) > 2 and parts[1] == "00000000":
                    dev = parts[0]
                    break
    except OSError:
        pass
    addrs = psutil.net_if_addrs()
    order = [dev] if dev in addrs else []
    order += [n for n in addrs if n not in order]
    for name in order:
        for a in addrs[name]:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return [a.address]
    return ["127.0.0.1"]


@dataclass
class Metrics:
    pod_start_sum: float = 0.0
    pod_start_count: int = 0
    started_pods_total: int = 0
    pleg_relist_sum: float = 0.0
    pleg_relist_count: int = 0
    sync_sum: dict[str, float] = field(default_factory=dict)
    sync_count: dict[str, int] = field(default_factory=dict)
    runtime_ops_sum: dict[str, float] = field(default_factory=dict)
    runtime_ops_count: dict[str, int] = field(default_factory=dict)


class Kubelet:
    """One node agent over one CRI endpoint."""

    def __init__(
        self,
        config: KubeletConfig,
        cri: CRIClient | None = None,
        resync_period: float = RESYNC_PERIOD_S,
        container_log_max_size: int = DEFAULT_MAX_SIZE,
        container_log_max_files: int = DEFAULT_MAX_FILES,
        log_monitor_period: float = MONITOR_PERIOD_S,
    ) -> None:
        self.config = config
        self.node_name = config.node_name
        self.metrics = Metrics()
        self._mlock = threading.Lock()
        self.cri = cri or CRIClient(config.runtime_endpoint, observe=self._observe_runtime_op)
        self.cri.wait_ready(60.0)
        self.resync_period = resync_period
        self.backoff = Backoff(clock=time.time)
        self.image_backoff = Backoff(clock=time.time)
        self.memory_capacity = psutil.virtual_memory().total
        self.recorder = EventRecorder(self.node_name)
        self.manager = RuntimeManager(
            self.cri,
            node_name=self.node_name,
            root_dir=config.rootDir,
            pod_logs_dir=config.podLogsDir,
            memory_capacity=self.memory_capacity,
            backoff=self.backoff,
            image_backoff=self.image_backoff,
            recorder=self.recorder,
        )
        self.host_ips = host_ips()
        self.workers = PodWorkers(self.sync_pod, self.terminate_pod, _uid_of)
        self.pleg = GenericPLEG(self.cri, self._on_pleg_event, observe=self._observe_relist)
        self.prober = ProberManager(
            self.cri, self._probe_target, self._on_probe_change, self.recorder
        )
        self.image_gc = ImageGCManager(self.cri, config.imageGCHighThresholdPercent,
                                       config.imageGCLowThresholdPercent)
        self.log_manager = ContainerLogManager(
            self.cri, container_log_max_size, container_log_max_files, log_monitor_period,
            owns=lambda uid: uid in self.pods,
        )
        self.static_source: StaticPodSource | None = None
        self.http: AgentHTTPServer | None = None

        self._lock = threading.RLock()
        self.pods: dict[str, Pod] = {}  # desired, admitted pods by uid
        self.rejected: dict[str, Pod] = {}  # pods admission refused (status Failed)
        self.statuses: dict[str, PodStatus] = {}
        self.observed: dict[str, PodRuntimeStatus] = {}
        self.waiting: dict[str, dict[str, WaitingReason]] = {}
        self.first_seen: dict[str, float] = {}
        self._backoff_seeded: set[str] = set()
        self._stop = threading.Event()
        self._housekeeping: threading.Thread | None = None
        self._last_sync_loop = time.monotonic()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the sources, PLEG, housekeeping and the HTTP port."""
        if self.config.staticPodPath:
            self.static_source = StaticPodSource(
                self.config.staticPodPath, self.node_name, self.set_source_pods
            )
            self.static_source.start()
        self.pleg.start()
        self.log_manager.start()
        self._housekeeping = threading.Thread(
            target=self._housekeeping_loop, name="housekeeping", daemon=True
        )
        self._housekeeping.start()
        if self.config.healthzPort:
            self.http = AgentHTTPServer(
                self.config.healthzBindAddress,
                self.config.healthzPort,
                self.pod_list,
                self.healthy,
                self.render_metrics,
                self.event_list,
            )
            self.http.start()

    def stop(self) -> None:
        """Stop the agent; running pods keep running in the runtime."""
        self._stop.set()
        if self.static_source is not None:
            self.static_source.stop()
        self.pleg.stop()
        self.log_manager.stop()
        self.prober.stop()
        self.workers.stop()
        if self.http is not None:
            self.http.stop()
        if self._housekeeping is not None:
            self._housekeeping.join(5)
        self.cri.close()

    # ------------------------------------------------------------------ pod sources
    def set_source_pods(self, pods: list[Pod]) -> None:
        """The full desired set from a source: add new pods, kill removed ones."""
        static_now = {p.uid: p for p in pods}
        with self._lock:
            current_static = {u for u, p in self.pods.items() if is_static_pod(p)}
            current_static |= {u for u, p in self.rejected.items() if is_static_pod(p)}
        removed = [u for u in current_static if u not in static_now]
        self.handle_pod_removes(removed)
        self.handle_pod_additions([p for p in pods if p.uid not in current_static])

    def handle_pod_additions(self, pods: list[Pod]) -> None:
        """HandlePodAdditions: admit, then hand to the pod's worker."""
        for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp or ""):
            with self._lock:
                self.first_seen.setdefault(pod.uid, time.time())
                active = [p for u, p in self.pods.items()
                          if (st := self.statuses.get(u)) is None or st.phase not in TERMINAL]
                result = admit(pod, self._node_info(), active, static=is_static_pod(pod))
                if not result.admit:
                    log.warning("rejecting %s: %s: %s", pod.format(), result.reason, result.message)
                    self.rejected[pod.uid] = pod
                    self.statuses[pod.uid] = PodStatus(
                        phase=PHASE_FAILED, reason=result.reason, message=result.message
                    )
                    continue
                self.pods[pod.uid] = pod
            self.prober.add_pod(pod)
            self.workers.update_pod(pod, UpdateType.CREATE)

    def handle_pod_updates(self, pods: list[Pod]) -> None:
        """HandlePodUpdates: a changed spec re-syncs; a deletionTimestamp terminates the
        pod with its deletionGracePeriodSeconds. A deleted pod stays listed, with its
        final (terminal) status, until its removal (handle_pod_removes)."""
        for pod in pods:
            with self._lock:
                if pod.uid not in self.pods:
                    continue
                self.pods[pod.uid] = pod
            if pod.metadata.deletion_timestamp is not None:
                self.prober.remove_pod(pod.uid)
                self.workers.kill_pod(pod)
                continue
            self.workers.update_pod(pod, UpdateType.UPDATE)

    def handle_pod_removes(self, uids: list[str]) -> None:
        for uid in uids:
            with self._lock:
                pod = self.pods.pop(uid, None)
                rejected = self.rejected.pop(uid, None)
                self.statuses.pop(uid, None) if rejected is not None else None
            if pod is None:
                continue
            self.prober.remove_pod(uid)
            self.workers.kill_pod(pod)

    def _node_info(self) -> NodeInfo:
        alloc = {
            "cpu": Quantity.from_int(psutil.cpu_count() or 1),
            "memory": Quantity.from_int(self.memory_capacity),
            "pods": Quantity.from_int(110),
        }
        for k, v in self.config.allocatable.items():
            alloc[k] = Quantity.parse(v)
        return NodeInfo(name=self.node_name, allocatable=alloc, labels=self.config.nodeLabels)

    # ------------------------------------------------------------------ events
    def _on_pleg_event(self, ev: PodLifecycleEvent) -> None:
        with self._lock:
            pod = self.pods.get(ev.pod_uid)
        if pod is not None:
            self.workers.update_pod(pod, UpdateType.SYNC)

    def _on_probe_change(self, uid: str) -> None:
        with self._lock:
            pod = self.pods.get(uid)
        if pod is not None:
            self.workers.update_pod(pod, UpdateType.SYNC)

    def _probe_target(self, uid: str, name: str) -> ProbeTarget | None:
        with self._lock:
            observed = self.observed.get(uid)
            status = self.statuses.get(uid)
            pod = self.pods.get(uid)
        if observed is None or pod is None:
            return None
        c = observed.find_container(name)
        started = False
        if status is not None:
            for cs in (*status.init_container_statuses, *status.container_statuses):
                if cs.name == name:
                    started = bool(cs.started)
        view = ContainerView(
            pod_phase=status.phase if status else "Pending",
            container_id=c.id if c else "",
            running=c is not None and c.state is ContainerState.RUNNING,
            running_since=c.started_at if c else 0.0,
            terminated=c is not None and c.state is ContainerState.EXITED,
            started=started,
            pod_deleting=pod.metadata.deletion_timestamp is not None,
        )
        return ProbeTarget(view=view, pod_ip=observed.ip)

    # ------------------------------------------------------------------ sync
    def _seed_backoff(self, pod: Pod, observed: PodRuntimeStatus) -> None:
        """After a restart the back-off is rebuilt from the runtime: a container that
        exited after N restarts backs off as if it had been restarted N times here."""
        if pod.uid in self._backoff_seeded:
            return
        self._backoff_seeded.add(pod.uid)
        now = time.time()
        for c in pod.all_containers():
            inst = observed.find_container(c.name)
            if inst is None or inst.state is not ContainerState.EXITED or inst.restart_count == 0:
                continue
            if now - inst.finished_at > 2 * self.backoff.maximum:
                continue
            key = backoff_key(pod, c)
            if self.backoff.get(key):
                continue
            for _ in range(min(inst.restart_count, 6)):
                self.backoff.next(key, inst.finished_at)

    def _status_for(
        self, pod: Pod, observed: PodRuntimeStatus, now: float, eviction: WaitingReason | None
    ) -> PodStatus:
        with self._lock:
            old = self.statuses.get(pod.uid)
            waiting = dict(self.waiting.get(pod.uid, {}))
        status = generate_pod_status(
            pod,
            observed,
            now,
            old_status=old,
            waiting_reasons=waiting,
            readiness=self.prober.results(ProbeType.READINESS),
            startup=self.prober.results(ProbeType.STARTUP),
            pod_is_terminal=eviction is not None or deleted_and_stopped(pod, observed),
            host_ips=self.host_ips,
            eviction=eviction,
        )
        with self._lock:
            self.statuses[pod.uid] = status
            self.observed[pod.uid] = observed
        self._note_started(pod, status)
        return status

    def _note_started(self, pod: Pod, status: PodStatus) -> None:
        if pod.uid not in self.first_seen or not pod.spec.containers:
            return
        if len(status.container_statuses) == len(pod.spec.containers) and all(
            cs.state.running is not None for cs in status.container_statuses
        ):
            seen = self.first_seen.pop(pod.uid)
            with self._mlock:
                self.metrics.pod_start_sum += time.time() - seen
                self.metrics.pod_start_count += 1
                self.metrics.started_pods_total += 1

    def sync_pod(self, pod: Pod, update_type: UpdateType) -> float | None:
        """kubelet's syncPod for one pod; returns when to sync it again (None: only on
        events)."""
        t0 = time.monotonic()
        try:
            return self._sync_pod(pod)
        finally:
            self._observe_sync(update_type.value, time.monotonic() - t0)

    def _sync_pod(self, pod: Pod) -> float | None:
        now = time.time()
        observed = self.manager.get_pod_status(pod.uid, pod.name, pod.namespace)
        settle = self.manager.start_in_flight(observed, now)
        if settle is not None:
            log.info("%s: a start interrupted by the last agent may still be completing",
                     pod.format())
            return settle
        if self.manager.remove_leftover_created(observed):
            observed = self.manager.get_pod_status(pod.uid, pod.name, pod.namespace)
        self._seed_backoff(pod, observed)

        with self._lock:
            old = self.statuses.get(pod.uid)
        if pod.metadata.deletion_timestamp is not None:
            # a pod being deleted only terminates (its worker's kill does that)
            if observed.running_containers():
                self.manager.kill_pod(pod, observed)
                observed = self.manager.get_pod_status(pod.uid, pod.name, pod.namespace)
            self._status_for(pod, observed, now, None)
            return None
        if old is not None and old.phase in TERMINAL:
            # A terminal pod stays terminal: make sure nothing runs, keep the status.
            if observed.running_containers() or any(
                s.state.value == "ready" for s in observed.sandboxes
            ):
                self.manager.kill_pod(pod, observed)
                observed = self.manager.get_pod_status(pod.uid, pod.name, pod.namespace)
            self._status_for(pod, observed, now, None)
            return None

        # activeDeadlineSeconds, measured from the status' startTime
        if old is not None and old.start_time:
            probe_pod = Pod(metadata=pod.metadata, spec=pod.spec, status=old)
            eviction = active_deadline_eviction(probe_pod, now)
            if eviction is not None:
                log.info("%s: %s", pod.format(), eviction.message)
                self.manager.kill_pod(pod, observed)
                observed = self.manager.get_pod_status(pod.uid, pod.name, pod.namespace)
                self._status_for(pod, observed, now, eviction)
                return None

        status = self._status_for(pod, observed, now, None)
        if status.phase in TERMINAL:
            self.manager.kill_pod(pod, observed)
            return None

        actions = compute_pod_actions(
            pod,
            observed,
            now,
            self.backoff,
            liveness=self.prober.results(ProbeType.LIVENESS),
            startup=self.prober.results(ProbeType.STARTUP),
        )
        if actions.is_noop():
            self._set_waiting(pod, actions.in_backoff, {})
            if actions.in_backoff:
                self._status_for(pod, observed, now, None)
                return self._backoff_requeue(pod, observed)
            self.manager.garbage_collect(observed)
            return self._requeue_for(pod)

        result = self.manager.sync_pod(pod, observed, actions)
        waiting = {n: WaitingReason(r, m) for n, (r, m) in result.waiting.items()}
        if result.sandbox_error is not None:
            log.warning("%s: %s: %s", pod.format(), *result.sandbox_error)
        self._set_waiting(pod, {}, waiting, cleared=result.started)

        observed = self.manager.get_pod_status(pod.uid, pod.name, pod.namespace)
        self.manager.garbage_collect(observed)
        status = self._status_for(pod, observed, time.time(), None)
        if status.phase in TERMINAL:
            self.manager.kill_pod(pod, observed)
            return None
        if actions.in_backoff:
            return self._backoff_requeue(pod, observed)
        if result.failed:
            return ERROR_REQUEUE_S
        return self._requeue_for(pod)

    def _requeue_for(self, pod: Pod) -> float:
        # probes and the active deadline need a status refresh sooner than resync
        if pod.spec.active_deadline_seconds is not None:
            return min(self.resync_period, 1.0)
        return self.resync_period

    def _set_waiting(
        self,
        pod: Pod,
        in_backoff: dict[str, str],
        failures: dict[str, WaitingReason],
        cleared: list[str] | None = None,
    ) -> None:
        with self._lock:
            table = self.waiting.setdefault(pod.uid, {})
            for name in cleared or []:
                table.pop(name, None)
            for name, msg in in_backoff.items():
                table[name] = WaitingReason(reasons.CRASH_LOOP_BACK_OFF, msg)
                self.recorder.event(pod, WARNING, reasons.EVENT_BACK_OFF,
                                    reasons.back_off_event_message(name, pod.format()), name)
            table.update(failures)
            # a container that is running again has no start failure to report
            observed = self.observed.get(pod.uid)
            if observed is not None:
                for c in observed.running_containers():
                    table.pop(c.name, None)

    def _backoff_requeue(self, pod: Pod, observed: PodRuntimeStatus) -> float:
        """When the first back-off among the pod's containers ends."""
        now = time.time()
        best = self.resync_period
        for c in pod.all_containers():
            inst = observed.find_container(c.name)
            if inst is None or inst.state is not ContainerState.EXITED:
                continue
            delay = self.backoff.get(backoff_key(pod, c))
            if delay:
                best = min(best, max(0.05, inst.finished_at + delay - now + 0.05))
        return best

    def terminate_pod(self, pod: Any) -> None:
        """syncTerminatingPod + syncTerminatedPod: kill with the grace period, remove the
        pod's containers and sandboxes, then its volumes and directory."""
        observed = self.manager.get_pod_status(pod.uid)
        self.manager.kill_pod(pod if isinstance(pod, Pod) else None, observed)
        with self._lock:
            deleting = (
                isinstance(pod, Pod)
                and pod.metadata.deletion_timestamp is not None
                and pod.uid in self.pods
            )
        if deleting:
            # syncTerminatingPod: the status once the containers stopped, with their
            # exit codes, before they are removed (podIsTerminal)
            stopped = self.manager.get_pod_status(pod.uid, pod.name, pod.namespace)
            self._status_for(pod, stopped, time.time(), None)
        self.manager.remove_pod(observed)
        teardown_pod_dir(self.config.rootDir, pod.uid)
        remove_pod_cgroups(pod.uid)
        with self._lock:
            if not deleting:
                self.statuses.pop(pod.uid, None)
            self.observed.pop(pod.uid, None)
            self.waiting.pop(pod.uid, None)
            self.first_seen.pop(pod.uid, None)
        self._backoff_seeded.discard(pod.uid)

    # ------------------------------------------------------------------ housekeeping
    def _housekeeping_loop(self) -> None:
        while not self._stop.wait(HOUSEKEEPING_PERIOD_S):
            try:
                self.housekeeping()
                self.image_gc.maybe_collect()
            except CRICallError as exc:
                log.warning("housekeeping: %s", exc)
            except Exception:
                log.exception("housekeeping failed")

    def housekeeping(self) -> None:
        """HandlePodCleanups: kill what the runtime runs for pods no longer wanted."""
        self._last_sync_loop = time.monotonic()
        with self._lock:
            wanted = set(self.pods)
        busy = self.workers.known_uids()
        in_runtime: set[str] = set()
        for s in self.cri.list_pod_sandbox():
            uid = s.labels.get(POD_UID_LABEL)
            if uid:
                in_runtime.add(uid)
            if not uid or uid in wanted or uid in busy:
                continue
            if s.annotations.get(NODE_NAME_ANNOTATION) != self.node_name:
                continue  # another agent's pod on a shared runtime
            log.info("cleaning up orphaned pod %s (%s)", uid, s.metadata.name)
            self.workers.kill_pod(OrphanPod(uid, s.metadata.name, s.metadata.namespace))
        # cleanupOrphanedPodDirs: directories of pods gone from both the desired set and
        # the runtime (e.g. removed while the agent was down, runtime state lost)
        pods_dir = Path(self.config.rootDir) / "pods"
        if pods_dir.is_dir():
            for d in pods_dir.iterdir():
                uid = d.name
                with self._lock:
                    if uid in self.pods:
                        continue
                if uid in busy or uid in in_runtime or self.workers.is_known(uid):
                    continue
                log.info("removing orphaned pod directory %s", d)
                teardown_pod_dir(self.config.rootDir, uid)
                remove_pod_cgroups(uid)
        self.backoff.gc()
        self.image_backoff.gc()
        snap = self.pleg.snapshot
        if snap is not None:
            self.prober.forget_containers(set(snap.containers), snap.at)
            # legacy log links whose log and container are both gone
            remove_dangling(self.manager.container_logs_dir, set(snap.containers))

    # ------------------------------------------------------------------ views
    def pod_list(self) -> dict[str, Any]:
        """kubelet's /pods: a v1 PodList of this node's pods with their status."""
        with self._lock:
            items = []
            for uid, pod in [*self.pods.items(), *self.rejected.items()]:
                p = Pod(metadata=pod.metadata, spec=pod.spec,
                        status=self.statuses.get(uid) or PodStatus(phase="Pending"))
                items.append(encode_pod(p))
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}

    def event_list(self) -> dict[str, Any]:
        """The events this agent recorded, as a v1 EventList (served at /events)."""
        return {"kind": "EventList", "apiVersion": "v1", "metadata": {},
                "items": self.recorder.list()}

    def healthy(self) -> tuple[bool, str]:
        if not self.pleg.healthy():
            return False, "pleg was last seen active too long ago"
        if time.monotonic() - self._last_sync_loop > 60:
            return False, "sync loop is not running"
        return True, "ok"

    def _observe_runtime_op(self, method: str, seconds: float) -> None:
        with self._mlock:
            m = self.metrics
            m.runtime_ops_sum[method] = m.runtime_ops_sum.get(method, 0.0) + seconds
            m.runtime_ops_count[method] = m.runtime_ops_count.get(method, 0) + 1

    def _observe_relist(self, seconds: float) -> None:
        with self._mlock:
            self.metrics.pleg_relist_sum += seconds
            self.metrics.pleg_relist_count += 1

    def _observe_sync(self, op: str, seconds: float) -> None:
        with self._mlock:
            m = self.metrics
            m.sync_sum[op] = m.sync_sum.get(op, 0.0) + seconds
            m.sync_count[op] = m.sync_count.get(op, 0) + 1

    def render_metrics(self) -> str:
        with self._lock:
            observed = list(self.observed.values())
            running_pods = sum(1 for o in observed if o.running_containers())
        by_state: dict[str, int] = {}
        for o in observed:
            for c in o.containers:
                by_state[c.state.value] = by_state.get(c.state.value, 0) + 1
        with self._mlock:
            m = self.metrics
            lines = [
                "# TYPE kubelet_running_pods gauge",
                f"kubelet_running_pods {running_pods}",
                "# TYPE kubelet_running_containers gauge",
                *(f'kubelet_running_containers{{container_state="{k}"}} {v}'
                  for k, v in sorted(by_state.items())),
                "# TYPE kubelet_started_pods_total counter",
                f"kubelet_started_pods_total {m.started_pods_total}",
                "# TYPE kubelet_pod_start_duration_seconds summary",
                f"kubelet_pod_start_duration_seconds_sum {m.pod_start_sum:.6f}",
                f"kubelet_pod_start_duration_seconds_count {m.pod_start_count}",
                "# TYPE kubelet_pleg_relist_duration_seconds summary",
                f"kubelet_pleg_relist_duration_seconds_sum {m.pleg_relist_sum:.6f}",
                f"kubelet_pleg_relist_duration_seconds_count {m.pleg_relist_count}",
                "# TYPE kubelet_pod_worker_duration_seconds summary",
            ]
            for op in sorted(m.sync_sum):
                lines.append(
                    f'kubelet_pod_worker_duration_seconds_sum{{operation_type="{op}"}} '
                    f"{m.sync_sum[op]:.6f}"
                )
                lines.append(
                    f'kubelet_pod_worker_duration_seconds_count{{operation_type="{op}"}} '
                    f"{m.sync_count[op]}"
                )
            lines.append("# TYPE kubelet_runtime_operations_duration_seconds summary")
            for op in sorted(m.runtime_ops_sum):
                lines.append(
                    f'kubelet_runtime_operations_duration_seconds_sum{{operation_type="{op}"}} '
                    f"{m.runtime_ops_sum[op]:.6f}"
                )
                lines.append(
                    f'kubelet_runtime_operations_duration_seconds_count{{operation_type="{op}"}} '
                    f"{m.runtime_ops_count[op]}"
                )
        return "\n".join(lines) + "\n"
