"""kubectl's printers: server-side Tables as aligned columns, ``-o name``, ``-o json`` and
``-o yaml`` (cli-runtime's printers, whose output scripts and eyes are used to).

A Table is printed as the server built it: only priority-0 columns unless ``-o wide``,
NAMESPACE first with ``-A``, names as ``kind/name`` when several kinds are printed, a
header only when the columns change (so ``get -w`` prints it once). JSON is Go's
``MarshalIndent``: four spaces, sorted keys, ``<``, ``>`` and ``&`` escaped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.tabwriter import TabWriter

Obj = dict[str, Any]

_BREAK = ("\f", "\n", "\r")


def escape_terminal(text: str) -> str:
    """cli-runtime's terminal escaper: no raw escape sequences reach the terminal."""
    return text.replace("\x1b", "^[").replace("\r", "\\r")


def go_string(value: Any) -> str:
    """A value as Go's fmt.Sprint prints decoded JSON."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, list):
        return "[" + " ".join(go_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_string(v)}" for k, v in sorted(value.items())) + "]"
    return str(value)


def cell_text(cell: Any) -> str:
    if cell is None:
        return ""
    if not isinstance(cell, str):
        return escape_terminal(go_string(cell))
    cut = min((i for i in (cell.find(c) for c in _BREAK) if i >= 0), default=-1)
    if cut >= 0:
        return escape_terminal(cell[:cut]) + "..."
    return escape_terminal(cell)


def kind_string(group: str, kind: str) -> str:
    """How kubectl names a kind in ``kind/name``: ``pod``, ``poddisruptionbudget.policy``."""
    return f"{kind.lower()}.{group}" if group else kind.lower()


def format_labels(labels: Mapping[str, str] | None) -> str:
    if not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


class TablePrinter:
    """Prints Tables (and watch events' one-row Tables) the way kubectl's
    HumanReadablePrinter does; one instance per kind, sharing one TabWriter."""

    def __init__(self, writer: TabWriter, *, wide: bool = False, with_namespace: bool = False,
                 kind: str = "", no_headers: bool = False, show_labels: bool = False,
                 label_columns: Iterable[str] = ()) -> None:
        self.w = writer
        self.wide = wide
        self.with_namespace = with_namespace
        self.kind = kind  # "" unless names are printed as kind/name
        self.no_headers = no_headers
        self.show_labels = show_labels
        self.label_columns = list(label_columns)
        self.last_columns: list[Obj] | None = None
        self.printed_headers = False

    def print_table(self, table: Obj) -> int:
        """Write a Table's rows (and the header when due); returns the rows written."""
        columns = table.get("columnDefinitions") or []
        rows = table.get("rows") or []
        headers = not self.no_headers
        if self.printed_headers and (not columns or columns == self.last_columns):
            headers = False
        if not columns:
            columns = self.last_columns or []
        elif columns != self.last_columns:
            self.last_columns = columns
            self.printed_headers = False
        if rows:
            self.printed_headers = True
        shown = [i for i, c in enumerate(columns) if self.wide or not c.get("priority")]
        name_col = -1
        if self.kind:
            name_col = next((i for i, c in enumerate(columns)
                             if c.get("format") == "name" and c.get("type") == "string"), -1)
        if headers and rows:
            names = [str(columns[i].get("name", "")).upper() for i in shown]
            if self.with_namespace:
                names.insert(0, "NAMESPACE")
            names += [_label_header(k) for k in self.label_columns]
            if self.show_labels:
                names.append("LABELS")
            self.w.write("\t".join(names) + "\n")
        for row in rows:
            cells = row.get("cells") or []
            meta = ((row.get("object") or {}).get("metadata")) or {}
            out = []
            if self.with_namespace:
                out.append(escape_terminal(str(meta.get("namespace") or "")))
            for i in shown:
                if i >= len(cells):
                    out.append("")
                    continue
                text = cell_text(cells[i])
                if i == name_col:
                    text = f"{self.kind}/{text}"
                out.append(text)
            labels = meta.get("labels") or {}
            for key in self.label_columns:
                out.append(escape_terminal(str(labels.get(key, ""))))
            if self.show_labels:
                out.append(escape_terminal(format_labels(labels)))
            self.w.write("\t".join(out) + "\n")
        return len(rows)


def _label_header(key: str) -> str:
    return key.rsplit("/", 1)[-1].upper()


# ---------------------------------------------------------------------------- -o json/yaml


def to_json(obj: Any, indent: int = 4, *, sort_keys: bool = True) -> str:
    """Go's json.MarshalIndent(obj, "", "    ") plus the newline kubectl adds; keys sorted
    as for a decoded map, or (``sort_keys=False``) as given, for a typed object whose
    fields print in struct order."""
    text = json.dumps(obj, indent=indent, sort_keys=sort_keys, ensure_ascii=False)
    return _go_escape(text) + "\n"


def compact_json(obj: Any) -> str:
    """Go's json.Marshal: compact, sorted keys, HTML characters escaped."""
    text = json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return _go_escape(text)


def _go_escape(text: str) -> str:
    # these characters only occur inside JSON strings, so a plain replace is exact
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def to_yaml(obj: Any) -> str:
    """YAML as kubectl (go-yaml v2) prints it: sorted keys, block style, lists not
    indented, long lines folded at 80 columns, strings that would read as another type
    (``"3600"``, ``"true"``, timestamps) double-quoted, other strings plain where YAML
    allows else single-quoted, multi-line strings as literal blocks."""
    import yaml

    Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    str_tag = "tag:yaml.org,2002:str"

    class GoDumper(Dumper):  # type: ignore[misc,valid-type]
        pass

    def represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
        style = None
        if "\n" in data and _literal_ok(data):
            style = "|"
        elif dumper.resolve(yaml.ScalarNode, data, (True, False)) != str_tag:  # type: ignore[no-untyped-call]
            style = '"'
        return dumper.represent_scalar(str_tag, data, style=style)

    GoDumper.add_representer(str, represent_str)
    return str(yaml.dump(obj, Dumper=GoDumper, default_flow_style=False, sort_keys=True,
                         allow_unicode=True))


def _literal_ok(data: str) -> bool:
    """A literal block keeps the text exactly unless it has trailing spaces on a line or
    characters YAML cannot show raw."""
    return all(ch == "\n" or ch == "\t" or ch.isprintable() for ch in data) and not any(
        line.endswith(" ") for line in data.split("\n"))


def require_output(fmt: str, allowed: tuple[str, ...] = ("json", "name", "yaml")) -> None:
    """kubectl's refusal of an output format its printer flags do not know."""
    if fmt and fmt not in allowed:
        raise CommandError(f'error: unable to match a printer suitable for the output format '
                           f'"{fmt}", allowed formats are: {",".join(allowed)}')


def dry_run_suffix(dry_run: str) -> str:
    """What the name printer adds to the operation in a dry run."""
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run, "")


