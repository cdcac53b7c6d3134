"""Mirror pods: the API server's read-only copies of this node's static pods, so users see
them with ``kubectl get pods`` (kubelet's mirror_client and its syncPod step).

Each static pod has a mirror pod of the same name and namespace, bound to this node,
annotated ``kubernetes.io/config.mirror`` with the static pod's hash and owned by the
Node. A mirror whose hash no longer matches (the manifest changed) or that is being
deleted is replaced; a mirror with no static pod behind it is deleted. The static pod's
status is written to its mirror (``mirror_of``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pykubelet.api.decode import encode_pod
from pykubelet.api.types import Pod, PodStatus
from pykubelet.client.informer import Informer
from pykubelet.client.rest import PODS, ClientError, RESTClient, StatusError
from pykubelet.kubelet.cluster.apisource import MIRROR_ANNOTATION, is_mirror
from pykubelet.kubelet.pod.static_pods import CONFIG_HASH_ANNOTATION

log = logging.getLogger(__name__)


def mirror_object(pod: Pod, node_uid: str) -> dict[str, Any]:
    """The mirror pod to create for a static pod."""
    obj = encode_pod(Pod(metadata=pod.metadata, spec=pod.spec, status=PodStatus()))
    meta = obj["metadata"]
    for f in ("uid", "resourceVersion", "creationTimestamp", "selfLink", "generation"):
        meta.pop(f, None)
    annotations = dict(meta.get("annotations") or {})
    annotations[MIRROR_ANNOTATION] = pod.metadata.annotations.get(CONFIG_HASH_ANNOTATION,
                                                                  pod.uid)
    meta["annotations"] = annotations
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node",
                                    "name": pod.spec.node_name, "uid": node_uid,
                                    "controller": True}]
    obj.pop("status", None)
    return obj


class MirrorPods:
    def __init__(self, client: RESTClient, informer: Informer,
                 static_pods: Callable[[], list[Pod]], node_uid: Callable[[], str]) -> None:
        self.client = client
        self.informer = informer
        self.static_pods = static_pods
        self.node_uid = node_uid
        self._mirrors: dict[str, tuple[str, str]] = {}  # static uid -> (namespace, name)

    def mirror_of(self, static_uid: str) -> tuple[str, str] | None:
        return self._mirrors.get(static_uid)

    def sync(self) -> None:
        """Create, replace or delete mirror pods so they match the static pods."""
        if not self.informer.has_synced or not self.node_uid():
            return  # a mirror pod is owned by the Node (NodeRestriction checks its UID)
        wanted: dict[str, Pod] = {f"{p.namespace}/{p.name}": p for p in self.static_pods()}
        self._mirrors = {p.uid: (p.namespace, p.name) for p in wanted.values()}
        for key, pod in wanted.items():
            existing = self.informer.get(key)
            want_hash = pod.metadata.annotations.get(CONFIG_HASH_ANNOTATION, pod.uid)
            try:
                if existing is None:
                    self.client.create(PODS, mirror_object(pod, self.node_uid()), pod.namespace)
                    log.info("mirror pod %s created", key)
                    continue
                meta = existing.get("metadata") or {}
                if not is_mirror(existing):
                    log.warning("static pod %s: a pod of that name exists in the API and is "
                                "not its mirror; leaving it", key)
                    continue
                stale = (meta.get("annotations") or {}).get(MIRROR_ANNOTATION) != want_hash
                if stale or meta.get("deletionTimestamp"):
                    self.client.delete(PODS, pod.name, pod.namespace, grace_period_seconds=0,
                                       preconditions={"uid": meta.get("uid", "")})
                    log.info("mirror pod %s replaced", key)
            except StatusError as exc:
                if exc.code not in (404, 409):
                    log.warning("mirror pod %s: %s", key, exc.message)
            except ClientError as exc:
                log.warning("mirror pod %s: %s", key, exc)
                return
        for obj in self.informer.items():
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            if is_mirror(obj) and key not in wanted:
                try:
                    self.client.delete(PODS, meta["name"], meta["namespace"],
                                       grace_period_seconds=0,
                                       preconditions={"uid": meta.get("uid", "")})
                    log.info("mirror pod %s deleted (its static pod is gone)", key)
                except (StatusError, ClientError) as exc:
                    log.debug("mirror pod %s: %s", key, exc)
