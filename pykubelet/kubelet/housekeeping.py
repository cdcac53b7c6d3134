"""Housekeeping: clean up after pods this node no longer wants (kubelet's HandlePodCleanups).

Every couple of seconds: pods the runtime still holds for this node but no source wants
(orphans after a restart of the agent, static pods whose manifest went while it was down)
are handed to their pod worker to be killed and removed; pod directories and cgroups of
pods gone from both the desired set and the runtime are removed; restart and image-pull
back-off entries that expired are dropped; probe results and /var/log/containers links
of containers the last relist no longer saw are forgotten; and, every image GC period,
unused images go when the image filesystem is too full.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pykubelet.kubelet.cm.pod_container_manager import PodCgroups
from pykubelet.kubelet.cri.runtime_service import CRICallError, RuntimeService
from pykubelet.kubelet.images.image_gc_manager import ImageGCManager
from pykubelet.kubelet.kuberuntime.labels import NODE_NAME_ANNOTATION, POD_UID_LABEL
from pykubelet.kubelet.kuberuntime.log_symlinks import remove_dangling
from pykubelet.kubelet.pleg.generic import GenericPLEG
from pykubelet.kubelet.pod.pod_manager import PodManager
from pykubelet.kubelet.pod_workers import PodWorkers
from pykubelet.kubelet.prober.prober_manager import ProberManager
from pykubelet.kubelet.util import failpoints
from pykubelet.kubelet.util.backoff import Backoff
from pykubelet.kubelet.util.periodic import Periodic
from pykubelet.kubelet.volumemanager.volumes import teardown_pod_dir

log = logging.getLogger(__name__)

HOUSEKEEPING_PERIOD_S = 2.0


@dataclass
class OrphanPod:
    """A pod the runtime holds but this node no longer wants (no spec known)."""

    uid: str
    name: str = ""
    namespace: str = ""


class Housekeeping:
    """The periodic clean-up pass and the thread that runs it."""

    def __init__(
        self,
        *,
        runtime: RuntimeService,
        node_name: str,
        root_dir: str,
        container_logs_dir: Path,
        pod_manager: PodManager,
        workers: PodWorkers,
        pleg: GenericPLEG,
        prober: ProberManager,
        backoffs: list[Backoff],
        pod_cgroups: PodCgroups,
        image_gc: ImageGCManager | None = None,
        on_pass: Callable[[], None] = lambda: None,
        period: float = HOUSEKEEPING_PERIOD_S,
    ) -> None:
        self.runtime = runtime
        self.node_name = node_name
        self.root_dir = root_dir
        self.container_logs_dir = container_logs_dir
        self.pod_manager = pod_manager
        self.workers = workers
        self.pleg = pleg
        self.prober = prober
        self.backoffs = backoffs
        self.pod_cgroups = pod_cgroups
        self.image_gc = image_gc
        self.on_pass = on_pass
        self._loop = Periodic("housekeeping", self.cleanup, period, expected=(CRICallError,))

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def cleanup(self) -> None:
        """One pass of HandlePodCleanups."""
        failpoints.wedge("wedge-sync-loop")  # tests: a sync loop that stops here for good
        self.on_pass()
        wanted = self.pod_manager.uids()
        busy = self.workers.known_uids()
        in_runtime: set[str] = set()
        for s in self.runtime.list_pod_sandbox():
            uid = s.labels.get(POD_UID_LABEL)
            if uid:
                in_runtime.add(uid)
            if not uid or uid in wanted or uid in busy:
                continue
            if s.annotations.get(NODE_NAME_ANNOTATION) != self.node_name:
                continue  # another agent's pod on a shared runtime
            log.info("cleaning up orphaned pod %s (%s)", uid, s.metadata.name)
            self.workers.kill_pod(OrphanPod(uid, s.metadata.name, s.metadata.namespace))
        self._remove_orphaned_pod_dirs(busy | in_runtime)
        for backoff in self.backoffs:
            backoff.gc()
        snap = self.pleg.snapshot
        if snap is not None:
            self.prober.forget_containers(set(snap.containers), snap.at)
            # legacy log links whose log and container are both gone
            remove_dangling(self.container_logs_dir, set(snap.containers))
        if self.image_gc is not None:
            self.image_gc.maybe_collect()  # every GC period, by disk thresholds

    def _remove_orphaned_pod_dirs(self, in_use: set[str]) -> None:
        """cleanupOrphanedPodDirs: directories of pods gone from both the desired set and
        the runtime (e.g. removed while the agent was down, runtime state lost)."""
        pods_dir = Path(self.root_dir) / "pods"
        if not pods_dir.is_dir():
            return
        for d in pods_dir.iterdir():
            uid = d.name
            if self.pod_manager.has_pod(uid):
                continue
            if uid in in_use or self.workers.is_known(uid):
                continue
            log.info("removing orphaned pod directory %s", d)
            teardown_pod_dir(self.root_dir, uid)
            self.pod_cgroups.remove(uid)
