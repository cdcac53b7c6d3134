"""The StatefulSet controller's decisions (pkg/controller/statefulset: stateful_set_utils.go
and stateful_set_control.go's updateStatefulSet), pure functions of the objects, so each
is tested as a table without a server.

Pods have stable names ``NAME-<ordinal>`` (from ``spec.ordinals.start``), the pod-name and
pod-index labels, hostname = the pod's name and subdomain = ``spec.serviceName``. Which pod
is created, deleted or updated next is :func:`plan`: with OrderedReady ("monotonic") one
step at a time, in ordinal order up and reverse order down, halting while a pod is not
Running and Ready (and available after minReadySeconds); with Parallel every missing pod
and every condemned one at once. A rolling update then deletes the highest ordinal not at
the update revision, down to the partition, one at a time; OnDelete leaves updates to the
user. Revisions are ControllerRevisions whose data is ``{"spec": {"template": ...}}``.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from pykubelet.api.apps_statefulset import (
    ON_DELETE,
    PARALLEL,
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    REVISION_LABEL,
    ROLLING_UPDATE,
)
from pykubelet.api.revision_patch import template_patch
from pykubelet.controlplane.controllers import history
from pykubelet.controlplane.controllers.activepods import (
    is_available,
    is_ready,
    labels_match,
    meta,
    ready_since,
)
from pykubelet.controlplane.controllers.controller_ref import new_controller_ref
from pykubelet.controlplane.controllers.controller_ref_manager import Claim, claim_objects
from pykubelet.controlplane.controllers.deploymentutil import scaled_value

Obj = dict[str, Any]

KIND = "StatefulSet"
API_VERSION = "apps/v1"
_POD_NAME_RE = re.compile(r"^(.*)-([0-9]+)$")
_INT32_MAX = 2**31 - 1

# the verbs of a planned action (and of its event: SuccessfulCreate, FailedDelete, ...)
CREATE = "create"
DELETE = "delete"
UPDATE = "update"


def spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def status(obj: Obj) -> Obj:
    return obj.get("status") or {}


# ---------------------------------------------------------------------------- identity


def parent_and_ordinal(pod: Obj) -> tuple[str, int]:
    """getParentNameAndOrdinal: ``web-3`` is (web, 3); a name without one is ("", -1)."""
    m = _POD_NAME_RE.match(meta(pod).get("name", ""))
    if m is None:
        return "", -1
    n = int(m.group(2))
    return m.group(1), n if n <= _INT32_MAX else -1


def ordinal_of(pod: Obj) -> int:
    return parent_and_ordinal(pod)[1]


def pod_name(sts: Obj, ordinal: int) -> str:
    return f"{meta(sts).get('name', '')}-{ordinal}"


def start_ordinal(sts: Obj) -> int:
    """getStartOrdinal: spec.ordinals.start, else 0."""
    return int((spec(sts).get("ordinals") or {}).get("start", 0))


def end_ordinal(sts: Obj) -> int:
    return start_ordinal(sts) + int(spec(sts).get("replicas", 1)) - 1


def in_ordinal_range(pod: Obj, sts: Obj) -> bool:
    return start_ordinal(sts) <= ordinal_of(pod) <= end_ordinal(sts)


def is_member_of(sts: Obj, pod: Obj) -> bool:
    """isMemberOf: the pod's name says it is one of the set's."""
    parent, _ = parent_and_ordinal(pod)
    return parent == meta(sts).get("name")


def identity_matches(sts: Obj, pod: Obj) -> bool:
    """identityMatches: the right name, namespace, pod-name and pod-index labels."""
    parent, ordinal = parent_and_ordinal(pod)
    labels = meta(pod).get("labels") or {}
    return (ordinal >= 0 and parent == meta(sts).get("name")
            and meta(pod).get("name") == pod_name(sts, ordinal)
            and meta(pod).get("namespace") == meta(sts).get("namespace")
            and labels.get(POD_NAME_LABEL) == meta(pod).get("name")
            and labels.get(POD_INDEX_LABEL) == str(ordinal))


def update_identity(sts: Obj, pod: Obj) -> Obj:
    """updateIdentity: name, namespace and the pod-name and pod-index labels (in place)."""
    ordinal = ordinal_of(pod)
    m = pod.setdefault("metadata", {})
    m["name"] = pod_name(sts, ordinal)
    m["namespace"] = meta(sts).get("namespace", "")
    labels = m.setdefault("labels", {})
    labels[POD_NAME_LABEL] = m["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)
    return pod


def pod_revision(pod: Obj) -> str:
    return str((meta(pod).get("labels") or {}).get(REVISION_LABEL, ""))


def new_pod(sts: Obj, ordinal: int, revision: str) -> Obj:
    """newStatefulSetPod + setPodRevision: the template's labels, annotations, finalizers
    and spec (controller.GetPodFromTemplate), owned by the set, named NAME-ORDINAL, with
    hostname and subdomain set once (initIdentity) and the revision label."""
    template = spec(sts).get("template") or {}
    tmeta = template.get("metadata") or {}
    pod_meta: Obj = {"name": pod_name(sts, ordinal),
                     "namespace": meta(sts).get("namespace", ""),
                     "ownerReferences": [new_controller_ref(sts, API_VERSION, KIND)]}
    for k in ("labels", "annotations", "finalizers"):
        if tmeta.get(k):
            pod_meta[k] = copy.deepcopy(tmeta[k])
    pod_spec = copy.deepcopy(template.get("spec") or {})
    pod_spec["hostname"] = pod_meta["name"]
    if spec(sts).get("serviceName"):
        pod_spec["subdomain"] = spec(sts)["serviceName"]
    pod = update_identity(sts, {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
                                "spec": pod_spec})
    pod["metadata"]["labels"][REVISION_LABEL] = revision
    return pod


def new_versioned_pod(current_set: Obj, update_set: Obj, current_revision: str,
                      update_revision: str, ordinal: int) -> Obj:
    """newVersionedStatefulSetPod: below the partition (or, without rollingUpdate, below
    status.currentReplicas) a new pod is made at the current revision, else at the update
    revision. (Upstream's condition, precedence and all.)"""
    strategy = spec(current_set).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate")
    if (strategy.get("type") == ROLLING_UPDATE and rolling is None
            and ordinal < status(current_set).get("currentReplicas", 0)) or (
                rolling is not None and ordinal < rolling.get("partition", 0)):
        return new_pod(current_set, ordinal, current_revision)
    return new_pod(update_set, ordinal, update_revision)


# ---------------------------------------------------------------------------- health


def phase(pod: Obj) -> str:
    return str(status(pod).get("phase") or "")


def is_created(pod: Obj) -> bool:
    """isCreated: the API server gave it a phase (a planned pod has none)."""
    return phase(pod) != ""


def is_terminating(pod: Obj) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def running_and_ready(pod: Obj) -> bool:
    return phase(pod) == "Running" and is_ready(pod)


def running_and_available(pod: Obj, min_ready: int, now: dt.datetime) -> bool:
    return running_and_ready(pod) and is_available(pod, min_ready, now)


def is_healthy(pod: Obj) -> bool:
    return running_and_ready(pod) and not is_terminating(pod)


def is_unavailable(pod: Obj, min_ready: int, now: dt.datetime) -> bool:
    return not is_healthy(pod) or not is_available(pod, min_ready, now)


# ---------------------------------------------------------------------------- revisions

def revision_patch(sts: Obj) -> Obj:
    """getPatch: the part of a set a revision keeps, its template, as a replacing patch
    written as kubectl's rollbacker writes it (revision_patch.template_patch)."""
    return template_patch(sts)


def apply_revision(sts: Obj, revision: Obj) -> Obj:
    """ApplyRevision: the set with the revision's template (the patch replaces it); the
    zero values Go's encoding wrote (creationTimestamp null, empty resources) dropped, as
    decoding them into the typed set does."""
    out = copy.deepcopy(sts)
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template")
                             or {})
    template.pop("$patch", None)
    tmeta = template.get("metadata")
    if isinstance(tmeta, dict) and tmeta.get("creationTimestamp", "") is None:
        del tmeta["creationTimestamp"]
    for group in ("initContainers", "containers"):
        for c in (template.get("spec") or {}).get(group) or []:
            if c.get("resources") == {}:
                del c["resources"]
    out.setdefault("spec", {})["template"] = template
    return out


