"""``pykubectl describe``: the command (kubectl's describe: objects named or selected, each
described by its kind's describer, separated by blank lines; errors after the others).
The describers live in describe.py (pods, nodes and the shared writers) and
describe_workloads.py (Deployments, ReplicaSets, Jobs, CronJobs, DaemonSets,
StatefulSets)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from pykubelet.cli.kubectl.describe import describe_node_of, describe_pod_of
from pykubelet.cli.kubectl.describe_workloads import DESCRIBERS as WORKLOAD_DESCRIBERS
from pykubelet.cli.kubectl.errors import CommandError, status_text
from pykubelet.cli.kubectl.resources import Target, targets
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import StatusError


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Show details of a pod, node or workload, with its events."
    p.add_argument("words", nargs="*", metavar="TYPE[/NAME] [NAME...]")
    p.add_argument("-l", "--selector", default="", help="label selector")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="across namespaces")
    p.add_argument("--show-events", default="true", help="true|false")


DESCRIBERS: dict[tuple[str, str], Callable[[Session, Target, bool], str]] = {
    ("", "Pod"): describe_pod_of,
    ("", "Node"): describe_node_of,
    **WORKLOAD_DESCRIBERS,
}


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    show_events = args.show_events.lower() in ("1", "t", "true")
    words: list[str] = args.words
    tgts: list[Target] = []
    for t in targets(session, words, all_namespaces=args.all_namespaces, verb="describe"):
        if t.name:
            tgts.append(t)
            continue
        params = {"labelSelector": args.selector or None}
        items = (session.client.request("GET", t.path, params=params) or {}).get("items") or []
        for item in items:
            meta = item.get("metadata") or {}
            tgts.append(Target(t.mapping, meta.get("name", ""),
                               meta.get("namespace", "") if t.mapping.namespaced else ""))
    errors: list[str] = []
    first = True
    for t in tgts:
        describer = DESCRIBERS.get((t.mapping.group, t.mapping.kind))
        if describer is None:
            line = (f"error: describe is not implemented for {t.mapping.kind_string} here "
                    "(pods, nodes, deployments, replica sets, daemon sets, stateful sets, "
                    "jobs and cron jobs are)")
            if line not in errors:
                errors.append(line)
            continue
        try:
            text = describer(session, t, show_events)
        except StatusError as exc:
            line = status_text(exc)
            if line not in errors:
                errors.append(line)
            continue
        sys.stdout.write(text if first else "\n\n" + text)
        sys.stdout.flush()
        first = False
    if not tgts and not errors:
        if args.all_namespaces:
            print("No resources found", file=sys.stderr)
        else:
            print(f"No resources found in {session.namespace} namespace.", file=sys.stderr)
    if errors:
        raise CommandError("\n".join(errors))
    return 0
