#!/usr/bin/env python3
"""Writes pykubelet/api/machinery/definitions.json: upstream's schema of every type the API serves.

The authority is Kubernetes' own OpenAPI, as the `kubernetes-validate` package on PyPI ships it
(JSON Schema files generated from the API server's published spec, one set per release). We
keep the types reachable from the kinds we serve (ROOTS), in OpenAPI v3 component form
(`$ref: #/components/schemas/<name>`, plain `type`), with upstream's descriptions, enums,
formats, required lists, group-version-kinds and the list/map/patch metadata
(x-kubernetes-list-type, -list-map-keys, -patch-merge-key, -patch-strategy, -map-type).

The walker (pykubelet/api/machinery/codec.py) reads this file to know every upstream field of a
type, so a field our typed classes do not model is still checked and kept; the OpenAPI emitter
and strategic merge patch read the same metadata. tests/unit/api/machinery checks the committed
file is what this script writes.

    python scripts/gen_k8s_definitions.py           # rewrite the file
    python scripts/gen_k8s_definitions.py --check   # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

KUBERNETES_VERSION = "v1.37.0"
OUT = Path(__file__).resolve().parents[1] / "pykubelet" / "api" / "machinery" / "definitions.json"

_CORE = "io.k8s.api.core.v1."
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
# The kinds the API server serves (and their lists), plus the workloads whose selectors the
# scheduler reads (PodTopologySpread's default constraints).
ROOTS = (
    *(
        _CORE + k
        for k in (
            "Pod",
            "PodList",
            "Node",
            "NodeList",
            "Namespace",
            "NamespaceList",
            "Event",
            "EventList",
            "ConfigMap",
            "ConfigMapList",
            "Secret",
            "SecretList",
            "ServiceAccount",
            "ServiceAccountList",
            "Binding",
            "Service",
            "ServiceList",
            "Endpoints",
            "EndpointsList",
            "ReplicationController",
        )
    ),
    "io.k8s.api.authentication.v1.TokenRequest",
    "io.k8s.api.coordination.v1.Lease",
    "io.k8s.api.coordination.v1.LeaseList",
    "io.k8s.api.scheduling.v1.PriorityClass",
    "io.k8s.api.scheduling.v1.PriorityClassList",
    "io.k8s.api.policy.v1.PodDisruptionBudget",
    "io.k8s.api.policy.v1.PodDisruptionBudgetList",
    "io.k8s.api.policy.v1.Eviction",
    "io.k8s.api.apps.v1.ReplicaSet",
    "io.k8s.api.apps.v1.ReplicaSetList",
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.apps.v1.DeploymentList",
    "io.k8s.api.autoscaling.v1.Scale",
    "io.k8s.api.apps.v1.StatefulSet",
    "io.k8s.api.apps.v1.ControllerRevision",
    "io.k8s.api.apps.v1.ControllerRevisionList",
    "io.k8s.api.apps.v1.DaemonSet",
    "io.k8s.api.apps.v1.DaemonSetList",
    "io.k8s.api.batch.v1.Job",
    "io.k8s.api.batch.v1.JobList",
    "io.k8s.api.batch.v1.CronJob",
    "io.k8s.api.batch.v1.CronJobList",
    "io.k8s.api.discovery.v1.EndpointSlice",
    "io.k8s.api.discovery.v1.EndpointSliceList",
    *(
        "io.k8s.api.rbac.v1." + k
        for k in ("Role", "RoleList", "ClusterRole", "ClusterRoleList", "RoleBinding",
                  "RoleBindingList", "ClusterRoleBinding", "ClusterRoleBindingList")
    ),
    _META + "DeleteOptions",
    _META + "Status",
    _META + "WatchEvent",
    _META + "APIResourceList",
)
# The JSON Schema files express these two as oneOf; OpenAPI v3 as the API server publishes it.
_SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"format": "quantity"},
}
_KEEP = (
    "description",
    "type",
    "format",
    "items",
    "additionalProperties",
    "properties",
    "required",
    "enum",
    "x-kubernetes-group-version-kind",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-map-type",
    "x-kubernetes-unions",
)


def source_definitions(version: str = KUBERNETES_VERSION) -> dict[str, Any]:
    """The `$defs` of kubernetes-validate's schema for `version`."""
    # Found without importing the package (its validators need jsonschema; we need the data).
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("kubernetes-validate is not installed (pip install -e '.[test]')")
    base = Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"
    doc = json.loads((base / f"{version}-local" / "_definitions.json").read_text())
    return dict(doc["$defs"])


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = []
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.append(v.rsplit("/", 1)[-1])
            else:
                out.extend(_refs(v))
        return out
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


def reachable(defs: dict[str, Any], roots: tuple[str, ...] = ROOTS) -> list[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(_refs(defs[name]))
    return sorted(seen)


def _plain_type(t: Any) -> Any:
    if isinstance(t, list):
        kinds = [x for x in t if x != "null"]
        return kinds[0] if len(kinds) == 1 else kinds
    return t


def normalise(schema: dict[str, Any], *, prop: str = "") -> dict[str, Any]:
    """One JSON Schema node in OpenAPI v3 component form."""
    out: dict[str, Any] = {}
    if "$ref" in schema:
        out["$ref"] = "#/components/schemas/" + schema["$ref"].rsplit("/", 1)[-1]
    for key in _KEEP:
        if key not in schema:
            continue
        value = schema[key]
        if key == "type":
            value = _plain_type(value)
        elif key == "items" or (key == "additionalProperties" and isinstance(value, dict)):
            value = normalise(value)
        elif key == "properties":
            value = {
                name: normalise(sub, prop=name) for name, sub in sorted(value.items())
            }
        elif key == "enum" and prop in ("apiVersion", "kind"):
            continue  # the JSON Schema files pin these; upstream's OpenAPI does not
        out[key] = value
    return out


def build(defs: dict[str, Any]) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for name in reachable(defs):
        if name in _SPECIAL:
            node = {"description": defs[name].get("description", ""), "type": "string"}
            node.update(_SPECIAL[name])
            schemas[name] = node
            continue
        schemas[name] = normalise(defs[name])
    return {"kubernetesVersion": KUBERNETES_VERSION, "schemas": schemas}


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args()
    text = render(build(source_definitions()))
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is stale: run scripts/gen_k8s_definitions.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text)} bytes, {len(json.loads(text)['schemas'])} types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
