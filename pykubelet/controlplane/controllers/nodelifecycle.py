"""The node lifecycle controller (pkg/controller/nodelifecycle) and its taint eviction
(the NoExecute taint manager).

Health: a node is heard from when its Lease in ``kube-node-lease`` is renewed (or its
Ready condition's heartbeat moves), measured on this controller's own clock, as upstream
does to be immune to skew. A node not heard from for ``node_monitor_grace_period`` (40 s)
gets every condition set to ``Unknown`` ("Kubelet stopped posting node status.").

Taints follow the conditions (TaintNodesByCondition and taint-based eviction): Ready
False gives ``node.kubernetes.io/not-ready`` NoSchedule and NoExecute, Ready Unknown gives
``node.kubernetes.io/unreachable`` NoSchedule and NoExecute, pressure conditions and
``spec.unschedulable`` their NoSchedule taints; they go when the condition clears.

Pods: when a node's Ready condition stops being True, every pod on it gets its own Ready
condition set to False through ``pods/status`` and a ``NodeNotReady`` Warning event
(MarkPodsNotReady), so endpoints and ``kubectl wait`` stop trusting them; while the node
stays Unknown (nobody else writes those pods) a pod found Ready again is marked once more.

Eviction: a pod on a node with a NoExecute taint it does not tolerate is deleted at once;
one that tolerates it for N seconds (DefaultTolerationSeconds gives 300) is deleted N
seconds after the taint was added.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.timeutil import now, parse_time, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.controlplane.registry.podconditions import set_condition
from pykubelet.controlplane.registry.resources import LEASES, NODES, PODS
from pykubelet.controlplane.registry.store import Context, DeleteOptions
from pykubelet.controlplane.registry.strategy import StatusStrategy

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE = "kube-node-lease"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
CONDITION_TAINTS = {
    "MemoryPressure": "node.kubernetes.io/memory-pressure",
    "DiskPressure": "node.kubernetes.io/disk-pressure",
    "PIDPressure": "node.kubernetes.io/pid-pressure",
    "NetworkUnavailable": "node.kubernetes.io/network-unavailable",
}
MANAGED_KEYS = frozenset({NOT_READY, UNREACHABLE, UNSCHEDULABLE, *CONDITION_TAINTS.values()})
NODE_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
UNKNOWN_REASON = "NodeStatusUnknown"
UNKNOWN_MESSAGE = "Kubelet stopped posting node status."


def condition(node: dict[str, Any], type_: str) -> dict[str, Any] | None:
    """The condition of that type, itself (callers may change it in place)."""
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            found: dict[str, Any] = c
            return found
    return None


def desired_taints(node: dict[str, Any]) -> list[tuple[str, str]]:
    """The (key, effect) taints this controller wants on ``node`` from its conditions."""
    out: list[tuple[str, str]] = []
    ready = condition(node, "Ready")
    status = ready.get("status") if ready else "Unknown"
    if status == "False":
        out += [(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")]
    elif status != "True":
        out += [(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")]
    for cond, key in CONDITION_TAINTS.items():
        c = condition(node, cond)
        if c is not None and c.get("status") == "True":
            out.append((key, "NoSchedule"))
    if (node.get("spec") or {}).get("unschedulable"):
        out.append((UNSCHEDULABLE, "NoSchedule"))
    return out


def reconcile_taints(node: dict[str, Any], at: dt.datetime) -> bool:
    """Set the managed taints of ``node`` to the desired ones; True if it changed."""
    spec = node.setdefault("spec", {})
    current = spec.get("taints") or []
    want = desired_taints(node)
    kept = [t for t in current if t.get("key") not in MANAGED_KEYS
            or (t.get("key"), t.get("effect")) in want]
    have = {(t.get("key"), t.get("effect")) for t in kept}
    for key, effect in want:
        if (key, effect) not in have:
            taint: dict[str, Any] = {"key": key, "effect": effect}
            if effect == "NoExecute":
                taint["timeAdded"] = rfc3339(at)
            kept.append(taint)
    if kept == current:
        return False
    if kept:
        spec["taints"] = kept
    else:
        spec.pop("taints", None)
    return True


def mark_unknown(node: dict[str, Any], at: dt.datetime) -> bool:
    """Every node condition to Unknown (tryUpdateNodeHealth); True if it changed."""
    changed = False
    status = node.setdefault("status", {})
    conds = status.setdefault("conditions", [])
    for type_ in NODE_CONDITIONS:
        c = condition(node, type_)
        if c is None:
            conds.append({"type": type_, "status": "Unknown", "reason": UNKNOWN_REASON,
                          "message": UNKNOWN_MESSAGE, "lastHeartbeatTime": rfc3339(at),
                          "lastTransitionTime": rfc3339(at)})
            changed = True
        elif c.get("status") != "Unknown":
            c.update({"status": "Unknown", "reason": UNKNOWN_REASON,
                      "message": UNKNOWN_MESSAGE, "lastTransitionTime": rfc3339(at)})
            changed = True
    return changed


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """v1 Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def eviction_delay(pod: dict[str, Any], taints: list[dict[str, Any]],
                   at: dt.datetime) -> float | None:
    """Seconds until ``pod`` must go because of NoExecute ``taints`` (0: now; None: it
    may stay), as the taint manager's getMinTolerationTime from each taint's timeAdded."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    deadline: float | None = None
    for taint in taints:
        if taint.get("effect") != "NoExecute":
            continue
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0.0
        seconds = [t.get("tolerationSeconds") for t in matching]
        if any(s is None for s in seconds):
            continue  # tolerated forever
        limit = max(0, min(int(s) for s in seconds if s is not None))
        added = parse_time(taint["timeAdded"]) if taint.get("timeAdded") else at
        left = (added - at).total_seconds() + limit  # any int64 limit: no datetime overflow
        deadline = left if deadline is None else min(deadline, left)
    if deadline is None:
        return None
    return max(0.0, deadline)


@dataclass
class _Health:
    probe: float  # monotonic time the node was last heard from
    renew: str = ""
    heartbeat: str = ""
    ready: str = ""  # the Ready status this controller last saw after its sync


class NodeLifecycle:
    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.registry = cp.registry
        self.grace = cp.options.node_monitor_grace_period
        self.period = cp.options.node_monitor_period
        self.health: dict[str, _Health] = {}
        self.recorder = EventRecorder(cp.registry, "node-controller")
        self.loop = asyncio.get_running_loop()

    async def run(self) -> None:
        while True:
            try:
                await self.monitor()
                await self.evict()
            except errors.StatusError as exc:
                log.warning("node lifecycle: %s", exc.message)
            await asyncio.sleep(self.period)

    async def monitor(self) -> None:
        nodes = self.registry.store(NODES)
        leases = self.registry.store(LEASES)
        mono = self.loop.time()
        seen = set()
        for entry in list(nodes.select(None, None)):
            node = entry.obj()
            name = entry.attrs.name
            seen.add(name)
            lease = leases.lookup(NODE_LEASE_NAMESPACE, name)
            renew = ((lease.obj().get("spec") or {}).get("renewTime") or "") if lease else ""
            ready = condition(node, "Ready") or {}
            heartbeat = ready.get("lastHeartbeatTime") or ""
            h = self.health.get(name)
            if h is None:
                h = self.health[name] = _Health(mono, renew, heartbeat)
            elif renew != h.renew or heartbeat != h.heartbeat:
                h.probe, h.renew, h.heartbeat = mono, renew, heartbeat
            stale = mono - h.probe > self.grace
            synced = await self._sync_node(name, stale)
            if synced is None:
                continue
            status = (condition(synced, "Ready") or {}).get("status") or "Unknown"
            # on the transition away from True (as upstream), and on every pass while
            # the node is Unknown: then no kubelet is there to write the pods back
            if status != "True" and (status == "Unknown" or h.ready in ("", "True")):
                await self.mark_pods_not_ready(name)
            h.ready = status
        for name in list(self.health):
            if name not in seen:
                del self.health[name]

    async def _sync_node(self, name: str, stale: bool) -> dict[str, Any] | None:
        """Apply Unknown (when ``stale``) and the taints; the node as it now is (None:
        gone)."""
        nodes = self.registry.store(NODES)
        t = now()
        became_unknown = False

        def update(node: dict[str, Any]) -> dict[str, Any] | None:
            nonlocal became_unknown
            changed = False
            if stale:
                was = (condition(node, "Ready") or {}).get("status")
                changed = mark_unknown(node, t)
                became_unknown = changed and was != "Unknown"
            changed = reconcile_taints(node, t) or changed
            return node if changed else None

        # conditions live in status, taints in spec: both written at once, as the
        # node lifecycle controller does with its full-object updates
        try:
            result = await nodes.guaranteed_update("", name, update, _NodeWriter(nodes.strategy))
        except errors.StatusError as exc:
            if exc.code == 404:
                return None
            raise
        obj: dict[str, Any] = result.obj() if hasattr(result, "obj") else result
        if became_unknown:
            log.info("node %s: no lease renewal for %.0fs: Ready=Unknown", name, self.grace)
            await self.recorder.event(obj, NORMAL, "NodeNotReady",
                                      f"Node {name} status is now: NodeNotReady")
        return obj

    async def mark_pods_not_ready(self, node_name: str) -> None:
        """MarkPodsNotReady: Ready=False on every pod of the node whose Ready is True."""
        pods = self.registry.store(PODS)
        for pe in list(pods.select(None, None, ("spec.nodeName", node_name))):
            pod = pe.obj()
            if (condition(pod, "Ready") or {}).get("status") != "True":
                continue
            ns, name = pe.attrs.namespace, pe.attrs.name
            log.info("node %s is not ready: marking pod %s/%s not ready", node_name, ns, name)
            changed = False

            def mark(p: dict[str, Any]) -> dict[str, Any] | None:
                nonlocal changed
                out = _not_ready(p)
                changed = out is not None
                return out

            try:
                updated = await pods.guaranteed_update(ns, name, mark,
                                                       StatusStrategy(pods.strategy))
            except errors.StatusError as exc:
                if exc.code != 404:
                    log.warning("marking pod %s/%s not ready: %s", ns, name, exc.message)
                continue
            if not changed:
                continue
            obj = updated.obj() if hasattr(updated, "obj") else updated
            await self.recorder.event(obj, WARNING, "NodeNotReady", "Node is not ready")

    async def evict(self) -> None:
        """The NoExecute taint manager."""
        nodes = self.registry.store(NODES)
        pods = self.registry.store(PODS)
        t = now()
        for entry in list(nodes.select(None, None)):
            taints = [x for x in ((entry.obj().get("spec") or {}).get("taints") or [])
                      if x.get("effect") == "NoExecute"]
            if not taints:
                continue
            for pe in list(pods.select(None, None, ("spec.nodeName", entry.attrs.name))):
                pod = pe.obj()
                if (pod.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                delay = eviction_delay(pod, taints, t)
                if delay is None or delay > 0:
                    continue
                ns, name = pe.attrs.namespace, pe.attrs.name
                log.info("taint eviction: deleting %s/%s from node %s", ns, name,
                         entry.attrs.name)
                try:
                    await pods.guaranteed_update(ns, name, _disruption_target,
                                                 StatusStrategy(pods.strategy))
                    await pods.delete(Context(), ns, name, DeleteOptions())
                except errors.StatusError as exc:
                    if exc.code != 404:
                        log.warning("taint eviction of %s/%s: %s", ns, name, exc.message)
                    continue
                await self.recorder.event(pod, NORMAL, "TaintManagerEviction",
                                          f"Marking for deletion Pod {ns}/{name}")


def _not_ready(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod with its Ready condition False (its reason and message kept, its
    lastTransitionTime now), as MarkPodsNotReady's UpdatePodCondition; None: no change."""
    ready = condition(pod, "Ready")
    if ready is None or ready.get("status") != "True":
        return None
    set_condition(pod.setdefault("status", {}),
                  {**ready, "status": "False", "lastTransitionTime": rfc3339(now())})
    return pod


def _disruption_target(pod: dict[str, Any]) -> dict[str, Any]:
    set_condition(pod.setdefault("status", {}), {
        "type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
        "lastTransitionTime": rfc3339(now()), "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint"})
    return pod


class _NodeWriter(StatusStrategy):
    """The controller's own writes: conditions and taints together, nothing validated
    away (it only ever sets what it owns)."""

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        pass

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Any]:
        return []


async def run_node_lifecycle(cp: ControlPlane) -> None:
    await NodeLifecycle(cp).run()
