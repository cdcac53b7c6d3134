"""SyncPod over CRI: the effectful half of kuberuntime (kuberuntime_manager.go,
kuberuntime_container.go, kuberuntime_sandbox.go).

``get_pod_status`` builds the observed ``PodRuntimeStatus`` from CRI alone (kubelet's labels
and annotations on sandboxes and containers), so a restarted agent knows everything it
needs: which sandbox is current, each container's restart count and spec hash.
``sync_pod`` carries out ``PodActions`` in SyncPod's order: kill the pod or the
containers to kill, create the sandbox, start the next init container, start the app
containers. ``kill_pod`` stops containers in parallel, each with its grace period (after its
preStop hook), then stops the sandboxes. ``garbage_collect`` keeps the newest instance of
each container name and removes stopped sandboxes nothing needs any more.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import Container, EphemeralContainer, Pod, is_restartable_init_container
from pykubelet.kubelet.cluster.object_refs import ObjectRefs
from pykubelet.kubelet.cm.pod_container_manager import CgroupfsPodCgroups, PodCgroups
from pykubelet.kubelet.container.hashing import hash_container_hex
from pykubelet.kubelet.container.runtime_state import (
    ContainerRuntimeStatus,
    ContainerState,
    PodRuntimeStatus,
    SandboxRuntimeStatus,
    SandboxState,
)
from pykubelet.kubelet.cri.runtime_service import CRICallError, ImageService, RuntimeService
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.events.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.kubelet.images.image_manager import ImageManager
from pykubelet.kubelet.kuberuntime.actions import (
    PodActions,
    bounded_grace,
    termination_grace_period,
)
from pykubelet.kubelet.kuberuntime.container_config import (
    ContainerConfigError,
    generate_container_config,
)
from pykubelet.kubelet.kuberuntime.labels import (
    CONTAINER_NAME_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    ContainerLabelInfo,
    parse_container_labels,
)
from pykubelet.kubelet.kuberuntime.log_symlinks import (
    container_logs_dir,
    create_log_symlink,
    log_symlink_path,
    remove_log_symlink,
)
from pykubelet.kubelet.kuberuntime.sandbox_config import (
    ensure_log_dir,
    generate_pod_sandbox_config,
    pod_hostname_and_domain,
)
from pykubelet.kubelet.kuberuntime.termination_ordering import TerminationOrdering
from pykubelet.kubelet.logs.container_logs import (
    FALLBACK_LOG_BYTES,
    FALLBACK_LOG_LINES,
    MAX_TERMINATION_MESSAGE,
    tail_cri_log,
)
from pykubelet.kubelet.util import failpoints
from pykubelet.kubelet.util.backoff import Backoff
from pykubelet.kubelet.util.logfmt import kv, pod_ref
from pykubelet.kubelet.volumemanager.volumes import (
    VolumeError,
    ensure_termination_log,
    pod_dir,
    setup_volumes,
    termination_log_path,
    write_etc_hosts,
)

log = logging.getLogger(__name__)

DEFAULT_GRACE_S = 30
MIN_GRACE_S = 2  # kuberuntime minimumGracePeriodInSeconds
# refused removals of an interrupted start before it is kept as an exited instance
# (syncs retry every 2 s: long enough for a start that is still settling)
LEFTOVER_REMOVE_ATTEMPTS = 5
# how long a start the previous agent died inside may still be completing in the runtime
START_SETTLE_S = 15.0
START_SETTLE_POLL_S = 0.5
CONTAINER_TYPE_INIT = "init"
CONTAINER_TYPE_REGULAR = "regular"
CONTAINER_TYPE_EPHEMERAL = "ephemeral"

_CONTAINER_STATES = {
    pb.CONTAINER_CREATED: ContainerState.CREATED,
    pb.CONTAINER_RUNNING: ContainerState.RUNNING,
    pb.CONTAINER_EXITED: ContainerState.EXITED,
    pb.CONTAINER_UNKNOWN: ContainerState.UNKNOWN,
}


def _secs(ns: int) -> float:
    return ns / 1e9 if ns else 0.0


@dataclass
class SyncResult:
    """What one SyncPod did and what failed, by container name (kubelet's PodSyncResult)."""

    # container name -> (reason, message): waiting reasons for status
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    sandbox_error: tuple[str, str] | None = None
    started: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    created_sandbox: str = ""

    @property
    def failed(self) -> bool:
        return self.sandbox_error is not None or any(
            r not in (reasons.CRASH_LOOP_BACK_OFF,) for r, _ in self.waiting.values()
        )


class RuntimeManager:
    """Carries out pod actions over the CRI runtime and image services."""

    def __init__(
        self,
        cri: RuntimeService,
        images: ImageService,
        *,
        node_name: str,
        root_dir: str,
        pod_logs_dir: str,
        memory_capacity: int,
        backoff: Backoff,
        image_backoff: Backoff,
        recorder: EventRecorder | None = None,
        pod_cgroups: PodCgroups | None = None,
    ) -> None:
        self.cri = cri
        self.recorder = recorder
        self.pod_cgroups: PodCgroups = pod_cgroups or CgroupfsPodCgroups()
        self.node_name = node_name
        self.root_dir = root_dir
        self.pod_logs_dir = pod_logs_dir
        self.container_logs_dir = container_logs_dir(pod_logs_dir)
        self.memory_capacity = memory_capacity
        self.backoff = backoff
        self.image_backoff = image_backoff
        self.runtime_type = cri.version().runtime_name or "cri"
        self.images = ImageManager(images, image_backoff, recorder)
        # the ConfigMaps and Secrets pods use (set when the node has a control plane)
        self.object_refs: ObjectRefs | None = None
        self._killer = ThreadPoolExecutor(max_workers=64, thread_name_prefix="kill")
        # one StopPodSandbox at a time per sandbox: two at once race in CNI DEL (the
        # reference bridge plugin fails the second with "no such device")
        self._stopping: dict[str, threading.Lock] = {}
        self._stopping_guard = threading.Lock()
        # container id -> io.kubernetes.pod.terminationGracePeriod, for pods whose spec
        # is gone (orphans after a restart), as kubelet reads it back from annotations
        self._annotated_grace: dict[str, int] = {}
        # interrupted starts whose removal the runtime refused (remove_leftover_created)
        self._leftover_failures: dict[str, int] = {}
        self._unremovable: set[str] = set()

    def _event(self, pod: Pod | None, type_: str, reason: str, msg: str, ctr: str = "") -> None:
        if self.recorder is not None and isinstance(pod, Pod):
            self.recorder.event(pod, type_, reason, msg, ctr)

    # ------------------------------------------------------------------ observed state
    def get_pod_status(self, uid: str, name: str = "", namespace: str = "") -> PodRuntimeStatus:
        """kubelet's GetPodStatus: sandboxes and containers labelled with the pod's uid."""
        sel = {POD_UID_LABEL: uid}
        sandboxes: list[SandboxRuntimeStatus] = []
        ips: list[str] = []
        for s in self.cri.list_pod_sandbox(sel):
            try:
                sandbox_st = self.cri.pod_sandbox_status(s.id)
            except CRICallError as exc:
                if exc.not_found:
                    continue
                raise
            sb = SandboxRuntimeStatus(
                id=sandbox_st.id,
                state=(SandboxState.READY if sandbox_st.state == pb.SANDBOX_READY
                       else SandboxState.NOT_READY),
                attempt=sandbox_st.metadata.attempt,
                created_at=_secs(sandbox_st.created_at),
                ip=sandbox_st.network.ip,
                additional_ips=[a.ip for a in sandbox_st.network.additional_ips],
                host_network=sandbox_st.linux.namespaces.options.network == pb.NODE,
            )
            sandboxes.append(sb)
            name = name or s.labels.get(POD_NAME_LABEL, "")
            namespace = namespace or s.labels.get(POD_NAMESPACE_LABEL, "")
        sandboxes.sort(key=lambda s: s.created_at, reverse=True)
        if sandboxes and sandboxes[0].state is SandboxState.READY and sandboxes[0].ip:
            ips = [sandboxes[0].ip, *sandboxes[0].additional_ips]
        containers: list[ContainerRuntimeStatus] = []
        for c in self.cri.list_containers(label_selector=sel):
            try:
                st = self.cri.container_status(c.id)
            except CRICallError as exc:
                if exc.not_found:
                    continue
                raise
            info = parse_container_labels(st.labels or c.labels, st.annotations or c.annotations)
            if info.termination_grace_period is not None:
                self._annotated_grace[st.id] = info.termination_grace_period
            message = st.message
            if st.state == pb.CONTAINER_EXITED and uid:
                message = self._termination_message(uid, info, st) or message
            containers.append(
                ContainerRuntimeStatus(
                    id=st.id,
                    name=info.container_name or st.metadata.name,
                    state=_CONTAINER_STATES.get(st.state, ContainerState.UNKNOWN),
                    runtime_type=self.runtime_type,
                    created_at=_secs(st.created_at),
                    started_at=_secs(st.started_at),
                    finished_at=_secs(st.finished_at),
                    exit_code=st.exit_code,
                    reason=st.reason,
                    message=message,
                    image=st.image.image,
                    image_ref=st.image_ref,
                    image_id=st.image_ref,
                    hash=info.spec_hash,
                    restart_count=info.restart_count,
                    sandbox_id=c.pod_sandbox_id,
                )
            )
        return PodRuntimeStatus(
            uid=uid, name=name, namespace=namespace, ips=ips,
            sandboxes=sandboxes, containers=containers,
        )

    def _termination_message(
        self, uid: str, info: ContainerLabelInfo, st: pb.ContainerStatus
    ) -> str:
        """getTerminationMessage: the file behind terminationMessagePath (4 KiB at most);
        with FallbackToLogsOnError and a failure, the log's tail when the file is empty."""
        path = termination_log_path(self.root_dir, uid, info.container_name, info.restart_count)
        try:
            with open(path, "rb") as f:
                text = f.read(MAX_TERMINATION_MESSAGE).decode(errors="replace")
        except OSError:
            text = ""
        if text or info.termination_message_policy != "FallbackToLogsOnError":
            return text
        if st.exit_code == 0 or not st.log_path:
            return ""
        return tail_cri_log(st.log_path, FALLBACK_LOG_LINES, FALLBACK_LOG_BYTES)

    def _start_marker(self, uid: str, container_id: str) -> Path:
        """Written before StartContainer, removed once it returned: its presence after a
        restart means the agent died inside that call, which CRI cannot tell us."""
        return pod_dir(self.root_dir, uid) / "starting" / container_id

    def start_in_flight(self, observed: PodRuntimeStatus, now: float) -> float | None:
        """A container still CREATED with a fresh start marker: the previous agent died
        inside StartContainer, and the runtime may still be starting it (a pod's own
        worker never overlaps its starts, so the marker is not ours). Removing it now
        would kill a container the runtime is about to run and create it again; the sync
        waits instead, up to START_SETTLE_S from the marker. Returns when to look again,
        or None."""
        markers = pod_dir(self.root_dir, observed.uid) / "starting"
        for c in observed.containers:
            if c.state is not ContainerState.CREATED:
                continue
            try:
                since = (markers / c.id).stat().st_mtime
            except OSError:
                continue
            if now - since < START_SETTLE_S:
                return START_SETTLE_POLL_S
        return None

    def remove_leftover_created(self, observed: PodRuntimeStatus) -> bool:
        """Undo starts a crash interrupted, so the restart count stays right. Containers
        still CREATED (the agent died between CreateContainer and StartContainer; a pod's
        worker always starts what it creates), and containers whose start the agent's
        death aborted (a start marker is left and the runtime reports a start error: a
        runtime such as containerd cancels StartContainer with its client's context) are
        removed, with their empty logs, and created again under the same attempt. True if
        any was removed.

        A refused removal fails the sync (the worker retries: containerd refuses while a
        start is still settling) until LEFTOVER_REMOVE_ATTEMPTS; then the instance is
        kept as an exited one and the container starts again under the next attempt, as
        kubelet would. containerd 1.6/1.7 can keep the task of a StartContainer whose
        context was cancelled and refuse every RemoveContainer for good
        (containerd/containerd#11037)."""
        removed = False
        markers = pod_dir(self.root_dir, observed.uid) / "starting"
        for c in observed.containers:
            marker = markers / c.id
            interrupted = marker.exists()
            aborted = interrupted and c.state is ContainerState.EXITED and (
                c.started_at == 0.0 or c.reason == "StartError"
            )
            if (c.state is ContainerState.CREATED or aborted) and c.id not in self._unremovable:
                log.info("removing container %s (%s) whose start was interrupted (%s)",
                         c.id, c.name, c.state.value)
                try:
                    self._remove_with_empty_log(c.id)
                    removed = True
                except CRICallError as exc:
                    failures = self._leftover_failures.get(c.id, 0) + 1
                    self._leftover_failures[c.id] = failures
                    if failures < LEFTOVER_REMOVE_ATTEMPTS:
                        raise
                    log.warning("container %s (%s) whose start was interrupted cannot be "
                                "removed (%d attempts), keeping it as an exited instance: %s",
                                c.id, c.name, failures, exc.details)
                    self._unremovable.add(c.id)
                    self._leftover_failures.pop(c.id, None)
            if interrupted:
                marker.unlink(missing_ok=True)
        if markers.is_dir():
            known = {c.id for c in observed.containers}
            for m in markers.iterdir():
                if m.name not in known:
                    m.unlink(missing_ok=True)
        return removed

    def _remove_with_empty_log(self, container_id: str) -> None:
        """Remove a container that never ran, and first its empty log: an empty log left
        behind would make the next attempt count it as a restart (calcRestartCountByLogDir),
        and removing it first keeps that true if the agent dies during the removal."""
        try:
            log_path = self.cri.container_status(container_id).log_path
        except CRICallError:
            log_path = ""
        if log_path:
            p = Path(log_path)
            try:
                if p.is_file() and p.stat().st_size == 0:
                    p.unlink()
            except OSError:
                pass
        self._remove_container(container_id)

    # ------------------------------------------------------------------ kill
    def grace_period(self, pod: Pod | None, override: int | None = None) -> int:
        if override is not None:
            return bounded_grace(override)
        if pod is not None:
            if pod.metadata.deletion_grace_period_seconds is not None:
                return bounded_grace(pod.metadata.deletion_grace_period_seconds)
            if pod.spec.termination_grace_period_seconds is not None:
                return bounded_grace(pod.spec.termination_grace_period_seconds)
        return DEFAULT_GRACE_S

    def kill_container(
        self,
        pod: Pod | None,
        container_id: str,
        container: Container | None,
        grace_override: int | None = None,
        annotation_grace: int | None = None,
        reason: str = "",
        message: str = "",
        ordering: TerminationOrdering | None = None,
    ) -> None:
        """killContainer: preStop hook (exec) within the grace period, then (a sidecar
        waiting for its turn in `ordering`) StopContainer."""
        if pod is None and annotation_grace is not None and grace_override is None:
            grace_override = annotation_grace
        if pod is not None and grace_override is None:
            # setTerminationGracePeriod: deletion grace, a failed probe's own grace, the pod's
            grace = termination_grace_period(pod, container, reason)
        else:
            grace = self.grace_period(pod, grace_override)
        if container is not None:
            self._event(pod, NORMAL, reasons.EVENT_KILLING,
                        message or reasons.killing_container_message(container.name),
                        container.name)
        start = time.monotonic()
        if (
            container is not None
            and container.lifecycle is not None
            and container.lifecycle.pre_stop is not None
            and container.lifecycle.pre_stop.exec is not None
            and grace > 0
        ):
            try:
                self.cri.exec_sync(container_id, container.lifecycle.pre_stop.exec.command, grace)
            except CRICallError as exc:
                log.warning("preStop hook of %s failed: %s", container_id, exc)
            grace -= int(time.monotonic() - start)
        if ordering is not None and container is not None and grace > 0:
            grace -= int(ordering.wait_for_turn(container.name, grace))
        if grace_override is None:
            grace = max(grace, MIN_GRACE_S)
        log.info(kv(
            "Killing container with a grace period",
            pod=pod_ref(pod) if pod is not None else None,
            podUID=pod.uid if pod is not None else None,
            containerName=container.name if container is not None else None,
            containerID=container_id, gracePeriod=max(0, grace),
        ))
        try:
            self.cri.stop_container(container_id, max(0, grace))
        except CRICallError as exc:
            if not exc.not_found:
                raise
        finally:
            if ordering is not None and container is not None:
                ordering.container_terminated(container.name)
        failpoints.hit("after-stop-container")

    def kill_pod(
        self, pod: Pod | None, observed: PodRuntimeStatus, grace_override: int | None = None
    ) -> None:
        """killPodWithSyncResult: stop running containers in parallel (sidecars after
        the app containers, in reverse order), then sandboxes."""
        specs = {c.name: c for c in pod.all_containers()} if pod is not None else {}
        running = [c for c in observed.containers if c.state in
                   (ContainerState.RUNNING, ContainerState.CREATED, ContainerState.UNKNOWN)]
        ordering = (
            TerminationOrdering(pod, [c.name for c in running])
            if pod is not None and pod.sidecar_names() else None
        )
        futures = []
        for c in running:
            ann_grace = self._annotated_grace.get(c.id)
            futures.append(
                self._killer.submit(
                    self.kill_container, pod, c.id, specs.get(c.name), grace_override, ann_grace,
                    "", "", ordering,
                )
            )
        errors = []
        for f in futures:
            try:
                f.result()
            except Exception as exc:
                errors.append(exc)
        for s in observed.sandboxes:
            if s.state is SandboxState.READY:
                try:
                    self._stop_sandbox(s.id)
                except CRICallError as exc:
                    if not exc.not_found:
                        errors.append(exc)
        if errors:
            raise RuntimeError(f"{reasons.KILL_POD_SANDBOX_ERROR}: {errors[0]}") from errors[0]
        failpoints.hit("after-kill-pod")

    def _stop_sandbox(self, sandbox_id: str) -> None:
        with self._stopping_guard:
            stopping = self._stopping.setdefault(sandbox_id, threading.Lock())
        with stopping:
            self.cri.stop_pod_sandbox(sandbox_id)

    def remove_pod(self, observed: PodRuntimeStatus) -> None:
        """Remove every container and sandbox of a pod that is gone for good."""
        first: CRICallError | None = None
        for c in observed.containers:
            try:
                self._remove_container(c.id)
            except CRICallError as exc:
                log.warning("removing container %s (%s): %s", c.id, c.name, exc.details)
                first = first or exc
        for s in observed.sandboxes:
            try:
                self._stop_sandbox(s.id)
                self.cri.remove_pod_sandbox(s.id)
                with self._stopping_guard:
                    self._stopping.pop(s.id, None)
            except CRICallError as exc:
                if not exc.not_found:
                    log.warning("removing sandbox %s: %s", s.id, exc.details)
                    first = first or exc
        if first is not None:
            raise first  # the pod worker tries again

    def _remove_container(self, cid: str) -> None:
        self._annotated_grace.pop(cid, None)
        link = None
        try:
            labels = self.cri.container_status(cid).labels
            link = log_symlink_path(
                self.container_logs_dir, labels.get(POD_NAME_LABEL, ""),
                labels.get(POD_NAMESPACE_LABEL, ""), labels.get(CONTAINER_NAME_LABEL, ""), cid,
            )
        except CRICallError as exc:
            if not exc.not_found:
                log.warning("status of container %s before removal: %s", cid, exc)
        try:
            self.cri.remove_container(cid)
        except CRICallError as exc:
            if not exc.not_found:
                raise
        self._unremovable.discard(cid)
        self._leftover_failures.pop(cid, None)
        if link is not None:
            remove_log_symlink(link)  # removeContainerLog

    # ------------------------------------------------------------------ GC
    def garbage_collect(self, observed: PodRuntimeStatus) -> None:
        """Keep running containers and the newest exited instance per container name;
        drop older exited ones, and stopped sandboxes (not the newest) that no longer
        hold a kept container."""
        dead_kept: set[str] = set()
        keep_sandboxes = {observed.sandboxes[0].id} if observed.sandboxes else set()
        for c in observed.containers:  # newest first
            if c.state is not ContainerState.EXITED:
                keep_sandboxes.add(c.sandbox_id)
                continue
            # kubelet's MaxPerPodContainer=1: the newest dead instance per name stays
            # (lastState, logs --previous); older ones go
            if c.name not in dead_kept:
                dead_kept.add(c.name)
                keep_sandboxes.add(c.sandbox_id)
                continue
            try:
                self._remove_container(c.id)
            except CRICallError as exc:
                # kubelet's container GC logs and tries again on its next pass
                log.warning("removing exited container %s (%s): %s", c.id, c.name, exc.details)
        for s in observed.sandboxes:
            if s.id not in keep_sandboxes and s.state is SandboxState.NOT_READY:
                try:
                    self.cri.remove_pod_sandbox(s.id)
                except CRICallError as exc:
                    if not exc.not_found:
                        log.warning("removing sandbox %s: %s", s.id, exc)

    # ------------------------------------------------------------------ start
    def start_container(
        self,
        sandbox_id: str,
        sandbox_config: pb.PodSandboxConfig,
        pod: Pod,
        container: Container,
        observed: PodRuntimeStatus,
        pod_ip: str,
        container_type: str,
        volume_paths: dict[str, str],
        etc_hosts: str | None,
    ) -> tuple[str, str] | None:
        """startContainer: image, config, create, start, postStart. None on success,
        else (reason, message)."""
        target_id = ""
        if isinstance(container, EphemeralContainer) and container.target_container_name:
            # getTargetID: the target must be running
            target = observed.find_container(container.target_container_name)
            if target is None or target.state is not ContainerState.RUNNING:
                msg = f"unable to find target container {container.target_container_name}"
                self._event(pod, WARNING, reasons.EVENT_FAILED, f"Error: {msg}", container.name)
                return reasons.CREATE_CONTAINER_CONFIG_ERROR, msg
            target_id = target.id
        image, reason = self.images.ensure_image(pod, container, sandbox_config)
        if reason:
            return reason, f"image {container.image!r}: {reason}"
        latest = observed.find_container(container.name)
        restart_count = latest.restart_count + 1 if latest is not None else 0
        if latest is None:
            restart_count = self._restart_count_from_logs(sandbox_config, container.name)
        try:
            termination_log = None
            if container.termination_message_path:
                termination_log = ensure_termination_log(termination_log_path(
                    self.root_dir, pod.uid, container.name, restart_count))
            cfg = generate_container_config(
                pod,
                container,
                restart_count=restart_count,
                spec_hash=hash_container_hex(container),
                container_type=container_type,
                image=image,
                pod_ip=pod_ip,
                volume_paths=volume_paths,
                etc_hosts=etc_hosts,
                memory_capacity=self.memory_capacity,
                termination_log=termination_log,
                refs=self.object_refs,
                target_id=target_id,
            )
        except (ContainerConfigError, OSError) as exc:
            self._event(pod, WARNING, reasons.EVENT_FAILED, f"Error: {exc}", container.name)
            return reasons.CREATE_CONTAINER_CONFIG_ERROR, str(exc)
        try:
            Path(sandbox_config.log_directory, container.name).mkdir(parents=True, exist_ok=True)
            cid = self.cri.create_container(sandbox_id, cfg, sandbox_config)
        except CRICallError as exc:
            self._event(pod, WARNING, reasons.EVENT_FAILED, f"Error: {exc.details}",
                        container.name)
            return reasons.CREATE_CONTAINER_ERROR, exc.details
        self._event(pod, NORMAL, reasons.EVENT_CREATED,
                    reasons.created_container_message(container.name), container.name)
        failpoints.hit("after-create-container")
        marker = self._start_marker(pod.uid, cid)
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            self.cri.start_container(cid)
        except CRICallError as exc:
            self._event(pod, WARNING, reasons.EVENT_FAILED, f"Error: {exc.details}",
                        container.name)
            return reasons.RUN_CONTAINER_ERROR, exc.details
        finally:
            marker.unlink(missing_ok=True)
        self._event(pod, NORMAL, reasons.EVENT_STARTED,
                    reasons.started_container_message(container.name), container.name)
        log.info(kv("Started container", pod=pod_ref(pod), containerName=container.name,
                    containerID=cid, restartCount=restart_count))
        # the legacy /var/log/containers link, for cluster logging
        create_log_symlink(
            log_symlink_path(self.container_logs_dir, pod.name, pod.namespace, container.name,
                             cid),
            str(Path(sandbox_config.log_directory, cfg.log_path)),
        )
        failpoints.hit("after-start-container")
        hook = container.lifecycle.post_start if container.lifecycle else None
        if hook is not None and hook.exec is not None:
            try:
                resp = self.cri.exec_sync(cid, hook.exec.command, self.grace_period(pod))
                failed = resp.exit_code != 0
                msg = resp.stderr.decode(errors="replace") or f"exit code {resp.exit_code}"
            except CRICallError as exc:
                failed, msg = True, exc.details
            if failed:
                self.kill_container(pod, cid, container)
                return reasons.POST_START_HOOK_ERROR, msg
        return None

    @staticmethod
    def _restart_count_from_logs(sandbox_config: pb.PodSandboxConfig, name: str) -> int:
        """calcRestartCountByLogDir: after the runtime lost its state, continue the
        numbering of <n>.log files so logs are not overwritten."""
        d = Path(sandbox_config.log_directory, name)
        best = -1
        if d.is_dir():
            for f in d.iterdir():
                stem = f.name.split(".log")[0]
                if f.name.endswith(".log") and stem.isdigit():
                    best = max(best, int(stem))
        return best + 1

    # ------------------------------------------------------------------ SyncPod
    def _allocatable(self) -> dict[str, Fraction]:
        """The node's resources, for the downward API's limits a container does not set."""
        try:
            disk = shutil.disk_usage(self.root_dir).total
        except OSError:
            disk = 0
        return {"cpu": Fraction(os.cpu_count() or 1), "memory": Fraction(self.memory_capacity),
                "ephemeral-storage": Fraction(disk)}

    def refresh_object_volumes(self, pod: Pod) -> None:
        """Bring a running pod's configMap, secret, downwardAPI and projected volumes up to
        date (kubelet resyncs them so a changed ConfigMap, or a label, reaches the files its
        containers read)."""
        if not any(v.downward_api is not None or v.projected is not None
                   or (self.object_refs is not None
                       and (v.config_map is not None or v.secret is not None))
                   for v in pod.spec.volumes):
            return
        try:
            setup_volumes(pod, self.root_dir, self.object_refs, self._allocatable())
        except (VolumeError, OSError) as exc:
            log.info("%s: volumes not refreshed: %s", pod.format(), exc)

    def sync_pod(self, pod: Pod, observed: PodRuntimeStatus, actions: PodActions) -> SyncResult:
        """SyncPod steps 2-7 for ``actions`` computed from ``observed``."""
        result = SyncResult()
        for name, msg in actions.in_backoff.items():
            result.waiting[name] = (reasons.CRASH_LOOP_BACK_OFF, msg)

        # Step 2/3: kill the pod, or the containers not to keep.
        if actions.kill_pod:
            if actions.create_sandbox and observed.sandboxes:
                self._event(pod, NORMAL, reasons.EVENT_SANDBOX_CHANGED,
                            reasons.SANDBOX_CHANGED_MESSAGE)
            self.kill_pod(pod, observed)
            result.killed = [c.name for c in observed.running_containers()]
            if actions.create_sandbox:
                # the old sandbox's exited containers stay for restart counts; GC later
                pass
        else:
            specs = {c.name: c for c in pod.all_containers()}
            futures = [
                self._killer.submit(
                    self.kill_container, pod, cid, specs.get(info.name), None, None,
                    info.reason, info.message,
                )
                for cid, info in actions.containers_to_kill.items()
            ]
            for f in futures:
                f.result()
            result.killed = [i.name for i in actions.containers_to_kill.values()]

        if not actions.create_sandbox and (
            actions.kill_pod
            or (not actions.init_containers_to_start and not actions.containers_to_start
                and not actions.ephemeral_containers_to_start)
        ):
            self._prune_init_containers(pod, observed)
            return result

        # Step 4: the sandbox.
        try:
            volume_paths = setup_volumes(pod, self.root_dir, self.object_refs,
                                         self._allocatable())
        except (VolumeError, OSError) as exc:
            # kubelet waits for volumes before SyncPod (event FailedMount): nothing starts
            msg = f"Unable to attach or mount volumes: {exc}"
            self._event(pod, WARNING, reasons.EVENT_FAILED_MOUNT, msg)
            result.sandbox_error = (reasons.EVENT_FAILED_MOUNT, msg)
            return result
        sandbox_config = generate_pod_sandbox_config(
            pod, actions.attempt, self.node_name, self.pod_logs_dir
        )
        sandbox_id = actions.sandbox_id
        pod_ip = observed.ip
        if actions.create_sandbox:
            try:
                self.pod_cgroups.ensure(pod)  # kubelet's pod container manager, first
            except OSError as exc:
                log.warning("%s: pod cgroup: %s", pod.format(), exc)
            try:
                ensure_log_dir(sandbox_config)
                sandbox_id = self.cri.run_pod_sandbox(sandbox_config)
                failpoints.hit("after-run-sandbox")
            except (CRICallError, OSError) as exc:
                msg = reasons.failed_create_sandbox_message(
                    exc.details if isinstance(exc, CRICallError) else str(exc))
                self._event(pod, WARNING, reasons.EVENT_FAILED_CREATE_POD_SANDBOX, msg)
                result.sandbox_error = (reasons.CREATE_POD_SANDBOX_ERROR, msg)
                return result
            result.created_sandbox = sandbox_id
            try:
                st = self.cri.pod_sandbox_status(sandbox_id)
                pod_ip = st.network.ip
            except CRICallError as exc:
                result.sandbox_error = (reasons.CREATE_POD_SANDBOX_ERROR,
                                        f"Failed to get pod sandbox status: {exc.details}")
                return result
            log.info(kv("Created pod sandbox", pod=pod_ref(pod), podSandboxID=sandbox_id,
                        podIP=pod_ip or None, attempt=actions.attempt))
        etc_hosts = None
        if not pod.spec.host_network:
            hostname, domain = pod_hostname_and_domain(pod)
            etc_hosts = str(write_etc_hosts(pod, self.root_dir, pod_ip, hostname, domain))

        def start(container: Container, kind: str) -> bool:
            err = self.start_container(
                sandbox_id, sandbox_config, pod, container, observed, pod_ip, kind,
                volume_paths, etc_hosts,
            )
            if err is not None:
                result.waiting[container.name] = err
                log.warning(kv("Failed to start container", pod=pod_ref(pod),
                               containerName=container.name, reason=err[0], err=err[1]))
                return False
            result.started.append(container.name)
            return True

        # Step 5: the ephemeral containers never started, first: they never restart, and
        # run even when an init container fails to start.
        for idx in actions.ephemeral_containers_to_start:
            start(pod.spec.ephemeral_containers[idx], CONTAINER_TYPE_EPHEMERAL)

        # Step 6: the init containers (sidecars to (re)start, the next regular one). A
        # sidecar that fails to start is skipped; a regular one stops the sync.
        self._prune_init_containers(pod, observed)
        for idx in actions.init_containers_to_start:
            init = pod.spec.init_containers[idx]
            actions.record_backoff(self.backoff, [init.name])
            if not start(init, CONTAINER_TYPE_INIT) and not is_restartable_init_container(init):
                return result

        # Step 7: the app containers.
        to_start = [pod.spec.containers[i] for i in actions.containers_to_start]
        actions.record_backoff(self.backoff, [c.name for c in to_start])
        for c in to_start:
            start(c, CONTAINER_TYPE_REGULAR)
        return result

    def _prune_init_containers(self, pod: Pod, observed: PodRuntimeStatus) -> None:
        """pruneInitContainersBeforeStart: keep only the newest exited instance of each
        init container."""
        names = {c.name for c in pod.spec.init_containers}
        seen: set[str] = set()
        for c in observed.containers:
            # only stopped instances count: a running sidecar keeps its newest exited one
            if c.name not in names or c.state not in (
                ContainerState.EXITED, ContainerState.UNKNOWN
            ):
                continue
            if c.name in seen and c.state is ContainerState.EXITED:
                self._remove_container(c.id)
            seen.add(c.name)


def container_name_label(c: pb.Container) -> str:
    return c.labels.get(CONTAINER_NAME_LABEL, c.metadata.name)
