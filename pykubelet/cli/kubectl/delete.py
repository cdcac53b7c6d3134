"""``pykubectl delete`` (kubectl's delete): by type and name, ``type/name``, selector,
``--all`` or ``-f FILE``; ``--grace-period``, ``--force`` (grace 0), ``--now``; then, unless
``--wait=false``, wait until every deleted object is gone (graceful pod deletion ends when
the node confirms)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError, status_text
from pykubelet.cli.kubectl.printers import dry_run_suffix
from pykubelet.cli.kubectl.resources import Target, targets
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.timeouts import parse_duration
from pykubelet.client.rest import StatusError

FORCE_WARNING = ("Warning: Immediate deletion does not wait for confirmation that the running "
                 "resource has been terminated. The resource may continue to run on the "
                 "cluster indefinitely.")
WEEK = 7 * 24 * 3600.0


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Delete resources by file names, stdin, resources and names, or selector."
    p.add_argument("words", nargs="*", metavar="TYPE[/NAME] [NAME...]")
    p.add_argument("-f", "--filename", action="append", default=[], help="file, dir or -")
    p.add_argument("-R", "--recursive", action="store_true", help="walk directories")
    p.add_argument("-l", "--selector", default="", help="label selector")
    p.add_argument("--field-selector", default="", help="field selector")
    p.add_argument("--all", action="store_true", help="every object of the type")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="across namespaces")
    p.add_argument("--grace-period", type=int, default=-1,
                   help="seconds to let the object stop (-1: its own default)")
    p.add_argument("--force", action="store_true", help="remove at once (grace period 0)")
    p.add_argument("--now", action="store_true", help="grace period 1")
    p.add_argument("--wait", default="true", nargs="?", const="true",
                   help="wait until the objects are gone (true|false)")
    p.add_argument("--timeout", default="0s", help="how long to wait (0: a week)")
    p.add_argument("--ignore-not-found", default=None, nargs="?", const="true",
                   help="no error for objects that do not exist")
    p.add_argument("--cascade", default="background", help="background|foreground|orphan")
    p.add_argument("-o", "--output", default="", help="name")
    p.add_argument("--dry-run", nargs="?", const="client", default="none",
                   choices=("none", "client", "server"), help="none|client|server")


def _bool(text: str | None, flag: str) -> bool:
    low = (text or "").lower()
    if low in ("1", "t", "true"):
        return True
    if low in ("0", "f", "false"):
        return False
    raise CommandError(f'error: invalid argument "{text}" for "{flag}" flag: strconv.ParseBool:'
                       f' parsing "{text}": invalid syntax')


def _grace(args: argparse.Namespace) -> int:
    grace = int(args.grace_period)
    if args.now:
        if grace != -1:
            raise CommandError("error: --now and --grace-period cannot be specified together")
        grace = 1
    if grace == 0 and not args.force:
        grace = 1
    if args.force and grace < 0:
        grace = 0
    if args.force and grace > 0:
        raise CommandError("error: --force and --grace-period greater than 0 cannot be "
                           "specified together")
    return grace


def _file_targets(session: Session, args: argparse.Namespace) -> list[Target]:
    from pykubelet.cli.kubectl.manifests import read_all

    out = []
    for m in read_all(args.filename, args.recursive):
        mapping = session.discovery.for_kind(m.api_version, m.kind)
        if not m.name:
            raise CommandError(f'error: {m.source}: an object has no name to delete')
        ns = ""
        if mapping.namespaced:
            if m.namespace and session.explicit_namespace and m.namespace != session.namespace:
                raise CommandError(
                    f'error: the namespace from the provided object "{m.namespace}" does not '
                    f'match the namespace "{session.namespace}". You must pass '
                    f"'--namespace={m.namespace}' to perform this operation.")
            ns = m.namespace or session.namespace
        out.append(Target(mapping, m.name, ns))
    return out


def _expand(session: Session, args: argparse.Namespace, t: Target) -> list[Target]:
    """A collection target becomes its objects (selector or --all)."""
    if t.name:
        return [t]
    if not (args.all or args.selector or args.field_selector):
        raise CommandError("error: resource(s) were provided, but no name was specified")
    params = {"labelSelector": args.selector or None,
              "fieldSelector": args.field_selector or None}
    items = (session.client.request("GET", t.path, params=params) or {}).get("items") or []
    return [Target(t.mapping, (i.get("metadata") or {}).get("name", ""),
                   (i.get("metadata") or {}).get("namespace", "") if t.mapping.namespaced
                   else "") for i in items]


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    grace = _grace(args)
    wait = _bool(args.wait, "--wait")
    if args.output not in ("", "name"):
        raise CommandError(f"error: unexpected -o output mode: {args.output}. We only support "
                           "'-o name'")
    if args.all and args.selector:
        raise CommandError("error: cannot set --all and --selector at the same time")
    if args.cascade not in ("background", "foreground", "orphan"):
        raise CommandError(f'error: invalid cascade value ({args.cascade}). Must be '
                           '"background", "foreground", or "orphan".')
    timeout = parse_duration(args.timeout, "--timeout") or WEEK
    ignore_missing = (_bool(args.ignore_not_found, "--ignore-not-found")
                      if args.ignore_not_found is not None
                      else bool(args.all or args.selector or args.field_selector))
    if args.filename:
        if args.words:
            raise CommandError("error: when paths, URLs, or stdin is provided as input, you "
                               "may not specify resource arguments as well")
        tgts = _file_targets(session, args)
    elif not args.words:
        raise CommandError("error: You must provide one or more resources by argument or "
                           "filename.")
    else:
        tgts = []
        for t in targets(session, args.words, all_namespaces=args.all_namespaces,
                         verb="delete"):
            tgts += _expand(session, args, t)
    if grace == 0:
        print(FORCE_WARNING, file=sys.stderr)
    body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1",
                            "propagationPolicy": args.cascade.capitalize()}
    if grace >= 0:
        body["gracePeriodSeconds"] = grace
    params = {"dryRun": "All"} if args.dry_run == "server" else None
    operation = "force deleted" if grace == 0 else "deleted"
    operation += dry_run_suffix(args.dry_run)
    deleted: list[tuple[Target, str]] = []
    errors: list[str] = []
    for t in tgts:
        if args.dry_run != "client":
            try:
                resp = session.client.request("DELETE", t.path, params=params, body=body)
            except StatusError as exc:
                if exc.not_found and ignore_missing:
                    continue
                errors.append(status_text(exc))
                continue
            uid = _uid(resp)
            deleted.append((t, uid))
        if args.output == "name":
            print(f"{t.mapping.kind_string}/{t.name}", flush=True)
        else:
            print(f'{t.mapping.kind_string} "{t.name}" {operation}', flush=True)
    if not tgts and not errors:
        print("No resources found")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    if wait and deleted and args.dry_run == "none":
        from pykubelet.cli.kubectl.wait import wait_deleted

        deadline = time.monotonic() + timeout
        for t, uid in deleted:
            try:
                gone = wait_deleted(session, t, uid, deadline)
            except StatusError as exc:
                if exc.code in (403, 405):
                    continue
                raise
            if not gone:
                raise CommandError(f"error: timed out waiting for the condition on "
                                   f"{t.mapping.resource_string}/{t.name}")
    return 0


def _uid(resp: Any) -> str:
    if not isinstance(resp, dict):
        return ""
    if resp.get("kind") == "Status":
        return str((resp.get("details") or {}).get("uid") or "")
    return str((resp.get("metadata") or {}).get("uid") or "")
