"""``pykubectl scale TYPE/NAME --replicas=N``: kubectl's scale (pkg/cmd/scale, pkg/scale).

Every named object is read first (the builder's infos; a missing one is reported after the
others are scaled), then each is scaled through its ``scale`` subresource: a JSON merge
patch of ``spec.replicas``, or, with a precondition (``--current-replicas``,
``--resource-version``), a read of the Scale, the check (``Expected replicas to be 5, was
2``) and an update; conflicts are tried again every second for up to five minutes, as
kubectl's ScaleCondition does. ``--timeout`` then waits until the Scale's status shows the
new size. ``--all`` and ``-l`` scale every object of the type (that matches).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Any

from pykubelet.cli.kubectl.discovery import Mapping
from pykubelet.cli.kubectl.errors import CommandError, status_text
from pykubelet.cli.kubectl.printers import print_operation, require_output
from pykubelet.cli.kubectl.resources import read_objects
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import MERGE_PATCH, StatusError

Obj = dict[str, Any]
RETRY_INTERVAL = 1.0
RETRY_TIMEOUT = 300.0
NO_RESOURCES = (
    "error: You must provide one or more resources by argument or filename.\n"
    "Example resource specifications include:\n"
    "   '-f rsrc.yaml'\n"
    "   '--filename=rsrc.json'\n"
    "   '<resource> <name>'\n"
    "   '<resource>'")


class PreconditionError(CommandError):
    """scale.PreconditionError: the Scale is not what the flags expect."""

    def __init__(self, what: str, expected: str, actual: str) -> None:
        super().__init__(f"error: Expected {what} to be {expected}, was {actual}")


@dataclass
class Info:
    """One object to scale (the builder's resource.Info)."""

    mapping: Mapping
    namespace: str
    name: str
    obj: Obj


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Set a new size for a deployment, replica set or stateful set."
    p.add_argument("words", nargs="*", metavar="(TYPE NAME | TYPE/NAME)")
    p.add_argument("--replicas", type=int, default=None, help="the new size (required)")
    p.add_argument("--current-replicas", type=int, default=-1,
                   help="precondition: the current size (-1: none)")
    p.add_argument("--resource-version", default="", help="precondition: the resourceVersion")
    p.add_argument("--all", action="store_true", help="every object of the types")
    p.add_argument("-l", "--selector", default="", help="label selector")
    p.add_argument("-f", "--filename", action="append", default=[],
                   help="files naming the objects")
    p.add_argument("--timeout", default="0s", help="wait this long for the new size")
    p.add_argument("-o", "--output", default="", help="name|json|yaml")
    p.add_argument("--dry-run", nargs="?", const="client", default="none",
                   choices=("none", "client", "server"), help="none|client|server")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    from pykubelet.cli.kubectl.timeouts import parse_duration

    if args.replicas is None:
        raise CommandError('error: required flag(s) "replicas" not set')
    require_output(args.output)
    if args.replicas < 0:
        raise CommandError("error: The --replicas=COUNT flag is required, and COUNT must be "
                           "greater than or equal to 0")
    if args.current_replicas < -1:
        raise CommandError("error: The --current-replicas must specify an integer of -1 or "
                           "greater")
    timeout = parse_duration(args.timeout, "--timeout")
    infos, errors = _infos(session, args)
    if args.resource_version and len(infos) > 1:
        raise CommandError("error: cannot use --resource-version with multiple resources")
    if not infos:
        if errors:
            raise CommandError("error: no objects passed to scale " + errors[0].message)
        raise CommandError("error: no objects passed to scale")
    precondition = args.current_replicas != -1 or bool(args.resource_version)
    for info in infos:
        if args.dry_run != "client":
            size = scale(session, info, args.replicas, args.current_replicas if precondition
                         else None, args.resource_version, args.dry_run == "server")
            if timeout and args.dry_run == "none":
                wait_for_replicas(session, info, args.replicas, timeout)
        else:
            size = args.replicas
        if info.mapping.group in ("", "apps"):
            info.obj.setdefault("spec", {})["replicas"] = size
        _print(args, info)
    if errors:
        raise CommandError("\n".join(status_text(e) for e in errors))
    return 0


def _print(args: argparse.Namespace, info: Info) -> None:
    print_operation(sys.stdout, args.output, args.dry_run, info.obj,
                    f"{info.mapping.kind_string}/{info.name}", "scaled")
    sys.stdout.flush()


def _infos(session: Session, args: argparse.Namespace) -> tuple[list[Info], list[StatusError]]:
    """The objects named, each read once (the file's own object with -f, as scale's builder
    has no Latest()), and the reads that failed, kept for the end."""
    if not args.words and not args.filename:
        raise CommandError(NO_RESOURCES)
    entries = read_objects(session, args.words, selector=args.selector,
                           filenames=args.filename, latest=False, verb="scale",
                           need_names=not (args.all or args.selector))
    infos = [Info(t.mapping, t.namespace, t.name, obj) for t, obj in
             (e for e in entries if isinstance(e, tuple))]
    return infos, [e for e in entries if isinstance(e, StatusError)]


def scale(session: Session, info: Info, replicas: int, current: int | None,
          resource_version: str, dry_run: bool) -> int:
    """genericScaler.Scale: one ScaleSimple, tried again on conflicts; the size the
    server answered."""
    path = info.mapping.rest.path(info.namespace, info.name, "scale")
    params = {"dryRun": "All"} if dry_run else None
    deadline = time.monotonic() + RETRY_TIMEOUT
    while True:
        try:
            if current is None and not resource_version:
                out = session.client.request("PATCH", path, params=params,
                                             body={"spec": {"replicas": replicas}},
                                             content_type=MERGE_PATCH)
            else:
                sc = session.client.request("GET", path)
                check_precondition(sc, -1 if current is None else current, resource_version)
                sc.setdefault("spec", {})["replicas"] = replicas
                out = session.client.request("PUT", path, params=params, body=sc)
            return int((out.get("spec") or {}).get("replicas") or 0)
        except StatusError as exc:
            if not exc.conflict or time.monotonic() >= deadline:
                raise CommandError(status_text(exc)) from None
        time.sleep(RETRY_INTERVAL)


def check_precondition(sc: Obj, size: int, resource_version: str) -> None:
    """ScalePrecondition.validate."""
    have = int((sc.get("spec") or {}).get("replicas") or 0)
    if size != -1 and have != size:
        raise PreconditionError("replicas", str(size), str(have))
    rv = (sc.get("metadata") or {}).get("resourceVersion", "")
    if resource_version and rv != resource_version:
        raise PreconditionError("resource version", resource_version, rv)


def wait_for_replicas(session: Session, info: Info, replicas: int, timeout: float) -> None:
    """WaitForScaleHasDesiredReplicas: the Scale's status reaches the size (or its spec
    was changed by someone else), polled every second."""
    path = info.mapping.rest.path(info.namespace, info.name, "scale")
    deadline = time.monotonic() + timeout
    while True:
        try:
            sc = session.client.request("GET", path)
        except StatusError as exc:
            raise CommandError(status_text(exc)) from None
        spec = int((sc.get("spec") or {}).get("replicas") or 0)
        status = int((sc.get("status") or {}).get("replicas") or 0)
        if spec != replicas or status == replicas:
            return
        if time.monotonic() + RETRY_INTERVAL > deadline:
            raise CommandError(f'error: timed out waiting for "{info.name}" to be synced')
        time.sleep(RETRY_INTERVAL)