def new_revision(sts: Obj, number: int, collision_count: int) -> Obj:
    """newRevision: history.NewControllerRevision of the set's patch (labelled as its
    template, owned by it, named NAME-HASH) with the set's annotations."""
    labels = ((spec(sts).get("template") or {}).get("metadata") or {}).get("labels") or {}
    cr = history.new_controller_revision(sts, API_VERSION, KIND, labels, revision_patch(sts),
                                         number, collision_count)
    annotations = meta(sts).get("annotations")
    if annotations:
        cr["metadata"]["annotations"] = dict(annotations)
    return cr


def next_revision(revisions: list[Obj]) -> int:
    """nextRevision over sorted revisions: one past the last."""
    return int(revisions[-1].get("revision", 0)) + 1 if revisions else 1


@dataclass
class Revisions:
    """getStatefulSetRevisions' outcome: the update revision is ``update`` (``create``: it
    must be created first; ``renumber``: an older equal one becomes the newest, a rollback),
    the current one ``current`` (None: the update one)."""

    update: Obj
    current: Obj | None
    create: bool = False
    renumber: int | None = None


def choose_revisions(sts: Obj, revisions: list[Obj]) -> Revisions:
    """getStatefulSetRevisions without its writes: the set's own template as a revision,
    reused if the newest is equal to it, renumbered if an older one is, else new."""
    revisions = history.sort_controller_revisions(revisions)
    collision = status(sts).get("collisionCount") or 0
    candidate = new_revision(sts, next_revision(revisions), collision)
    equal = history.find_equal_revisions(revisions, candidate)
    if equal and history.equal_revision(revisions[-1], equal[-1]):
        update, create, renumber = revisions[-1], False, None
    elif equal:
        update, create, renumber = equal[-1], False, candidate["revision"]
    else:
        update, create, renumber = candidate, True, None
    current_name = status(sts).get("currentRevision")
    current = next((r for r in revisions if meta(r).get("name") == current_name), None)
    return Revisions(update=update, current=current, create=create, renumber=renumber)


