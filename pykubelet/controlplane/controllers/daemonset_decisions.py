"""The DaemonSet controller's decisions (pkg/controller/daemon: daemon_controller.go,
update.go, util/daemonset_util.go), pure functions of the DaemonSet, the nodes, its pods
and the time, tested as tables; :mod:`pykubelet.controlplane.controllers.daemonset` carries
them out.

Which nodes run a daemon pod: NodeShouldRunDaemonPod tries the pod the controller would
make (the template, the node's name, the tolerations upstream adds to every daemon pod)
against the node's name, the pod's nodeSelector and required node affinity, and the
node's NoSchedule/NoExecute taints; a node whose only untolerated taints are NoSchedule
keeps the pod it has but gets no new one. Pods are placed through the scheduler, as
upstream since 1.12: each new pod carries a required node affinity ``metadata.name In
[node]`` (ReplaceDaemonSetPodNodeNameNodeAffinity), and the scheduler binds it. Pods are
told apart by the ``controller-revision-hash`` label, the hash of the ControllerRevision
that snapshots the template they were made from.

Objects are the API's JSON dicts.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.daemonset import ROLLING_UPDATE, TEMPLATE_GENERATION_ANNOTATION
from pykubelet.api.machinery.labels import RequirementError, Selector, requirement
from pykubelet.api.machinery.timeutil import parse_time_or_none
from pykubelet.api.revision_patch import template_patch
from pykubelet.controlplane.controllers.activepods import is_available, is_ready, meta
from pykubelet.controlplane.controllers.controller_ref import new_controller_ref
from pykubelet.controlplane.controllers.deploymentutil import scaled_value
from pykubelet.controlplane.controllers.nodelifecycle import tolerates
from pykubelet.controlplane.controllers.pod_control import get_pod_from_template

Obj = dict[str, Any]

# apps.ControllerRevisionHashLabelKey (DefaultDaemonSetUniqueLabelKey)
CONTROLLER_REVISION_HASH = "controller-revision-hash"
# extensions.DaemonSetTemplateGenerationKey
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
OBJECT_NAME_FIELD = "metadata.name"

# the tolerations every daemon pod gets (AddOrUpdateDaemonPodTolerations), in its order
DAEMON_POD_TOLERATIONS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _labels(obj: Obj) -> dict[str, str]:
    return meta(obj).get("labels") or {}


# ---------------------------------------------------------------------------- templates


def _match_toleration(a: Obj, b: Obj) -> bool:
    """Toleration.MatchToleration: the same key, operator, value and effect."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in (
        "key", "operator", "value", "effect"))


def add_or_update_toleration(pod_spec: Obj, toleration: Obj) -> None:
    """v1helper.AddOrUpdateTolerationInPodSpec: replace the matching toleration, else
    append."""
    current = pod_spec.get("tolerations") or []
    out, updated = [], False
    for t in current:
        if _match_toleration(toleration, t):
            out.append(dict(toleration))
            updated = True
        else:
            out.append(t)
    if not updated:
        out.append(dict(toleration))
    pod_spec["tolerations"] = out


