"""The pods the API server binds to this node: kubelet's "api" config source
(pkg/kubelet/config/apiserver.go, a reflector over ``spec.nodeName=<node>``).

Added pods go to the agent's ``handle_pod_additions``, changed ones (a new image, a
``deletionTimestamp``) to ``handle_pod_updates``, vanished ones to ``handle_pod_removes``;
after a relist (the first one, or one after 410 Gone) the whole set is handed over with
``set_source_pods`` so nothing missed while disconnected stays running. Mirror pods (the
API's copies of this node's static pods) are not run: they belong to ``MirrorPods``.
The informer resumes from its last resourceVersion when the control plane comes back; the
pods keep running meanwhile.

As kubelet's NewSourceApiserver, the pods are not listed before the agent has read its own
Node (``node_synced``): admission judges a pod's nodeSelector by the Node's labels in the
API, and a list handed over before them was judged by the config's labels alone, so a
restarted agent rejected (and stopped) running pods that select a label added with
``kubectl label node`` (kubernetes/kubernetes#92067).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from pykubelet import podtrace
from pykubelet.api.errors import APIError
from pykubelet.api.manifest import decode_api_pod
from pykubelet.api.types import Pod
from pykubelet.client.informer import Informer, strip_managed_fields
from pykubelet.client.rest import PODS, RESTClient
from pykubelet.kubelet.pod.pod_manager import API_SOURCE

if TYPE_CHECKING:
    from pykubelet.kubelet.agent import Kubelet

log = logging.getLogger(__name__)

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
WAIT_FOR_NODE_SYNC_PERIOD_S = 1.0  # kubelet's WaitForAPIServerSyncPeriod


def is_mirror(obj: dict[str, Any]) -> bool:
    return MIRROR_ANNOTATION in ((obj.get("metadata") or {}).get("annotations") or {})


class APIPodSource:
    def __init__(self, client: RESTClient, node_name: str, kubelet: Kubelet,
                 node_synced: threading.Event | None = None) -> None:
        self.kubelet = kubelet
        self.node_synced = node_synced
        self._stop = threading.Event()
        self._waiter: threading.Thread | None = None
        self.informer = Informer(
            client, PODS, field_selector=f"spec.nodeName={node_name}",
            on_add=self._added, on_update=self._updated, on_delete=self._deleted,
            on_sync=self._synced, name="pods", transform=strip_managed_fields,
        )

    def start(self) -> None:
        """Watch the API's pods once the node has been read (at once without a gate)."""
        if self.node_synced is None or self.node_synced.is_set():
            self.informer.start()
            return
        self._waiter = threading.Thread(target=self._start_after_node_sync,
                                        name="pods-wait-node", daemon=True)
        self._waiter.start()

    def _start_after_node_sync(self) -> None:
        assert self.node_synced is not None
        log.info("Waiting for node sync before watching apiserver pods")
        while not self.node_synced.wait(WAIT_FOR_NODE_SYNC_PERIOD_S):
            if self._stop.is_set():
                return
            log.debug("node sync has not completed yet")
        if self._stop.is_set():
            return
        log.info("Watching apiserver")
        self.informer.start()

    def stop(self) -> None:
        self._stop.set()
        if self._waiter is not None:
            self._waiter.join(2)
        self.informer.stop()

    def api_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.informer.get(f"{namespace}/{name}")

    @staticmethod
    def _decode(obj: dict[str, Any]) -> Pod | None:
        try:
            return decode_api_pod(obj)
        except APIError as exc:
            meta = obj.get("metadata") or {}
            log.error("pod %s/%s from the API cannot be read: %s", meta.get("namespace"),
                      meta.get("name"), exc)
            return None

    def _added(self, obj: dict[str, Any]) -> None:
        if is_mirror(obj) or self.informer.has_synced is False:
            return  # the first list is handed over whole in _synced
        pod = self._decode(obj)
        if pod is not None:
            log.info("SyncLoop ADD source=api pod=%s/%s", pod.namespace, pod.name)
            podtrace.stage("seen", pod.uid)
            self.kubelet.handle_pod_additions([pod])

    def _updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if is_mirror(new):
            return
        pod = self._decode(new)
        if pod is None:
            return
        if pod.metadata.deletion_timestamp and not (old.get("metadata") or {}).get(
                "deletionTimestamp"):
            log.info("SyncLoop DELETE source=api pod=%s/%s grace=%ss", pod.namespace, pod.name,
                     pod.metadata.deletion_grace_period_seconds)
        else:
            log.debug("SyncLoop UPDATE source=api pod=%s/%s", pod.namespace, pod.name)
        if not self.kubelet.pod_manager.has_pod(pod.uid):
            podtrace.stage("seen", pod.uid)
            self.kubelet.handle_pod_additions([pod])
        else:
            self.kubelet.handle_pod_updates([pod])

    def _deleted(self, obj: dict[str, Any]) -> None:
        if is_mirror(obj):
            return
        meta = obj.get("metadata") or {}
        log.info("SyncLoop REMOVE source=api pod=%s/%s", meta.get("namespace"), meta.get("name"))
        self.kubelet.handle_pod_removes([meta.get("uid", "")])

    def _synced(self, objs: list[dict[str, Any]]) -> None:
        pods = [p for p in (self._decode(o) for o in objs if not is_mirror(o)) if p is not None]
        self.kubelet.set_source_pods(pods, API_SOURCE)
        known = [p for p in pods if self.kubelet.pod_manager.has_pod(p.uid)]
        self.kubelet.handle_pod_updates(known)