def history_to_delete(sts: Obj, pods: list[Obj], revisions: list[Obj], current: str,
                      update: str) -> list[Obj]:
    """truncateHistory: the oldest revisions no pod, nor status, uses, beyond
    revisionHistoryLimit."""
    live = {current, update, *(pod_revision(p) for p in pods)}
    old = [r for r in history.sort_controller_revisions(revisions)
           if meta(r).get("name") not in live]
    limit = spec(sts).get("revisionHistoryLimit", 10)
    if limit < 0 or len(old) <= limit:
        return []
    return old[:len(old) - limit]


# ---------------------------------------------------------------------------- claiming


def claim_pods(sts: Obj, pods: list[Obj]) -> Claim:
    """ClaimPods with isMemberOf as a second filter: the set's pods are the ones its
    selector and its name both pick."""
    selector = spec(sts).get("selector")
    return claim_objects(sts, pods, lambda pod: labels_match(
        selector, meta(pod).get("labels") or {}) and is_member_of(sts, pod))


# ---------------------------------------------------------------------------- the plan


@dataclass
class Action:
    """One write: create ``pod``, delete it (``why``: failed, scale down, update), or
    update its identity labels."""

    verb: str
    pod: Obj
    why: str = ""

    @property
    def name(self) -> str:
        return str(meta(self.pod).get("name", ""))


