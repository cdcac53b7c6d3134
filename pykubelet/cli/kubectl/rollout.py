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

The viewers and the watch live in rollout_status.py, revisions and rollbacks in
revisions.py; this module is the command. Objects are read as kubectl's builder reads them
(``TYPE NAME``, ``TYPE/NAME``, ``TYPE`` with ``-l`` or alone for all); what could not be
read is reported after the others, each failure on its own line as kubectl's aggregated
errors print.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError, status_text
from pykubelet.cli.kubectl.printers import (
    omit_managed_fields,
    print_objects,
    print_operation,
    require_output,
    to_json,
)
from pykubelet.cli.kubectl.resources import Target, read_objects
from pykubelet.cli.kubectl.revisions import (
    history_objects,
    history_table,
    revision_templates,
    rollback_deployment,
    rollback_history,
    template_text,
)
from pykubelet.cli.kubectl.rollout_status import (
    RolloutError,
    group_kind,
    kind_of,
    watch_status,
)
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.struct_order import in_struct_order
from pykubelet.client.rest import STRATEGIC_MERGE_PATCH, StatusError

Obj = dict[str, Any]
Failure = StatusError | str  # a server Status, or a message kubectl prints as it is

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
SUBCOMMANDS = ("history", "pause", "restart", "resume", "status", "undo")
# kubectl 1.32's help of the bare command (cobra's, printed by DefaultSubCommandRun to
# stdout before it exits 1), the program's name ours
HELP = (
    "Manage the rollout of one or many resources.\n"
    "        \n"
    " Valid resource types include:\n"
    "\n"
    "  *  deployments\n"
    "  *  daemonsets\n"
    "  *  statefulsets\n"
    "\n"
    "Examples:\n"
    "  # Rollback to the previous deployment\n"
    "  pykubectl rollout undo deployment/abc\n"
    "  \n"
    "  # Check the rollout status of a daemonset\n"
    "  pykubectl rollout status daemonset/foo\n"
    "  \n"
    "  # Restart a deployment\n"
    "  pykubectl rollout restart deployment/abc\n"
    "  \n"
    "  # Restart deployments with the 'app=nginx' label\n"
    "  pykubectl rollout restart deployment --selector=app=nginx\n"
    "\n"
    "Available Commands:\n"
    "  history       View rollout history\n"
    "  pause         Mark the provided resource as paused\n"
    "  restart       Restart a resource\n"
    "  resume        Resume a paused resource\n"
    "  status        Show the status of the rollout\n"
    "  undo          Undo a previous rollout\n"
    "\n"
    "Usage:\n"
    "  pykubectl rollout SUBCOMMAND [options]\n"
    "\n"
    'Use "pykubectl rollout <command> --help" for more information about a given '
    "command.\n"
    'Use "pykubectl options" for a list of global command-line options (applies to all '
    "commands).\n")


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
    if not words:  # kubectl: the help on stdout, then exit 1
        sys.stdout.write(HELP)
        sys.stdout.flush()
        return 1
    if words[0] not in SUBCOMMANDS:
        raise CommandError(f'error: unknown command "{" ".join(words)}"\n'
                           "See 'pykubectl rollout -h' for help and examples")
    sub, resources = words[0], words[1:]
    require_output(args.output)
    if not resources and not args.filename:
        raise CommandError("error: required resource not specified")
    if sub in ("status", "history") and args.revision < 0:
        raise CommandError(f"error: revision must be a positive integer: {args.revision}")
    timeout = 0.0
    if sub == "status":
        from pykubelet.cli.kubectl.timeouts import parse_duration

        timeout = parse_duration(args.timeout, "--timeout")
    entries: list[tuple[Target, Obj] | Failure] = list(read_objects(
        session, resources, selector=args.selector, filenames=args.filename))
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


def _print(args: argparse.Namespace, t: Target, obj: Obj, operation: str) -> None:
    """The name printer with an operation (cli-runtime's, dry runs marked)."""
    print_operation(sys.stdout, args.output, args.dry_run, obj,
                    f"{t.mapping.kind_string}/{t.name}", operation)
    sys.stdout.flush()


def _history(session: Session, args: argparse.Namespace, t: Target, obj: Obj) -> None:
    if args.output:
        objects = history_objects(session, t, obj)
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
            elif args.output == "json" and o.get("kind") in ("DaemonSet", "StatefulSet"):
                # a typed object: its fields in the struct's order
                sys.stdout.write(to_json(in_struct_order(omit_managed_fields(o), str(o["kind"])),
                                         sort_keys=False))
            else:
                if args.output == "yaml" and o is not chosen[0]:
                    sys.stdout.write("---\n")
                print_objects(sys.stdout, args.output, o)
        return
    templates = revision_templates(session, t, obj)
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


def _undo(session: Session, args: argparse.Namespace, t: Target, obj: Obj) -> None:
    kind = kind_of(t)
    if kind == "Deployment":
        result = rollback_deployment(session, t, args.to_revision, args.dry_run)
    elif kind in ("DaemonSet", "StatefulSet"):
        result = rollback_history(session, t, obj, args.to_revision, args.dry_run)
    else:
        raise RolloutError(f'no rollbacker has been implemented for "{group_kind(t)}"')
    _print(args, t, obj, result)


def rfc3339_now() -> str:
    """time.Now().Format(time.RFC3339): local time, seconds, ``Z`` for UTC."""
    text = dt.datetime.now().astimezone().replace(microsecond=0).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def patch_for(sub: str, t: Target, obj: Obj, now: str) -> Obj:
    """The strategic merge patch objectrestarter/objectpauser/objectresumer's change
    makes ({} for none); errors in kubectl's words."""
    kind = kind_of(t)
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
