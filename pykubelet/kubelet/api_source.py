"""The pods the API server binds to this node: kubelet's "api" config source
(pkg/kubelet/config/apiserver.go, a reflector over ``spec.nodeName=<node>``).

Added pods go to the agent's ``handle_pod_additions``, changed ones (a new image, a
``deletionTimestamp``) to ``handle_pod_updates``, vanished ones to ``handle_pod_removes``;
after a relist (the first one, or one after 410 Gone) the whole set is handed over with
``set_source_pods`` so nothing missed while disconnected stays running. Mirror pods (the
API's copies of this node's static pods) are not run: they belong to ``MirrorPods``.
The informer resumes from its last resourceVersion when the control plane comes back; the
pods keep running meanwhile.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pykubelet.api.errors import APIError
from pykubelet.api.manifest import decode_api_pod
from pykubelet.api.types import Pod
from pykubelet.client.informer import Informer
from pykubelet.client.rest import PODS, RESTClient
from pykubelet.kubelet.pod_manager import API_SOURCE

if TYPE_CHECKING:
    from pykubelet.kubelet.agent import Kubelet

log = logging.getLogger(__name__)

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def is_mirror(obj: dict[str, Any]) -> bool:
    return MIRROR_ANNOTATION in ((obj.get("metadata") or {}).get("annotations") or {})


class APIPodSource:
    def __init__(self, client: RESTClient, node_name: str, kubelet: Kubelet) -> None:
        self.kubelet = kubelet
        self.informer = Informer(
            client, PODS, field_selector=f"spec.nodeName={node_name}",
            on_add=self._added, on_update=self._updated, on_delete=self._deleted,
            on_sync=self._synced, name="pods",
        )

    def start(self) -> None:
        self.informer.start()

    def stop(self) -> None:
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
