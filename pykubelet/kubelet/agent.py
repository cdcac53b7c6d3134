"""The Kubelet: pod sources in, pod workers, SyncPod, and the parts it is wired from.

Wiring as pkg/kubelet/kubelet.go. Pod sources (``StaticPodSource`` today, the API
server's pod watch next, as kubelet's config mux with sources "file" and "api") call the
entry points ``set_source_pods`` (a source's full set) or ``handle_pod_additions`` /
``handle_pod_updates`` / ``handle_pod_removes``. Admitted pods go to the ``PodManager``
and to their pod worker; PLEG events, probe result changes and each worker's requeue
(back-off, periodic resync) re-enter ``sync_pod``, which decides whether the pod is
done (``pod_termination``), else computes its actions (the pure rules) from the
runtime's state, carries them out (``RuntimeManager``) and hands the pod's new status to
the ``StatusManager`` (where a control plane's status patcher plugs in).
``Housekeeping`` removes what the runtime holds for pods this node no longer wants.

Every runtime call goes through the ``RuntimeService``/``ImageService`` seam, wrapped by
``InstrumentedRuntimeService`` for the runtime-operation metrics. Nothing needed for
correctness is held only in memory: after a crash the runtime's labels and annotations
rebuild it.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil

from pykubelet.api.decode import encode_pod
from pykubelet.api.machinery.quantity import Quantity
from pykubelet.api.types import PHASE_FAILED, PHASE_SUCCEEDED, Pod, PodStatus
from pykubelet.config import KubeletConfig
from pykubelet.kubelet.cluster.node_status import node_labels
from pykubelet.kubelet.cm.pod_container_manager import CgroupfsPodCgroups, PodCgroups
from pykubelet.kubelet.container.pod_cache import PodCache, ReasonCache
from pykubelet.kubelet.container.runtime_state import ContainerState, PodRuntimeStatus, SandboxState
from pykubelet.kubelet.cri.cri_client import CRIClient
from pykubelet.kubelet.cri.runtime_service import RuntimeAndImageService, wait_ready
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.events.recorder import WARNING, EventRecorder
from pykubelet.kubelet.housekeeping import Housekeeping, OrphanPod
from pykubelet.kubelet.images.image_gc_manager import ImageGCManager
from pykubelet.kubelet.kuberuntime.actions import backoff_key, compute_pod_actions
from pykubelet.kubelet.kuberuntime.instrumented_services import InstrumentedRuntimeService
from pykubelet.kubelet.kuberuntime.kuberuntime_manager import RuntimeManager
from pykubelet.kubelet.kuberuntime.labels import POD_UID_LABEL
from pykubelet.kubelet.lifecycle.predicate import (
    NODE_AFFINITY,
    AdmitResult,
    NodeInfo,
    SchedulerPods,
    admit,
)
from pykubelet.kubelet.logs.container_log_manager import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_SIZE,
    MONITOR_PERIOD_S,
    ContainerLogManager,
)
from pykubelet.kubelet.metrics import KubeletMetrics, PodStartLatencyTracker
from pykubelet.kubelet.network.dns import Configurer
from pykubelet.kubelet.pleg.generic import GenericPLEG, PodLifecycleEvent
from pykubelet.kubelet.pod.pod_manager import (
    FILE_SOURCE,
    PodManager,
    pod_source,
    pods_differ_semantically,
)
from pykubelet.kubelet.pod.static_pods import StaticPodSource
from pykubelet.kubelet.pod_termination import Termination, pod_termination
from pykubelet.kubelet.pod_workers import PodWorkers, UpdateType
from pykubelet.kubelet.prober.prober_manager import ProberManager, ProbeTarget
from pykubelet.kubelet.prober.probes import ContainerView, ProbeType
from pykubelet.kubelet.server.healthz import AgentHTTPServer
from pykubelet.kubelet.stats import resource_metrics
from pykubelet.kubelet.stats.cri_stats import list_pods_usage
from pykubelet.kubelet.stats.node_stats import read_node_usage
from pykubelet.kubelet.status.generate import (
    WaitingReason,
    deleted_and_stopped,
    exited_containers,
    generate_pod_status,
    is_static_pod,
)
from pykubelet.kubelet.status.status_manager import StatusManager, StatusPatcher
from pykubelet.kubelet.util import failpoints
from pykubelet.kubelet.util.backoff import Backoff
from pykubelet.kubelet.util.logfmt import kv, pod_ref
from pykubelet.kubelet.volumemanager.volumes import teardown_pod_dir

log = logging.getLogger(__name__)

RESYNC_PERIOD_S = 10.0
# /healthz (and systemd's watchdog) fail once the sync loop has not run for this long
SYNC_LOOP_HEALTH_THRESHOLD_S = failpoints.number("sync-loop-health-threshold", 60.0)
ERROR_REQUEUE_S = 2.0

__all__ = ["Kubelet", "OrphanPod", "host_ips"]


def _log_sync_loop(op: str, pods: list[Pod]) -> None:
    """kubelet's `"SyncLoop ADD" source="file" pods=[...]` line, one per source."""
    by_source: dict[str, list[str]] = {}
    for p in pods:
        by_source.setdefault(pod_source(p), []).append(pod_ref(p))
    for source, refs in sorted(by_source.items()):
        log.info(kv(f"SyncLoop {op}", source=source, pods=refs))


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


