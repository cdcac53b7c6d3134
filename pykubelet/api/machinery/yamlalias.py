"""YAML loading that refuses alias bombs, as go-yaml (sigs.k8s.io/yaml) does for the API.

A YAML alias names a node defined earlier, so a few hundred bytes of nested aliases
("billion laughs") stand for a tree of 10^9 nodes. PyYAML builds shared references, so
loading is quick, but everything after it walks the expanded tree: decoding, encoding to
JSON, storing: one small request would hold the API server's CPU and memory. go-yaml counts
the nodes it decodes and those it decodes through an alias, and refuses a document whose
aliased share is above a ratio (99% up to 400k nodes, falling to 10% at 4M):
"yaml: document contains excessive aliasing". An alias to a node that contains it
(``&a [*a]``), which go-yaml also refuses, would make the tree infinite.

The counts here are the same totals, computed over the composed node graph in time linear
in the document (each node's expanded size once), checked on the whole document rather
than while decoding.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

_RATIO_LOW = 400_000
_RATIO_HIGH = 4_000_000


class ExcessiveAliasing(yaml.YAMLError):
    """A document whose aliases expand it too much (or without end)."""


def allowed_alias_ratio(decode_count: int) -> float:
    """go-yaml's allowedAliasRatio."""
    if decode_count <= _RATIO_LOW:
        return 0.99
    if decode_count >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decode_count - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _expanded_sizes(root: yaml.Node) -> dict[int, int]:
    """Each node's size with every alias under it expanded (iterative: deep documents)."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        if leaving:
            sizes[key] = 1 + sum(sizes[id(k)] for k in _children(node))
            in_progress.discard(key)
            continue
        if key in sizes:
            continue
        if key in in_progress:  # reached again below itself
            raise ExcessiveAliasing("yaml: anchor value contains itself")
        in_progress.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in sizes)
    return sizes


def check_aliasing(root: yaml.Node) -> None:
    """Raise ExcessiveAliasing when ``root``'s aliases expand it as go-yaml refuses."""
    sizes = _expanded_sizes(root)
    seen: set[int] = set()
    decoded = aliased = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias: its whole subtree is decoded again
            decoded += sizes[id(node)]
            aliased += sizes[id(node)]
            continue
        seen.add(id(node))
        decoded += 1
        stack.extend(_children(node))
    if aliased > 100 and decoded > 1000 and aliased / decoded > allowed_alias_ratio(decoded):
        raise ExcessiveAliasing("yaml: document contains excessive aliasing")


def load(data: str | bytes, loader: Any) -> Any:
    """``yaml.load(data, Loader=loader)``, refusing alias bombs."""
    parser = loader(data)
    try:
        node = parser.get_single_node()
        if node is None:
            return None
        check_aliasing(node)
        return parser.construct_document(node)
    finally:
        parser.dispose()


def load_all(data: str | bytes, loader: Any) -> Iterator[Any]:
    """``yaml.load_all(data, Loader=loader)``, refusing alias bombs document by document."""
    parser = loader(data)
    try:
        while parser.check_node():
            node = parser.get_node()
            check_aliasing(node)
            yield parser.construct_document(node)
    finally:
        parser.dispose()
