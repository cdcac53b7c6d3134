"""The cluster as the page draws it, folded from watch events (pure: no I/O).

Nodes become columns: allocatable CPU and memory against what the pods bound there request
(as the scheduler counts it: a pod asks for the larger of its containers' sum and its
largest init container, plus sidecars and the pod overhead; pods that ended, Succeeded or
Failed, hold nothing, as kube-scheduler's informer leaves them out), Ready, cordoned and
taints. Pods become cards (phase, kubectl's STATUS word, restarts). Events are kept as a
short timeline. Each change gives a :class:`Delta` (what the page redraws), so the browser
is sent changes, not the cluster, after its first snapshot.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api import resourcehelper
from pykubelet.api.machinery.quantity import Quantity
from pykubelet.cli.kubectl.why import _node_rows

Obj = dict[str, Any]
TIMELINE = 60  # events kept for the strip


@dataclass
class Delta:
    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    deleted_nodes: list[str] = field(default_factory=list)
    deleted_pods: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.nodes or self.pods or self.events or self.deleted_nodes
                    or self.deleted_pods)

    def as_json(self) -> Obj:
        return {"nodes": self.nodes, "pods": self.pods, "events": self.events,
                "deletedNodes": self.deleted_nodes, "deletedPods": self.deleted_pods}


def _amounts(rl: Obj | None) -> dict[str, int]:
    """cpu in millicores, memory in bytes; the rest is not shown."""
    out = {}
    for name, value in (rl or {}).items():
        if name == "cpu":
            out[name] = Quantity.canonical_of(value).milli_value()
        elif name == "memory":
            out[name] = Quantity.canonical_of(value).value()
    return out


def pod_requests(pod: Obj) -> tuple[int, int]:
    """(CPU millicores, memory bytes) the pod asks for: the ground floor's one rule
    (resourcehelper.PodRequests)."""
    spec = pod.get("spec") or {}
    total = resourcehelper.pod_requests(
        [_amounts((c.get("resources") or {}).get("requests"))
         for c in spec.get("containers") or []],
        [(_amounts((c.get("resources") or {}).get("requests")),
          c.get("restartPolicy") == "Always") for c in spec.get("initContainers") or []],
        pod_level=_amounts((spec.get("resources") or {}).get("requests")),
        overhead=_amounts(spec.get("overhead")),
    )
    return total.get("cpu", 0), total.get("memory", 0)


def holds_resources(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def pod_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def pod_status_word(pod: Obj) -> str:
    """kubectl get pods' STATUS, short: a terminating pod, a container's waiting or
    terminated reason, else the pod's reason or phase."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "Terminating"
    word = str(status.get("reason") or status.get("phase") or "Pending")
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        reason = ((state.get("waiting") or {}).get("reason")
                  or (state.get("terminated") or {}).get("reason"))
        if reason:
            word = str(reason)
    if word == "Pending" and not (pod.get("spec") or {}).get("nodeName"):
        cond: Obj = next((c for c in status.get("conditions") or []
                     if c.get("type") == "PodScheduled"), {})
        if cond.get("status") == "False":
            word = str(cond.get("reason") or "Unschedulable")
    return word


def pod_card(pod: Obj) -> Obj:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get(
        "status") or {}
    restarts = sum(int(cs.get("restartCount") or 0)
                   for cs in status.get("containerStatuses") or [])
    cpu, mem = pod_requests(pod)
    return {"key": pod_key(pod), "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""), "node": spec.get("nodeName") or "",
            "phase": status.get("phase") or "Pending", "status": pod_status_word(pod),
            "restarts": restarts, "cpu": cpu, "memory": mem,
            "created": meta.get("creationTimestamp", "")}


def taint_text(t: Obj) -> str:
    value = f"={t['value']}" if t.get("value") else ""
    return f"{t.get('key', '')}{value}:{t.get('effect', '')}"


def node_ready(node: Obj) -> str:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return str(c.get("status") or "Unknown")
    return "Unknown"


