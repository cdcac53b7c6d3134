"""Objects as structured-merge-diff's typed values see them: the set of fields an object
sets (ToFieldSet), what changed between two objects (Compare), an applied configuration
merged into a live object (Merge) and fields taken out (RemoveItems). The schema
(:mod:`.schema`) says, field by field, whether a value is walked into or is one leaf."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import orjson

from pykubelet.controlplane.registry.fieldmanager import fieldpath as fp
from pykubelet.controlplane.registry.fieldmanager.fieldpath import FieldSet, Path
from pykubelet.controlplane.registry.fieldmanager.schema import (
    KEY_DEFAULTS,
    LIST_MAP,
    MAP,
    SET,
    STRUCT,
    Node,
)


class SchemaError(ValueError):
    """An object that does not fit its schema (a list-map item without its keys)."""


def _granular_map(value: Any, node: Node) -> bool:
    return isinstance(value, dict) and node.shape in (STRUCT, MAP)


def _granular_list(value: Any, node: Node) -> bool:
    return isinstance(value, list) and node.shape in (LIST_MAP, SET)


def item_key(item: Any, node: Node) -> str:
    """A list item's path element: ``k:`` by a list-map's keys, ``v:`` in a set."""
    if node.shape == SET:
        return fp.value(item)
    if not isinstance(item, dict):
        raise SchemaError(f"expected a map in an associative list keyed by "
                          f"{', '.join(node.keys)}, got {item!r}")
    keyed = {}
    for k in node.keys:
        if k in item and item[k] is not None:
            keyed[k] = item[k]
        elif k in KEY_DEFAULTS:
            keyed[k] = KEY_DEFAULTS[k]
        else:
            raise SchemaError(f"associative list with keys has an element that omits key "
                              f"field {orjson.dumps(k).decode()} (and doesn't have "
                              f"default value)")
    return fp.key(keyed, node.keys)


def to_field_set(obj: Any, node: Node, path: Path = ()) -> FieldSet:
    """Every field ``obj`` sets: leaves, atomic values, list items, empty maps."""
    out: set[Path] = set()
    _fields(obj, node, path, out)
    return frozenset(out)


def _fields(value: Any, node: Node, path: Path, out: set[Path]) -> None:
    if _granular_map(value, node):
        if not value and path:
            out.add(path)
        for k, v in value.items():
            _fields(v, node.child(k), (*path, fp.field(k)), out)
    elif _granular_list(value, node):
        item = node.item()
        seen = set()
        for v in value:
            p = (*path, item_key(v, node))
            if p in seen:
                raise SchemaError(f"duplicate entries for key {fp.describe(p[-1:])}")
            seen.add(p)
            out.add(p)
            if node.shape == LIST_MAP:
                _fields(v, item, p, out)
    elif path:
        out.add(path)


@dataclass
class Comparison:
    """What changed from one object to another, as field sets."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)


def compare(old: Any, new: Any, node: Node) -> Comparison:
    out = Comparison()
    if _granular_map(old, node) and _granular_map(new, node):
        # the top-level fields one write left as they were (a status write's spec, an
        # update's status) are not walked: an equal subtree adds, modifies and removes
        # nothing, and walking a pod's spec was most of a status write's tracking
        same = [k for k in old.keys() & new.keys() if _same_json(old[k], new[k])]
        if same:
            old = {k: v for k, v in old.items() if k not in same}
            new = {k: v for k, v in new.items() if k not in same}
    _compare(old, new, node, (), out)
    return out


def _same_json(a: Any, b: Any) -> bool:
    """The same JSON value, types included (``==`` says 1 == 1.0 == True, and a
    list-map item keyed 1 is not the one keyed 1.0)."""
    if a is b:
        return True
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:  # not JSON (an int past 64 bits): walk it
        return False


def _below(value: Any, node: Node, path: Path, into: set[Path]) -> None:
    """A whole subtree added or removed: every node in it, maps and list items
    included (a non-empty struct is never a member on its own)."""
    if _granular_map(value, node):
        if path and (node.shape != STRUCT or not value):
            into.add(path)
        for k, v in value.items():
            _below(v, node.child(k), (*path, fp.field(k)), into)
    elif _granular_list(value, node):
        item = node.item()
        for v in value:
            p = (*path, item_key(v, node))
            into.add(p)
            if node.shape == LIST_MAP and isinstance(v, dict):
                for k, sub in v.items():
                    _below(sub, item.child(k), (*p, fp.field(k)), into)
    elif path:
        into.add(path)