def add_daemon_pod_tolerations(pod_spec: Obj) -> None:
    """util.AddOrUpdateDaemonPodTolerations: daemon pods survive not-ready and unreachable
    nodes and ignore the node-condition taints (network-unavailable for host-network
    pods only)."""
    wanted = list(DAEMON_POD_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        wanted.append(NETWORK_UNAVAILABLE)
    for key, effect in wanted:
        add_or_update_toleration(pod_spec, {"key": key, "operator": "Exists", "effect": effect})


def template_generation(ds: Obj) -> int | None:
    """util.GetTemplateGeneration: the deprecated annotation's number, None without one."""
    text = (meta(ds).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def create_pod_template(template: Obj, generation: int | None, hash_: str) -> Obj:
    """util.CreatePodTemplate: the template with the daemon tolerations and the
    pod-template-generation and controller-revision-hash labels."""
    out = copy.deepcopy(template)
    add_daemon_pod_tolerations(out.setdefault("spec", {}))
    labels = out.setdefault("metadata", {}).setdefault("labels", {})
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if hash_:
        labels[CONTROLLER_REVISION_HASH] = hash_
    return out


def replace_node_name_affinity(affinity: Obj | None, node_name: str) -> Obj:
    """util.ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes
    the one term ``metadata.name In [node]`` (the rest of the affinity kept)."""
    term = {"matchFields": [{"key": OBJECT_NAME_FIELD, "operator": "In",
                             "values": [node_name]}]}
    out = copy.deepcopy(affinity) if affinity else {}
    node_affinity = out.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [term]}
    else:
        required["nodeSelectorTerms"] = [term]
    return out


def pod_for_node(ds: Obj, template: Obj, node_name: str) -> Obj:
    """The pod syncNodes creates for ``node_name`` (podControl.CreatePods of the
    template with the node affinity set): named ``<ds>-<random>``, owned by the
    DaemonSet."""
    pod = get_pod_from_template(template, ds, new_controller_ref(ds, "apps/v1", "DaemonSet"))
    pod["spec"]["affinity"] = replace_node_name_affinity(pod["spec"].get("affinity"),
                                                         node_name)
    return pod


def get_patch(ds: Obj) -> Obj:
    """getPatch: what a ControllerRevision of a DaemonSet holds (template_patch: the bytes
    kubectl rollout undo computes for the same template)."""
    return template_patch(ds)


# ---------------------------------------------------------------------------- nodes


def _node_selector_requirements(reqs: list[Obj]) -> Selector:
    return Selector([requirement(r.get("key", ""), r.get("operator", ""), r.get("values") or [])
                     for r in reqs])


def _field_requirements_match(reqs: list[Obj], node_name: str) -> bool:
    for r in reqs:
        values = r.get("values") or []
        if r.get("key") != OBJECT_NAME_FIELD or len(values) != 1:
            return False  # an invalid field requirement: the term matches nothing
        if r.get("operator") == "In" and node_name != values[0]:
            return False
        if r.get("operator") == "NotIn" and node_name == values[0]:
            return False
        if r.get("operator") not in ("In", "NotIn"):
            return False
    return True


def _term_matches(term: Obj, labels: Mapping[str, str], node_name: str) -> bool:
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term selects nothing
    try:
        if exprs and not _node_selector_requirements(exprs).matches(labels):
            return False
    except RequirementError:
        return False
    return not fields or _field_requirements_match(fields, node_name)


def required_node_affinity_matches(pod_spec: Obj, node: Obj) -> bool:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match(node): the nodeSelector's labels,
    and one of the required node affinity's terms (ORed)."""
    labels, name = _labels(node), meta(node).get("name", "")
    for k, v in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(_term_matches(t, labels, name) for t in required.get("nodeSelectorTerms") or [])


def untolerated_taint(taints: list[Obj], tolerations: list[Obj], effects: tuple[str, ...]
                      ) -> Obj | None:
    """v1helper.FindMatchingUntoleratedTaint over the taints of ``effects``."""
    for taint in taints:
        if taint.get("effect") not in effects:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def node_should_run_daemon_pod(node: Obj, ds: Obj) -> tuple[bool, bool]:
    """NodeShouldRunDaemonPod: (should a daemon pod be created here, may one already here
    keep running). A node name in the template other than this node's, a nodeSelector or
    required node affinity the node fails: neither. An untolerated NoSchedule or
    NoExecute taint: no new pod; one already here stays unless a NoExecute taint is the
    untolerated one."""
    template = spec(ds).get("template") or {}
    pod_spec = copy.deepcopy(template.get("spec") or {})
    name = meta(node).get("name", "")
    if pod_spec.get("nodeName") not in (None, "", name):
        return False, False
    add_daemon_pod_tolerations(pod_spec)
    if not required_node_affinity_matches(pod_spec, node):
        return False, False
    taints = spec(node).get("taints") or []
    tolerations = pod_spec.get("tolerations") or []
    if untolerated_taint(taints, tolerations, ("NoSchedule", "NoExecute")) is not None:
        return False, untolerated_taint(taints, tolerations, ("NoExecute",)) is None
    return True, True


# ---------------------------------------------------------------------------- pods


def target_node_name(pod: Obj) -> str | None:
    """util.GetTargetNodeName: spec.nodeName, else the one node name the required node
    affinity's matchFields name (a pod not yet scheduled); None if neither says."""
    ps = spec(pod)
    if ps.get("nodeName"):
        return str(ps["nodeName"])
    required = ((ps.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for r in term.get("matchFields") or []:
            if r.get("key") == OBJECT_NAME_FIELD and r.get("operator") == "In":
                values = r.get("values") or []
                return str(values[0]) if len(values) == 1 else None
    return None


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


def nodes_to_daemon_pods(pods: list[Obj], include_deleted_terminal: bool = False
                         ) -> dict[str, list[Obj]]:
    """getNodesToDaemonPods over the DaemonSet's (claimed) pods: by target node; a
    terminal pod being deleted is left out unless asked for."""
    out: dict[str, list[Obj]] = {}
    for pod in pods:
        if not include_deleted_terminal and _terminal(pod) and meta(pod).get(
                "deletionTimestamp"):
            continue
        node = target_node_name(pod)
        if node is None:
            continue
        out.setdefault(node, []).append(pod)
    return out


def _creation_and_phase_key(pod: Obj) -> tuple[dt.datetime, int, str]:
    """podByCreationTimestampAndPhase: older first; at the same time, a Running pod
    before others; then by name."""
    ts = parse_time_or_none(meta(pod).get("creationTimestamp")) or dt.datetime.min.replace(
        tzinfo=dt.UTC)
    running = (pod.get("status") or {}).get("phase") == "Running"
    return (ts, 0 if running else 1, meta(pod).get("name", ""))


def sort_by_creation_and_phase(pods: list[Obj]) -> list[Obj]:
    return sorted(pods, key=_creation_and_phase_key)


def is_pod_updated(pod: Obj, hash_: str) -> bool:
    """util.IsPodUpdated as it behaves: the pod's controller-revision-hash is the current
    one. (Upstream also compares pod-template-generation with fmt.Sprint of a *int64,
    which prints the pointer and so never matches: only the hash decides.)"""
    return bool(hash_) and _labels(pod).get(CONTROLLER_REVISION_HASH) == hash_


# ---------------------------------------------------------------------------- strategy


def _rolling(ds: Obj) -> Obj | None:
    strategy = spec(ds).get("updateStrategy") or {}
    if strategy.get("type") != ROLLING_UPDATE:
        return None
    ru: Obj | None = strategy.get("rollingUpdate")
    return ru


def surge_count(ds: Obj, number_to_schedule: int) -> int:
    """util.SurgeCount: maxSurge of ``number_to_schedule`` rounded up (0 if not
    RollingUpdate)."""
    ru = _rolling(ds)
    if ru is None or ru.get("maxSurge") is None:
        return 0
    return scaled_value(ru.get("maxSurge"), number_to_schedule, True)


def unavailable_count(ds: Obj, number_to_schedule: int) -> int:
    """util.UnavailableCount: maxUnavailable of ``number_to_schedule`` rounded up."""
    ru = _rolling(ds)
    if ru is None:
        return 0
    return scaled_value(ru.get("maxUnavailable"), number_to_schedule, True)


def allows_surge(ds: Obj) -> bool:
    """util.AllowsSurge: more than one pod may run on a node during an update."""
    return surge_count(ds, 1) > 0


# ---------------------------------------------------------------------------- manage


@dataclass
class ManagePlan:
    """manage's outcome: nodes that need a daemon pod, pods to delete, and failed pods
    (by node) to delete subject to the failed-pods back-off."""

    create_on: list[str] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)
    failed: list[tuple[str, Obj]] = field(default_factory=list)


def pods_should_be_on_node(node: Obj, node_pods: list[Obj] | None, ds: Obj, hash_: str,
                           now: dt.datetime, plan: ManagePlan) -> None:
    """podsShouldBeOnNode, adding this node's creates and deletes to ``plan``."""
    name = meta(node).get("name", "")
    should_run, should_continue = node_should_run_daemon_pod(node, ds)
    exists = node_pods is not None
    pods = node_pods or []
    if should_run and not exists:
        plan.create_on.append(name)
        return
    if should_continue:
        running: list[Obj] = []
        for pod in pods:
            if meta(pod).get("deletionTimestamp"):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                plan.failed.append((name, pod))
            elif phase == "Succeeded":
                plan.delete.append(pod)
            else:
                running.append(pod)
        if not allows_surge(ds):
            if len(running) > 1:
                plan.delete.extend(sort_by_creation_and_phase(running)[1:])
            return
        if len(running) <= 1:
            if not running and should_run:
                plan.create_on.append(name)
            return
        oldest_new: Obj | None = None
        oldest_old: Obj | None = None
        for pod in sort_by_creation_and_phase(running):
            if _labels(pod).get(CONTROLLER_REVISION_HASH) == hash_:
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            plan.delete.append(pod)
        if oldest_new is not None and oldest_old is not None:
            min_ready = int(spec(ds).get("minReadySeconds") or 0)
            if not is_ready(oldest_old) or is_available(oldest_new, min_ready, now):
                plan.delete.append(oldest_old)
        return
    if exists:
        plan.delete.extend(p for p in pods if not meta(p).get("deletionTimestamp"))


def manage_plan(ds: Obj, nodes: list[Obj], node_to_pods: dict[str, list[Obj]], hash_: str,
                now: dt.datetime) -> ManagePlan:
    """manage: every node's creates and deletes, and the unscheduled pods of nodes that
    no longer exist (getUnscheduledPodsWithoutNode: pod GC never sees those)."""
    plan = ManagePlan()
    for node in nodes:
        pods_should_be_on_node(node, node_to_pods.get(meta(node).get("name", "")), ds, hash_,
                               now, plan)
    known = {meta(n).get("name", "") for n in nodes}
    for node_name, pods in node_to_pods.items():
        if node_name in known:
            continue
        plan.delete.extend(p for p in pods if not spec(p).get("nodeName"))
    return plan


# ---------------------------------------------------------------------------- rollingUpdate


def find_updated_pods_on_node(pods: list[Obj], hash_: str
                              ) -> tuple[Obj | None, Obj | None, bool]:
    """findUpdatedPodsOnNode: (the new pod, the old pod, ok); not ok when a node has two
    of either (the manage loop cleans that up first)."""
    new_pod: Obj | None = None
    old_pod: Obj | None = None
    for pod in pods:
        if meta(pod).get("deletionTimestamp"):
            continue
        if is_pod_updated(pod, hash_):
            if new_pod is not None:
                return None, None, False
            new_pod = pod
        else:
            if old_pod is not None:
                return None, None, False
            old_pod = pod
    return new_pod, old_pod, True


def updated_desired_node_counts(ds: Obj, nodes: list[Obj],
                                node_to_pods: dict[str, list[Obj]]) -> tuple[int, int, int]:
    """updatedDesiredNodeCounts: (maxSurge, maxUnavailable, desired); every node that
    should run a pod gets an entry in ``node_to_pods``; neither surge nor unavailability
    allowed means one unavailable."""
    desired = 0
    for node in nodes:
        if not node_should_run_daemon_pod(node, ds)[0]:
            continue
        desired += 1
        node_to_pods.setdefault(meta(node).get("name", ""), [])
    max_unavailable = unavailable_count(ds, desired)
    max_surge = surge_count(ds, desired)
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1
    return max_surge, max_unavailable, desired


@dataclass
class RollingPlan:
    delete: list[Obj] = field(default_factory=list)
    create_on: list[str] = field(default_factory=list)


def rolling_update_plan(ds: Obj, nodes: list[Obj], node_to_pods: dict[str, list[Obj]],
                        hash_: str, now: dt.datetime) -> RollingPlan:
    """rollingUpdate: without surge, delete old pods while at most maxUnavailable nodes
    are unavailable (an unavailable old pod is replaced at once), and let manage create
    the new ones; with surge, create a new pod beside up to maxSurge available old ones
    (beside every unavailable one) and delete an old pod once its new one is available."""
    node_to_pods = {k: list(v) for k, v in node_to_pods.items()}
    max_surge, max_unavailable, desired = updated_desired_node_counts(ds, nodes, node_to_pods)
    min_ready = int(spec(ds).get("minReadySeconds") or 0)
    by_name = {meta(n).get("name", ""): n for n in nodes}
    plan = RollingPlan()
    if max_surge == 0:
        num_unavailable = 0
        replacements: list[Obj] = []
        candidates: list[Obj] = []
        for _node, pods in sorted(node_to_pods.items()):
            new_pod, old_pod, ok = find_updated_pods_on_node(pods, hash_)
            if not ok:
                num_unavailable += 1
                continue
            if (old_pod is None) == (new_pod is None):
                num_unavailable += 1
            elif new_pod is not None:
                if not is_available(new_pod, min_ready, now):
                    num_unavailable += 1
            elif old_pod is not None:
                if not is_available(old_pod, min_ready, now):
                    replacements.append(old_pod)
                    num_unavailable += 1
                elif num_unavailable < max_unavailable:
                    candidates.append(old_pod)
        remaining = max(0, min(max_unavailable - num_unavailable, len(candidates)))
        plan.delete = replacements + candidates[:remaining]
        return plan
    num_surge = num_available = 0
    should_not_run: list[Obj] = []
    allowed_new: list[str] = []
    candidate_new: list[str] = []
    for node_name, pods in sorted(node_to_pods.items()):
        new_pod, old_pod, ok = find_updated_pods_on_node(pods, hash_)
        if not ok:
            num_surge += 1
            continue
        counted = old_pod if old_pod is not None else new_pod
        if counted is not None and is_available(counted, min_ready, now):
            num_available += 1
        if old_pod is None:
            continue
        node = by_name.get(node_name)
        if new_pod is None:
            should_run = node is not None and node_should_run_daemon_pod(node, ds)[0]
            if not is_available(old_pod, min_ready, now):
                if not should_run:
                    plan.delete.append(old_pod)
                    continue
                allowed_new.append(node_name)
            else:
                if not should_run:
                    should_not_run.append(old_pod)
                    continue
                if num_surge >= max_surge:
                    continue
                candidate_new.append(node_name)
        elif not is_available(new_pod, min_ready, now):
            num_surge += 1
        else:
            plan.delete.append(old_pod)
    deletable = num_available - desired
    if deletable > 0:
        plan.delete.extend(should_not_run[:deletable])
    remaining = max(0, min(max_surge - num_surge, len(candidate_new)))
    plan.create_on = allowed_new + candidate_new[:remaining]
    return plan


# ---------------------------------------------------------------------------- status


def calculate_status(ds: Obj, nodes: list[Obj], node_to_pods: dict[str, list[Obj]],
                     hash_: str, now: dt.datetime) -> dict[str, int]:
    """updateDaemonSetStatus's counts: per node that should run a pod, whether one is
    scheduled and whether the oldest is ready, available and of the current revision; a
    pod on a node that should not run one is misscheduled."""
    desired = current = misscheduled = ready = updated = available = 0
    min_ready = int(spec(ds).get("minReadySeconds") or 0)
    for node in nodes:
        should_run = node_should_run_daemon_pod(node, ds)[0]
        pods = node_to_pods.get(meta(node).get("name", "")) or []
        if not should_run:
            if pods:
                misscheduled += 1
            continue
        desired += 1
        if not pods:
            continue
        current += 1
        pod = sort_by_creation_and_phase(pods)[0]
        if is_ready(pod):
            ready += 1
            if is_available(pod, min_ready, now):
                available += 1
        if is_pod_updated(pod, hash_):
            updated += 1
    return {"desiredNumberScheduled": desired, "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled, "numberReady": ready,
            "updatedNumberScheduled": updated, "numberAvailable": available,
            "numberUnavailable": desired - available}


def next_status(ds: Obj, counts: dict[str, int], update_observed_generation: bool
                ) -> Obj | None:
    """storeDaemonSetStatus: the status to write, or None when it says nothing new (the
    same counts and observedGeneration already at the generation)."""
    status = dict(ds.get("status") or {})
    generation = int(meta(ds).get("generation") or 0)
    same = all(int(status.get(k) or 0) == v for k, v in counts.items())
    if same and int(status.get("observedGeneration") or 0) >= generation:
        return None
    status.update(counts)
    if update_observed_generation:
        status["observedGeneration"] = generation
    return status


def requeue_for_min_ready(ds: Obj, counts: dict[str, int]) -> float | None:
    """Resync after minReadySeconds while ready pods are not yet available."""
    min_ready = int(spec(ds).get("minReadySeconds") or 0)
    if min_ready > 0 and counts["numberReady"] != counts["numberAvailable"]:
        return float(min_ready)
    return None


# ---------------------------------------------------------------------------- history


def histories_to_delete(ds: Obj, old: list[Obj], node_to_pods: dict[str, list[Obj]]
                        ) -> list[Obj]:
    """cleanupHistory: beyond revisionHistoryLimit, the oldest old revisions no live pod
    was made from."""
    limit = spec(ds).get("revisionHistoryLimit")
    to_kill = len(old) - (10 if limit is None else int(limit))
    if to_kill <= 0:
        return []
    live = {_labels(p).get(CONTROLLER_REVISION_HASH) for pods in node_to_pods.values()
            for p in pods}
    live.discard(None)
    out = []
    for cr in sorted(old, key=lambda r: int(r.get("revision", 0))):
        if to_kill <= 0:
            break
        if _labels(cr).get(CONTROLLER_REVISION_HASH) in live:
            continue
        out.append(cr)
        to_kill -= 1
    return out


def revision_matches(ds: Obj, cr: Obj) -> bool:
    """Match: the revision holds this DaemonSet's current template."""
    return bool(cr.get("data") == get_patch(ds))


# ---------------------------------------------------------------------------- back-off


class FailedPodsBackoff:
    """flowcontrol.Backoff as failedPodsBackoff uses it (1 s doubling to 15 min per
    DaemonSet and node): a failed daemon pod is deleted at most once per delay, so a
    kubelet that keeps rejecting it does not make the controller hot-loop."""

    def __init__(self, initial: float = 1.0, cap: float = 900.0) -> None:
        self.initial = initial
        self.cap = cap
        self._entries: dict[str, tuple[float, dt.datetime]] = {}

    def in_backoff_since_update(self, key: str, now: dt.datetime) -> bool:
        entry = self._entries.get(key)
        if entry is None:
            return False
        delay, last = entry
        return (now - last).total_seconds() < delay

    def get(self, key: str) -> float:
        entry = self._entries.get(key)
        return entry[0] if entry is not None else 0.0

    def next(self, key: str, now: dt.datetime) -> None:
        entry = self._entries.get(key)
        if entry is None or (now - entry[1]).total_seconds() > 2 * self.cap:
            self._entries[key] = (self.initial, now)
        else:
            self._entries[key] = (min(entry[0] * 2, self.cap), now)
