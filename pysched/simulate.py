"""`pysched simulate`: what kube-scheduler's default profile would decide for a list of objects.

Input (DESIGN.md): a YAML or JSON ``kind: List`` of Nodes, Pods, PodDisruptionBudgets,
PriorityClasses (and Namespaces, for namespace selectors). Pods with ``spec.nodeName`` are
bound; pods with ``status.nominatedNodeName`` and no node are nominated there (and counted by
later filters); every pod without a node is pending and is scheduled in list order, each
decision assumed for the next. After a preemption the victims are removed and the pod is tried
once more.

``explain`` adds, per node, the filter verdict and each score plugin's raw, normalised and
weighted score, computed over *all* nodes on the same snapshot the decision used.
"""

from __future__ import annotations

import copy
import gc
import json
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.machinery.manifest import SyntaxProblem, parse_document
from pykubelet.api.objects import Namespace, Node, PodDisruptionBudget, PriorityClass
from pykubelet.api.types import Pod
from pysched.api import EmbeddedScheduler
from pysched.decisions import Decision, verdict_json, verdict_of
from pysched.decode import collector_paused, from_dict
from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code, Status
from pysched.framework.types import NodeScore, PodInfo
from pysched.scheduler import with_node_name


class SimulateError(ValueError):
    """Bad input: the message names the item and field."""


@dataclass
class Inputs:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def load_inputs(path: str | Path) -> Inputs:
    """Read FILE ("-": standard input) as YAML or JSON and decode it."""
    try:
        text = sys.stdin.read() if str(path) == "-" else Path(path).read_text()
    except OSError as err:
        raise SimulateError(f"{path}: {err.strerror or err}") from None
    try:
        doc = parse_document(text)
    except SyntaxProblem as err:
        raise SimulateError(f"{path}: not YAML or JSON: {err}") from None
    return parse_inputs(doc)


def parse_inputs(doc: Any) -> Inputs:
    if not isinstance(doc, dict):
        raise SimulateError("input: expected a v1 List object")
    if doc.get("kind") != "List":
        raise SimulateError(f"kind: expected 'List', got {doc.get('kind')!r}")
    if doc.get("apiVersion", "v1") != "v1":
        raise SimulateError(f"apiVersion: expected 'v1', got {doc.get('apiVersion')!r}")
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise SimulateError("items: expected a list")
    out = Inputs()
    seen: set[tuple[str, str]] = set()
    with collector_paused():  # a cluster's worth of objects, none of them garbage
        for i, item in enumerate(items):
            try:
                # bulk input: the fields the scheduler never reads go unchecked (typos in
                # keys are still named), as pysched.decode's option allows
                obj = from_dict(item, check_unread=False)
            except DecodeError as err:
                raise SimulateError(f"items[{i}].{err.path}: {err.problem}") from None
            kind = type(obj).__name__
            ident = (kind, f"{obj.metadata.namespace}/{obj.metadata.name}")
            if ident in seen:
                raise SimulateError(f"items[{i}]: duplicate {kind} {ident[1].lstrip('/')}")
            seen.add(ident)
            if isinstance(obj, Node):
                out.nodes.append(obj)
                if "pods" not in obj.status.allocatable:
                    out.warnings.append(
                        f"items[{i}] (node {obj.metadata.name}): status.allocatable has no 'pods': "
                        "it admits no pod (kubelet reports 110 by default)"
                    )
            elif isinstance(obj, Pod):
                out.pods.append(obj)
            elif isinstance(obj, PodDisruptionBudget):
                out.pdbs.append(obj)
            elif isinstance(obj, PriorityClass):
                out.priority_classes.append(obj)
            else:
                out.namespaces.append(obj)
    _resolve_priorities(out, items)
    return out


def _resolve_priorities(inputs: Inputs, items: list[Any]) -> None:
    """The Priority admission plugin: spec.priority from priorityClassName (or globalDefault)."""
    classes = {pc.metadata.name: pc for pc in inputs.priority_classes}
    default = next((pc for pc in inputs.priority_classes if pc.global_default), None)
    pod_items = [
        i for i, it in enumerate(items) if isinstance(it, dict) and it.get("kind") == "Pod"
    ]
    for idx, pod in zip(pod_items, inputs.pods, strict=True):
        name = pod.spec.priority_class_name
        pc = None
        if name:
            pc = classes.get(name)
            if pc is None and name not in ("system-cluster-critical", "system-node-critical"):
                raise SimulateError(
                    f"items[{idx}].spec.priorityClassName: no PriorityClass with name {name} "
                    "was found"
                )
        elif default is not None:
            pc = default
        if pod.spec.priority is None:
            if pc is not None:
                pod.spec.priority = pc.value
            elif name == "system-cluster-critical":
                pod.spec.priority = 2000000000
            elif name == "system-node-critical":
                pod.spec.priority = 2000001000
        if pod.spec.preemption_policy is None and pc is not None:
            pod.spec.preemption_policy = pc.preemption_policy


