"""``pykubectl rollout status|history|undo|restart|pause|resume``: kubectl's rollout
(pkg/cmd/rollout over pkg/polymorphichelpers), for Deployments, DaemonSets and
StatefulSets where kubectl supports each.

- status: the object is read, then watched by name; each version is judged by the kind's
  status viewer (rollout_status.go: ``Waiting for deployment "web" rollout to finish: 1 of 3
  updated replicas are available...``) and the line printed, until it is rolled out (or at
  once with ``--watch=false``); ``--timeout`` ends it with kubectl's error.
- history: a Deployment's revisions are its ReplicaSets' ``deployment.kubernetes.io/revision``
  annotations, a DaemonSet's or StatefulSet's its ControllerRevisions; the REVISION
  CHANGE-CAUSE table, or one revision's pod template (``--revision=N``).
- undo: a Deployment gets the pod template of the previous (or ``--to-revision``)
  ReplicaSet back through a JSON patch, with that ReplicaSet's annotations; a DaemonSet or
  StatefulSet gets its ControllerRevision's data as a strategic merge patch.
- restart: the ``kubectl.kubernetes.io/restartedAt`` annotation on the pod template; pause
  and resume: ``spec.paused`` (Deployments only).

Objects are read as kubectl's builder reads them (``TYPE NAME``, ``TYPE/NAME``, ``TYPE``
with ``-l`` or alone for all); what could not be read is reported after the others, each
failure on its own line as kubectl's aggregated errors print.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import io
import sys
import time
from collections.abc import Callable
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError, status_text
from pykubelet.cli.kubectl.printers import print_objects
from pykubelet.cli.kubectl.resources import Target, targets
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.tabwriter import TabWriter
from pykubelet.client.rest import JSON_PATCH, STRATEGIC_MERGE_PATCH, Resource, StatusError

Obj = dict[str, Any]
Failure = StatusError | str  # a server Status, or a message kubectl prints as it is

REVISION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"
HASH_LABEL = "pod-template-hash"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# annotations a Deployment keeps through a rollback (rollback.go's annotationsToSkip)
ANNOTATIONS_TO_SKIP = (LAST_APPLIED, REVISION, "deployment.kubernetes.io/revision-history",
                       "deployment.kubernetes.io/desired-replicas",
                       "deployment.kubernetes.io/max-replicas",
                       "deprecated.deployment.rollback.to")
REPLICASETS = Resource("apps", "v1", "replicasets")
CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions")
SUBCOMMANDS = ("history", "pause", "restart", "resume", "status", "undo")
APPLY_WARNING = (
    "Warning: resource {name} was previously managed with 'pykubectl apply'. Rolling back "
    "will not update the " + LAST_APPLIED + " annotation, which may cause unexpected "
    "behavior on future 'pykubectl apply' operations. Consider using 'pykubectl apply' with "
    "your previous configuration file instead.")


class RolloutError(Exception):
    """A polymorphic helper's error: its message is printed as kubectl prints it."""


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = ("Manage the rollout of a deployment, daemon set or stateful set: "
                     "rollout (status|history|undo|restart|pause|resume) TYPE/NAME.")
    p.add_argument("words", nargs="*", metavar="SUBCOMMAND (TYPE NAME | TYPE/NAME)")
    p.add_argument("-l", "--selector", default="", help="label selector")
    p.add_argument("-f", "--filename", action="append", default=[],
                   help="files naming the objects")
    p.add_argument("-w", "--watch", nargs="?", const="true", default="true",
                   help="(status) watch until it is done (--watch=false: once)")
    p.add_argument("--revision", type=int, default=0,
                   help="(status, history) the revision to show or to expect")
    p.add_argument("--to-revision", type=int, default=0, help="(undo) 0: the previous one")
    p.add_argument("--timeout", default="0s", help="(status) 0: wait forever")
    p.add_argument("-o", "--output", default="", help="name|json|yaml")
    p.add_argument("--dry-run", nargs="?", const="client", default="none",
                   choices=("none", "client", "server"), help="none|client|server")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    words: list[str] = args.words
    if not words:
        raise CommandError("error: a subcommand is needed: " + "|".join(SUBCOMMANDS))
    if words[0] not in SUBCOMMANDS:
        raise CommandError(f'error: unknown command "{words[0]}" for "pykubectl rollout"')
    sub, resources = words[0], words[1:]
    if args.output not in ("", "name", "json", "yaml"):
        raise CommandError(f'error: unable to match a printer suitable for the output format '
                           f'"{args.output}", allowed formats are: json,name,yaml')
    if not resources and not args.filename:
        raise CommandError("error: required resource not specified")
    if sub in ("status", "history") and args.revision < 0:
        raise CommandError(f"error: revision must be a positive integer: {args.revision}")
    timeout = 0.0
    if sub == "status":
        from pykubelet.cli.kubectl.timeouts import parse_duration

        timeout = parse_duration(args.timeout, "--timeout")
    entries = _entries(session, args, resources)
    failures: list[Failure] = []
    if sub in ("pause", "resume", "restart"):
        # set.CalculatePatches over r.Infos(): what could not be read is reported first
        failures += [e for e in entries if not isinstance(e, tuple)]
        entries = [e for e in entries if isinstance(e, tuple)]
    if not entries and not failures and sub != "history" and sub != "undo":
        print(f"No resources found in {session.namespace} namespace.", file=sys.stderr)
        return 0
    for entry in entries:
        if not isinstance(entry, tuple):
            failures.append(entry)
            continue
        t, obj = entry
        try:
            if sub == "status":
                watch_status(session, t, obj, args.revision, _true(args.watch), timeout)
            elif sub == "history":
                _history(session, args, t, obj)
            elif sub == "undo":
                _undo(session, args, t, obj)
            else:
                _patch(session, args, sub, t, obj)
        except StatusError as exc:
            failures.append(exc)
        except RolloutError as exc:
            failures.append(str(exc))
    if failures:
        raise CommandError(failure_text(failures))
    return 0


