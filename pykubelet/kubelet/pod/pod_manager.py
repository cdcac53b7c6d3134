"""The pods this node should run, by UID: kubelet's pod manager (pkg/kubelet/pod).

Pod sources (the static-pod directory today, the API server next) hand their pods to the
agent's entry points; those put the admitted ones here, and every other part asks here
for "the pod with this UID" (a PLEG event, a probe change, housekeeping deciding what is
an orphan). Pods admission refused are kept apart: they are listed with their Failed
status but never run. The mapping of static pods to their mirror pods in the API server
will live here too.
"""

from __future__ import annotations

import threading

from pykubelet.api.types import Pod
from pykubelet.kubelet.status.generate import CONFIG_SOURCE_ANNOTATION

API_SOURCE = "api"  # kubelet's ApiserverSource
FILE_SOURCE = "file"  # kubelet's FileSource (static pods)


def pod_source(pod: Pod) -> str:
    """Which source a pod came from: its kubernetes.io/config.source annotation, else api."""
    return pod.metadata.annotations.get(CONFIG_SOURCE_ANNOTATION, API_SOURCE)


def pods_differ_semantically(existing: Pod, ref: Pod) -> bool:
    """config.go's podsDifferSemantically: what an update must change to be one (spec,
    labels, annotations, deletion timestamp and grace). Anything else, the status above
    all, is a reconcile: the API's echo of this node's own status patches must not start
    another SyncPod of the pod (kubelet is the status's source of truth)."""
    a, b = existing.metadata, ref.metadata
    return not (
        existing.spec == ref.spec
        and a.labels == b.labels
        and a.annotations == b.annotations
        and a.deletion_timestamp == b.deletion_timestamp
        and a.deletion_grace_period_seconds == b.deletion_grace_period_seconds
    )


class PodManager:
    """Desired (admitted) pods and rejected pods, by UID; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, Pod] = {}
        self._rejected: dict[str, Pod] = {}

    def add_pod(self, pod: Pod) -> None:
        """Add or replace (an update) an admitted pod."""
        with self._lock:
            self._pods[pod.uid] = pod

    def update_pod(self, pod: Pod) -> Pod | None:
        """Replace a known pod; the pod it replaced, None if the pod is not known (nothing
        changes)."""
        with self._lock:
            old = self._pods.get(pod.uid)
            if old is not None:
                self._pods[pod.uid] = pod
            return old

    def reject_pod(self, pod: Pod) -> None:
        with self._lock:
            self._rejected[pod.uid] = pod

    def remove_pod(self, uid: str) -> tuple[Pod | None, Pod | None]:
        """Forget the pod; returns (the admitted pod, the rejected pod), either or both None."""
        with self._lock:
            return self._pods.pop(uid, None), self._rejected.pop(uid, None)

    def get_pod(self, uid: str) -> Pod | None:
        with self._lock:
            return self._pods.get(uid)

    def has_pod(self, uid: str) -> bool:
        with self._lock:
            return uid in self._pods

    def pods(self) -> dict[str, Pod]:
        """The admitted pods by UID (a copy)."""
        with self._lock:
            return dict(self._pods)

    def uids(self) -> set[str]:
        with self._lock:
            return set(self._pods)

    def all_pods(self) -> list[Pod]:
        """Admitted pods, then rejected ones: every pod a /pods listing shows."""
        with self._lock:
            return [*self._pods.values(), *self._rejected.values()]

    def source_uids(self, source: str) -> set[str]:
        """UIDs of the pods (admitted or rejected) that came from ``source``."""
        with self._lock:
            return {u for u, p in [*self._pods.items(), *self._rejected.items()]
                    if pod_source(p) == source}