class _Recorder:
    """Binder + status writer for the simulation: bindings and evictions land in the cluster."""

    def __init__(self) -> None:
        self.sched: EmbeddedScheduler | None = None
        self.bindings: dict[str, str] = {}
        self.evicted: list[Pod] = []

    def bind(self, pod: Pod, node_name: str) -> None:
        self.bindings[pod.key] = node_name

    def set_pod_condition(self, pod: Pod, reason: str, message: str) -> None:
        pass

    def set_nominated_node_name(self, pod: Pod, node_name: str) -> None:
        pass

    def evict(self, victim: Pod, preemptor: Pod, node_name: str) -> None:
        self.evicted.append(victim)
        assert self.sched is not None
        self.sched.on_pod_delete(victim)


def simulate(
    inputs: Inputs,
    config: Any = None,
    *,
    explain: bool = False,
    seed: int = 0,
    fast: bool = True,
) -> dict[str, Any]:
    """Schedule the pending pods; return ``{"results": [...]}`` as DESIGN.md specifies.

    The scheduler is the embedded one with its vectorised path, so a big cluster simulates at
    the embedded scheduler's speed; each entry is the pod's Decision (pysched.decisions) with
    every infeasible node's verdict computed (the fast path leaves them for whoever asks).
    ``fast=False``: the plugins one node at a time (tests compare both)."""
    rec = _Recorder()
    sched = EmbeddedScheduler(
        rec, config=config, status_writer=rec, rng=random.Random(seed), fast=fast
    )
    rec.sched = sched
    # each result is built below from the attempt's record: the embedded scheduler's own
    # decision log (what `pykubectl why` reads) would build and keep every one a second time
    sched.scheduler.on_decision = None
    for ns in inputs.namespaces:
        sched.on_namespace(ns.metadata.name, ns.metadata.labels)
    for pdb in inputs.pdbs:
        sched.on_pdb(pdb)
    for node in inputs.nodes:
        sched.on_node_add(node)
    pending: list[Pod] = []
    for pod in inputs.pods:
        if pod.spec.node_name:
            sched.on_pod_add(pod)
        else:
            pending.append(pod)
    for pod in pending:
        sched.register_pod(pod)
        if pod.status.nominated_node_name:
            sched.queue.add_nominated_pod(PodInfo(pod), None)

    with collector_frozen():
        results = _schedule_pending(sched, pending, explain)
    sched.stop()
    return {"results": results}


@contextmanager
def collector_frozen() -> Iterator[None]:
    """Everything alive now (the read cluster, the scheduler's cache) out of the cyclic
    collector's passes until the block ends.

    Those objects live as long as the command, yet each gen-2 pass walked all of them: at
    5,000 nodes a quarter of simulate()'s CPU (issue 23 item 7). Objects made while pods
    are scheduled are collected as usual; at the end everything goes back to the collector
    (nothing is left frozen for a caller that simulates again). A caller that froze objects
    itself keeps them frozen: then this does nothing.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _schedule_pending(
    sched: EmbeddedScheduler, pending: list[Pod], explain: bool
) -> list[dict[str, Any]]:
    """Each pending pod's decision, in list order, each one assumed for the next."""
    results = []
    for pod in pending:
        if pod.spec.scheduler_name not in sched.frameworks:
            msg = f'no profile for schedulerName "{pod.spec.scheduler_name}"'
            no_profile = Decision(pod.key, None, None, [], msg, [], None, 0, 0)
            results.append(no_profile.to_dict(counts=False))
            continue
        exp = _explain(sched, pod) if explain else None
        first = sched.schedule_now(pod)
        if first.diagnosis is not None:
            first.diagnosis.resolve()  # every infeasible node's verdict, for "filtered"
        decision = sched.decision_of(first)  # on the snapshot this attempt read
        final = first
        if first.nominated_node and first.result != "scheduled":
            retry_pod = copy.copy(pod)
            retry_pod.status = copy.copy(pod.status)
            retry_pod.status.nominated_node_name = first.nominated_node
            sched.queue.delete(pod)
            sched.register_pod(retry_pod)
            final = sched.schedule_now(retry_pod)
        chosen = final.node if final.result == "scheduled" else None
        if chosen is not None:
            bound = with_node_name(final.pod, chosen)
            sched.on_pod_update(final.pod, bound)
        decision.node = chosen
        decision.message = "" if chosen is not None else (final.message or first.message)
        entry = decision.to_dict(counts=False)
        if exp is not None:
            entry["explain"] = exp
        results.append(entry)
    return results


