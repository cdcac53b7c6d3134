"""A workload's revisions as kubectl reads and restores them (polymorphichelpers'
history.go and rollback.go): a Deployment's are its ReplicaSets (the revision annotation,
the old ones oldest first, the new one the oldest whose template is the Deployment's), a
DaemonSet's or StatefulSet's its ControllerRevisions; the REVISION CHANGE-CAUSE table, one
revision's pod template, and the rollback to the previous (or a given) revision."""

from __future__ import annotations

import copy
import io
from typing import Any

from pykubelet.api.revision_patch import template_patch
from pykubelet.cli.kubectl.describe import RawWriter, describe_pod_template, selector_string
from pykubelet.cli.kubectl.resources import Target
from pykubelet.cli.kubectl.rollout_status import (
    REVISION,
    RolloutError,
    group_kind,
    int_of,
    kind_of,
    revision_of,
)
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.tabwriter import TabWriter
from pykubelet.client.rest import JSON_PATCH, STRATEGIC_MERGE_PATCH, Resource, StatusError

Obj = dict[str, Any]
CHANGE_CAUSE = "kubernetes.io/change-cause"
HASH_LABEL = "pod-template-hash"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# annotations a Deployment keeps through a rollback (rollback.go's annotationsToSkip)
ANNOTATIONS_TO_SKIP = (LAST_APPLIED, REVISION, "deployment.kubernetes.io/revision-history",
                       "deployment.kubernetes.io/desired-replicas",
                       "deployment.kubernetes.io/max-replicas",
                       "deprecated.deployment.rollback.to")
REPLICASETS = Resource("apps", "v1", "replicasets")
CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions")


def _created(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


def _controlled_by(obj: Obj, owner: Obj) -> bool:
    uid = (owner.get("metadata") or {}).get("uid")
    return any(r.get("controller") and r.get("uid") == uid
               for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


def _without_hash(template: Obj) -> Obj:
    t = copy.deepcopy(template or {})
    meta = t.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != HASH_LABEL}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    pruned: Obj = _prune_empty(t)
    return pruned


def _prune_empty(value: Any) -> Any:
    """Semantic equality's view: nil and empty maps and lists are the same."""
    if isinstance(value, dict):
        out = {k: _prune_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in ({}, [], None)}
    if isinstance(value, list):
        return [_prune_empty(v) for v in value]
    return value


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    """Two pod templates equal but for the pod-template-hash label."""
    return bool(_without_hash(a) == _without_hash(b))


def deployment_replicasets(session: Session, d: Obj) -> tuple[list[Obj], Obj | None]:
    """deploymentutil.GetAllReplicaSets: the ReplicaSets the Deployment controls, oldest
    first, split into the old ones and the new one (the oldest whose template is the
    Deployment's)."""
    meta = d.get("metadata") or {}
    doc = session.client.request(
        "GET", REPLICASETS.path(meta.get("namespace", "")),
        params={"labelSelector": selector_string((d.get("spec") or {}).get("selector"))})
    owned = sorted((rs for rs in (doc or {}).get("items") or [] if _controlled_by(rs, d)),
                   key=_created)
    template = (d.get("spec") or {}).get("template") or {}
    new = next((rs for rs in owned
                if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template)),
               None)
    old = [rs for rs in owned if rs is not new]
    return old, new


def controller_revisions(session: Session, owner: Obj) -> list[Obj]:
    """controlledHistory: the ControllerRevisions a DaemonSet or StatefulSet controls."""
    meta = owner.get("metadata") or {}
    doc = session.client.request(
        "GET", CONTROLLER_REVISIONS.path(meta.get("namespace", "")),
        params={"labelSelector": selector_string((owner.get("spec") or {}).get("selector"))})
    return [h for h in (doc or {}).get("items") or [] if _controlled_by(h, owner)]


