"""``pykubectl get``: the server's Tables printed as kubectl prints them, or the objects as
``-o json|yaml|name``; ``-w`` keeps printing changes, watching from the list's
resourceVersion (kubectl's get.go, with cli-runtime's builder and printers)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError, enhance_list_error, status_text
from pykubelet.cli.kubectl.printers import TablePrinter, print_objects
from pykubelet.cli.kubectl.resources import Target, targets
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.tabwriter import TabWriter
from pykubelet.client.rest import JSON, TABLE_ACCEPT, StatusError

OUTPUTS = ("wide", "json", "yaml", "name")
CHUNK = 500


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Display one or many resources."
    p.add_argument("words", nargs="*", metavar="TYPE[.GROUP][/NAME] [NAME...]")
    p.add_argument("-o", "--output", default="", help="|".join(OUTPUTS))
    p.add_argument("-A", "--all-namespaces", action="store_true",
                   help="list across all namespaces")
    p.add_argument("-l", "--selector", default="", help="label selector (app=web,tier!=db)")
    p.add_argument("--field-selector", default="", help="field selector (spec.nodeName=n1)")
    p.add_argument("-w", "--watch", action="store_true", help="after listing, watch changes")
    p.add_argument("--watch-only", action="store_true", help="watch changes without listing")
    p.add_argument("--show-labels", action="store_true", help="add a LABELS column")
    p.add_argument("--show-managed-fields", action="store_true",
                   help="keep metadata.managedFields in -o json/yaml")
    p.add_argument("-L", "--label-columns", action="append", default=[],
                   help="label keys shown as columns")
    p.add_argument("--no-headers", action="store_true", help="omit the header row")
    p.add_argument("--ignore-not-found", action="store_true",
                   help="no error when a named object does not exist")
    p.add_argument("--chunk-size", type=int, default=CHUNK, help="list page size")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    out = args.output
    if out not in ("", *OUTPUTS):
        raise CommandError(f"error: unable to match a printer suitable for the output format "
                           f'"{out}", allowed formats are: {",".join(OUTPUTS)}')
    words: list[str] = args.words
    has_names = any("/" in w for w in words) or len(words) > 1
    if args.all_namespaces and has_names:
        raise CommandError("error: a resource cannot be retrieved by name across all "
                           "namespaces")
    tgts = targets(session, words, all_namespaces=args.all_namespaces)
    label_columns = [k for v in args.label_columns for k in v.split(",") if k]
    if args.watch or args.watch_only:
        return _watch(session, args, tgts, label_columns)
    if out in ("json", "yaml", "name"):
        return _print_objects(session, args, tgts, words)
    return _print_tables(session, args, tgts, label_columns)


def _params(args: argparse.Namespace, t: Target) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if not t.name:
        params["limit"] = args.chunk_size if args.chunk_size > 0 else None
        if args.selector:
            params["labelSelector"] = args.selector
        if args.field_selector:
            params["fieldSelector"] = args.field_selector
    return params


def _fetch(session: Session, args: argparse.Namespace, t: Target, accept: str) -> Any:
    """One GET, or a list followed through its ``continue`` pages (rows/items joined)."""
    params = _params(args, t)
    try:
        doc = session.client.request("GET", t.path, params=params, accept=accept)
    except StatusError as exc:
        if t.name:
            raise
        raise enhance_list_error(exc, t.mapping.gvr_string, args.selector,
                                 args.field_selector) from None
    while t.name == "" and isinstance(doc, dict) and (doc.get("metadata") or {}).get("continue"):
        params["continue"] = doc["metadata"]["continue"]
        more = session.client.request("GET", t.path, params=params, accept=accept)
        key = "rows" if doc.get("kind") == "Table" else "items"
        doc[key] = (doc.get(key) or []) + (more.get(key) or [])
        doc["metadata"] = more.get("metadata") or {}
    return doc


def _several_kinds(tgts: list[Target]) -> bool:
    return len({(t.mapping.group, t.mapping.kind) for t in tgts}) > 1


def _print_tables(session: Session, args: argparse.Namespace, tgts: list[Target],
                  label_columns: list[str]) -> int:
    stdout = sys.stdout
    writer = TabWriter(stdout)
    with_kind = _several_kinds(tgts)
    errors: list[str] = []
    written = 0
    printer: TablePrinter | None = None
    last = None
    for t, table in _fetch_each(session, args, tgts, TABLE_ACCEPT, errors):
        if not isinstance(table, dict) or table.get("kind") != "Table":
            table = _fallback_table(table, t)
        if printer is None or last != t.mapping:
            writer.flush()
            writer.forget_widths()
            if last is not None and written and not args.no_headers and table.get("rows"):
                writer.write("\n")
            printer = TablePrinter(
                writer, wide=args.output == "wide",
                with_namespace=args.all_namespaces and t.mapping.namespaced,
                kind=t.mapping.kind_string if with_kind else "", no_headers=args.no_headers,
                show_labels=args.show_labels, label_columns=label_columns)
            last = t.mapping
        written += printer.print_table(table)
    writer.flush()
    for e in errors:
        print(e, file=sys.stderr)
    if not written and not errors and not args.ignore_not_found:
        if all(t.mapping.namespaced for t in tgts) and not args.all_namespaces:
            print(f"No resources found in {session.namespace} namespace.", file=sys.stderr)
        else:
            print("No resources found", file=sys.stderr)
    return 1 if errors else 0


def _fetch_each(session: Session, args: argparse.Namespace, tgts: list[Target], accept: str,
                errors: list[str], single: bool = False) -> Iterator[tuple[Target, Any]]:
    """Each target's answer, as kubectl get visits them: a missing one skipped under
    --ignore-not-found, any other error kept in ``errors`` (raised for one named object)."""
    for t in tgts:
        try:
            doc = _fetch(session, args, t, accept)
        except StatusError as exc:
            if exc.not_found and args.ignore_not_found:
                continue
            if single:
                raise
            _add(errors, status_text(exc))
            continue
        yield t, doc


def _add(errors: list[str], line: str) -> None:
    if line not in errors:
        errors.append(line)


def _fallback_table(obj: Any, t: Target) -> dict[str, Any]:
    """A server that does not answer with a Table: NAME and AGE from the objects."""
    items = obj.get("items") if isinstance(obj, dict) and "items" in obj else [obj]
    rows = [{"cells": [((i or {}).get("metadata") or {}).get("name", ""), "<unknown>"],
             "object": i} for i in items or []]
    return {"kind": "Table", "columnDefinitions": [
        {"name": "Name", "type": "string", "format": "name", "priority": 0},
        {"name": "Age", "type": "string", "format": "", "priority": 0}], "rows": rows}


def _with_kind(item: dict[str, Any], t: Target) -> dict[str, Any]:
    if "kind" not in item or "apiVersion" not in item:
        item = {"apiVersion": t.mapping.group_version, "kind": t.mapping.kind, **item}
    return item


def _print_objects(session: Session, args: argparse.Namespace, tgts: list[Target],
                   words: list[str]) -> int:
    single = len(tgts) == 1 and bool(tgts[0].name)
    items: list[tuple[Target, dict[str, Any]]] = []
    errors: list[str] = []
    for t, doc in _fetch_each(session, args, tgts, JSON, errors, single=single):
        if t.name:
            items.append((t, doc))
        else:
            items += [(t, _with_kind(i, t)) for i in doc.get("items") or []]
    out = sys.stdout
    if args.output == "name":
        for t, obj in items:
            out.write(f"{t.mapping.kind_string}/{(obj.get('metadata') or {}).get('name', '')}\n")
    elif single and items:
        print_objects(out, args.output, items[0][1], args.show_managed_fields)
    elif items or not args.ignore_not_found or errors:
        print_objects(out, args.output, {"apiVersion": "v1", "items": [o for _, o in items],
                                         "kind": "List", "metadata": {"resourceVersion": ""}},
                      args.show_managed_fields)
    out.flush()
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


# ---------------------------------------------------------------------------- watch


def _watch(session: Session, args: argparse.Namespace, tgts: list[Target],
           label_columns: list[str]) -> int:
    if _several_kinds(tgts):
        raise CommandError("error: you may only specify a single resource type")
    if len(tgts) > 1:
        raise CommandError("error: watch is only supported on individual resources and "
                           "resource collections - more than 1 resource was found")
    t = tgts[0]
    tables = args.output in ("", "wide")
    accept = TABLE_ACCEPT if tables else JSON
    stdout = sys.stdout
    writer = TabWriter(stdout)
    printer = TablePrinter(writer, wide=args.output == "wide",
                           with_namespace=args.all_namespaces and t.mapping.namespaced,
                           no_headers=args.no_headers, show_labels=args.show_labels,
                           label_columns=label_columns)

    def show(obj: dict[str, Any]) -> None:
        if tables:
            if obj.get("kind") != "Table":
                obj = _fallback_table(obj, t)
            printer.print_table(obj)
            writer.flush()
        elif args.output == "name":
            meta = obj.get("metadata") or {}
            stdout.write(f"{t.mapping.kind_string}/{meta.get('name', '')}\n")
            stdout.flush()
        else:
            print_objects(stdout, args.output, _with_kind(obj, t))
            stdout.flush()

    first = _fetch(session, args, t, accept)
    if t.name:
        rv, skip_first = "0", True
        params: dict[str, Any] = {"fieldSelector": f"metadata.name={t.name}"}
    else:
        rv, skip_first = str((first.get("metadata") or {}).get("resourceVersion") or ""), False
        params = {k: v for k, v in _params(args, t).items() if k != "limit"}
    if not args.watch_only:
        if t.name or tables:
            show(first)
        else:
            for item in first.get("items") or []:
                show(item)
    ns = t.namespace
    for ev in session.client.watch_events(t.mapping.rest, ns, resource_version=rv,
                                          accept=accept, params=params):
        if ev.get("type") == "BOOKMARK":
            continue
        if skip_first:
            skip_first = False
            continue
        show(ev.get("object") or {})
    return 0