def _true(text: str) -> bool:
    return text.lower() in ("1", "t", "true")


def failure_text(failures: list[Failure]) -> str:
    """cmdutil.CheckErr over an aggregate: one error as ``error: ...`` (a Status as
    kubectl words it), several each on a line as they are."""
    lines = [status_text(f) if isinstance(f, StatusError) else f for f in failures]
    if len(lines) == 1 and not isinstance(failures[0], StatusError):
        return lines[0] if lines[0].startswith("error: ") else "error: " + lines[0]
    return "\n".join(lines)


def _entries(session: Session, args: argparse.Namespace,
             resources: list[str]) -> list[tuple[Target, Obj] | Failure]:
    """The objects named, read now (the builder's Latest()), in order; a failed read in
    their place."""
    out: list[tuple[Target, Obj] | Failure] = []
    if args.filename:
        from pykubelet.cli.kubectl.manifests import read_all

        for m in read_all(args.filename):
            mapping = session.discovery.for_kind(m.api_version, m.kind)
            ns = (m.namespace or session.namespace) if mapping.namespaced else ""
            t = Target(mapping, m.name, ns)
            try:
                out.append((t, session.client.request("GET", t.path)))
            except StatusError as exc:
                out.append(exc)
        return out
    for t in targets(session, resources, verb="get"):
        try:
            if t.name:
                out.append((t, session.client.request("GET", t.path)))
                continue
            doc = session.client.request("GET", t.path,
                                         params={"labelSelector": args.selector or None})
        except StatusError as exc:
            out.append(exc)
            continue
        for item in (doc or {}).get("items") or []:
            meta = item.get("metadata") or {}
            out.append((Target(t.mapping, meta.get("name", ""), meta.get("namespace", "")),
                        item))
    return out


def _group_kind(t: Target) -> str:
    """schema.GroupKind's String(): ``Deployment.apps``, ``Pod``."""
    return f"{t.mapping.kind}.{t.mapping.group}" if t.mapping.group else t.mapping.kind


