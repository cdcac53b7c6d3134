"""Printers: Tables as kubectl prints them, Go's JSON bytes, go-yaml's styles."""

from __future__ import annotations

import io

from pykubelet.cli.kubectl.printers import (
    TablePrinter,
    cell_text,
    compact_json,
    go_string,
    print_objects,
    print_operation,
    to_json,
    to_yaml,
)
from pykubelet.cli.kubectl.tabwriter import TabWriter

COLUMNS = [{"name": "Name", "type": "string", "format": "name", "priority": 0},
           {"name": "Status", "type": "string", "format": "", "priority": 0},
           {"name": "IP", "type": "string", "format": "", "priority": 1}]


def table(*rows: tuple[str, str, str, str], columns: bool = True) -> dict:
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "columnDefinitions": COLUMNS if columns else [],
            "rows": [{"cells": [n, s, ip], "object": {"metadata": {"name": n, "namespace": ns,
                                                                   "labels": {"app": n}}}}
                     for n, s, ip, ns in rows]}


def printed(printer_kw: dict, *tables: dict) -> str:
    out = io.StringIO()
    w = TabWriter(out)
    p = TablePrinter(w, **printer_kw)
    for t in tables:
        p.print_table(t)
        w.flush()
    return out.getvalue()


def test_priority_columns_only_when_wide_and_namespace_first_with_all() -> None:
    t = table(("web", "Running", "10.0.0.5", "prod"))
    assert printed({}, t) == "NAME   STATUS\nweb    Running\n"
    assert printed({"wide": True, "with_namespace": True}, t) == (
        "NAMESPACE   NAME   STATUS    IP\nprod        web    Running   10.0.0.5\n")


def test_header_once_for_a_watch_and_kind_prefix_and_labels() -> None:
    first = table(("web", "Pending", "", "d"))
    later = table(("web", "Running", "", "d"), columns=False)
    assert printed({"kind": "pod", "show_labels": True}, first, later) == (
        "NAME      STATUS    LABELS\npod/web   Pending   app=web\npod/web   Running   app=web\n")


def test_no_rows_no_header() -> None:
    assert printed({}, table()) == ""


def test_cells_are_cut_at_line_breaks_and_escaped() -> None:
    assert cell_text("one\ntwo") == "one..."
    assert cell_text("a\x1b[31mred") == "a^[[31mred"
    assert cell_text(None) == ""
    assert cell_text(True) == "true"
    assert cell_text(3) == "3"
    assert go_string(2.0) == "2"
    assert go_string(["a", 1]) == "[a 1]"


def test_json_is_gos() -> None:
    assert to_json({"b": [], "a": {"x": "<&>"}}) == (
        '{\n    "a": {\n        "x": "\\u003c\\u0026\\u003e"\n    },\n    "b": []\n}\n')
    assert compact_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'


def test_yaml_quotes_as_go_yaml() -> None:
    text = to_yaml({"n": "3600", "t": "2026-01-01T00:00:00Z", "b": "true", "s": "plain",
                    "q": "didn't: match", "m": "line1\nline2\n", "l": ["1", "x"], "e": {}})
    assert text == ('b: "true"\ne: {}\nl:\n- "1"\n- x\nm: |\n  line1\n  line2\nn: "3600"\n'
                    "q: 'didn''t: match'\ns: plain\nt: \"2026-01-01T00:00:00Z\"\n")


def test_json_and_yaml_omit_managed_fields_unless_asked() -> None:
    """kubectl's OmitManagedFieldsPrinter: -o json/yaml hide metadata.managedFields (of an
    object and of a List's items); --show-managed-fields keeps them."""
    entry = {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:a": {}}}}
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "x", "managedFields": [entry]}, "data": {"a": "1"}}
    for fmt in ("json", "yaml"):
        out = io.StringIO()
        print_objects(out, fmt, obj)
        assert "managedFields" not in out.getvalue()
        assert "name" in out.getvalue()
        out = io.StringIO()
        print_objects(out, fmt, {"apiVersion": "v1", "kind": "List", "items": [obj]})
        assert "managedFields" not in out.getvalue()
        out = io.StringIO()
        print_objects(out, fmt, obj, show_managed_fields=True)
        assert "f:data" in out.getvalue()
    assert obj["metadata"]["managedFields"] == [entry]  # the caller's object is unchanged


def test_print_operation_is_the_name_printer_with_an_operation() -> None:
    """cli-runtime's PrintFlags.ToPrinter(operation), as rollout, scale and run use it."""
    obj = {"kind": "Pod", "metadata": {"name": "web", "managedFields": [{}]}}

    def printed(fmt: str, dry_run: str = "none") -> str:
        out = io.StringIO()
        print_operation(out, fmt, dry_run, obj, "pod/web", "created")
        return out.getvalue()

    assert printed("") == "pod/web created\n"
    assert printed("", "client") == "pod/web created (dry run)\n"
    assert printed("", "server") == "pod/web created (server dry run)\n"
    assert printed("name", "client") == "pod/web\n"
    assert '"managedFields"' not in printed("json")
    assert '"name": "web"' in printed("json")
    assert printed("yaml").startswith("kind: Pod\n")
