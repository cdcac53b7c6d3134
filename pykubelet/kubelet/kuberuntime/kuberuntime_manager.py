"""SyncPod over CRI: the effectful half of kuberuntime, as kuberuntime_manager.go.

``get_pod_status`` builds the observed ``PodRuntimeStatus`` from CRI alone (kubelet's labels
and annotations on sandboxes and containers), so a restarted agent knows everything it
needs: which sandbox is current, each container's restart count and spec hash.
``sync_pod`` carries out ``PodActions`` in SyncPod's order: kill the pod or the
containers to kill, create the sandbox, start the next init container, start the app
containers. ``kill_pod`` stops containers in parallel, each with its grace period (after its
preStop hook), then stops the sandboxes. ``garbage_collect`` keeps the newest instance of
each container name and removes stopped sandboxes nothing needs any more.

The manager decides the order; one container's life is ``kuberuntime_container``'s, a
sandbox's ``kuberuntime_sandbox``'s, garbage collection ``kuberuntime_gc``'s, and starts the
agent died inside ``interrupted_starts``'.
"""

from __future__ import annotations

import logging
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction

from pykubelet import podtrace
from pykubelet.api.types import Container, Pod, is_restartable_init_container
from pykubelet.kubelet.cluster.object_refs import ObjectRefs
from pykubelet.kubelet.cm.pod_container_manager import CgroupfsPodCgroups, PodCgroups
from pykubelet.kubelet.container.runtime_state import (
    ContainerState,
    PodRuntimeStatus,
    SandboxState,
)
from pykubelet.kubelet.cri.runtime_service import CRICallError, ImageService, RuntimeService
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.events.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.kubelet.images.image_manager import ImageManager
from pykubelet.kubelet.kuberuntime.actions import PodActions
from pykubelet.kubelet.kuberuntime.kuberuntime_container import (
    CONTAINER_TYPE_EPHEMERAL,
    CONTAINER_TYPE_INIT,
    CONTAINER_TYPE_REGULAR,
    ContainerRuntime,
)
from pykubelet.kubelet.kuberuntime.kuberuntime_gc import garbage_collect
from pykubelet.kubelet.kuberuntime.kuberuntime_sandbox import SandboxRuntime, pod_ips
from pykubelet.kubelet.kuberuntime.log_symlinks import container_logs_dir
from pykubelet.kubelet.kuberuntime.sandbox_config import (
    generate_pod_sandbox_config,
    pod_hostname_and_domain,
)
from pykubelet.kubelet.kuberuntime.seccomp import SeccompProfileError, seccomp_profile_root
from pykubelet.kubelet.kuberuntime.termination_ordering import TerminationOrdering
from pykubelet.kubelet.network.dns import Configurer
from pykubelet.kubelet.util import failpoints
from pykubelet.kubelet.util.backoff import Backoff
from pykubelet.kubelet.util.logfmt import kv, pod_ref
from pykubelet.kubelet.volumemanager.volumes import (
    VolumeError,
    setup_volumes,
    write_etc_hosts,
)

