"""One container's life over CRI, as kuberuntime_container.go: its observed statuses
(read back from kubelet's labels and annotations, with the termination message from the
file behind terminationMessagePath or the log's tail), starting it (image, config, create,
start, the legacy log symlink, postStart), killing it (preStop within the grace period,
sidecars in turn, StopContainer), removing it, and pruning old init container instances.

Starts are bracketed by a marker file (``interrupted_starts``), so a restarted agent can tell
a start it died inside.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from pykubelet import podtrace
from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import Container, EphemeralContainer, Pod
from pykubelet.kubelet.cluster.object_refs import ObjectRefs
from pykubelet.kubelet.container.hashing import hash_container_hex
from pykubelet.kubelet.container.runtime_state import (
    ContainerRuntimeStatus,
    ContainerState,
    PodRuntimeStatus,
    secs,
)
from pykubelet.kubelet.cri.runtime_service import CRICallError, RuntimeService, with_statuses
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.events.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.kubelet.images.image_manager import ImageManager
from pykubelet.kubelet.kuberuntime.actions import bounded_grace, termination_grace_period
from pykubelet.kubelet.kuberuntime.container_config import (
    ContainerConfigError,
    generate_container_config,
)
from pykubelet.kubelet.kuberuntime.interrupted_starts import InterruptedStarts
from pykubelet.kubelet.kuberuntime.labels import (
    CONTAINER_NAME_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    ContainerLabelInfo,
    parse_container_labels,
)
from pykubelet.kubelet.kuberuntime.log_symlinks import (
    create_log_symlink,
    log_symlink_path,
    remove_log_symlink,
)
from pykubelet.kubelet.kuberuntime.seccomp import seccomp_profile_root
from pykubelet.kubelet.kuberuntime.termination_ordering import TerminationOrdering
from pykubelet.kubelet.logs.container_logs import (
    FALLBACK_LOG_BYTES,
    FALLBACK_LOG_LINES,
    MAX_TERMINATION_MESSAGE,
    tail_cri_log,
)
from pykubelet.kubelet.util import failpoints
from pykubelet.kubelet.util.logfmt import kv, pod_ref
from pykubelet.kubelet.volumemanager.volumes import ensure_termination_log, termination_log_path

log = logging.getLogger(__name__)

DEFAULT_GRACE_S = 30
MIN_GRACE_S = 2  # kuberuntime minimumGracePeriodInSeconds
CONTAINER_TYPE_INIT = "init"
CONTAINER_TYPE_REGULAR = "regular"
CONTAINER_TYPE_EPHEMERAL = "ephemeral"

_CONTAINER_STATES = {
    pb.CONTAINER_CREATED: ContainerState.CREATED,
    pb.CONTAINER_RUNNING: ContainerState.RUNNING,
    pb.CONTAINER_EXITED: ContainerState.EXITED,
    pb.CONTAINER_UNKNOWN: ContainerState.UNKNOWN,
}


class ContainerRuntime:
    """Containers of this node's pods, over the CRI runtime service."""

    def __init__(
        self,
        cri: RuntimeService,
        images: ImageManager,
        *,
        root_dir: str,
        container_logs_dir: Path,
        memory_capacity: int,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.cri = cri
        self.images = images
        self.root_dir = root_dir
        self.container_logs_dir = container_logs_dir
        self.memory_capacity = memory_capacity
        self.recorder = recorder
        self.runtime_type = cri.version().runtime_name or "cri"
        # the ConfigMaps and Secrets pods use (set when the node has a control plane)
        self.object_refs: ObjectRefs | None = None
        self.starts = InterruptedStarts(root_dir)
        # container id -> io.kubernetes.pod.terminationGracePeriod, for pods whose spec
        # is gone (orphans after a restart), as kubelet reads it back from annotations
        self._annotated_grace: dict[str, int] = {}

    def event(self, pod: Pod | None, type_: str, reason: str, msg: str, ctr: str = "") -> None:
        if self.recorder is not None and isinstance(pod, Pod):
            self.recorder.event(pod, type_, reason, msg, ctr)

    def annotated_grace(self, container_id: str) -> int | None:
        """The grace period the container's annotations recorded (read by ``statuses``)."""
        return self._annotated_grace.get(container_id)

    def statuses(self, uid: str) -> list[ContainerRuntimeStatus]:
        """getPodContainerStatuses: the pod's containers, from kubelet's labels."""
        sel = {POD_UID_LABEL: uid}
        containers: list[ContainerRuntimeStatus] = []
        for c, st in with_statuses(self.cri.list_containers(label_selector=sel),
                                   self.cri.container_status):
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
                    created_at=secs(st.created_at),
                    started_at=secs(st.started_at),
                    finished_at=secs(st.finished_at),
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
        return containers

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
            self.event(pod, NORMAL, reasons.EVENT_KILLING,
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

    def remove_container(self, cid: str) -> None:
        """removeContainer: RemoveContainer, then its legacy log symlink."""
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
        self.starts.forget(cid)
        if link is not None:
            remove_log_symlink(link)  # removeContainerLog

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
                self.event(pod, WARNING, reasons.EVENT_FAILED, f"Error: {msg}", container.name)
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
                seccomp_profile_root=seccomp_profile_root(self.root_dir),
            )
        except (ContainerConfigError, OSError) as exc:
            self.event(pod, WARNING, reasons.EVENT_FAILED, f"Error: {exc}", container.name)
            return reasons.CREATE_CONTAINER_CONFIG_ERROR, str(exc)
        try:
            Path(sandbox_config.log_directory, container.name).mkdir(parents=True, exist_ok=True)
            cid = self.cri.create_container(sandbox_id, cfg, sandbox_config)
            podtrace.stage("container_created", pod.uid, container=container.name)
        except CRICallError as exc:
            self.event(pod, WARNING, reasons.EVENT_FAILED, f"Error: {exc.details}",
                        container.name)
            return reasons.CREATE_CONTAINER_ERROR, exc.details
        self.event(pod, NORMAL, reasons.EVENT_CREATED,
                    reasons.created_container_message(container.name), container.name)
        failpoints.hit("after-create-container")
        marker = self.starts.marker(pod.uid, cid)
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            self.cri.start_container(cid)
            podtrace.stage("container_started", pod.uid, container=container.name)
        except CRICallError as exc:
            self.event(pod, WARNING, reasons.EVENT_FAILED, f"Error: {exc.details}",
                        container.name)
            return reasons.RUN_CONTAINER_ERROR, exc.details
        finally:
            marker.unlink(missing_ok=True)
        self.event(pod, NORMAL, reasons.EVENT_STARTED,
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

    def prune_init_containers(self, pod: Pod, observed: PodRuntimeStatus) -> None:
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
                self.remove_container(c.id)
            seen.add(c.name)
