"""OpenAPI for kubectl: ``/openapi/v3`` (an index and one document per group version) and
``/openapi/v2`` (a minimal protobuf document).

kubectl 1.32 reads the v3 documents to learn that the server validates fields itself: each
kind has a PATCH operation tagged with its group-version-kind and the ``fieldValidation``
query parameter, so kubectl leaves validation to the server and sends
``fieldValidation=Strict`` (k8s-api.md §2). Older clients ask for v2 and find an empty
document, which they accept. Component schemas come from the object model where it can
emit them, so ``kubectl explain`` has something to say.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import orjson

from pykubelet.controlplane.apiserver.discovery import KUBE_VERSION
from pykubelet.controlplane.registry.resources import ALL, ResourceInfo, group_versions

# protobuf of gnostic's openapi_v2.Document{swagger: "2.0"}: field 1, length 3, "2.0"
V2_PROTOBUF = b"\x0a\x032.0"
V2_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

SchemaFn = Callable[[ResourceInfo], tuple[str, dict[str, Any]] | None]


def model_schemas(r: ResourceInfo) -> tuple[str, dict[str, Any]] | None:
    """The kind's upstream definition name and its components.schemas (the object model)."""
    try:
        kind = r.model
        definition = kind.definition
    except KeyError:  # no class (CustomResourceDefinitions are kept as JSON)
        return None
    return definition, kind.openapi_schemas()

_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json", "application/apply-patch+yaml")
_QUERY = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _gvk(r: ResourceInfo) -> dict[str, str]:
    return {"group": r.group, "version": r.version, "kind": r.kind}


def _ops(r: ResourceInfo, definition: str | None) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{definition}"} if definition else {"type": "object"}
    params = [{"name": q, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
              for q in _QUERY]
    gvk = _gvk(r)
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    return {
        "get": {"operationId": f"read{r.kind}", "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": gvk, "responses": ok},
        "put": {"operationId": f"replace{r.kind}", "x-kubernetes-action": "put",
                "x-kubernetes-group-version-kind": gvk, "parameters": params,
                "requestBody": {"content": {"*/*": {"schema": ref}}}, "responses": ok},
        "patch": {"operationId": f"patch{r.kind}", "x-kubernetes-action": "patch",
                  "x-kubernetes-group-version-kind": gvk, "parameters": params,
                  "requestBody": {"content": {t: {"schema": {"type": "object"}}
                                              for t in _PATCH_TYPES}},
                  "responses": ok},
        "delete": {"operationId": f"delete{r.kind}", "x-kubernetes-action": "delete",
                   "x-kubernetes-group-version-kind": gvk, "responses": ok},
    }


def _collection_ops(r: ResourceInfo, definition: str | None) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{definition}"} if definition else {"type": "object"}
    params = [{"name": q, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
              for q in _QUERY]
    gvk = _gvk(r)
    return {
        "get": {"operationId": f"list{r.kind}", "x-kubernetes-action": "list",
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK"}}},
        "post": {"operationId": f"create{r.kind}", "x-kubernetes-action": "post",
                 "x-kubernetes-group-version-kind": gvk, "parameters": params,
                 "requestBody": {"content": {"*/*": {"schema": ref}}},
                 "responses": {"201": {"description": "Created"}}},
    }


def resource_paths(r: ResourceInfo, definition: str | None) -> dict[str, Any]:
    """The paths of one resource (collection, object, status) with their operations."""
    paths: dict[str, Any] = {}
    base = "/" + gv_path(r.group, r.version)
    if r.namespaced:
        coll = f"{base}/namespaces/{{namespace}}/{r.resource}"
    else:
        coll = f"{base}/{r.resource}"
    paths[coll] = _collection_ops(r, definition)
    paths[f"{coll}/{{name}}"] = _ops(r, definition)
    for s in r.subresources:
        if s.name == "status":
            paths[f"{coll}/{{name}}/status"] = _ops(r, definition)
    return paths


def document(paths: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths,
        "components": {"schemas": components},
    }


def gv_document(group: str, version: str, schemas: SchemaFn | None = None) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    components: dict[str, Any] = {}
    for r in ALL:
        if r.group != group or r.version != version:
            continue
        found = schemas(r) if schemas else None
        definition = None
        if found is not None:
            definition, schema_set = found
            components.update(schema_set)
        paths.update(resource_paths(r, definition))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths,
        "components": {"schemas": components},
    }


class OpenAPI:
    """The v3 documents, rendered once, with content hashes for the index's URLs."""

    def __init__(self, schemas: SchemaFn | None = model_schemas) -> None:
        self.docs: dict[str, bytes] = {}
        self.hashes: dict[str, str] = {}
        for group, version in group_versions():
            path = gv_path(group, version)
            body = orjson.dumps(gv_document(group, version, schemas))
            self.docs[path] = body
            self.hashes[path] = hashlib.sha512(body).hexdigest()[:64].upper()

    def put(self, path: str, doc: dict[str, Any] | None) -> None:
        """Serve ``doc`` at /openapi/v3/``path`` (None: serve nothing there), for the
        group versions that come and go (custom resources)."""
        if doc is None:
            self.docs.pop(path, None)
            self.hashes.pop(path, None)
            return
        body = orjson.dumps(doc)
        self.docs[path] = body
        self.hashes[path] = hashlib.sha512(body).hexdigest()[:64].upper()

    def index(self) -> dict[str, Any]:
        return {"paths": {p: {"serverRelativeURL": f"/openapi/v3/{p}?hash={h}"}
                          for p, h in self.hashes.items()}}