@dataclass
class ClusterView:
    nodes: dict[str, Obj] = field(default_factory=dict)
    pods: dict[str, Obj] = field(default_factory=dict)
    events: deque[Obj] = field(default_factory=lambda: deque(maxlen=TIMELINE))
    # per node: (cpu m, memory bytes, pods) requested by the pods bound there
    _used: dict[str, list[int]] = field(default_factory=dict)
    _held: dict[str, tuple[str, int, int]] = field(default_factory=dict)

    # ---------------------------------------------------------------- what is drawn
    def node_summary(self, name: str) -> Obj:
        node = self.nodes[name]
        alloc = (node.get("status") or {}).get("allocatable") or {}
        used = self._used.get(name, [0, 0, 0])
        labels = (node.get("metadata") or {}).get("labels") or {}
        roles = sorted(k.split("/", 1)[1] for k in labels
                       if k.startswith("node-role.kubernetes.io/"))
        return {"name": name, "ready": node_ready(node),
                "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
                "taints": [taint_text(t) for t in (node.get("spec") or {}).get("taints") or []],
                "roles": roles,
                "cpu": {"allocatable": Quantity.canonical_of(alloc.get("cpu", 0)).milli_value(),
                        "requested": used[0]},
                "memory": {"allocatable": Quantity.canonical_of(alloc.get("memory", 0)).value(),
                           "requested": used[1]},
                "pods": {"allocatable": Quantity.canonical_of(alloc.get("pods", 0)).value(),
                         "requested": used[2]}}

    def snapshot(self) -> Obj:
        return {"nodes": [self.node_summary(n) for n in sorted(self.nodes)],
                "pods": [pod_card(p) for _, p in sorted(self.pods.items())],
                "events": list(self.events)}

    # ---------------------------------------------------------------- changes
    def _hold(self, key: str, pod: Obj | None) -> set[str]:
        """Move the pod's requests to the node it is on now; the nodes whose sums moved."""
        old = self._held.pop(key, None)
        node = ((pod or {}).get("spec") or {}).get("nodeName") or ""
        new = None
        if pod is not None and node and holds_resources(pod):
            cpu, mem = pod_requests(pod)
            new = (node, cpu, mem)
            self._held[key] = new
        if old == new:
            return set()
        for held, sign in ((old, -1), (new, 1)):
            if held is not None:
                used = self._used.setdefault(held[0], [0, 0, 0])
                used[0] += sign * held[1]
                used[1] += sign * held[2]
                used[2] += sign
        return {h[0] for h in (old, new) if h is not None}

    def apply(self, kind: str, type_: str, obj: Obj) -> Delta:
        """One watch event (ADDED, MODIFIED, DELETED) of a Node, Pod or Event."""
        d = Delta()
        if kind == "Node":
            name = str((obj.get("metadata") or {}).get("name", ""))
            if type_ == "DELETED":
                if self.nodes.pop(name, None) is not None:
                    d.deleted_nodes.append(name)
            else:
                self.nodes[name] = obj
                d.nodes.append(self.node_summary(name))
        elif kind == "Pod":
            key = pod_key(obj)
            if type_ == "DELETED":
                self.pods.pop(key, None)
                d.deleted_pods.append(key)
                touched = self._hold(key, None)
            else:
                self.pods[key] = obj
                d.pods.append(pod_card(obj))
                touched = self._hold(key, obj)
            d.nodes += [self.node_summary(n) for n in sorted(touched) if n in self.nodes]
        elif kind == "Event" and type_ != "DELETED":
            e = event_item(obj)
            self.events.append(e)
            d.events.append(e)
        return d

    def replace(self, kind: str, items: list[Obj]) -> None:
        """A fresh list (first start, or a relist after 410 Gone): the kind's state is
        exactly these items."""
        if kind == "Node":
            self.nodes = {str(i["metadata"]["name"]): i for i in items}
        elif kind == "Pod":
            self.pods, self._used, self._held = {}, {}, {}
            for p in items:
                self.pods[pod_key(p)] = p
                self._hold(pod_key(p), p)
        elif kind == "Event":
            self.events.clear()
            for e in sorted(items, key=_event_sort)[-TIMELINE:]:
                self.events.append(event_item(e))


def _event_sort(e: Obj) -> str:
    return str(e.get("lastTimestamp") or e.get("eventTime") or (e.get("metadata") or {}).get(
        "creationTimestamp") or "")


def event_item(e: Obj) -> Obj:
    inv = e.get("involvedObject") or e.get("regarding") or {}
    meta = e.get("metadata") or {}
    return {"key": f"{meta.get('namespace', '')}/{meta.get('name', '')}",
            "time": _event_sort(e), "type": e.get("type", "Normal"),
            "reason": e.get("reason", ""), "message": e.get("message") or e.get("note", ""),
            "count": int(e.get("count") or 1),
            "object": {"kind": inv.get("kind", ""), "namespace": inv.get("namespace", ""),
                       "name": inv.get("name", "")}}


def decision_table(doc: Obj | None, node_names: list[str], nominated: str = "") -> Obj:
    """The scheduler's recorded decision (``pods/NAME/scheduling``) as a table of nodes
    by plugins: the filter verdict (which plugin rejected the node, why), the normalised
    score per plugin (0-100), the weighted total, and the winner; rows in ``why``'s order
    (chosen, then feasible by total, then rejected)."""
    if doc is None:
        return {"recorded": False, "rows": [], "plugins": []}
    d = doc.get("decision") or {}
    node = d.get("node")
    filtered: dict[str, Obj] = d.get("filtered") or {}
    scores: dict[str, Obj] = d.get("scores") or {}
    plugins: list[str] = []
    for per in scores.values():
        plugins += [p for p in per if p != "total" and p not in plugins]
    rows = []
    for name, verdict, plugin, reason in _node_rows(node, filtered, scores, node_names,
                                                   d.get("evaluatedNodes"),
                                                   d.get("feasibleNodes")):
        per = scores.get(name) or {}
        rows.append({"node": name, "verdict": verdict, "plugin": plugin, "reason": reason,
                     "scores": {p: per[p] for p in plugins if p in per},
                     "total": per.get("total"), "winner": bool(node) and name == node})
    return {"recorded": True, "pod": d.get("pod", ""), "node": node,
            "nominatedNode": d.get("nominatedNode") or nominated or None,
            "victims": d.get("victims") or [], "message": d.get("message", ""),
            "evaluated": d.get("evaluatedNodes"), "feasible": d.get("feasibleNodes"),
            "plugins": plugins, "rows": rows}
