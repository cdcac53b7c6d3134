"""RealPodControl and GetPodFromTemplate (pkg/controller/controller_utils.go): the pod a
workload controller makes from its template, and its pod creates and deletes, each
recorded as an event on the owner as upstream words them (``SuccessfulCreate`` "Created
pod: NAME", ``FailedCreate`` "Error creating: ...", ``SuccessfulDelete``,
``FailedDelete``; a pod already gone is no event). The error is returned for the caller
to judge (the ReplicaSet sinks AlreadyExists, the DaemonSet counts a gone pod as an
observed deletion)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.activepods import meta
from pykubelet.controlplane.controllers.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Entry

if TYPE_CHECKING:
    from pykubelet.controlplane.registry.store import GenericStore

Obj = dict[str, Any]


def get_pod_from_template(template: Obj, owner: Obj, controller_ref: Obj) -> Obj:
    """GetPodFromTemplate: the template's labels, annotations, finalizers and spec (copies),
    named ``<owner>-<random>`` in the owner's namespace, controlled through
    ``controller_ref``."""
    tmeta = template.get("metadata") or {}
    pod_meta: Obj = {"generateName": f"{meta(owner).get('name', '')}-",
                     "namespace": meta(owner).get("namespace", ""),
                     "ownerReferences": [controller_ref]}
    for k in ("labels", "annotations", "finalizers"):
        if tmeta.get(k):
            pod_meta[k] = copy.deepcopy(tmeta[k])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


class PodControl:
    def __init__(self, pods: GenericStore, recorder: EventRecorder) -> None:
        self.pods = pods
        self.recorder = recorder

    async def create_pod(self, owner: Obj, pod: Obj) -> errors.StatusError | None:
        """CreatePods: ``pod`` in the owner's namespace."""
        try:
            result = await self.pods.create(Context(), meta(owner).get("namespace", ""), pod)
        except errors.StatusError as exc:
            await self.recorder.event(owner, WARNING, "FailedCreate",
                                      f"Error creating: {exc.message}")
            return exc
        name = meta(result.obj() if isinstance(result, Entry) else result).get("name", "")
        await self.recorder.event(owner, NORMAL, "SuccessfulCreate", f"Created pod: {name}")
        return None

    async def delete_pod(self, owner: Obj, pod: Obj) -> errors.StatusError | None:
        """DeletePod: a NotFound is returned without an event."""
        m = meta(pod)
        try:
            await self.pods.delete(Context(), m.get("namespace", ""), m.get("name", ""),
                                   DeleteOptions())
        except errors.StatusError as exc:
            if exc.code != 404:
                await self.recorder.event(owner, WARNING, "FailedDelete",
                                          f"Error deleting: {exc.message}")
            return exc
        await self.recorder.event(owner, NORMAL, "SuccessfulDelete",
                                  f"Deleted pod: {m.get('name', '')}")
        return None
