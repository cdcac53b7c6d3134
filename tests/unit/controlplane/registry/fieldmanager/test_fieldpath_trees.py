"""FieldsV1 trees of field sets: to_fields_v1 in one pass over the sorted paths gives
the tree the two-pass build gave (members with children marked ``.``, keys in name order,
``.`` first), and from_fields_v1 reads it back to the same set."""

from __future__ import annotations

import random
from typing import Any

import orjson

from pykubelet.controlplane.registry.fieldmanager import fieldpath as fp
from pykubelet.controlplane.registry.fieldmanager.managed import fields_of, tree_of


def reference(fields: Any) -> dict[str, Any]:
    """The two-pass build: the tree, then ``.`` on every member with children, sorted."""
    tree: dict[str, Any] = {}
    members = list(fields)
    for path in members:
        node = tree
        for el in path:
            node = node.setdefault(el, {})
    for path in members:
        node = tree
        for el in path:
            node = node[el]
        if node and "." not in node:
            node["."] = {}

    def ordered(t: dict[str, Any]) -> dict[str, Any]:
        return {k: ordered(t[k]) for k in sorted(t)}
    return ordered(tree)


CASES: list[frozenset[tuple[str, ...]]] = [
    frozenset(),
    frozenset({("f:metadata", "f:labels"), ("f:metadata", "f:labels", "f:app")}),
    frozenset({("f:spec", "f:containers", 'k:{"name":"c"}'),
               ("f:spec", "f:containers", 'k:{"name":"c"}', "f:image"),
               ("f:spec", "f:containers", 'k:{"name":"b"}', "f:image"),
               ("f:spec", "f:finalizers", 'v:"a"'), ("f:spec", "f:x", "i:0")}),
    frozenset({(), ("f:a",)}),  # the root a member
]


def random_set(rng: random.Random) -> frozenset[tuple[str, ...]]:
    els = ["f:a", "f:b", "f:Z", 'k:{"name":"x"}', 'v:"q"', "i:1", "f:a.b"]
    return frozenset(tuple(rng.choice(els) for _ in range(rng.randint(1, 4)))
                     for _ in range(rng.randint(0, 12)))


def test_one_pass_equals_the_two_pass_tree_byte_for_byte() -> None:
    rng = random.Random(7)
    for fields in CASES + [random_set(rng) for _ in range(300)]:
        want = orjson.dumps(reference(fields))
        assert orjson.dumps(fp.to_fields_v1(fields)) == want, sorted(fields)
        assert orjson.dumps(tree_of(fields)) == want
        assert fields_of(fp.to_fields_v1(fields)) == fp.from_fields_v1(reference(fields))


def test_a_remembered_tree_is_a_new_object_each_time() -> None:
    fields = CASES[1]
    first = tree_of(fields)
    first["f:metadata"]["f:labels"]["f:extra"] = {}
    assert "f:extra" not in tree_of(fields)["f:metadata"]["f:labels"]