class Kubelet:
    """One node agent over one CRI endpoint."""

    def __init__(
        self,
        config: KubeletConfig,
        cri: RuntimeAndImageService | None = None,
        resync_period: float = RESYNC_PERIOD_S,
        container_log_max_size: int = DEFAULT_MAX_SIZE,
        container_log_max_files: int = DEFAULT_MAX_FILES,
        log_monitor_period: float = MONITOR_PERIOD_S,
        *,
        status_patcher: StatusPatcher | None = None,
        pod_cgroups: PodCgroups | None = None,
        memory_capacity: int | None = None,
        node_ips: list[str] | None = None,
    ) -> None:
        self.config = config
        self.node_name = config.node_name
        self.metrics = KubeletMetrics()
        self.cri = InstrumentedRuntimeService(
            cri if cri is not None else CRIClient(config.runtime_endpoint), self.metrics
        )
        wait_ready(self.cri, 60.0)
        self.resync_period = resync_period
        self.backoff = Backoff(clock=time.time)
        self.image_backoff = Backoff(clock=time.time)
        self.memory_capacity = memory_capacity or psutil.virtual_memory().total
        # read once (cadvisor's MachineInfo): the count comes from sysfs with the GIL held
        self.cpu_capacity = psutil.cpu_count() or 1
        self.host_ips = node_ips or ([config.nodeIP] if config.nodeIP else host_ips())
        self.recorder = EventRecorder(self.node_name)
        self.pod_cgroups: PodCgroups = pod_cgroups or CgroupfsPodCgroups()

        # what the node should run, what it last saw, and what it reports
        self.pod_manager = PodManager()
        self.status_manager = StatusManager(status_patcher)
        self.pod_cache = PodCache()
        self.reason_cache = ReasonCache()
        self.start_tracker = PodStartLatencyTracker(self.metrics)
        self._backoff_seeded: set[str] = set()

        self.manager = RuntimeManager(
            self.cri,
            self.cri,
            node_name=self.node_name,
            root_dir=config.rootDir,
            pod_logs_dir=config.podLogsDir,
            memory_capacity=self.memory_capacity,
            backoff=self.backoff,
            image_backoff=self.image_backoff,
            recorder=self.recorder,
            pod_cgroups=self.pod_cgroups,
            dns=Configurer(config.clusterDNS, config.clusterDomain, config.resolvConf,
                           self.host_ips, self.recorder),
        )
        self.workers: PodWorkers[Pod | OrphanPod] = PodWorkers(
            self._sync_work, self.terminate_pod
        )
        self.pleg = GenericPLEG(self.cri, self._on_pleg_event, metrics=self.metrics)
        self.prober = ProberManager(
            self.cri, self._probe_target, self._on_probe_change, self.recorder
        )
        self.image_gc = ImageGCManager(self.cri, config.imageGCHighThresholdPercent,
                                       config.imageGCLowThresholdPercent)
        self.log_manager = ContainerLogManager(
            self.cri, container_log_max_size, container_log_max_files, log_monitor_period,
            owns=self.pod_manager.has_pod,
        )
        self._last_sync_loop = time.monotonic()
        # set by the first sync loop pass after PLEG's first relist: what READY=1 waits for
        self.synced_once = threading.Event()
        self.housekeeping = Housekeeping(
            runtime=self.cri,
            node_name=self.node_name,
            root_dir=config.rootDir,
            container_logs_dir=self.manager.container_logs_dir,
            pod_manager=self.pod_manager,
            workers=self.workers,
            pleg=self.pleg,
            prober=self.prober,
            backoffs=[self.backoff, self.image_backoff],
            pod_cgroups=self.pod_cgroups,
            image_gc=self.image_gc,
            on_pass=self._mark_sync_loop,
        )
        self.static_source: StaticPodSource | None = None
        self.http: AgentHTTPServer | None = None
        # told when a pod being deleted has stopped here (a control plane's final delete)
        self.on_pod_terminated: Callable[[Pod], None] | None = None
        # the Node's labels in the API (fresh=True reads them now), on a cluster node;
        # else the config's nodeLabels are all there is
        self.node_labels: Callable[[bool], dict[str, str] | None] | None = None
        # pods the runtime was running when this agent started: admitted before, by an
        # earlier agent, so never rejected again (a restart must not kill them)
        self._running_at_start: set[str] = set()
        self._scheduler_pods = SchedulerPods()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Bind the HTTP port first (a port in use fails before any pod is touched), then
        start the sources, PLEG, housekeeping and the status manager."""
        if self.config.healthzPort:
            self.http = AgentHTTPServer(
                self.config.healthzBindAddress,
                self.config.healthzPort,
                self.pod_list,
                self.healthy,
                self.render_metrics,
                self.event_list,
                self.render_resource_metrics,
            )
            self.http.start()
        self._running_at_start = self._pods_running_in_runtime()
        if self.config.staticPodPath:
            self.static_source = StaticPodSource(
                self.config.staticPodPath, self.node_name, self.set_source_pods
            )
            self.static_source.start()
        self.pleg.start()
        self.log_manager.start()
        self.housekeeping.start()
        self.status_manager.start()

    def stop(self) -> None:
        """Stop the agent; running pods keep running in the runtime."""
        if self.static_source is not None:
            self.static_source.stop()
        self.pleg.stop()
        self.log_manager.stop()
        self.prober.stop()
        self.workers.stop()
        if self.http is not None:
            self.http.stop()
        self.housekeeping.stop()
        self.status_manager.stop()
        self.cri.close()

    # ------------------------------------------------------------------ pod sources
    def set_source_pods(self, pods: list[Pod], source: str = FILE_SOURCE) -> None:
        """A source's full desired set (kubelet's config SET, merged as config.go does):
        remove the source's pods that are gone, update the ones that changed, add the new
        ones. Pods of other sources are left alone."""
        now = {p.uid: p for p in pods}
        current = self.pod_manager.source_uids(source)
        self.handle_pod_removes([u for u in current if u not in now])
        known = self.pod_manager.pods()
        self.handle_pod_updates([p for p in pods if p.uid in known and p != known[p.uid]])
        self.handle_pod_additions([p for p in pods if p.uid not in current])

    def _pods_running_in_runtime(self) -> set[str]:
        """The UIDs of the pods with a ready sandbox in the runtime now."""
        try:
            sandboxes = self.cri.list_pod_sandbox(ready_only=True)
        except Exception as exc:  # the runtime answers wait_ready; a hiccup admits as usual
            log.warning("listing the runtime's pods at start: %s", exc)
            return set()
        return {sb.labels[POD_UID_LABEL] for sb in sandboxes if sb.labels.get(POD_UID_LABEL)}

    def _admit(self, pod: Pod, active: list[Pod]) -> AdmitResult:
        """canAdmitPod, except for a pod the runtime already ran when the agent started."""
        if pod.uid in self._running_at_start:
            self._running_at_start.discard(pod.uid)
            log.info(kv("Pod was running before the agent started; admitted as it runs",
                        pod=pod_ref(pod), podUID=pod.uid))
            return AdmitResult(admit=True)
        result = admit(pod, self._node_info(), active, static=is_static_pod(pod),
                       scheduler_pods=self._scheduler_pods)
        if not result.admit and result.reason == NODE_AFFINITY and self.node_labels:
            # labels a user just put on the Node may be newer than the ones kept here
            result = admit(pod, self._node_info(fresh=True), active,
                           static=is_static_pod(pod), scheduler_pods=self._scheduler_pods)
        return result

    def handle_pod_additions(self, pods: list[Pod]) -> None:
        """HandlePodAdditions: admit, then hand to the pod's worker."""
        _log_sync_loop("ADD", pods)
        for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp or ""):
            self.start_tracker.observed_pod(pod.uid)
            active = [p for u, p in self.pod_manager.pods().items()
                      if not self.status_manager.is_terminal(u)]
            result = self._admit(pod, active)
            if not result.admit:
                log.warning(kv("Pod admission denied", pod=pod_ref(pod), podUID=pod.uid,
                               reason=result.reason, message=result.message))
                self.pod_manager.reject_pod(pod)
                self.status_manager.set_pod_status(
                    pod, PodStatus(phase=PHASE_FAILED, reason=result.reason, message=result.message)
                )
                continue
            self.pod_manager.add_pod(pod)
            self.prober.add_pod(pod)
            self.workers.update_pod(pod, UpdateType.CREATE)

    def handle_pod_updates(self, pods: list[Pod]) -> None:
        """HandlePodUpdates: a changed spec re-syncs; a deletionTimestamp terminates the
        pod with its deletionGracePeriodSeconds; a change of nothing else than status and
        bookkeeping (config.go's podsDifferSemantically is false) only replaces the copy.
        A deleted pod stays listed, with its final (terminal) status, until its removal
        (handle_pod_removes)."""
        _log_sync_loop("DELETE", [p for p in pods if p.metadata.deletion_timestamp is not None])
        updated = []
        for pod in pods:
            old = self.pod_manager.update_pod(pod)
            if old is None:
                continue
            if pod.metadata.deletion_timestamp is not None:
                self.prober.remove_pod(pod.uid)
                self.workers.kill_pod(pod)
                continue
            same = not pods_differ_semantically(old, pod)
            if same:
                # the API's echo of a status patch decodes the whole pod again: the new
                # copy takes the spec already held (equal), so a pod's spec is kept once
                pod.spec = old.spec
            if same and pod.status.phase not in (PHASE_SUCCEEDED, PHASE_FAILED):
                # a reconcile (checkAndUpdatePod): the copy is replaced, nothing to sync;
                # a terminal phase someone else wrote (an eviction) still goes to the worker
                continue
            updated.append(pod)
            self.workers.update_pod(pod, UpdateType.UPDATE)
        _log_sync_loop("UPDATE", updated)

    def handle_pod_removes(self, uids: list[str]) -> None:
        """HandlePodRemoves: the pod is gone from its source: kill it, then forget it."""
        for uid in uids:
            pod, rejected = self.pod_manager.remove_pod(uid)
            if rejected is not None:
                self.status_manager.remove_pod_status(uid)
            if pod is None:
                continue
            _log_sync_loop("REMOVE", [pod])
            self.prober.remove_pod(uid)
            self.workers.kill_pod(pod)

    def _node_info(self, fresh: bool = False) -> NodeInfo:
        alloc = {
            "cpu": Quantity.from_int(self.cpu_capacity),
            "memory": Quantity.from_int(self.memory_capacity),
            "pods": Quantity.from_int(110),
        }
        for k, v in self.config.allocatable.items():
            alloc[k] = Quantity.parse(v)
        labels = self.node_labels(fresh) if self.node_labels is not None else None
        if labels is None:  # kubelet's initialNode: the labels it registers with
            labels = node_labels(self.node_name, dict(self.config.nodeLabels), False)
        return NodeInfo(name=self.node_name, allocatable=alloc, labels=labels)

    # ------------------------------------------------------------------ events
    def _on_pleg_event(self, ev: PodLifecycleEvent) -> None:
        pod = self.pod_manager.get_pod(ev.pod_uid)
        if pod is not None:
            self.workers.update_pod(pod, UpdateType.SYNC)

    def _on_probe_change(self, uid: str) -> None:
        pod = self.pod_manager.get_pod(uid)
        if pod is not None:
            self.workers.update_pod(pod, UpdateType.SYNC)

    def _probe_target(self, uid: str, name: str) -> ProbeTarget | None:
        observed = self.pod_cache.get(uid)
        status = self.status_manager.get_pod_status(uid)
        pod = self.pod_manager.get_pod(uid)
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

    def _observe(self, pod: Pod) -> PodRuntimeStatus:
        return self.manager.get_pod_status(pod.uid, pod.name, pod.namespace)

    def _record_status(
        self, pod: Pod, observed: PodRuntimeStatus, now: float,
        eviction: WaitingReason | None = None,
    ) -> PodStatus:
        """Generate the pod's status from what the runtime shows and hand it to the
        status manager (see _set_status)."""
        status = self._generate_status(pod, observed, now, eviction)
        self._set_status(pod, observed, status)
        return status

    def _generate_status(
        self, pod: Pod, observed: PodRuntimeStatus, now: float,
        eviction: WaitingReason | None = None,
    ) -> PodStatus:
        """The pod's status from what the runtime shows, over its last one (a terminal
        phase stays terminal)."""
        if any(sb.state is SandboxState.READY for sb in observed.sandboxes):
            self.reason_cache.set_sandbox_failure(pod.uid, None)
        return generate_pod_status(
            pod,
            observed,
            now,
            old_status=self.status_manager.get_pod_status(pod.uid),
            waiting_reasons=self.reason_cache.get(pod.uid),
            readiness=self.prober.results(ProbeType.READINESS),
            startup=self.prober.results(ProbeType.STARTUP),
            pod_is_terminal=eviction is not None or deleted_and_stopped(pod, observed),
            host_ips=self.host_ips,
            eviction=eviction,
            sandbox_failure=self.reason_cache.sandbox_failure(pod.uid),
        )

    def _set_status(self, pod: Pod, observed: PodRuntimeStatus, status: PodStatus) -> None:
        """Hand a generated status to the status manager; the observed state goes to the
        pod cache. A container that exited since the last status is one log line."""
        old = self.status_manager.get_pod_status(pod.uid)
        self.status_manager.set_pod_status(pod, status)
        self.pod_cache.set(pod.uid, observed)
        self.start_tracker.observed_status(pod, status)
        for cs in exited_containers(old, status):
            t = cs.state.terminated
            assert t is not None
            log.info(kv("Container exited", pod=pod_ref(pod), containerName=cs.name,
                        containerID=cs.container_id, exitCode=t.exit_code, reason=t.reason))

    def _status_unless_done(
        self, pod: Pod, observed: PodRuntimeStatus, now: float
    ) -> PodStatus | None:
        """A sync's one question, "is the pod done?" (deleted, in a terminal phase, past its
        active deadline), asked of the status generated from what the runtime shows now:
        a pod that is done is stopped and None returned; else the status is recorded and
        returned. _sync_pod asks it before the runtime sync and again after it."""
        status = self._generate_status(pod, observed, now)
        termination = pod_termination(pod, status, observed, now)
        if termination is not None:
            self._stop_terminated(pod, observed, termination, now)
            return None
        self._set_status(pod, observed, status)
        return status

    def _stop_terminated(
        self, pod: Pod, observed: PodRuntimeStatus, termination: Termination, now: float
    ) -> None:
        """The one path for a pod that is done: stop what still runs, look again, record."""
        if termination.eviction is not None:
            log.info("%s: %s", pod.format(), termination.eviction.message)
        if termination.must_kill:
            self.manager.kill_pod(pod, observed)
            observed = self._observe(pod)
        self._record_status(pod, observed, now, termination.eviction)

    def _sync_work(self, pod: Pod | OrphanPod, update_type: UpdateType) -> float | None:
        """A pod worker's sync: only pods with a spec are synced (orphans are killed)."""
        assert isinstance(pod, Pod), "an orphan pod is only ever killed"
        return self.sync_pod(pod, update_type)

    def sync_pod(self, pod: Pod, update_type: UpdateType) -> float | None:
        """kubelet's syncPod for one pod; returns when to sync it again (None: only on
        events)."""
        t0 = time.monotonic()
        try:
            return self._sync_pod(pod)
        finally:
            self.metrics.observe_pod_worker(update_type.value, time.monotonic() - t0)

    def _sync_pod(self, pod: Pod) -> float | None:
        now = time.time()
        observed = self._observe(pod)
        settle = self.manager.start_in_flight(observed, now)
        if settle is not None:
            log.info("%s: a start interrupted by the last agent may still be completing",
                     pod.format())
            return settle
        if self.manager.remove_leftover_created(observed):
            observed = self._observe(pod)
        self._seed_backoff(pod, observed)

        if self._status_unless_done(pod, observed, now) is None:
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
            self._note_start_failures(pod, actions.in_backoff, {})
            if actions.in_backoff:
                self._record_status(pod, observed, now)
                return self._backoff_requeue(pod, observed)
            self.manager.garbage_collect(observed)
            self.manager.refresh_object_volumes(pod)
            return self._requeue_for(pod)

        result = self.manager.sync_pod(pod, observed, actions)
        waiting = {n: WaitingReason(r, m) for n, (r, m) in result.waiting.items()}
        if result.sandbox_error is not None:
            failure = WaitingReason(*result.sandbox_error)
            again = self.reason_cache.set_sandbox_failure(pod.uid, failure) == failure
            # once per new failure; every retry (ERROR_REQUEUE_S) only with -v
            log.log(logging.DEBUG if again else logging.WARNING,
                    kv("Error syncing pod, skipping", pod=pod_ref(pod), podUID=pod.uid,
                       reason=failure.reason, err=failure.message))
        self._note_start_failures(pod, {}, waiting, cleared=result.started)

        observed = self._observe(pod)
        self.manager.garbage_collect(observed)
        now = time.time()
        if self._status_unless_done(pod, observed, now) is None:
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

    def _note_start_failures(
        self,
        pod: Pod,
        in_backoff: dict[str, str],
        failures: dict[str, WaitingReason],
        cleared: list[str] | None = None,
    ) -> None:
        """The reason cache's update after a sync: back-offs and failed starts become
        waiting reasons; started and running containers have none."""
        for name in in_backoff:
            self.recorder.event(pod, WARNING, reasons.EVENT_BACK_OFF,
                                reasons.back_off_event_message(name, pod.format()), name)
        backing_off = {name: WaitingReason(reasons.CRASH_LOOP_BACK_OFF, msg)
                       for name, msg in in_backoff.items()}
        cached = self.pod_cache.get(pod.uid)
        running = [c.name for c in cached.running_containers()] if cached is not None else []
        self.reason_cache.update(pod.uid, {**backing_off, **failures}, cleared or [], running)

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

    def terminate_pod(self, pod: Pod | OrphanPod) -> None:
        """syncTerminatingPod + syncTerminatedPod: kill with the grace period, remove the
        pod's containers and sandboxes, then its volumes and directory."""
        spec = pod if isinstance(pod, Pod) else None
        observed = self.manager.get_pod_status(pod.uid)
        self.manager.kill_pod(spec, observed)
        deleting = (
            spec is not None
            and spec.metadata.deletion_timestamp is not None
            and self.pod_manager.has_pod(spec.uid)
        )
        if spec is not None and deleting:
            # syncTerminatingPod: the status once the containers stopped, with their
            # exit codes, before they are removed (podIsTerminal)
            self._record_status(spec, self._observe(spec), time.time())
        self.manager.remove_pod(observed)
        teardown_pod_dir(self.config.rootDir, pod.uid)
        tokens = getattr(self.manager.object_refs, "tokens", None)
        if tokens is not None:  # DeleteServiceAccountToken: the pod's tokens are done
            tokens.delete_pod(pod.uid)
        self.pod_cgroups.remove(pod.uid)
        if not deleting:
            self.status_manager.remove_pod_status(pod.uid)
        self.pod_cache.delete(pod.uid)
        self.reason_cache.delete(pod.uid)
        self.start_tracker.forget(pod.uid)
        self._backoff_seeded.discard(pod.uid)
        log.info(kv("Removed pod from the runtime", pod=pod_ref(pod) or None, podUID=pod.uid))
        if deleting and spec is not None and self.on_pod_terminated is not None:
            self.on_pod_terminated(spec)

    # ------------------------------------------------------------------ views
    def _mark_sync_loop(self) -> None:
        self._last_sync_loop = time.monotonic()
        if self.pleg.snapshot is not None:
            self.synced_once.set()

    def pod_list(self) -> dict[str, Any]:
        """kubelet's /pods: a v1 PodList of this node's pods with their status."""
        statuses = self.status_manager.statuses()
        items = [
            encode_pod(Pod(metadata=pod.metadata, spec=pod.spec,
                           status=statuses.get(pod.uid) or PodStatus(phase="Pending")))
            for pod in self.pod_manager.all_pods()
        ]
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}

    def event_list(self) -> dict[str, Any]:
        """The events this agent recorded, as a v1 EventList (served at /events)."""
        return {"kind": "EventList", "apiVersion": "v1", "metadata": {},
                "items": self.recorder.list()}

    def healthy(self) -> tuple[bool, str]:
        if not self.pleg.healthy():
            return False, self.pleg.health_message()
        idle = time.monotonic() - self._last_sync_loop
        if idle > SYNC_LOOP_HEALTH_THRESHOLD_S:
            return False, (f"sync loop is not running (last pass {idle:.0f}s ago, more than "
                           f"{SYNC_LOOP_HEALTH_THRESHOLD_S:g}s)")
        return True, "ok"

    def status_summary(self) -> str:
        """How many pods and running containers this node has, for a person (systemd's
        status line)."""
        running = sum(len(o.running_containers()) for o in self.pod_cache.all())
        pods = len(self.pod_manager.all_pods())
        return (f"{pods} pod{'' if pods == 1 else 's'}, "
                f"{running} container{'' if running == 1 else 's'} running")

    def render_metrics(self) -> bytes:
        """/metrics: kubelet's metrics as Prometheus text, the pod gauges counted now."""
        return self.metrics.render(self._pod_gauges)

    def render_resource_metrics(self) -> bytes:
        """/metrics/resource: the node's, pods' and containers' CPU and memory now."""
        return resource_metrics.collect(read_node_usage, lambda: list_pods_usage(self.cri))

    def _pod_gauges(self) -> tuple[int, dict[str, int]]:
        """kubelet_running_pods (pods with a ready sandbox) and containers by state."""
        observed = self.pod_cache.all()
        running_pods = sum(1 for o in observed
                           if any(sb.state is SandboxState.READY for sb in o.sandboxes))
        by_state: dict[str, int] = {}
        for o in observed:
            for c in o.containers:
                by_state[c.state.value] = by_state.get(c.state.value, 0) + 1
        return running_pods, by_state