def name_line(group: str, kind: str, name: str, operation: str = "") -> str:
    text = f"{kind_string(group, kind)}/{name}"
    return f"{text} {operation}\n" if operation else text + "\n"


def print_operation(out: TextIO, fmt: str, dry_run: str, obj: Obj, ref: str,
                    operation: str) -> None:
    """cli-runtime's PrintFlags.ToPrinter(operation): ``-o json``/``yaml`` the object,
    ``-o name`` its ``kind/name`` (``ref``), else ``kind/name operation`` with the dry run's
    suffix (what rollout, scale and run say of what they did)."""
    if fmt in ("json", "yaml"):
        print_objects(out, fmt, obj)
    elif fmt == "name":
        out.write(f"{ref}\n")
    else:
        out.write(f"{ref} {operation}{dry_run_suffix(dry_run)}\n")


def print_objects(out: TextIO, fmt: str, obj: Obj, show_managed_fields: bool = False) -> None:
    """``-o json`` / ``-o yaml`` of one object (or List), without
    ``metadata.managedFields`` unless asked (kubectl's OmitManagedFieldsPrinter)."""
    if not show_managed_fields:
        obj = omit_managed_fields(obj)
    out.write(to_json(obj) if fmt == "json" else to_yaml(obj))


def omit_managed_fields(obj: Obj) -> Obj:
    """``obj`` (or each item of a List) without ``metadata.managedFields``."""
    if isinstance(obj.get("items"), list):
        return {**obj, "items": [omit_managed_fields(i) if isinstance(i, dict) else i
                                 for i in obj["items"]]}
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj
