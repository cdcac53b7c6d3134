"""Pod garbage collection (pkg/controller/podgc): pods bound to a node that no longer
exists are deleted at once (after the node has been gone for a quarantine period, so a
node being re-created is not mistaken for gone), as are pods being deleted that were
never scheduled, and pods terminating on a node tainted out-of-service."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.podconditions import set_condition
from pykubelet.controlplane.registry.resources import NODES, PODS
from pykubelet.controlplane.registry.store import Context, DeleteOptions
from pykubelet.controlplane.registry.strategy import StatusStrategy

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

GC_PERIOD_S = 20.0  # upstream's gcCheckPeriod
QUARANTINE_S = 40.0  # upstream's quarantineTime
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


def _orphan_condition(pod: dict[str, Any]) -> dict[str, Any]:
    set_condition(pod.setdefault("status", {}), {
        "type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
        "lastTransitionTime": rfc3339(now()), "reason": "DeletionByPodGC",
        "message": "PodGC: node no longer exists"})
    if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
        pod["status"]["phase"] = "Failed"
    return pod


class PodGC:
    def __init__(self, cp: ControlPlane, period: float = GC_PERIOD_S,
                 quarantine: float = QUARANTINE_S) -> None:
        self.registry = cp.registry
        self.period = period
        self.quarantine = quarantine
        self.missing_since: dict[str, float] = {}
        self.loop = asyncio.get_running_loop()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            try:
                await self.gc()
            except errors.StatusError as exc:
                log.warning("pod gc: %s", exc.message)

    async def gc(self) -> None:
        pods = self.registry.store(PODS)
        nodes = self.registry.store(NODES)
        mono = self.loop.time()
        force = DeleteOptions(grace_period_seconds=0)
        for entry in list(pods.select(None, None)):
            node = entry.attrs.fields.get("spec.nodeName", "")
            ns, name = entry.attrs.namespace, entry.attrs.name
            pod = entry.obj()
            deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
            reason = ""
            if node and nodes.lookup("", node) is None:
                first = self.missing_since.setdefault(node, mono)
                if mono - first >= self.quarantine:
                    reason = f"node {node} no longer exists"
            elif not node and deleting:
                reason = "terminating and never scheduled"
            elif node and deleting:
                node_entry = nodes.lookup("", node)
                spec = node_entry.obj().get("spec") or {} if node_entry is not None else {}
                taints = spec.get("taints") or []
                if any(t.get("key") == OUT_OF_SERVICE for t in taints):
                    reason = f"terminating on out-of-service node {node}"
            if not reason:
                continue
            log.info("pod gc: deleting %s/%s: %s", ns, name, reason)
            try:
                if node and not deleting:
                    await pods.guaranteed_update(ns, name, _orphan_condition,
                                                 StatusStrategy(pods.strategy))
                await pods.delete(Context(), ns, name, force)
            except errors.StatusError as exc:
                if exc.code != 404:
                    log.warning("pod gc of %s/%s: %s", ns, name, exc.message)
        for node in list(self.missing_since):
            if nodes.lookup("", node) is not None:
                del self.missing_since[node]


async def run_pod_gc(cp: ControlPlane) -> None:
    period = cp.options.pod_gc_period
    # a node must stay gone for upstream's 40 s quarantine; shorter checks (tests) shorten it
    await PodGC(cp, period, min(QUARANTINE_S, 2 * period)).run()