log = logging.getLogger(__name__)


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
        dns: Configurer | None = None,
    ) -> None:
        self.cri = cri
        self.dns = dns or Configurer(recorder=recorder)
        self.node_name = node_name
        self.root_dir = root_dir
        self.pod_logs_dir = pod_logs_dir
        self.container_logs_dir = container_logs_dir(pod_logs_dir)
        self.memory_capacity = memory_capacity
        # read once: os.cpu_count() reads sysfs with the GIL held, per SyncPod it stalled
        # every thread of a loaded agent (issue 23 item 2)
        self.cpu_capacity = os.cpu_count() or 1
        self.backoff = backoff
        self.images = ImageManager(images, image_backoff, recorder)
        self.containers = ContainerRuntime(
            cri, self.images, root_dir=root_dir, container_logs_dir=self.container_logs_dir,
            memory_capacity=memory_capacity, recorder=recorder,
        )
        self.sandboxes = SandboxRuntime(cri, pod_cgroups or CgroupfsPodCgroups())
        self._killer = ThreadPoolExecutor(max_workers=64, thread_name_prefix="kill")

    @property
    def object_refs(self) -> ObjectRefs | None:
        """The ConfigMaps and Secrets pods use (set when the node has a control plane)."""
        return self.containers.object_refs

    @object_refs.setter
    def object_refs(self, refs: ObjectRefs | None) -> None:
        self.containers.object_refs = refs

    # ------------------------------------------------------------------ observed state
    def get_pod_status(self, uid: str, name: str = "", namespace: str = "") -> PodRuntimeStatus:
        """kubelet's GetPodStatus: sandboxes and containers labelled with the pod's uid."""
        sandboxes, name, namespace = self.sandboxes.statuses(uid, name, namespace)
        return PodRuntimeStatus(
            uid=uid, name=name, namespace=namespace, ips=pod_ips(sandboxes),
            sandboxes=sandboxes, containers=self.containers.statuses(uid),
        )

    def start_in_flight(self, observed: PodRuntimeStatus, now: float) -> float | None:
        """When to look again at a pod whose start the previous agent died inside, or None
        (``InterruptedStarts.start_in_flight``)."""
        return self.containers.starts.start_in_flight(observed, now)

    def remove_leftover_created(self, observed: PodRuntimeStatus) -> bool:
        """Undo starts a crash interrupted (``InterruptedStarts.remove_leftovers``)."""
        return self.containers.starts.remove_leftovers(
            observed, self.cri, self.containers.remove_container)

    # ------------------------------------------------------------------ kill
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
            ann_grace = self.containers.annotated_grace(c.id)
            futures.append(
                self._killer.submit(
                    self.containers.kill_container, pod, c.id, specs.get(c.name),
                    grace_override, ann_grace, "", "", ordering,
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
                    self.sandboxes.stop(s.id)
                except CRICallError as exc:
                    if not exc.not_found:
                        errors.append(exc)
        if errors:
            raise RuntimeError(f"{reasons.KILL_POD_SANDBOX_ERROR}: {errors[0]}") from errors[0]
        failpoints.hit("after-kill-pod")

    def remove_pod(self, observed: PodRuntimeStatus) -> None:
        """Remove every container and sandbox of a pod that is gone for good."""
        first: CRICallError | None = None
        for c in observed.containers:
            try:
                self.containers.remove_container(c.id)
            except CRICallError as exc:
                log.warning("removing container %s (%s): %s", c.id, c.name, exc.details)
                first = first or exc
        for s in observed.sandboxes:
            try:
                self.sandboxes.remove(s.id)
            except CRICallError as exc:
                if not exc.not_found:
                    log.warning("removing sandbox %s: %s", s.id, exc.details)
                    first = first or exc
        if first is not None:
            raise first  # the pod worker tries again

    # ------------------------------------------------------------------ GC
    def garbage_collect(self, observed: PodRuntimeStatus) -> None:
        """The pod's container GC (``kuberuntime_gc``)."""
        garbage_collect(self.cri, observed, self.containers.remove_container)

    # ------------------------------------------------------------------ SyncPod
    def _allocatable(self) -> dict[str, Fraction]:
        """The node's resources, for the downward API's limits a container does not set."""
        try:
            disk = shutil.disk_usage(self.root_dir).total
        except OSError:
            disk = 0
        return {"cpu": Fraction(self.cpu_capacity), "memory": Fraction(self.memory_capacity),
                "ephemeral-storage": Fraction(disk)}

    def refresh_object_volumes(self, pod: Pod) -> None:
        """Bring a running pod's configMap, secret, downwardAPI and projected volumes up to
        date (kubelet resyncs them so a changed ConfigMap, or a label, reaches the files its
        containers read)."""
        if not any(v.downward_api is not None or v.projected is not None
                   or (self.containers.object_refs is not None
                       and (v.config_map is not None or v.secret is not None))
                   for v in pod.spec.volumes):
            return
        try:
            setup_volumes(pod, self.root_dir, self.containers.object_refs, self._allocatable())
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
                self.containers.event(pod, NORMAL, reasons.EVENT_SANDBOX_CHANGED,
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
                    self.containers.kill_container, pod, cid, specs.get(info.name), None, None,
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
            self.containers.prune_init_containers(pod, observed)
            return result

        # Step 4: the sandbox.
        try:
            volume_paths = setup_volumes(pod, self.root_dir, self.containers.object_refs,
                                         self._allocatable())
        except (VolumeError, OSError) as exc:
            # kubelet waits for volumes before SyncPod (event FailedMount): nothing starts
            msg = f"Unable to attach or mount volumes: {exc}"
            self.containers.event(pod, WARNING, reasons.EVENT_FAILED_MOUNT, msg)
            result.sandbox_error = (reasons.EVENT_FAILED_MOUNT, msg)
            return result
        try:
            sandbox_config = generate_pod_sandbox_config(
                pod, actions.attempt, self.node_name, self.pod_logs_dir, self.dns,
                seccomp_profile_root=seccomp_profile_root(self.root_dir),
            )
        except (OSError, SeccompProfileError) as exc:
            # GetPodDNS could not read the node's resolv.conf, or a Localhost seccomp profile
            # names no file: no sandbox with a guess
            msg = f'GeneratePodSandboxConfig for pod "{pod.name}_{pod.namespace}({pod.uid})" ' \
                  f"failed: {exc}"
            result.sandbox_error = (reasons.CREATE_POD_SANDBOX_ERROR, msg)
            return result
        sandbox_id = actions.sandbox_id
        pod_ip = observed.ip
        if actions.create_sandbox:
            try:
                podtrace.stage("sync", pod.uid)
                sandbox_id = self.sandboxes.run(pod, sandbox_config)
            except (CRICallError, OSError) as exc:
                msg = reasons.failed_create_sandbox_message(
                    exc.details if isinstance(exc, CRICallError) else str(exc))
                self.containers.event(pod, WARNING, reasons.EVENT_FAILED_CREATE_POD_SANDBOX, msg)
                result.sandbox_error = (reasons.CREATE_POD_SANDBOX_ERROR, msg)
                return result
            result.created_sandbox = sandbox_id
            podtrace.stage("sandbox_ready", pod.uid)
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
            hostname, domain = pod_hostname_and_domain(pod, self.dns.cluster_domain)
            etc_hosts = str(write_etc_hosts(pod, self.root_dir, pod_ip, hostname, domain))

        def start(container: Container, kind: str) -> bool:
            err = self.containers.start_container(
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
        self.containers.prune_init_containers(pod, observed)
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
