"""Discovery: ``/version``, ``/api``, ``/apis`` and each group version's resource list, in
the legacy shapes and in aggregated discovery v2 when a client asks for it (kubectl 1.30+
does), never mixing the two (k8s-api.md §1)."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import Any

from pykubelet.controlplane.registry.resources import ALL, ResourceInfo, group_versions
from pykubelet.version import KUBE_VERSION, git_version

__all__ = ["GIT_VERSION", "KUBE_VERSION", "api_group", "api_group_list", "api_versions",
           "resource_list", "version_info"]

GIT_VERSION = git_version()
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def version_info() -> dict[str, str]:
    major, minor = KUBE_VERSION.lstrip("v").split(".")[:2]
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {
        "major": major, "minor": minor, "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-12-01T00:00:00Z", "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython", "platform": f"linux/{arch}",
    }


def wants_aggregated(accept: str) -> bool:
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if {"g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"} <= params:
            return True
    return False


def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": server_address}]}


def _gv(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def _all(extra: Sequence[ResourceInfo]) -> list[ResourceInfo]:
    """The built-in resources, then ``extra`` (CRDs and custom resources, in the order
    their serving gives: a group's preferred version first)."""
    return [*ALL, *extra]


def _groups(extra: Sequence[ResourceInfo]) -> dict[str, list[str]]:
    """Each group's versions, the preferred first."""
    out: dict[str, list[str]] = {}
    for group, version in group_versions():
        out.setdefault(group, []).append(version)
    for r in extra:
        versions = out.setdefault(r.group, [])
        if r.version not in versions:
            versions.append(r.version)
    return out


def api_group_list(extra: Sequence[ResourceInfo] = ()) -> dict[str, Any]:
    groups = []
    for group, versions in _groups(extra).items():
        if not group:
            continue
        groups.append({"name": group, "versions": [_gv(group, v) for v in versions],
                       "preferredVersion": _gv(group, versions[0])})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str, extra: Sequence[ResourceInfo] = ()) -> dict[str, Any] | None:
    versions = _groups(extra).get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group,
            "versions": [_gv(group, v) for v in versions],
            "preferredVersion": _gv(group, versions[0])}


def _resource_entries(r: ResourceInfo) -> list[dict[str, Any]]:
    main: dict[str, Any] = {"name": r.resource, "singularName": r.singular,
                            "namespaced": r.namespaced, "kind": r.kind, "verbs": list(r.verbs)}
    if r.short_names:
        main["shortNames"] = list(r.short_names)
    if r.categories:
        main["categories"] = list(r.categories)
    out = [main]
    for s in r.subresources:
        entry: dict[str, Any] = {"name": f"{r.resource}/{s.name}", "singularName": "",
                                 "namespaced": r.namespaced, "kind": s.kind,
                                 "verbs": list(s.verbs)}
        if s.group:
            entry["group"], entry["version"] = s.group, s.version
        out.append(entry)
    return out


def resource_list(group: str, version: str,
                  extra: Sequence[ResourceInfo] = ()) -> dict[str, Any] | None:
    resources = [r for r in _all(extra) if r.group == group and r.version == version]
    if not resources:
        return None
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [e for r in resources for e in _resource_entries(r)]}


def _aggregated_version(group: str, version: str,
                        extra: Sequence[ResourceInfo]) -> dict[str, Any]:
    resources = []
    for r in _all(extra):
        if r.group != group or r.version != version:
            continue
        entry: dict[str, Any] = {
            "resource": r.resource,
            "responseKind": {"group": group, "version": version, "kind": r.kind},
            "scope": "Namespaced" if r.namespaced else "Cluster",
            "singularResource": r.singular,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        if r.subresources:
            entry["subresources"] = [
                {"subresource": s.name,
                 "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
                 "verbs": list(s.verbs)}
                for s in r.subresources
            ]
        resources.append(entry)
    return {"version": version, "resources": resources, "freshness": "Current"}


def aggregated(core: bool, extra: Sequence[ResourceInfo] = ()) -> dict[str, Any]:
    items = [{"metadata": {"name": g, "creationTimestamp": None},
              "versions": [_aggregated_version(g, v, extra) for v in versions]}
             for g, versions in _groups(extra).items() if (g == "") == core]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}
