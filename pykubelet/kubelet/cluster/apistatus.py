"""What the agent writes back to the API server: pod status, the final delete of a pod
whose graceful deletion it carried out, its events, and mirror pods for its static pods
(kubelet's status manager sync, mirror_client and event sink).

Pod status goes to ``pods/<name>/status`` as a merge patch of the fields the kubelet owns,
with the pod's UID as a precondition (a pod deleted and re-created under the same name is
never written with the old one's status); conditions the kubelet does not own
(``PodScheduled``, ``DisruptionTarget``, readiness gates set by others) are kept, as
kubelet's generateAPIPodStatus keeps them. When a pod being deleted has stopped, its final
status is written and then the pod is deleted with grace 0 (the last step of graceful
deletion, which only the node takes). A static pod's status is written to its mirror pod.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from pykubelet import podtrace
from pykubelet.api.decode import encode
from pykubelet.api.types import Pod
from pykubelet.client.rest import EVENTS, MERGE_PATCH, PODS, ClientError, RESTClient, StatusError
from pykubelet.kubelet.status.status_manager import VersionedPodStatus

log = logging.getLogger(__name__)

KUBELET_CONDITIONS = frozenset({"PodReadyToStartContainers", "Initialized", "Ready",
                                "ContainersReady"})
# the status fields the kubelet computes; the rest (nominatedNodeName, ...) is others'
KUBELET_STATUS_FIELDS = ("phase", "conditions", "message", "reason", "hostIP", "hostIPs",
                         "podIP", "podIPs", "startTime", "initContainerStatuses",
                         "containerStatuses", "qosClass", "ephemeralContainerStatuses")

ApiPodLookup = Callable[[str, str], "dict[str, Any] | None"]


def status_patch(new: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """A merge patch that makes ``current``'s kubelet-owned fields equal ``new``'s."""
    patch: dict[str, Any] = {}
    for field in KUBELET_STATUS_FIELDS:
        if field == "conditions":
            continue
        if field in new:
            if current.get(field) != new[field]:
                patch[field] = new[field]
        elif field in current and field != "qosClass":
            patch[field] = None
    others = [c for c in current.get("conditions") or []
              if c.get("type") not in KUBELET_CONDITIONS]
    mine = [c for c in new.get("conditions") or [] if c.get("type") in KUBELET_CONDITIONS]
    conditions = others + mine
    if conditions != (current.get("conditions") or []):
        patch["conditions"] = conditions
    return patch


def running_and_ready(status: dict[str, Any]) -> bool:
    """Phase Running with every container ready: what ``kubectl wait`` and the bench wait
    for."""
    cs = status.get("containerStatuses") or []
    return status.get("phase") == "Running" and bool(cs) and all(c.get("ready") for c in cs)


class PendingMirror(Exception):
    """A static pod's status has nowhere to go yet (its mirror pod is not made)."""


class APIStatusPatcher:
    """The status manager's StatusPatcher for a node with a control plane."""

    def __init__(self, client: RESTClient, api_pod: ApiPodLookup,
                 static_mirror: Callable[[str], tuple[str, str] | None],
                 is_static: Callable[[str], bool] = lambda uid: False) -> None:
        self.client = client
        self.api_pod = api_pod
        self.static_mirror = static_mirror  # static pod uid -> (namespace, name) of its mirror
        self.is_static = is_static

    def patch_pod_status(self, vs: VersionedPodStatus) -> None:
        ns, name = vs.namespace, vs.name
        mirror = self.static_mirror(vs.uid)
        if mirror is not None:
            ns, name = mirror
        current = self.api_pod(ns, name)
        if current is None:
            if mirror is not None or self.is_static(vs.uid):
                # a static pod whose mirror is not made yet: offer it again later
                raise PendingMirror(f"no mirror pod for {ns}/{name} yet")
            return  # gone from the API: nothing to write
        uid = (current.get("metadata") or {}).get("uid", "")
        if mirror is None and uid != vs.uid:
            return  # another pod of the same name now
        status = encode(vs.status)
        patch = status_patch(status, current.get("status") or {})
        if not patch:
            return
        try:
            self.client.patch(PODS, name, {"metadata": {"uid": uid}, "status": patch}, ns,
                              subresource="status", content_type=MERGE_PATCH)
        except StatusError as exc:
            if exc.not_found or exc.conflict:
                return  # deleted, or re-created: the informer will tell
            raise
        if podtrace.enabled() and running_and_ready(status):
            podtrace.stage("status_running", vs.uid)


class FinalDeleter:
    """Deletes pods from the API once this node has stopped them (grace 0, UID
    precondition), in a thread of its own so pod workers never wait on the network."""

    def __init__(self, client: RESTClient, before: Callable[[Pod], None] | None = None) -> None:
        self.client = client
        self.before = before  # e.g. flush the pod's final status first
        self.queue: queue.SimpleQueue[Pod | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="final-delete", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.queue.put(None)
        self._thread.join(5)

    def pod_terminated(self, pod: Pod) -> None:
        if pod.metadata.deletion_timestamp is not None:
            self.queue.put(pod)

    def _run(self) -> None:
        while True:
            pod = self.queue.get()
            if pod is None:
                return
            for attempt in range(10):
                try:
                    if self.before is not None:
                        self.before(pod)
                    self.client.delete(PODS, pod.name, pod.namespace, grace_period_seconds=0,
                                       preconditions={"uid": pod.uid})
                    log.info("pod %s/%s deleted from the API (terminated here)", pod.namespace,
                             pod.name)
                    break
                except StatusError as exc:
                    if exc.not_found or exc.conflict:
                        break
                    log.warning("deleting pod %s/%s: %s", pod.namespace, pod.name, exc)
                except ClientError as exc:
                    log.warning("deleting pod %s/%s: %s", pod.namespace, pod.name, exc)
                threading.Event().wait(min(30.0, 0.5 * 2**attempt))


class APIEventSink:
    """Sends the agent's events to the API (creates, then updates as counts grow)."""

    def __init__(self, client: RESTClient, max_queue: int = 1000) -> None:
        self.client = client
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue(max_queue)
        self._thread = threading.Thread(target=self._run, name="event-sink", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        try:
            self.queue.put_nowait(None)
        except queue.Full:
            pass
        self._thread.join(2)

    def __call__(self, event: dict[str, Any]) -> None:
        try:
            self.queue.put_nowait(event)
        except queue.Full:
            pass  # events are best effort, as client-go's broadcaster drops them

    def _run(self) -> None:
        while True:
            ev = self.queue.get()
            if ev is None:
                return
            meta = ev["metadata"]
            try:
                self.client.replace(EVENTS, meta["name"], ev, meta["namespace"])
            except (ClientError, OSError) as exc:
                log.debug("event %s not sent: %s", meta["name"], exc)