def _kind(t: Target) -> str:
    return t.mapping.kind if t.mapping.group == "apps" else ""


def _print(args: argparse.Namespace, t: Target, obj: Obj, operation: str) -> None:
    """The name printer with an operation (cli-runtime's, dry runs marked)."""
    if args.output in ("json", "yaml"):
        print_objects(sys.stdout, args.output, obj)
    elif args.output == "name":
        print(f"{t.mapping.kind_string}/{t.name}")
    else:
        dry = {"client": " (dry run)", "server": " (server dry run)"}.get(args.dry_run, "")
        print(f"{t.mapping.kind_string}/{t.name} {operation}{dry}")
    sys.stdout.flush()


# ---------------------------------------------------------------------------- status


def _int(value: Any) -> int:
    return int(value or 0)


def revision_of(obj: Obj) -> int:
    """deploymentutil.Revision: the revision annotation, 0 without one."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION)
    if text is None:
        return 0
    try:
        return int(text)
    except ValueError:
        raise RolloutError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


def deployment_status(d: Obj, revision: int = 0) -> tuple[str, bool]:
    """DeploymentStatusViewer.Status: the line to print and whether it is rolled out."""
    meta, spec, status = d.get("metadata") or {}, d.get("spec") or {}, d.get("status") or {}
    name = meta.get("name", "")
    if revision > 0:
        try:
            have = revision_of(d)
        except RolloutError as exc:
            raise RolloutError(f'cannot get the revision of deployment "{name}": {exc}') from None
        if revision != have:
            raise RolloutError(f"desired revision ({revision}) is different from the running "
                               f"revision ({have})")
    if _int(meta.get("generation")) > _int(status.get("observedGeneration")):
        return "Waiting for deployment spec update to be observed...\n", False
    progressing = next((c for c in status.get("conditions") or []
                        if c.get("type") == "Progressing"), None)
    if progressing and progressing.get("reason") == "ProgressDeadlineExceeded":
        raise RolloutError(f'deployment "{name}" exceeded its progress deadline')
    updated, replicas = _int(status.get("updatedReplicas")), _int(status.get("replicas"))
    available = _int(status.get("availableReplicas"))
    if spec.get("replicas") is not None and updated < _int(spec["replicas"]):
        return (f'Waiting for deployment "{name}" rollout to finish: {updated} out of '
                f"{spec['replicas']} new replicas have been updated...\n", False)
    if replicas > updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {replicas - updated} old '
                "replicas are pending termination...\n", False)
    if available < updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {available} of {updated} '
                "updated replicas are available...\n", False)
    return f'deployment "{name}" successfully rolled out\n', True


def daemonset_status(ds: Obj, revision: int = 0) -> tuple[str, bool]:
    """DaemonSetStatusViewer.Status."""
    meta, spec, status = ds.get("metadata") or {}, ds.get("spec") or {}, ds.get("status") or {}
    name = meta.get("name", "")
    if (spec.get("updateStrategy") or {}).get("type") != "RollingUpdate":
        raise RolloutError("rollout status is only available for RollingUpdate strategy type")
    if _int(meta.get("generation")) > _int(status.get("observedGeneration")):
        return "Waiting for daemon set spec update to be observed...\n", False
    desired = _int(status.get("desiredNumberScheduled"))
    updated = _int(status.get("updatedNumberScheduled"))
    available = _int(status.get("numberAvailable"))
    if updated < desired:
        return (f'Waiting for daemon set "{name}" rollout to finish: {updated} out of {desired} '
                "new pods have been updated...\n", False)
    if available < desired:
        return (f'Waiting for daemon set "{name}" rollout to finish: {available} of {desired} '
                "updated pods are available...\n", False)
    return f'daemon set "{name}" successfully rolled out\n', True


def statefulset_status(sts: Obj, revision: int = 0) -> tuple[str, bool]:
    """StatefulSetStatusViewer.Status."""
    meta = sts.get("metadata") or {}
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        raise RolloutError("rollout status is only available for RollingUpdate strategy type")
    observed = _int(status.get("observedGeneration"))
    if observed == 0 or _int(meta.get("generation")) > observed:
        return "Waiting for statefulset spec update to be observed...\n", False
    replicas = spec.get("replicas")
    ready, updated = _int(status.get("readyReplicas")), _int(status.get("updatedReplicas"))
    if replicas is not None and ready < _int(replicas):
        return f"Waiting for {_int(replicas) - ready} pods to be ready...\n", False
    rolling = strategy.get("rollingUpdate")
    if rolling is not None:
        partition = rolling.get("partition")
        if replicas is not None and partition is not None and (
                updated < _int(replicas) - _int(partition)):
            return ("Waiting for partitioned roll out to finish: "
                    f"{updated} out of {_int(replicas) - _int(partition)} new pods have been "
                    "updated...\n", False)
        return f"partitioned roll out complete: {updated} new pods have been updated...\n", True
    if status.get("updateRevision") != status.get("currentRevision"):
        return ("waiting for statefulset rolling update to complete "
                f"{updated} pods at revision {status.get('updateRevision', '')}...\n", False)
    return ("statefulset rolling update complete "
            f"{_int(status.get('currentReplicas'))} pods at revision "
            f"{status.get('currentRevision', '')}...\n", True)


STATUS_VIEWERS: dict[str, Callable[[Obj, int], tuple[str, bool]]] = {
    "Deployment": deployment_status, "DaemonSet": daemonset_status,
    "StatefulSet": statefulset_status}


def watch_status(session: Session, t: Target, obj: Obj, revision: int, watch: bool,
                 timeout: float) -> None:
    """The object's status line for its current version and each change, until done
    (UntilWithSync over a watch by name); kubectl's timeout error."""
    viewer = STATUS_VIEWERS.get(_kind(t))
    if viewer is None:
        raise RolloutError(f"no status viewer has been implemented for {_group_kind(t)}")
    deadline = time.monotonic() + timeout if timeout else float("inf")
    text, done = viewer(obj, revision)
    sys.stdout.write(text)
    sys.stdout.flush()
    if done or not watch:
        return
    rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RolloutError("timed out waiting for the condition")
        try:
            for ev in session.client.watch_events(
                    t.mapping.rest, t.namespace, resource_version=rv,
                    timeout_seconds=max(1, int(min(left, 300) + 0.999)),
                    params={"fieldSelector": f"metadata.name={t.name}"}):
                current = ev.get("object") or {}
                rv = str((current.get("metadata") or {}).get("resourceVersion") or rv)
                if ev.get("type") == "DELETED":
                    raise RolloutError("object has been deleted")
                if ev.get("type") not in ("ADDED", "MODIFIED"):
                    continue
                text, done = viewer(current, revision)
                sys.stdout.write(text)
                sys.stdout.flush()
                if done:
                    return
                if time.monotonic() >= deadline:
                    raise RolloutError("timed out waiting for the condition")
        except StatusError as exc:
            if not exc.gone:
                raise
            rv = ""  # too old: start again from the current state (a relist)
            current = session.client.request("GET", t.path)
            rv = str((current.get("metadata") or {}).get("resourceVersion") or "")
            text, done = viewer(current, revision)
            sys.stdout.write(text)
            sys.stdout.flush()
            if done:
                return


