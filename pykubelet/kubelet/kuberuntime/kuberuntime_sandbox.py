"""A pod's sandboxes over CRI, as kuberuntime_sandbox.go: what the runtime shows of them
(read back from kubelet's labels, newest first, and the pod's IPs from the newest ready
one), creating one (the pod cgroup first, then its log directory, then RunPodSandbox),
stopping one (one StopPodSandbox at a time per sandbox) and removing one.
"""

from __future__ import annotations

import logging
import threading

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import Pod
from pykubelet.kubelet.cm.pod_container_manager import PodCgroups
from pykubelet.kubelet.container.runtime_state import SandboxRuntimeStatus, SandboxState, secs
from pykubelet.kubelet.cri.runtime_service import RuntimeService, with_statuses
from pykubelet.kubelet.kuberuntime.labels import (
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)
from pykubelet.kubelet.kuberuntime.sandbox_config import ensure_log_dir
from pykubelet.kubelet.util import failpoints

log = logging.getLogger(__name__)


class SandboxRuntime:
    """Sandboxes of this node's pods, over the CRI runtime service."""

    def __init__(self, cri: RuntimeService, pod_cgroups: PodCgroups) -> None:
        self.cri = cri
        self.pod_cgroups = pod_cgroups
        # one StopPodSandbox at a time per sandbox: two at once race in CNI DEL (the
        # reference bridge plugin fails the second with "no such device")
        self._stopping: dict[str, threading.Lock] = {}
        self._stopping_guard = threading.Lock()

    def statuses(
        self, uid: str, name: str, namespace: str
    ) -> tuple[list[SandboxRuntimeStatus], str, str]:
        """The pod's sandboxes, newest first, and its name and namespace (as given, else
        from the sandboxes' labels: an orphan's spec is gone)."""
        sandboxes: list[SandboxRuntimeStatus] = []
        for s, sandbox_st in with_statuses(self.cri.list_pod_sandbox({POD_UID_LABEL: uid}),
                                           self.cri.pod_sandbox_status):
            sb = SandboxRuntimeStatus(
                id=sandbox_st.id,
                state=(SandboxState.READY if sandbox_st.state == pb.SANDBOX_READY
                       else SandboxState.NOT_READY),
                attempt=sandbox_st.metadata.attempt,
                created_at=secs(sandbox_st.created_at),
                ip=sandbox_st.network.ip,
                additional_ips=[a.ip for a in sandbox_st.network.additional_ips],
                host_network=sandbox_st.linux.namespaces.options.network == pb.NODE,
            )
            sandboxes.append(sb)
            name = name or s.labels.get(POD_NAME_LABEL, "")
            namespace = namespace or s.labels.get(POD_NAMESPACE_LABEL, "")
        sandboxes.sort(key=lambda s: s.created_at, reverse=True)
        return sandboxes, name, namespace

    def run(self, pod: Pod, sandbox_config: pb.PodSandboxConfig) -> str:
        """createPodSandbox: the pod cgroup (kubelet's pod container manager, first; a
        failure is only logged), the log directory, then RunPodSandbox. Raises
        CRICallError or OSError."""
        try:
            self.pod_cgroups.ensure(pod)
        except OSError as exc:
            log.warning("%s: pod cgroup: %s", pod.format(), exc)
        ensure_log_dir(sandbox_config)
        sandbox_id = self.cri.run_pod_sandbox(sandbox_config)
        failpoints.hit("after-run-sandbox")
        return sandbox_id

    def stop(self, sandbox_id: str) -> None:
        with self._stopping_guard:
            stopping = self._stopping.setdefault(sandbox_id, threading.Lock())
        with stopping:
            self.cri.stop_pod_sandbox(sandbox_id)

    def remove(self, sandbox_id: str) -> None:
        """Stop (CNI DEL) and remove a sandbox of a pod that is gone for good."""
        self.stop(sandbox_id)
        self.cri.remove_pod_sandbox(sandbox_id)
        with self._stopping_guard:
            self._stopping.pop(sandbox_id, None)


def pod_ips(sandboxes: list[SandboxRuntimeStatus]) -> list[str]:
    """determinePodSandboxIPs: the newest sandbox's IPs while it is ready."""
    if sandboxes and sandboxes[0].state is SandboxState.READY and sandboxes[0].ip:
        return [sandboxes[0].ip, *sandboxes[0].additional_ips]
    return []