def applied(owner: Obj, history: Obj) -> Obj:
    """applyDaemonSetHistory / applyRevision: the owner with the revision's template (its
    data is ``{"spec": {"template": {..., "$patch": "replace"}}}``)."""
    out = copy.deepcopy(owner)
    template = dict(((history.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    out.setdefault("spec", {})["template"] = template
    return out


# the status fields of apps/v1 a typed object always writes (no omitempty), and those it
# drops at their zero value
_STATUS_KEPT = {"DaemonSet": ("currentNumberScheduled", "numberMisscheduled",
                              "desiredNumberScheduled", "numberReady"),
                "StatefulSet": ("replicas", "availableReplicas")}
_STATUS_OMITTED = {"DaemonSet": ("observedGeneration", "updatedNumberScheduled",
                                 "numberAvailable", "numberUnavailable"),
                   "StatefulSet": ("observedGeneration", "readyReplicas", "currentReplicas",
                                   "updatedReplicas", "currentRevision", "updateRevision")}


def typed_view(kind: str, obj: Obj) -> Obj:
    """The object as kubectl prints its typed DaemonSet or StatefulSet (GetHistory's): Go's
    encoding writes the template's ``creationTimestamp: null`` and each container's
    ``resources`` struct, and drops zero-valued omitempty fields (``minReadySeconds: 0``,
    ``numberUnavailable: 0``)."""
    out = copy.deepcopy(obj)
    spec = out.setdefault("spec", {})
    if not spec.get("minReadySeconds"):
        spec.pop("minReadySeconds", None)
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for c in (template.get("spec") or {}).get(group) or []:
            c.setdefault("resources", {})
    status = out.setdefault("status", {})
    for key in _STATUS_KEPT.get(kind, ()):
        status.setdefault(key, 0)
    for key in _STATUS_OMITTED.get(kind, ()):
        if not status.get(key):
            status.pop(key, None)
    if not status.get("conditions"):
        status.pop("conditions", None)
    return out


def history_objects(session: Session, t: Target, obj: Obj) -> dict[int, Obj]:
    """HistoryViewer.GetHistory: revision -> the object of that revision."""
    kind = kind_of(t)
    if kind == "Deployment":
        old, new = deployment_replicasets(session, obj)
        out: dict[int, Obj] = {}
        for rs in [*old, *([new] if new else [])]:
            try:
                out[revision_of(rs)] = {"kind": "ReplicaSet", "apiVersion": "apps/v1", **rs}
            except RolloutError:
                continue
        return out
    if kind in ("DaemonSet", "StatefulSet"):
        return {int_of(h.get("revision")): typed_view(kind, applied(obj, h))
                for h in controller_revisions(session, obj)}
    raise RolloutError(f'no history viewer has been implemented for "{group_kind(t)}"')


def revision_templates(session: Session, t: Target, obj: Obj) -> dict[int, tuple[Obj, str]]:
    """revision -> (pod template, change-cause): ViewHistory's historyInfo (a
    Deployment's template also shows its ReplicaSet's change-cause annotation)."""
    out: dict[int, tuple[Obj, str]] = {}
    if kind_of(t) == "Deployment":
        for rev, rs in history_objects(session, t, obj).items():
            template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
            cause = ((rs.get("metadata") or {}).get("annotations") or {}).get(CHANGE_CAUSE, "")
            if cause:
                tmeta = template.setdefault("metadata", {})
                tmeta["annotations"] = {**(tmeta.get("annotations") or {}),
                                        CHANGE_CAUSE: cause}
            out[rev] = (template, str(cause))
        return out
    if kind_of(t) in ("DaemonSet", "StatefulSet"):
        for h in controller_revisions(session, obj):
            template = (applied(obj, h).get("spec") or {}).get("template") or {}
            cause = ((h.get("metadata") or {}).get("annotations") or {}).get(CHANGE_CAUSE, "")
            out[int_of(h.get("revision"))] = (template, str(cause))
        return out
    raise RolloutError(f'no history viewer has been implemented for "{group_kind(t)}"')


def template_text(template: Obj) -> str:
    """printTemplate: DescribePodTemplate straight onto a buffer."""
    w = RawWriter()
    describe_pod_template(w, template)
    return w.text()


def history_table(causes: dict[int, str]) -> str:
    buf = io.StringIO()
    tw = TabWriter(buf, minwidth=0, padding=2)
    tw.write("REVISION\tCHANGE-CAUSE\n")
    for rev in sorted(causes):
        tw.write(f"{rev}\t{causes[rev] or '<none>'}\n")
    tw.flush()
    return buf.getvalue()


def revision_not_found(revision: int) -> RolloutError:
    return RolloutError(f"unable to find specified revision {revision} in history")


def replicaset_for_revision(old: list[Obj], new: Obj | None, to_revision: int,
                            name: str) -> Obj:
    """deploymentRevision: the ReplicaSet of ``to_revision``, or (0) the one before the
    latest."""
    latest, latest_rev, previous, previous_rev = None, -1, None, -1
    for rs in [*old, *([new] if new else [])]:
        try:
            v = revision_of(rs)
        except RolloutError:
            continue
        if to_revision == 0:
            if latest_rev < v:
                previous, previous_rev = latest, latest_rev
                latest, latest_rev = rs, v
            elif previous_rev < v:
                previous, previous_rev = rs, v
        elif to_revision == v:
            return rs
    if to_revision > 0:
        raise revision_not_found(to_revision)
    if previous is None:
        raise RolloutError(f'no rollout history found for deployment "{name}"')
    return previous


def rollback_deployment(session: Session, t: Target, to_revision: int, dry_run: str) -> str:
    """DeploymentRollbacker.Rollback: the operation word (or the dry run's template)."""
    if to_revision < 0:
        raise revision_not_found(to_revision)
    try:
        d = session.client.request("GET", t.path)
    except StatusError as exc:
        raise RolloutError(f"failed to retrieve Deployment {t.name}: {exc.message}") from None
    old, new = deployment_replicasets(session, d)
    rs = replicaset_for_revision(old, new, to_revision, t.name)
    template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
    if dry_run == "client":
        return template_text(template)
    if (d.get("spec") or {}).get("paused"):
        raise RolloutError("you cannot rollback a paused deployment; resume it first with "
                           "'pykubectl rollout resume' and try again")
    if equal_ignore_hash(template, (d.get("spec") or {}).get("template") or {}):
        return f"skipped rollback (current template already matches revision {to_revision})"
    labels = (template.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(HASH_LABEL, None)
    current = (d.get("metadata") or {}).get("annotations") or {}
    annotations = {k: current[k] for k in ANNOTATIONS_TO_SKIP if k in current}
    annotations.update({k: v for k, v in ((rs.get("metadata") or {}).get("annotations")
                                          or {}).items() if k not in ANNOTATIONS_TO_SKIP})
    patch = [{"op": "replace", "path": "/spec/template", "value": template},
             {"op": "replace", "path": "/metadata/annotations", "value": annotations}]
    try:
        session.client.request("PATCH", t.path, body=patch, content_type=JSON_PATCH,
                               params={"dryRun": "All"} if dry_run == "server" else None)
    except StatusError as exc:
        raise RolloutError(f"failed restoring revision {to_revision}: {exc.message}") from None
    return "rolled back"


def rollback_history(session: Session, t: Target, obj: Obj, to_revision: int,
                     dry_run: str) -> str:
    """DaemonSetRollbacker / StatefulSetRollbacker: the ControllerRevision's data patched
    back onto the object."""
    if to_revision < 0:
        raise revision_not_found(to_revision)
    history = controller_revisions(session, obj)
    if to_revision == 0 and len(history) <= 1:
        raise RolloutError("no last revision to roll back to")
    if to_revision == 0:
        target = sorted(history, key=lambda h: int_of(h.get("revision")))[-2]
    else:
        found = [h for h in history if int_of(h.get("revision")) == to_revision]
        if not found:
            raise revision_not_found(to_revision)
        target = found[0]
    restored = applied(obj, target)
    if dry_run == "client":
        return "will roll back to " + template_text(
            (restored.get("spec") or {}).get("template") or {})
    if template_patch(obj) == (target.get("data") or {}):
        return f"skipped rollback (current template already matches revision {to_revision})"
    try:
        session.client.request("PATCH", t.path, body=target.get("data") or {},
                               content_type=STRATEGIC_MERGE_PATCH,
                               params={"dryRun": "All"} if dry_run == "server" else None)
    except StatusError as exc:
        raise RolloutError(f"failed restoring revision {to_revision}: {exc.message}") from None
    return "rolled back"