def _explain(sched: EmbeddedScheduler, pod: Pod) -> dict[str, Any]:
    """Every node's filter verdict and every score plugin's raw/normalised/weighted score."""
    fwk = sched.frameworks[pod.spec.scheduler_name]
    sched.cache.update_snapshot(sched.snapshot)
    nodes = sched.snapshot.list()
    state = CycleState()
    out: dict[str, Any] = {}
    pre_res, s, plugins = fwk.run_pre_filter_plugins(state, pod)
    feasible = []
    for ni in nodes:
        if s is not None and not s.is_success() and s.is_rejected():
            out[ni.name] = {"filter": verdict_json(verdict_of(s))}
            continue
        if (
            pre_res is not None
            and not pre_res.all_nodes()
            and ni.name not in (pre_res.node_names or ())
        ):
            st = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                [f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"],
            )
            out[ni.name] = {"filter": verdict_json(verdict_of(st))}
            continue
        st = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
        if st.is_success():
            out[ni.name] = {"filter": "passed"}
            feasible.append(ni)
        else:
            out[ni.name] = {"filter": verdict_json(verdict_of(st))}
    if not feasible or not fwk.has_score_plugins():
        return out
    if fwk.run_pre_score_plugins(state, pod, feasible) is not None:
        return out
    for ni in feasible:
        out[ni.name]["scores"] = {}
        out[ni.name]["total"] = 0
    for pl in fwk.score_plugins:
        name = pl.name()
        if name in state.skip_score_plugins:
            continue
        raw = [NodeScore(ni.name, pl.score(state, pod, ni)[0]) for ni in feasible]
        norm = [NodeScore(x.name, x.score) for x in raw]
        ext = pl.score_extensions()
        if ext is not None:
            ext.normalize_score(state, pod, norm)
        w = fwk.score_plugin_weight[name]
        for r, n in zip(raw, norm, strict=True):
            out[r.name]["scores"][name] = {
                "raw": r.score,
                "normalized": n.score,
                "weighted": n.score * w,
            }
            out[r.name]["total"] += n.score * w
    return out


def render_text(result: dict[str, Any]) -> str:
    """The human form: one line per pending pod, then its per-node reasons (and explain)."""
    lines = []
    for e in result["results"]:
        head = f"{e['pod']} -> {e['node']}" if e["node"] else f"{e['pod']} -> unschedulable"
        if e["nominatedNode"]:
            head += f" (nominated {e['nominatedNode']}"
            if e["victims"]:
                head += f", preempting {', '.join(e['victims'])}"
            head += ")"
        lines.append(head)
        if e["message"]:
            lines.append(f"  {e['message']}")
        exp = e.get("explain")
        if exp is not None:
            for node, d in exp.items():
                f = d["filter"]
                verdict = (
                    "passed" if f == "passed" else f"{f['plugin']}: {f['reason']} ({f['code']})"
                )
                lines.append(f"  {node}: {verdict}")
                for name, sc in d.get("scores", {}).items():
                    lines.append(
                        f"    {name}: raw={sc['raw']} normalized={sc['normalized']} "
                        f"weighted={sc['weighted']}"
                    )
                if "total" in d:
                    lines.append(f"    total={d['total']}")
        else:
            for node, f in e["filtered"].items():
                lines.append(f"  {node}: {f['plugin']}: {f['reason']}")
    return "\n".join(lines) + ("\n" if lines else "")


def render_json(result: dict[str, Any]) -> str:
    """The ``-o json`` document: what ``json.dumps(result, indent=2)`` writes, byte for byte.

    orjson writes it (json's indenting encoder is its pure-Python one: ~35 us a decision at
    5,000 nodes, issue 23 item 7). The two agree on this document's values (strings, ints,
    bools, null, lists, dicts: decisions and explain hold no floats, extender scores are
    checked to be integers) except for non-ASCII text, which orjson writes as UTF-8 and json
    escapes (\\uXXXX): such a document is written by json, as before."""
    out: bytes | None
    try:
        out = orjson.dumps(result, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:  # e.g. an integer past 64 bits: json writes it
        out = None
    if out is None or not out.isascii():
        return json.dumps(result, indent=2) + "\n"
    return out.decode("ascii")