@dataclass
class Plan:
    """What one sync does: ``actions`` (one after another when ``monotonic``, else in
    slow-start batches) and the status to write."""

    actions: list[Action]
    status: Obj
    monotonic: bool


def _count(status_: Obj, pods: list[Obj], min_ready: int, current: str, update: str,
           now: dt.datetime) -> None:
    """updateStatus/computeReplicaStatus over ``pods``."""
    counts = dict.fromkeys(("replicas", "readyReplicas", "availableReplicas",
                            "currentReplicas", "updatedReplicas"), 0)
    for pod in pods:
        if is_created(pod):
            counts["replicas"] += 1
        if running_and_ready(pod):
            counts["readyReplicas"] += 1
            if running_and_available(pod, min_ready, now):
                counts["availableReplicas"] += 1
        if is_created(pod) and not is_terminating(pod):
            rev = pod_revision(pod)
            if rev == current:
                counts["currentReplicas"] += 1
            if rev == update:
                counts["updatedReplicas"] += 1
    status_.update(counts)


def plan(sts: Obj, pods: list[Obj], current_set: Obj, update_set: Obj, current: str,
         update: str, collision_count: int, now: dt.datetime) -> Plan:
    """updateStatefulSet's decisions over the set's pods: ``current_set``/``update_set`` are
    the set at its current and update revisions (named ``current``/``update``)."""
    min_ready = int(spec(sts).get("minReadySeconds", 0))
    st: Obj = {"observedGeneration": meta(sts).get("generation", 0),
               "currentRevision": current, "updateRevision": update,
               "collisionCount": collision_count}
    _count(st, pods, min_ready, current, update, now)
    start, end = start_ordinal(sts), end_ordinal(sts)
    replicas: list[Obj | None] = [None] * max(0, end - start + 1)
    condemned: list[Obj] = []
    for pod in pods:
        o = ordinal_of(pod)
        if start <= o <= end:
            replicas[o - start] = pod
        elif o >= 0:
            condemned.append(pod)
    slots: list[Obj] = [
        p if p is not None else new_versioned_pod(current_set, update_set, current, update,
                                                  start + i)
        for i, p in enumerate(replicas)]
    condemned.sort(key=ordinal_of, reverse=True)
    first_unavailable = next((p for p in slots if is_unavailable(p, min_ready, now)), None)
    if first_unavailable is None:
        first_unavailable = next((p for p in reversed(condemned)
                                  if is_unavailable(p, min_ready, now)), None)
    monotonic = spec(sts).get("podManagementPolicy") != PARALLEL
    actions: list[Action] = []
    out = Plan(actions, st, monotonic)
    if meta(sts).get("deletionTimestamp"):
        return out

    def recount() -> Plan:
        _count(st, slots + condemned, min_ready, current, update, now)
        return out

    for pod in slots:  # processReplica
        if phase(pod) in ("Failed", "Succeeded"):
            if not is_terminating(pod):
                actions.append(Action(DELETE, pod, "failed"))
            if monotonic:
                return recount()
            continue
        if not is_created(pod):
            actions.append(Action(CREATE, pod))
            if monotonic:
                return recount()
        if monotonic and (is_terminating(pod) or not running_and_ready(pod)
                          or not running_and_available(pod, min_ready, now)):
            return recount()
        if is_created(pod) and not identity_matches(update_set, pod):
            actions.append(Action(UPDATE, update_identity(update_set, copy.deepcopy(pod))))
    for pod in condemned:  # processCondemned
        if is_terminating(pod):
            if monotonic:
                return recount()
            continue
        if monotonic and pod is not first_unavailable and (
                not running_and_available(pod, min_ready, now)):
            return recount()
        actions.append(Action(DELETE, pod, "scale down"))
        if monotonic:
            return recount()
    recount()
    strategy = spec(sts).get("updateStrategy") or {}
    if strategy.get("type") == ON_DELETE:
        return out
    rolling = strategy.get("rollingUpdate") or {}
    partition = int(rolling.get("partition", 0))
    if rolling.get("maxUnavailable") is not None:
        return _update_max_unavailable(out, slots, partition, max_unavailable(sts), update,
                                       min_ready, now)
    for pod in reversed(slots[partition:]):
        if pod_revision(pod) != update and not is_terminating(pod):
            actions.append(Action(DELETE, pod, "update"))
            st["currentReplicas"] -= 1
            return out
        if is_unavailable(pod, min_ready, now):
            return out
    return out


