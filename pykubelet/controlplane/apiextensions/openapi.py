"""OpenAPI v3 documents of the served custom resources (apiextensions' openapi builder):
one per group version, each kind's schema under upstream's definition name
(``com.example.v1.Widget``) tagged with its group-version-kind, and PATCH operations that
take ``fieldValidation`` so kubectl leaves validation to the server."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from pykubelet.controlplane.apiextensions.crds import CRDS
from pykubelet.controlplane.apiserver.openapi import OpenAPI, document, gv_path, resource_paths
from pykubelet.controlplane.registry.resources import ResourceInfo

Obj = dict[str, Any]


def definition_name(r: ResourceInfo) -> str:
    """``<reversed group>.<version>.<Kind>`` (builder.go's definition naming)."""
    return ".".join([*reversed(r.group.split(".")), r.version, r.kind])


def kind_schema(r: ResourceInfo, schema: Obj) -> Obj:
    """The version's schema as a definition: apiVersion, kind and metadata described."""
    out: Obj = copy.deepcopy(schema) if schema else {"type": "object"}
    props: Obj = out.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string", "description": "APIVersion defines the "
                                    "versioned schema of this representation of an object."})
    props.setdefault("kind", {"type": "string", "description": "Kind is a string value "
                              "representing the REST resource this object represents."})
    props["metadata"] = {"type": "object"}
    out["x-kubernetes-group-version-kind"] = [
        {"group": r.group, "version": r.version, "kind": r.kind}]
    return out


def documents(resources: Iterable[tuple[ResourceInfo, Obj | None]]) -> dict[str, Obj]:
    """path (``apis/<group>/<version>``) -> document, for (resource, schema) pairs; a
    schema of None: the resource has no definition (CRDs themselves)."""
    paths: dict[str, Obj] = {}
    components: dict[str, Obj] = {}
    for r, schema in resources:
        gv = gv_path(r.group, r.version)
        definition = None if r is CRDS else definition_name(r)
        if definition is not None:
            components.setdefault(gv, {})[definition] = kind_schema(r, schema or {})
        paths.setdefault(gv, {}).update(resource_paths(r, definition))
    return {gv: document(p, components.get(gv, {})) for gv, p in paths.items()}


class CustomOpenAPI:
    """Keeps an :class:`OpenAPI`'s custom group versions in step with what is served."""

    def __init__(self, openapi: OpenAPI) -> None:
        self.openapi = openapi
        self.paths: set[str] = set()

    def update(self, resources: Iterable[tuple[ResourceInfo, Obj | None]]) -> None:
        docs = documents(resources)
        for gone in self.paths - set(docs):
            self.openapi.put(gone, None)
        for path, doc in docs.items():
            self.openapi.put(path, doc)
        self.paths = set(docs)


__all__ = ["CustomOpenAPI", "definition_name", "documents"]
