"""metrics.k8s.io/v1beta1 objects as metrics-server writes them (pkg/api/{node,pod}.go):
NodeMetrics and PodMetrics with the object's name, namespace and labels, a creation
time of now, the usage's ``timestamp`` and ``window``, CPU as a nanocore quantity
(``resource.NewScaledQuantity(n, -9)``, so ``12345n``, ``5m``) and memory in bytes
(BinarySI: ``4000Ki``); and their discovery entries (metrics-server's APIService)."""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

from pykubelet.api.machinery.quantity import BINARY_SI, DECIMAL_SI, canonical
from pykubelet.api.machinery.timeutil import rfc3339
from pykubelet.controlplane.metricsserver.storage import Usage

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
# resource -> (kind, namespaced)
RESOURCES = {"nodes": ("NodeMetrics", False), "pods": ("PodMetrics", True)}
# the group resource metrics-server's NotFound names
NOT_FOUND_RESOURCE = {"nodes": "nodemetrics", "pods": "podmetrics"}


def go_duration(ns: int) -> str:
    """time.Duration.String() (``15.006s``, ``1m0.5s``, ``500ms``)."""
    if ns == 0:
        return "0s"
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return f"{_trim(Fraction(ns, size))}{unit}"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{_trim(Fraction(rest, 1_000_000_000))}s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    if minutes:
        return f"{minutes}m{text}"
    return text


def _trim(value: Fraction) -> str:
    whole, frac = divmod(value.numerator, value.denominator)
    if not frac:
        return str(whole)
    nanos = frac * 10**9 // value.denominator
    digits = str(nanos).rjust(9, "0").rstrip("0")
    return f"{whole}.{digits}"


def usage_quantities(usage: Usage) -> dict[str, str]:
    return {"cpu": canonical(Fraction(usage.cpu_nanocores, 10**9), DECIMAL_SI),
            "memory": canonical(Fraction(usage.memory_bytes), BINARY_SI)}


def _meta(obj: dict[str, Any], now: float) -> dict[str, Any]:
    src = obj.get("metadata") or {}
    meta: dict[str, Any] = {"name": src.get("name", "")}
    if src.get("namespace"):
        meta["namespace"] = src["namespace"]
    meta["creationTimestamp"] = rfc3339(now)
    if src.get("labels"):
        meta["labels"] = dict(src["labels"])
    return meta


def node_metrics(node: dict[str, Any], usage: Usage, now: float | None = None
                 ) -> dict[str, Any]:
    return {"kind": "NodeMetrics", "apiVersion": GROUP_VERSION,
            "metadata": _meta(node, time.time() if now is None else now),
            "timestamp": rfc3339(usage.timestamp_ns / 1e9),
            "window": go_duration(usage.window_ns),
            "usage": usage_quantities(usage)}


def pod_metrics(pod: dict[str, Any], earliest: Usage, containers: list[tuple[str, Usage]],
                now: float | None = None) -> dict[str, Any]:
    return {"kind": "PodMetrics", "apiVersion": GROUP_VERSION,
            "metadata": _meta(pod, time.time() if now is None else now),
            "timestamp": rfc3339(earliest.timestamp_ns / 1e9),
            "window": go_duration(earliest.window_ns),
            "containers": [{"name": name, "usage": usage_quantities(u)}
                           for name, u in containers]}


def metrics_list(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": f"{kind}List", "apiVersion": GROUP_VERSION, "metadata": {},
            "items": items}


# ---------------------------------------------------------------------- discovery
def group_version_entry() -> dict[str, str]:
    return {"groupVersion": GROUP_VERSION, "version": VERSION}


def api_group() -> dict[str, Any]:
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
            "versions": [group_version_entry()], "preferredVersion": group_version_entry()}


def api_group_entry() -> dict[str, Any]:
    """The group as it appears in /apis' APIGroupList."""
    return {"name": GROUP, "versions": [group_version_entry()],
            "preferredVersion": group_version_entry()}


def resource_list() -> dict[str, Any]:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
            "resources": [{"name": name, "singularName": "", "namespaced": namespaced,
                           "kind": kind, "verbs": ["get", "list"]}
                          for name, (kind, namespaced) in RESOURCES.items()]}


def aggregated_group() -> dict[str, Any]:
    """The group in aggregated discovery (apidiscovery.k8s.io/v2)."""
    return {"metadata": {"name": GROUP, "creationTimestamp": None},
            "versions": [{"version": VERSION, "freshness": "Current", "resources": [
                {"resource": name,
                 "responseKind": {"group": GROUP, "version": VERSION, "kind": kind},
                 "scope": "Namespaced" if namespaced else "Cluster",
                 "singularResource": "", "verbs": ["get", "list"]}
                for name, (kind, namespaced) in RESOURCES.items()]}]}