def max_unavailable(sts: Obj) -> int:
    """getStatefulSetMaxUnavailable: rollingUpdate.maxUnavailable of the replicas (a
    percentage rounded up), at least 1."""
    value = ((spec(sts).get("updateStrategy") or {}).get("rollingUpdate") or {}).get(
        "maxUnavailable")
    return max(1, scaled_value(value, int(spec(sts).get("replicas", 1)), True))


def _update_max_unavailable(out: Plan, slots: list[Obj], partition: int, most: int,
                            update: str, min_ready: int, now: dt.datetime) -> Plan:
    """updateStatefulSetAfterInvariantEstablished (MaxUnavailableStatefulSet, on by default
    since 1.35; used here when maxUnavailable is set): while no more than ``most`` pods are
    unavailable, delete up to the difference of outdated pods, highest ordinal first."""
    unavailable = sum(1 for p in slots if is_unavailable(p, min_ready, now))
    if unavailable > most:
        return out
    budget = most - unavailable
    for pod in reversed(slots[partition:]):
        if budget <= 0:
            break
        if pod_revision(pod) != update and not is_terminating(pod):
            out.actions.append(Action(DELETE, pod, "update"))
            out.status["currentReplicas"] -= 1
            budget -= 1
    return out


def complete_rolling_update(sts: Obj, st: Obj) -> None:
    """completeRollingUpdate: all pods updated and ready, the update revision is current."""
    if ((spec(sts).get("updateStrategy") or {}).get("type") == ROLLING_UPDATE
            and st.get("updatedReplicas") == st.get("replicas")
            and st.get("readyReplicas") == st.get("replicas")):
        st["currentReplicas"] = st.get("updatedReplicas", 0)
        st["currentRevision"] = st.get("updateRevision", "")


def status_body(sts: Obj, st: Obj) -> Obj:
    """The status as the API encodes it (omitempty but replicas and availableReplicas),
    keeping the conditions the set had."""
    out: Obj = {}
    for k in ("observedGeneration", "replicas", "readyReplicas", "currentReplicas",
              "updatedReplicas", "currentRevision", "updateRevision", "collisionCount",
              "availableReplicas"):
        v = st.get(k)
        if v or k in ("replicas", "availableReplicas", "collisionCount"):
            out[k] = v if v is not None else 0
    if status(sts).get("conditions"):
        out["conditions"] = status(sts)["conditions"]
    return out


def requeue_after(sts: Obj, pods: list[Obj], now: dt.datetime) -> float | None:
    """Seconds until the first Running and Ready pod not yet available becomes so
    (minReadySeconds after it turned Ready), to sync again then (upstream schedules the
    same availability check); None when no pod is waiting."""
    min_ready = int(spec(sts).get("minReadySeconds", 0))
    if min_ready <= 0:
        return None
    waits = []
    for pod in pods:
        since = ready_since(pod)
        if since is not None and running_and_ready(pod) and not is_available(
                pod, min_ready, now):
            waits.append((since + dt.timedelta(seconds=min_ready) - now).total_seconds())
    return max(0.0, min(waits)) + 0.05 if waits else None
