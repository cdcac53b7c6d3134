"""``pykubectl why POD``: what kubectl cannot tell, the scheduler's own reasons.

The control plane keeps the embedded scheduler's last decision for each pod and serves it
as ``pods/NAME/scheduling`` (the shape of a ``pysched simulate -o json`` entry). This
prints it for a person: where the pod went or why it is Pending (kube-scheduler's message),
then one row per node with the filter verdict (the first plugin that rejected the node and
its reason), then, when two or more nodes fit, the best nodes' scores per plugin (each 0-100)
and the weighted total that chose the winner.

A decision names the reason of each node it rejected: the scheduler asks the fast path's
rejecting plugins why when it records the attempt, for up to 16 nodes (each costs a Filter
call; a lab is smaller than that). On a bigger cluster the other rejected nodes are shown
with the reason not recorded (the counts say how many). A pod the scheduler has not tried,
or tried so long ago that the bounded log forgot it, has no decision: then the pod's
PodScheduled condition is what there is.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.printers import print_objects, require_output
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.tabwriter import TabWriter
from pykubelet.client.rest import NODES, PODS, TABLE_ACCEPT, StatusError

Obj = dict[str, Any]
NOT_RECORDED = "(reason not recorded: the scheduler records at most 16 per decision)"


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = ("Why a pod is Pending, or why it went where it went: the scheduler's "
                     "recorded decision, per node the filter verdict and the best scores.")
    p.add_argument("pod", nargs="?", default="", metavar="POD|pod/POD")
    p.add_argument("-o", "--output", default="", help="json|yaml: the decision as served")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    if not args.pod:
        raise CommandError("error: a pod name is required (pykubectl why POD)")
    kind, slash, pod_name = args.pod.rpartition("/")
    if slash and session.discovery.resolve_one(kind).resource != "pods":
        raise CommandError(f"error: why explains pods, not {kind}")
    require_output(args.output, ("json", "yaml"))
    client = session.client
    ns = session.namespace
    pod = client.request("GET", PODS.path(ns, pod_name))
    try:
        doc = client.request("GET", PODS.path(ns, pod_name, "scheduling"))
    except StatusError as exc:
        if not exc.not_found:
            raise
        doc = None
    if args.output:
        if doc is None:
            raise CommandError(f'error: no scheduling decision is recorded for pod "{pod_name}"')
        print_objects(sys.stdout, args.output, doc)
        return 0
    out = TabWriter(sys.stdout, minwidth=0, padding=3, remember_widths=False)
    if doc is None:
        no_decision(out, pod)
    else:
        render(out, doc.get("decision") or {}, _node_names(session),
               str((pod.get("status") or {}).get("nominatedNodeName") or ""))
    out.flush()
    return 0


def _node_names(session: Session) -> list[str]:
    table = session.client.request("GET", NODES.path(), accept=TABLE_ACCEPT)
    if isinstance(table, dict) and table.get("kind") == "Table":
        return [str((((r.get("object") or {}).get("metadata")) or {}).get("name", ""))
                for r in table.get("rows") or []]
    return [str((i.get("metadata") or {}).get("name", "")) for i in (table or {}).get(
        "items") or []]


def _scheduled_condition(pod: Obj) -> Obj:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return dict(c)
    return {}


def no_decision(w: TabWriter, pod: Obj) -> None:
    meta = pod.get("metadata") or {}
    ident = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    node = (pod.get("spec") or {}).get("nodeName")
    cond = _scheduled_condition(pod)
    if node:
        w.write(f"Pod {ident} is on node {node}; the scheduler keeps no decision for it "
                "(bound before this control plane started, bound by name, or forgotten).\n")
        return
    w.write(f"Pod {ident} is Pending and the scheduler has recorded no decision for it yet.\n")
    if cond.get("message"):
        w.write(f"Last condition:\tPodScheduled={cond.get('status', '')} "
                f"({cond.get('reason', '')}): {cond['message']}\n")
    scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
    if scheduler != "default-scheduler":
        w.write(f"Its schedulerName is {scheduler!r}: the embedded scheduler leaves a pod "
                "alone when none of its profiles has that name.\n")


def render(w: TabWriter, d: Obj, all_nodes: list[str], status_nominated: str = "") -> None:
    """The decision for a person (see the module doc)."""
    pod = d.get("pod", "")
    node = d.get("node")
    nominated = d.get("nominatedNode")
    victims = d.get("victims") or []
    filtered: dict[str, Obj] = d.get("filtered") or {}
    scores: dict[str, Obj] = d.get("scores") or {}
    evaluated = d.get("evaluatedNodes")
    feasible = d.get("feasibleNodes")
    if node:
        w.write(f"Pod {pod} was scheduled to {node}.\n")
    else:
        w.write(f"Pod {pod} is Pending: no node fits it.\n")
    if d.get("message"):
        w.write(f"  {d['message']}\n")
    if nominated:
        text = f"Preemption nominated {nominated}"
        text += f", evicting {', '.join(victims)}" if victims else ""
        w.write(text + ".\n")
    elif status_nominated and not node:
        w.write(f"It is nominated to {status_nominated}: it waits there for the pods preemption"
                " evicted to end.\n")
    if evaluated is not None and feasible is not None:
        w.write(f"Nodes: {evaluated} evaluated, {feasible} passed the filters.\n")
    if d.get("profile"):
        w.write(f"Decided by profile {d['profile']} (the pod's schedulerName).\n")
    w.write("\n")
    rows = _node_rows(node, filtered, scores, all_nodes, evaluated, feasible)
    w.write("NODE\tFILTER\tPLUGIN\tREASON\n")
    for name, verdict, plugin, reason in rows:
        w.write(f"{name}\t{verdict}\t{plugin}\t{reason}\n")
    if scores:
        w.flush()
        plugins: list[str] = []
        for per in scores.values():
            plugins += [p for p in per if p != "total" and p not in plugins]
        ranked = sorted(scores.items(), key=lambda kv: (kv[0] != node, -int(
            kv[1].get("total", 0)), kv[0]))
        w.write("\nSCORES (0-100 per plugin; TOTAL weighs them)\n")
        w.write("NODE\tTOTAL\t" + "\t".join(plugins) + "\n")
        for name, per in ranked:
            mark = " (chosen)" if name == node else ""
            cells = [str(per.get(p, "")) for p in plugins]
            w.write(f"{name}{mark}\t{per.get('total', '')}\t" + "\t".join(cells) + "\n")
    extenders: list[Obj] = d.get("extenders") or []
    if extenders:
        w.flush()
        w.write("\nEXTENDER\tVERB\tRESULT\n")
        for e in extenders:
            w.write(f"{e.get('extender', '')}\t{e.get('verb', '')}\t{extender_result(e)}\n")


def _node_rows(node: str | None, filtered: dict[str, Obj], scores: dict[str, Obj],
               all_nodes: list[str], evaluated: int | None,
               feasible: int | None) -> list[tuple[str, str, str, str]]:
    """One row per node: chosen first, then the other feasible nodes by score, then the
    rejected ones by name."""
    names = list(dict.fromkeys([*([node] if node else []), *scores, *filtered, *all_nodes]))
    known_pass = {n for n in names if n == node or n in scores}
    unknown = [n for n in names if n not in known_pass and n not in filtered]
    unknown_rejected = unknown_passed = None
    if evaluated is not None and feasible is not None:
        unknown_rejected = max(0, evaluated - feasible - len(filtered))
        unknown_passed = max(0, feasible - len(known_pass))
    rows = []
    for n in names:
        if n in filtered:
            f = filtered[n]
            rows.append((n, "rejected", str(f.get("plugin", "")), str(f.get("reason", ""))
                         + _code_note(str(f.get("code", "")))))
        elif n in known_pass:
            rows.append((n, "passed", "", "chosen" if n == node else ""))
        elif not node and evaluated is not None and len(filtered) >= evaluated:
            rows.append((n, "-", "", "not evaluated (a newer node?)"))
        elif unknown_passed == 0 and unknown_rejected:
            rows.append((n, "rejected", "", NOT_RECORDED))
        elif unknown_rejected == 0 and unknown_passed:
            rows.append((n, "passed", "", ""))
        else:
            rows.append((n, "?", "", f"not recorded ({unknown_rejected} of {len(unknown)} "
                         "unlisted nodes were rejected)"))
    order = {"passed": 0, "?": 1, "rejected": 2, "-": 3}
    score = {n: int(s.get("total", 0)) for n, s in scores.items()}
    rows.sort(key=lambda r: (r[0] != node, order.get(r[1], 9), -score.get(r[0], 0), r[0]))
    return rows


def extender_result(e: Obj) -> str:
    """What one extender call said, in words."""
    if e.get("error"):
        skipped = " (ignorable: skipped)" if e.get("ignored") else ""
        return f"error: {e['error']}{skipped}"
    verb = e.get("verb")
    if verb == "filter":
        return (f"{e.get('passed', 0)} passed, {e.get('failed', 0)} failed, "
                f"{e.get('unresolvable', 0)} unresolvable")
    if verb == "prioritize":
        return f"scored the nodes (weight {e.get('weight', '')})"
    if verb == "bind":
        return f"bound the pod to {e.get('node', '')}"
    if verb == "preempt":
        kept = e.get("kept") or []
        return (f"kept {len(kept)} of {e.get('candidates', 0)} candidate nodes"
                + (f": {', '.join(kept)}" if kept else ""))
    return ""


def _code_note(code: str) -> str:
    """UnschedulableAndUnresolvable: preemption cannot help on that node."""
    return " (preemption cannot help)" if code == "UnschedulableAndUnresolvable" else ""