def _compare(old: Any, new: Any, node: Node, path: Path, out: Comparison) -> None:
    if _granular_map(old, node) and _granular_map(new, node):
        for k in old.keys() | new.keys():
            p = (*path, fp.field(k))
            child = node.child(k)
            if child.shape == STRUCT and old.get(k, {}) == {} and new.get(k, {}) == {}:
                continue  # an absent struct and an empty one are the same object
            if k not in new:
                _below(old[k], child, p, out.removed)
            elif k not in old:
                _below(new[k], child, p, out.added)
            else:
                _compare(old[k], new[k], child, p, out)
        return
    if _granular_list(old, node) and _granular_list(new, node):
        item = node.item()
        olds = {item_key(v, node): v for v in old}
        news = {item_key(v, node): v for v in new}
        for el in olds.keys() | news.keys():
            p = (*path, el)
            if el not in news:
                _below(olds[el], item, p, out.removed)
            elif el not in olds:
                _below(news[el], item, p, out.added)
            elif node.shape == LIST_MAP:
                _compare(olds[el], news[el], item, p, out)
        return
    if old != new and path:
        out.modified.add(path)
        if isinstance(new, dict | list) or isinstance(old, dict | list):
            _fields(new, node, path, out.added)


def merge(live: Any, config: Any, node: Node) -> Any:
    """``config`` merged into ``live``: granular maps field by field, list-maps item by
    item (new items after the live ones), sets as unions, anything else replaced."""
    if _granular_map(live, node) and _granular_map(config, node):
        out = dict(live)
        for k, v in config.items():
            if v is None:
                out.pop(k, None)
            elif k in out:
                out[k] = merge(out[k], v, node.child(k))
            else:
                out[k] = copy.deepcopy(v)
        return out
    if _granular_list(live, node) and _granular_list(config, node):
        return _merge_items(live, config, node)
    return copy.deepcopy(config)


def _merge_items(live: list[Any], config: list[Any], node: Node) -> list[Any]:
    """List items merged in structured-merge-diff's order: items both lists hold come
    in the configuration's order, items only the live list holds keep their place
    among them, new items come where the configuration has them."""
    item = node.item()
    lhs = {item_key(v, node): v for v in live}
    rhs = {item_key(v, node): v for v in config}
    l_order, r_order = list(lhs), list(rhs)
    shared = [pe for pe in r_order if pe in lhs]
    next_shared = shared.pop(0) if shared else None
    out: list[Any] = []

    def both(pe: str) -> Any:
        if pe not in lhs:
            return copy.deepcopy(rhs[pe])
        return merge(lhs[pe], rhs[pe], item) if node.shape == LIST_MAP else rhs[pe]

    li = ri = 0
    while li < len(l_order) or ri < len(r_order):
        if li < len(l_order) and ri < len(r_order):
            pe = l_order[li]
            if pe == r_order[ri]:
                out.append(both(pe))
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in rhs and next_shared is not None and next_shared != pe:
                li += 1  # a shared item, but not the one wanted in this round
                continue
        if li < len(l_order) and l_order[li] not in rhs:
            out.append(lhs[l_order[li]])
            li += 1
            continue
        if ri < len(r_order):
            pe = r_order[ri]
            out.append(both(pe))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


def remove(obj: Any, paths: FieldSet, node: Node) -> Any:
    """``obj`` without the nodes at ``paths`` (a list-map item or set value goes whole,
    a struct emptied of its fields stays as an empty object)."""
    if not paths:
        return obj
    out = copy.deepcopy(obj)
    outer = sorted(paths, key=len)
    for i, path in enumerate(outer):
        if not any(path[:len(q)] == q for q in outer[:i]):
            _remove(out, path, node)
    return out


def _remove(value: Any, path: Path, node: Node) -> None:
    el, rest = path[0], path[1:]
    if _granular_map(value, node) and el.startswith("f:"):
        name = el[2:]
        if name not in value:
            return
        if not rest:
            del value[name]
        else:
            _remove(value[name], rest, node.child(name))
    elif _granular_list(value, node):
        for i, v in enumerate(value):
            if item_key(v, node) == el:
                if not rest:
                    del value[i]
                elif node.shape == LIST_MAP:
                    _remove(v, rest, node.item())
                return
