"""Field paths and field sets as structured-merge-diff writes them.

A path is a tuple of path elements in their string form: ``f:<field>`` (a struct or map
field), ``k:<json object>`` (a list-map item by its keys, the keys in name order),
``v:<json value>`` (a set's item), ``i:<n>`` (a list index). A set is a frozenset of
paths; a path is in the set when that node is owned (``.`` in FieldsV1 when the node
also has owned children).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

Path = tuple[str, ...]
FieldSet = frozenset[Path]
EMPTY: FieldSet = frozenset()


def field(name: str) -> str:
    return "f:" + name


def key(item: dict[str, Any], keys: Iterable[str]) -> str:
    """A list-map item's element: its key fields as a JSON object in name order."""
    return "k:" + orjson.dumps({k: item.get(k) for k in sorted(keys)}).decode()


def value(v: Any) -> str:
    return "v:" + orjson.dumps(v).decode()


def to_fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 tree of a set (a member with children gets ``.``), keys in name
    order. One pass over the sorted paths: a node's children then come in name order,
    after the node itself, so a member's ``.`` (which sorts first) goes in before its
    first child."""
    tree: dict[str, Any] = {}
    members: set[int] = set()  # ids of the member nodes (all alive in the tree)
    for path in sorted(fields):
        node = tree
        for el in path:
            child = node.get(el)
            if child is None:
                if not node and id(node) in members:
                    node["."] = {}
                child = node[el] = {}
            node = child
        members.add(id(node))
    return tree


def from_fields_v1(tree: Any, prefix: Path = ()) -> FieldSet:
    """The set a FieldsV1 tree encodes; ValueError for one that is not a tree of
    objects with path elements as keys."""
    out: set[Path] = set()
    _collect(tree, prefix, out)
    return frozenset(out)


def _collect(tree: Any, prefix: Path, out: set[Path]) -> None:
    if not isinstance(tree, dict):
        raise ValueError(f"expected an object, got {type(tree).__name__}")
    if prefix and (not tree or "." in tree):
        out.add(prefix)
    for el, sub in tree.items():
        if el == ".":
            continue
        if not isinstance(el, str) or el[:2] not in ("f:", "k:", "v:", "i:"):
            raise ValueError(f"unexpected path element {el!r}")
        _collect(sub, (*prefix, el), out)


def describe(path: Path) -> str:
    """A path as upstream prints it: ``.spec.containers[name="c"].image``."""
    out = []
    for el in path:
        kind, text = el[:2], el[2:]
        if kind == "f:":
            out.append("." + text)
        elif kind == "k:":
            try:
                keys = orjson.loads(text)
                out.append("[" + ",".join(f"{k}={orjson.dumps(v).decode()}"
                                          for k, v in keys.items()) + "]")
            except orjson.JSONDecodeError:
                out.append("[" + text + "]")
        elif kind == "v:":
            out.append("[=" + text + "]")
        else:
            out.append("[" + text + "]")
    return "".join(out)


def has_prefix(path: Path, prefix: Path) -> bool:
    return path[:len(prefix)] == prefix


def under(fields: FieldSet, prefix: Path) -> bool:
    """Whether the set owns ``prefix`` or anything below it."""
    return any(p[:len(prefix)] == prefix for p in fields)
