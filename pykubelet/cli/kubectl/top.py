"""``pykubectl top node|pod`` (k8s.io/kubectl/pkg/cmd/top and metricsutil's printer): the
metrics.k8s.io/v1beta1 usage of nodes and pods in kubectl's columns.

Nodes: ``NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%)``, the percentages of the node's
allocatable (``--show-capacity``: capacity), nodes without metrics as ``<unknown>``.
Pods: ``NAME CPU(cores) MEMORY(bytes)``, with ``NAMESPACE`` first for ``-A`` and ``POD``
before the container's name for ``--containers``. CPU is printed in millicores, memory in
MiB, both rounded as kubectl rounds them (MilliValue up, Value()/2^20 down); rows sort by
name (``--sort-by cpu|memory``: the largest first). Errors in kubectl's words: "Metrics
API not available" when discovery has no metrics.k8s.io/v1beta1, "metrics not available
yet" when the API has nothing for what exists.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from typing import Any

from pykubelet.api.machinery.quantity import parse_quantity
from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.tabwriter import TabWriter
from pykubelet.client.rest import NODES, PODS, Resource

Obj = dict[str, Any]
METRICS_GROUP = "metrics.k8s.io"
METRICS_VERSION = "v1beta1"
NODE_METRICS = Resource(METRICS_GROUP, METRICS_VERSION, "nodes", namespaced=False)
POD_METRICS = Resource(METRICS_GROUP, METRICS_VERSION, "pods")
NODE_COLUMNS = ("NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)")
POD_COLUMNS = ("NAME", "CPU(cores)", "MEMORY(bytes)")
UNKNOWN = "<unknown>"
RESOURCES = ("cpu", "memory")
MIB = 1024 * 1024


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Display resource (CPU/memory) usage of nodes or pods."
    p.add_argument("kind", choices=("node", "nodes", "no", "pod", "pods", "po"),
                   metavar="node|pod")
    p.add_argument("name", nargs="?", default="", metavar="NAME")
    p.add_argument("-l", "--selector", default="", help="label selector")
    p.add_argument("--sort-by", default="", choices=("", "cpu", "memory"),
                   help="sort by cpu or memory (largest first)")
    p.add_argument("--no-headers", action="store_true", help="no header line")
    p.add_argument("-A", "--all-namespaces", action="store_true",
                   help="pods in every namespace")
    p.add_argument("--containers", action="store_true", help="a line per container")
    p.add_argument("--show-capacity", action="store_true",
                   help="percentages of capacity instead of allocatable")


def _quantity(usage: Obj, res: str) -> Fraction:
    raw = usage.get(res)
    if isinstance(raw, Fraction):
        return raw
    return parse_quantity(raw) if raw is not None else Fraction(0)


def _milli(q: Fraction) -> int:
    return -((-q.numerator * 1000) // q.denominator)  # MilliValue: rounded up


def _value(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)  # Value: rounded up


def _usage_cells(usage: Obj, available: Obj | None) -> list[str]:
    """printAllResourceUsages: each resource's value, and its share of ``available``."""
    cells = []
    for res in RESOURCES:
        q = _quantity(usage, res)
        cells.append(f"{_milli(q)}m" if res == "cpu" else f"{_value(q) // MIB}Mi")
        if available is not None and res in available:
            total = parse_quantity(available[res])
            fraction = 0.0 if total == 0 else _milli(q) / _milli(total) * 100
            cells.append(f"{int(fraction)}%")
    return cells


def _sort_key(sort_by: str, usage: Obj) -> tuple[int, ...]:
    q = _quantity(usage, sort_by)
    return (-_milli(q),) if sort_by == "cpu" else (-_value(q),)


def _pod_usage(m: Obj) -> Obj:
    """getPodMetrics: the containers' usage summed (exactly, as Quantity.Add)."""
    return {res: sum((_quantity(c.get("usage") or {}, res)
                      for c in m.get("containers") or []), Fraction(0))
            for res in RESOURCES}


def format_nodes(metrics: list[Obj], available: dict[str, Obj], no_headers: bool = False,
                 sort_by: str = "") -> str:
    """PrintNodeMetrics; ``available`` maps every listed node to its allocatable."""
    if not metrics:
        return ""
    rows = sorted(metrics, key=lambda m: m["metadata"]["name"])
    if sort_by:
        rows.sort(key=lambda m: _sort_key(sort_by, m.get("usage") or {}))
    lines = [] if no_headers else [list(NODE_COLUMNS)]
    left = dict(available)
    for m in rows:
        name = m["metadata"]["name"]
        lines.append([name, *_usage_cells(m.get("usage") or {}, left.pop(name, None))])
    for name in sorted(left):
        lines.append([name] + [UNKNOWN] * 2 * len(RESOURCES))
    return _table(lines)


def format_pods(metrics: list[Obj], containers: bool = False, with_namespace: bool = False,
                no_headers: bool = False, sort_by: str = "") -> str:
    """PrintPodMetrics."""
    if not metrics:
        return ""
    lines: list[list[str]] = []
    if not no_headers:
        lines.append((["NAMESPACE"] if with_namespace else []) + (["POD"] if containers else [])
                     + list(POD_COLUMNS))
    rows = sorted(metrics, key=lambda m: (m["metadata"].get("namespace", "")
                                          if with_namespace else "", m["metadata"]["name"]))
    if sort_by:
        rows.sort(key=lambda m: _sort_key(sort_by, _pod_usage(m)))
    for m in rows:
        meta = m["metadata"]
        prefix = [meta.get("namespace", "")] if with_namespace else []
        if containers:
            cs = sorted(m.get("containers") or [], key=lambda c: c["name"])
            if sort_by:
                cs.sort(key=lambda c: _sort_key(sort_by, c.get("usage") or {}))
            for c in cs:
                lines.append([*prefix, meta["name"], c["name"],
                              *_usage_cells(c.get("usage") or {}, None)])
        else:
            lines.append([*prefix, meta["name"], *_usage_cells(_pod_usage(m), None)])
    return _table(lines)


def _table(lines: list[list[str]]) -> str:
    """kubectl's tab writer over cells each ended by a tab (printValue's ``%v\\t``)."""
    import io

    out = io.StringIO()
    w = TabWriter(out)
    w.write("".join("".join(f"{cell}\t" for cell in line) + "\n" for line in lines))
    w.flush()
    return out.getvalue()


def metrics_api_available(session: Session) -> bool:
    """SupportedMetricsAPIVersionAvailable: the group and version in discovery."""
    groups = session.client.request("GET", "/apis") or {}
    for g in groups.get("groups") or []:
        if g.get("name") == METRICS_GROUP:
            return any(v.get("version") == METRICS_VERSION for v in g.get("versions") or [])
    return False


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    if not metrics_api_available(session):
        raise CommandError("error: Metrics API not available")
    if args.kind in ("node", "nodes", "no"):
        return _top_nodes(args, session)
    return _top_pods(args, session)


def _top_nodes(args: argparse.Namespace, session: Session) -> int:
    client = session.client
    if args.name:
        metrics = [client.get(NODE_METRICS, args.name)]
        nodes = [client.get(NODES, args.name)]
    else:
        metrics = (client.list(NODE_METRICS, labelSelector=args.selector or None)
                   .get("items") or [])
        nodes = client.list(NODES, labelSelector=args.selector or None).get("items") or []
    if not metrics:
        raise CommandError("error: metrics not available yet")
    field = "capacity" if args.show_capacity else "allocatable"
    available = {n["metadata"]["name"]: (n.get("status") or {}).get(field) or {}
                 for n in nodes}
    sys.stdout.write(format_nodes(metrics, available, args.no_headers, args.sort_by))
    return 0


def _top_pods(args: argparse.Namespace, session: Session) -> int:
    client = session.client
    namespace = "" if args.all_namespaces else session.namespace
    if args.name:
        metrics = [client.get(POD_METRICS, args.name, namespace)]
    else:
        metrics = (client.list(POD_METRICS, namespace, labelSelector=args.selector or None)
                   .get("items") or [])
    if not metrics:
        pods = client.list(PODS, namespace, labelSelector=args.selector or None)
        if pods.get("items"):
            raise CommandError("error: metrics not available yet")
        print("No resources found" if args.all_namespaces
              else f"No resources found in {namespace} namespace.", file=sys.stderr)
        return 0
    sys.stdout.write(format_pods(metrics, args.containers, args.all_namespaces,
                                 args.no_headers, args.sort_by))
    return 0
