"""Upstream's schema as the API server and a strategic merge patch need it.

`component_schemas()` gives the OpenAPI v3 `components.schemas` for some types and every type
they reference, with upstream's descriptions, x-kubernetes-group-version-kind on the kinds and
the list/patch metadata kubectl reads (x-kubernetes-patch-merge-key, -patch-strategy,
-list-type, -list-map-keys). `patch_meta()` and `field_type()` walk the same schema field by
field, which is what a strategic-merge-patch implementation asks: how is this list merged, and
what type are its items.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykubelet.api.machinery.codec import definitions, definitions_version

_REF_PREFIX = "#/components/schemas/"


def _refs(node: Any) -> list[str]:
    if isinstance(node, Mapping):
        out = []
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.append(v.removeprefix(_REF_PREFIX))
            else:
                out.extend(_refs(v))
        return out
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


def referenced(names: Iterable[str]) -> list[str]:
    """The given definitions and every definition they reach, sorted."""
    defs = definitions()
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        if name not in defs:
            raise KeyError(f"no upstream definition {name!r}")
        seen.add(name)
        stack.extend(_refs(defs[name]))
    return sorted(seen)


def component_schemas(names: Iterable[str]) -> dict[str, Any]:
    """OpenAPI v3 components.schemas for `names` and all they reference."""
    defs = definitions()
    return {name: defs[name] for name in referenced(names)}


def openapi_v3_document(names: Iterable[str], *, title: str = "Kubernetes") -> dict[str, Any]:
    """A /openapi/v3/<group-version> document holding the schemas of `names`."""
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": definitions_version()},
        "paths": {},
        "components": {"schemas": component_schemas(names)},
    }


def group_version_kinds(name: str) -> list[dict[str, str]]:
    """x-kubernetes-group-version-kind of a definition ([] for a type that is no kind)."""
    gvks: list[dict[str, str]] = definitions()[name].get("x-kubernetes-group-version-kind", [])
    return gvks


# --------------------------------------------------------------------------- patch metadata


@dataclass(frozen=True)
class PatchMeta:
    """How a field merges under strategic merge patch and server-side apply."""

    # x-kubernetes-patch-strategy, split: ("merge",), ("merge", "retainKeys")
    strategy: tuple[str, ...] = ()
    merge_key: str = ""  # x-kubernetes-patch-merge-key
    list_type: str = ""  # x-kubernetes-list-type: "atomic", "set", "map" ("" when unset)
    list_map_keys: tuple[str, ...] = ()  # x-kubernetes-list-map-keys
    map_type: str = ""  # x-kubernetes-map-type: "atomic", "granular"

    @property
    def merges(self) -> bool:
        return "merge" in self.strategy

    @property
    def retains_keys(self) -> bool:
        return "retainKeys" in self.strategy


def _property(type_name: str, wire: str) -> Mapping[str, Any] | None:
    props: Mapping[str, Any] = definitions()[type_name].get("properties", {})
    return props.get(wire)


def patch_meta(type_name: str, wire: str) -> PatchMeta:
    """The patch metadata of field `wire` of the definition `type_name`."""
    node = _property(type_name, wire) or {}
    strategy = node.get("x-kubernetes-patch-strategy", "")
    return PatchMeta(
        strategy=tuple(s for s in strategy.split(",") if s),
        merge_key=node.get("x-kubernetes-patch-merge-key", ""),
        list_type=node.get("x-kubernetes-list-type", ""),
        list_map_keys=tuple(node.get("x-kubernetes-list-map-keys", ())),
        map_type=node.get("x-kubernetes-map-type", ""),
    )


def type_patch_strategy(type_name: str) -> PatchMeta:
    """The definition's own metadata (a type whose every field merges alike, such as
    x-kubernetes-map-type on a struct)."""
    node = definitions()[type_name]
    return PatchMeta(map_type=node.get("x-kubernetes-map-type", ""))


def field_type(type_name: str, wire: str) -> str | None:
    """The definition name of the field's value: the object itself, a list's items or a
    map's values (None for scalars and for a field the type does not have)."""
    node = _property(type_name, wire)
    if node is None:
        return None
    for sub in (node, node.get("items", {}), node.get("additionalProperties", {})):
        if isinstance(sub, Mapping) and "$ref" in sub:
            return str(sub["$ref"]).removeprefix(_REF_PREFIX)
    return None


def fields(type_name: str) -> list[str]:
    """The wire names of a definition's fields."""
    return sorted(definitions()[type_name].get("properties", {}))
