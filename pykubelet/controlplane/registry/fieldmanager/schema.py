"""How each field of a kind merges, read from the OpenAPI definitions as
structured-merge-diff's schema conversion reads them (schemaconv): a list is a list-map
(``x-kubernetes-list-type: map`` with its keys, or a ``merge`` patch strategy with a
merge key), a set (``set``, or ``merge`` without a key) or atomic (anything else); a map
or struct is granular unless ``x-kubernetes-map-type: atomic``. A field the definitions
do not know is treated as upstream treats a schemaless value: maps granular, lists
atomic."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pykubelet.api.machinery.codec import definitions

_REF = "#/components/schemas/"

STRUCT, MAP, LIST_MAP, SET, ATOMIC, SCALAR = (
    "struct", "map", "list-map", "set", "atomic", "scalar")

# defaults of list-map keys an applied item may omit (upstream's schema defaults them:
# ContainerPort.protocol, ServicePort.protocol, ... "TCP")
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}


@dataclass(frozen=True)
class Node:
    """One field's schema: its merge ``shape``, the definition of its value (struct),
    of its items (list) or of its values (map), and a list-map's keys."""

    shape: str
    definition: str = ""
    keys: tuple[str, ...] = ()

    def child(self, name: str) -> Node:
        """The schema of field ``name`` of a struct, or of a map's values."""
        if self.shape == MAP:
            return _of_definition(self.definition) if self.definition else UNKNOWN
        if self.shape != STRUCT or not self.definition:
            return UNKNOWN
        return _field(self.definition, name)

    def item(self) -> Node:
        """The schema of a list's items."""
        return _of_definition(self.definition) if self.definition else UNKNOWN_ITEM


UNKNOWN = Node(STRUCT)  # a schemaless map: granular, its lists atomic
UNKNOWN_ITEM = Node(STRUCT)


def root(definition: str | None) -> Node:
    """The schema of a whole object of definition ``definition`` (None: schemaless)."""
    return _of_definition(definition) if definition else UNKNOWN


def _ref(node: dict[str, Any]) -> str:
    ref = node.get("$ref")
    if not ref:
        for sub in node.get("allOf") or []:
            if isinstance(sub, dict) and sub.get("$ref"):
                ref = sub["$ref"]
    return str(ref).removeprefix(_REF) if ref else ""


@lru_cache(maxsize=2048)
def _of_definition(name: str) -> Node:
    d = definitions().get(name) or {}
    if d.get("x-kubernetes-map-type") == "atomic":
        return Node(ATOMIC, name)
    if "properties" in d or d.get("type") == "object":
        return Node(STRUCT, name)
    return Node(SCALAR, name)


@lru_cache(maxsize=8192)
def _field(definition: str, name: str) -> Node:
    prop = ((definitions().get(definition) or {}).get("properties") or {}).get(name)
    if not isinstance(prop, dict):
        return UNKNOWN
    if prop.get("type") == "array":
        items = prop.get("items") or {}
        item_def = _ref(items) if isinstance(items, dict) else ""
        list_type = prop.get("x-kubernetes-list-type", "")
        merge = "merge" in str(prop.get("x-kubernetes-patch-strategy", "")).split(",")
        merge_key = prop.get("x-kubernetes-patch-merge-key", "")
        if list_type == "map" or (not list_type and merge and merge_key):
            keys = tuple(prop.get("x-kubernetes-list-map-keys") or (merge_key,))
            return Node(LIST_MAP, item_def, keys)
        if list_type == "set" or (not list_type and merge):
            return Node(SET, item_def)
        return Node(ATOMIC, item_def)
    ref = _ref(prop)
    if ref:
        if prop.get("x-kubernetes-map-type") == "atomic":
            return Node(ATOMIC, ref)
        return _of_definition(ref)
    if prop.get("type") == "object" or "additionalProperties" in prop:
        if prop.get("x-kubernetes-map-type") == "atomic":
            return Node(ATOMIC)
        values = prop.get("additionalProperties")
        return Node(MAP, _ref(values) if isinstance(values, dict) else "")
    return Node(SCALAR)