# ---------------------------------------------------------------------------- revisions


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
    from pykubelet.cli.kubectl.describe import selector_string

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
    from pykubelet.cli.kubectl.describe import selector_string

    meta = owner.get("metadata") or {}
    doc = session.client.request(
        "GET", CONTROLLER_REVISIONS.path(meta.get("namespace", "")),
        params={"labelSelector": selector_string((owner.get("spec") or {}).get("selector"))})
    return [h for h in (doc or {}).get("items") or [] if _controlled_by(h, owner)]


def _applied(owner: Obj, history: Obj) -> Obj:
    """applyDaemonSetHistory / applyRevision: the owner with the revision's template (its
    data is ``{"spec": {"template": {..., "$patch": "replace"}}}``)."""
    out = copy.deepcopy(owner)
    template = dict(((history.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    out.setdefault("spec", {})["template"] = template
    return out


def _history_objects(session: Session, t: Target, obj: Obj) -> dict[int, Obj]:
    """HistoryViewer.GetHistory: revision -> the object of that revision."""
    kind = _kind(t)
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
        return {_int(h.get("revision")): _applied(obj, h)
                for h in controller_revisions(session, obj)}
    raise RolloutError(f'no history viewer has been implemented for "{_group_kind(t)}"')


def _templates(session: Session, t: Target, obj: Obj) -> dict[int, tuple[Obj, str]]:
    """revision -> (pod template, change-cause): ViewHistory's historyInfo (a
    Deployment's template also shows its ReplicaSet's change-cause annotation)."""
    out: dict[int, tuple[Obj, str]] = {}
    if _kind(t) == "Deployment":
        for rev, rs in _history_objects(session, t, obj).items():
            template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
            cause = ((rs.get("metadata") or {}).get("annotations") or {}).get(CHANGE_CAUSE, "")
            if cause:
                tmeta = template.setdefault("metadata", {})
                tmeta["annotations"] = {**(tmeta.get("annotations") or {}),
                                        CHANGE_CAUSE: cause}
            out[rev] = (template, str(cause))
        return out
    if _kind(t) in ("DaemonSet", "StatefulSet"):
        for h in controller_revisions(session, obj):
            template = (_applied(obj, h).get("spec") or {}).get("template") or {}
            cause = ((h.get("metadata") or {}).get("annotations") or {}).get(CHANGE_CAUSE, "")
            out[_int(h.get("revision"))] = (template, str(cause))
        return out
    raise RolloutError(f'no history viewer has been implemented for "{_group_kind(t)}"')


def template_text(template: Obj) -> str:
    """printTemplate: DescribePodTemplate straight onto a buffer."""
    from pykubelet.cli.kubectl.describe import RawWriter, describe_pod_template

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


def _history(session: Session, args: argparse.Namespace, t: Target, obj: Obj) -> None:
    if args.output:
        objects = _history_objects(session, t, obj)
        if args.revision > 0:
            if args.revision not in objects:
                raise RolloutError("unable to find the specified revision")
            chosen = [objects[args.revision]]
        else:
            chosen = [objects[r] for r in sorted(objects)]
        for o in chosen:
            if args.output == "name":
                kind = str(o.get("kind", ""))
                group = str(o.get("apiVersion", "")).rpartition("/")[0]
                name = (o.get("metadata") or {}).get("name", "")
                print(f"{kind.lower()}.{group}/{name}" if group else f"{kind.lower()}/{name}")
            else:
                if args.output == "yaml" and o is not chosen[0]:
                    sys.stdout.write("---\n")
                print_objects(sys.stdout, args.output, o)
        return
    templates = _templates(session, t, obj)
    if not templates:
        text = "No rollout history found."
    elif args.revision > 0:
        if args.revision not in templates:
            raise RolloutError("unable to find the specified revision")
        text = template_text(templates[args.revision][0])
    else:
        text = history_table({rev: cause for rev, (_, cause) in templates.items()})
    with_revision = f"with revision #{args.revision}" if args.revision > 0 else ""
    sys.stdout.write(f"{t.mapping.kind_string}/{t.name} {with_revision}\n{text}\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------- undo


def _undo(session: Session, args: argparse.Namespace, t: Target, obj: Obj) -> None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED in annotations:
        sys.stdout.flush()
        print(APPLY_WARNING.format(name=f"{t.mapping.resource_string}/{t.name}"),
              file=sys.stderr)
    kind = _kind(t)
    if kind == "Deployment":
        result = rollback_deployment(session, t, args.to_revision, args.dry_run)
    elif kind in ("DaemonSet", "StatefulSet"):
        result = rollback_history(session, t, obj, args.to_revision, args.dry_run)
    else:
        raise RolloutError(f'no rollbacker has been implemented for "{_group_kind(t)}"')
    _print(args, t, obj, result)


def _not_found(revision: int) -> RolloutError:
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
        raise _not_found(to_revision)
    if previous is None:
        raise RolloutError(f'no rollout history found for deployment "{name}"')
    return previous


def rollback_deployment(session: Session, t: Target, to_revision: int, dry_run: str) -> str:
    """DeploymentRollbacker.Rollback: the operation word (or the dry run's template)."""
    if to_revision < 0:
        raise _not_found(to_revision)
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
        raise _not_found(to_revision)
    history = controller_revisions(session, obj)
    if to_revision == 0 and len(history) <= 1:
        raise RolloutError("no last revision to roll back to")
    if to_revision == 0:
        target = sorted(history, key=lambda h: _int(h.get("revision")))[-2]
    else:
        found = [h for h in history if _int(h.get("revision")) == to_revision]
        if not found:
            raise _not_found(to_revision)
        target = found[0]
    applied = _applied(obj, target)
    if dry_run == "client":
        return "will roll back to " + template_text(
            (applied.get("spec") or {}).get("template") or {})
    current = (obj.get("spec") or {}).get("template") or {}
    if _prune_empty(current) == _prune_empty((applied.get("spec") or {}).get("template")):
        return f"skipped rollback (current template already matches revision {to_revision})"
    try:
        session.client.request("PATCH", t.path, body=target.get("data") or {},
                               content_type=STRATEGIC_MERGE_PATCH,
                               params={"dryRun": "All"} if dry_run == "server" else None)
    except StatusError as exc:
        raise RolloutError(f"failed restoring revision {to_revision}: {exc.message}") from None
    return "rolled back"


# ---------------------------------------------------------------------------- restart, pause


def rfc3339_now() -> str:
    """time.Now().Format(time.RFC3339): local time, seconds, ``Z`` for UTC."""
    text = dt.datetime.now().astimezone().replace(microsecond=0).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def patch_for(sub: str, t: Target, obj: Obj, now: str) -> Obj:
    """The strategic merge patch objectrestarter/objectpauser/objectresumer's change
    makes ({} for none); errors in kubectl's words."""
    kind = _kind(t)
    spec = obj.get("spec") or {}
    paused = bool(spec.get("paused"))
    if sub == "restart":
        if kind not in ("Deployment", "DaemonSet", "StatefulSet"):
            raise RolloutError("restarting is not supported")
        if kind == "Deployment" and paused:
            raise RolloutError("can't restart paused deployment (run rollout resume first)")
        annotations = ((spec.get("template") or {}).get("metadata") or {}).get(
            "annotations") or {}
        if annotations.get(RESTARTED_AT) == now:
            return {}
        return {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}}}
    if kind != "Deployment":
        raise RolloutError(f"{'pausing' if sub == 'pause' else 'resuming'} is not supported")
    if sub == "pause":
        if paused:
            raise RolloutError("is already paused")
        return {"spec": {"paused": True}}
    if not paused:
        raise RolloutError("is not paused")
    return {"spec": {"paused": None}}


def _patch(session: Session, args: argparse.Namespace, sub: str, t: Target, obj: Obj) -> None:
    try:
        patch = patch_for(sub, t, obj, rfc3339_now())
    except RolloutError as exc:
        raise RolloutError(f'error: {t.mapping.resource_string} "{t.name}" {exc}') from None
    if not patch:
        if sub == "restart":
            raise RolloutError(f"failed to create patch for {t.name}: if restart has already "
                               "been triggered within the past second, please wait before "
                               "attempting to trigger another")
        _print(args, t, obj, "already paused")
        return
    try:
        out = session.client.request("PATCH", t.path, body=patch,
                                     content_type=STRATEGIC_MERGE_PATCH,
                                     params={"fieldManager": "kubectl-rollout"})
    except StatusError as exc:
        raise RolloutError(f"failed to patch: {exc.message}") from None
    _print(args, t, out, {"restart": "restarted", "pause": "paused",
                          "resume": "resumed"}[sub])
