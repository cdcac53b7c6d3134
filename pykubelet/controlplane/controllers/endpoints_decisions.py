"""What a Service's endpoints should be, from its selector's pods: the EndpointSlice
controller's (pkg/controller/endpointslice, endpointslice/util: podToEndpoint,
getEndpointPorts, the reconciler's slices of at most 100 endpoints per port set) and the
legacy Endpoints controller's (pkg/controller/endpoint: addEndpointSubset, RepackSubsets).
Pure functions of the objects, tested as tables; the controllers write what they say.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykubelet.api.services import LABEL_MANAGED_BY, LABEL_SERVICE_NAME
from pykubelet.controlplane.controllers.activepods import is_ready, meta
from pykubelet.controlplane.controllers.controller_ref import new_controller_ref

Obj = dict[str, Any]

CONTROLLER_NAME = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100  # kube-controller-manager's --max-endpoints-per-slice default
LABEL_HEADLESS = "service.kubernetes.io/headless"
# the legacy Endpoints hold at most this many addresses (maxCapacity), and say so when cut
MAX_ENDPOINTS_CAPACITY = 1000
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
# labels of the Service a slice does not copy (they are the controller's)
_RESERVED = (LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS)


def spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def selects(service: Obj, pod: Obj) -> bool:
    """The Service's selector picks the pod (same namespace, every label matches)."""
    if meta(pod).get("namespace") != meta(service).get("namespace"):
        return False
    return selector_selects(spec(service).get("selector") or {}, meta(pod).get("labels") or {})


def selector_selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A Service's selector (a label map) picks pods with ``labels``: every pair matches; an
    empty one picks none (a selector-less Service's endpoints are the user's)."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def managed(service: Obj) -> bool:
    """The controllers keep this Service's endpoints: it has a selector and is not
    ExternalName (a selector-less Service's endpoints are the user's)."""
    return bool(spec(service).get("selector")) and spec(service).get("type") != "ExternalName"


def pod_ip(pod: Obj) -> str:
    status = pod.get("status") or {}
    ips = [p.get("ip", "") for p in status.get("podIPs") or []]
    return str(status.get("podIP") or (ips[0] if ips else ""))


def should_be_in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """endpointsliceutil.ShouldPodBeInEndpoints: not terminal, has an IP, and (unless
    terminating pods are included) not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed") or not pod_ip(pod):
        return False
    return include_terminating or not meta(pod).get("deletionTimestamp")


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """podutil.FindPort: a named targetPort is the container port of that name and
    protocol, a number is itself; None when the pod has no such port."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    protocol = service_port.get("protocol", "TCP")
    for c in spec(pod).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target and p.get("protocol", "TCP") == protocol:
                return int(p.get("containerPort", 0))
    return None


def target_ref(pod: Obj) -> Obj:
    m = meta(pod)
    return {"kind": "Pod", "namespace": m.get("namespace", ""), "name": m.get("name", ""),
            "uid": m.get("uid", "")}


def _hostname(pod: Obj, service: Obj) -> str | None:
    """ShouldSetHostname: the pod's hostname when its subdomain is this Service."""
    hostname = spec(pod).get("hostname")
    if hostname and spec(pod).get("subdomain") == meta(service).get("name") and (
            meta(pod).get("namespace") == meta(service).get("namespace")):
        return str(hostname)
    return None


# ---------------------------------------------------------------------------- slices


def pod_to_endpoint(pod: Obj, service: Obj) -> Obj:
    """podToEndpoint: ready = serving and not terminating (or publishNotReadyAddresses),
    serving = the pod's Ready condition, terminating = being deleted."""
    publish = bool(spec(service).get("publishNotReadyAddresses"))
    serving = is_ready(pod)
    terminating = bool(meta(pod).get("deletionTimestamp"))
    ready = publish or (serving and not terminating)
    ep: Obj = {"addresses": [pod_ip(pod)],
               "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
               "targetRef": target_ref(pod)}
    hostname = _hostname(pod, service)
    if hostname is not None:
        ep["hostname"] = hostname
    if spec(pod).get("nodeName"):
        ep["nodeName"] = spec(pod)["nodeName"]
    return ep


def endpoint_ports(pod: Obj, service: Obj) -> list[Obj]:
    """getEndpointPorts: each Service port the pod resolves, with its name and protocol."""
    out = []
    for sp in spec(service).get("ports") or []:
        number = find_port(pod, sp)
        if number is None:
            continue
        port: Obj = {"name": sp.get("name", ""), "protocol": sp.get("protocol", "TCP"),
                     "port": number}
        if sp.get("appProtocol") is not None:
            port["appProtocol"] = sp["appProtocol"]
        out.append(port)
    return out


def _ports_key(ports: Sequence[Obj]) -> tuple[tuple[str, str, int], ...]:
    return tuple(sorted((p.get("name", ""), p.get("protocol", ""), p.get("port", 0))
                        for p in ports))


def slice_labels(service: Obj) -> dict[str, str]:
    """setEndpointSliceLabels: the Service's own labels, then the controller's."""
    labels = {k: v for k, v in (meta(service).get("labels") or {}).items()
              if k not in _RESERVED}
    if spec(service).get("clusterIP") == "None":
        labels[LABEL_HEADLESS] = ""
    labels[LABEL_SERVICE_NAME] = meta(service).get("name", "")
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
    return labels


@dataclass(frozen=True)
class SliceContent:
    """One slice's wanted content: its ports and endpoints."""

    ports: list[Obj]
    endpoints: list[Obj]


def desired_slices(service: Obj, pods: Iterable[Obj],
                   max_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> list[SliceContent]:
    """The slices a Service should have: its pods grouped by the ports they resolve, in
    chunks of ``max_per_slice``; a Service with no endpoints has one empty placeholder."""
    groups: dict[tuple[tuple[str, str, int], ...], tuple[list[Obj], list[Obj]]] = {}
    for pod in sorted(pods, key=lambda p: (meta(p).get("name", ""), meta(p).get("uid", ""))):
        if not selects(service, pod) or not should_be_in_endpoints(pod, True):
            continue
        ports = endpoint_ports(pod, service)
        key = _ports_key(ports)
        groups.setdefault(key, (ports, []))[1].append(pod_to_endpoint(pod, service))
    out: list[SliceContent] = []
    for key in sorted(groups):
        ports, endpoints = groups[key]
        for i in range(0, len(endpoints), max_per_slice):
            out.append(SliceContent(ports, endpoints[i:i + max_per_slice]))
    if not out:
        out.append(SliceContent([], []))
    return out


def new_slice(service: Obj, content: SliceContent) -> Obj:
    """newEndpointSlice: generateName ``<service>-``, owned by the Service."""
    m = meta(service)
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": f"{m.get('name', '')}-",
                         "namespace": m.get("namespace", ""),
                         "labels": slice_labels(service),
                         "ownerReferences": [new_controller_ref(service, "v1", "Service")]},
            "addressType": "IPv4", "endpoints": copy.deepcopy(content.endpoints),
            "ports": copy.deepcopy(content.ports)}


@dataclass
class SlicePlan:
    """What to write: slices to create, existing ones to update (full objects), names to
    delete."""

    create: list[Obj]
    update: list[Obj]
    delete: list[str]


def _same(existing: Obj, wanted: Obj) -> bool:
    if (meta(existing).get("annotations") or {}) != meta(wanted).get(
            "annotations", meta(existing).get("annotations") or {}):
        return False
    return (existing.get("endpoints") or []) == wanted["endpoints"] and (
        existing.get("ports") or []) == wanted["ports"] and (
        (meta(existing).get("labels") or {}) == meta(wanted).get("labels")) and (
        existing.get("addressType") == wanted["addressType"])


def reconcile_slices(owner: Obj, existing: Sequence[Obj], wanted: Sequence[SliceContent],
                     make: Callable[[Obj, SliceContent], Obj] = new_slice) -> SlicePlan:
    """The reconciler, simplified: an existing slice with the same ports is reused for
    each wanted chunk (updated only when its content differs), the rest created, the
    leftovers deleted. ``make`` builds a new slice of ``owner`` (the Service's, or for
    mirroring the Endpoints')."""
    plan = SlicePlan([], [], [])
    pool = sorted(existing, key=lambda s: meta(s).get("name", ""))
    used: set[str] = set()
    for content in wanted:
        obj = make(owner, content)
        match = next((s for s in pool if meta(s).get("name") not in used and
                      _ports_key(s.get("ports") or []) == _ports_key(content.ports)), None)
        if match is None:
            match = next((s for s in pool if meta(s).get("name") not in used), None)
        if match is None:
            plan.create.append(obj)
            continue
        used.add(meta(match).get("name", ""))
        if not _same(match, obj):
            updated = copy.deepcopy(match)
            updated["metadata"]["labels"] = meta(obj)["labels"]
            if "annotations" in meta(obj):
                updated["metadata"]["annotations"] = meta(obj)["annotations"]
            updated["metadata"]["ownerReferences"] = meta(obj)["ownerReferences"]
            for k in ("addressType", "endpoints", "ports"):
                updated[k] = obj[k]
            plan.update.append(updated)
    plan.delete = [meta(s).get("name", "") for s in pool if meta(s).get("name") not in used]
    return plan


# ---------------------------------------------------------------------------- Endpoints


def _address(pod: Obj, service: Obj) -> Obj:
    addr: Obj = {"ip": pod_ip(pod), "targetRef": target_ref(pod)}
    if spec(pod).get("nodeName"):
        addr["nodeName"] = spec(pod)["nodeName"]
    hostname = _hostname(pod, service)
    if hostname is not None:
        addr["hostname"] = hostname
    return addr


def desired_subsets(service: Obj, pods: Iterable[Obj]) -> list[Obj]:
    """The legacy Endpoints' subsets: a ready pod's address in ``addresses``, another in
    ``notReadyAddresses`` (all in ``addresses`` with publishNotReadyAddresses); addresses
    offering the same ports share one subset (RepackSubsets), in IP order."""
    publish = bool(spec(service).get("publishNotReadyAddresses"))
    headless = spec(service).get("clusterIP") == "None"
    service_ports = spec(service).get("ports") or []
    # each address with the ports it offers (a headless Service without ports: none)
    offered: list[tuple[Obj, bool, list[Obj]]] = []
    for pod in pods:
        if not selects(service, pod) or not should_be_in_endpoints(pod, publish):
            continue
        ports: list[Obj] = []
        for sp in service_ports:
            number = find_port(pod, sp)
            if number is None:
                continue
            port: Obj = {"name": sp.get("name", ""), "port": number,
                         "protocol": sp.get("protocol", "TCP")}
            if sp.get("appProtocol") is not None:
                port["appProtocol"] = sp["appProtocol"]
            ports.append(port)
        if ports or (headless and not service_ports):
            offered.append((_address(pod, service), publish or is_ready(pod), ports))
    packed: dict[tuple[tuple[str, str, int], ...], tuple[list[Obj], list[Obj], list[Obj]]] = {}
    for addr, ready, ports in offered:
        group = packed.setdefault(_ports_key(ports), (
            sorted(ports, key=lambda p: (p.get("name", ""), p.get("port", 0))), [], []))
        (group[1] if ready else group[2]).append(addr)
    subsets: list[Obj] = []
    for key in sorted(packed):
        ports, ready_addrs, not_ready = packed[key]
        subset: Obj = {}
        if ready_addrs:
            subset["addresses"] = sorted(ready_addrs, key=_ip_order)
        if not_ready:
            subset["notReadyAddresses"] = sorted(not_ready, key=_ip_order)
        if ports:
            subset["ports"] = ports
        subsets.append(subset)
    return subsets


def ip_order(ip: str) -> tuple[int, ...]:
    """IPv4 addresses in numeric order (others after them)."""
    try:
        return tuple(int(x) for x in ip.split("."))
    except ValueError:
        return (1 << 16,)


def _ip_order(addr: Obj) -> tuple[int, ...]:
    return ip_order(str(addr.get("ip", "")))


def truncate_subsets(subsets: list[Obj], capacity: int = MAX_ENDPOINTS_CAPACITY) -> bool:
    """truncateEndpoints: at most ``capacity`` addresses, ready ones first, each subset
    keeping its share (rounded up); True when something was cut."""
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if ready + not_ready <= capacity:
        return False
    cut_ready = ready > capacity
    room, total = (capacity, ready) if cut_ready else (capacity - ready, not_ready)
    left = room
    for s in subsets:
        field = "addresses" if cut_ready else "notReadyAddresses"
        have = s.get(field) or []
        take = min(math.ceil(len(have) / total * room) if total else 0, left)
        s[field] = have[:take]
        if cut_ready:
            s["notReadyAddresses"] = []
        left -= len(s[field])
        for k in ("addresses", "notReadyAddresses"):
            if not s.get(k):
                s.pop(k, None)
    subsets[:] = [s for s in subsets if s.get("addresses") or s.get("notReadyAddresses")]
    return True


def desired_endpoints(service: Obj, pods: Iterable[Obj]) -> Obj:
    """The Endpoints object named as the Service, with its labels (plus the headless
    label) and the subsets (cut to capacity, annotated when they were)."""
    m = meta(service)
    labels = {k: v for k, v in (m.get("labels") or {}).items() if k != LABEL_HEADLESS}
    if spec(service).get("clusterIP") == "None":
        labels[LABEL_HEADLESS] = ""
    out: Obj = {"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": m.get("name", ""), "namespace": m.get("namespace", "")}}
    if labels:
        out["metadata"]["labels"] = labels
    subsets = desired_subsets(service, pods)
    if truncate_subsets(subsets):
        out["metadata"]["annotations"] = {OVER_CAPACITY: "truncated"}
    if subsets:
        out["subsets"] = subsets
    return out


# ---------------------------------------------------------------------------- mirroring

MIRRORING_CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
_NOT_MIRRORED_ANNOTATIONS = ("endpoints.kubernetes.io/last-change-trigger-time",
                             "kubectl.kubernetes.io/last-applied-configuration")


def mirrored(endpoints: Obj, service: Obj | None) -> bool:
    """shouldMirror: the Endpoints of an existing selector-less Service, not marked
    ``endpointslice.kubernetes.io/skip-mirror: "true"``."""
    if service is None or spec(service).get("selector"):
        return False
    return (meta(endpoints).get("labels") or {}).get(SKIP_MIRROR) != "true"


def _address_to_endpoint(address: Obj, ready: bool) -> Obj:
    """addressToEndpoint."""
    ep: Obj = {"addresses": [address.get("ip", "")], "conditions": {"ready": ready}}
    if address.get("hostname"):
        ep["hostname"] = address["hostname"]
    if address.get("nodeName") is not None:
        ep["nodeName"] = address["nodeName"]
    if address.get("targetRef") is not None:
        ep["targetRef"] = address["targetRef"]
    return ep


def mirrored_slices(endpoints: Obj,
                    max_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> list[SliceContent]:
    """The slices that mirror an Endpoints object: one group per subset's ports (IPv4
    addresses; others are not mirrored here), ready addresses then not-ready ones."""
    groups: dict[tuple[tuple[str, str, int], ...], tuple[list[Obj], list[Obj]]] = {}
    for ss in endpoints.get("subsets") or []:
        ports = [{k: p[k] for k in ("name", "port", "protocol", "appProtocol") if k in p}
                 for p in ss.get("ports") or []]
        for p in ports:
            p.setdefault("name", "")
            p.setdefault("protocol", "TCP")
        group = groups.setdefault(_ports_key(ports), (ports, []))
        for field, ready in (("addresses", True), ("notReadyAddresses", False)):
            for address in ss.get(field) or []:
                if ":" not in str(address.get("ip", "")):
                    group[1].append(_address_to_endpoint(address, ready))
    out: list[SliceContent] = []
    for key in sorted(groups):
        ports, eps = groups[key]
        for i in range(0, len(eps), max_per_slice):
            out.append(SliceContent(ports, eps[i:i + max_per_slice]))
    return out


def new_mirrored_slice(endpoints: Obj, content: SliceContent) -> Obj:
    """The mirroring controller's newEndpointSlice: the Endpoints' labels and annotations,
    owned by the Endpoints."""
    m = meta(endpoints)
    labels = dict(m.get("labels") or {})
    labels[LABEL_SERVICE_NAME] = m.get("name", "")
    labels[LABEL_MANAGED_BY] = MIRRORING_CONTROLLER_NAME
    annotations = {k: v for k, v in (m.get("annotations") or {}).items()
                   if k not in _NOT_MIRRORED_ANNOTATIONS}
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": f"{m.get('name', '')}-",
                         "namespace": m.get("namespace", ""), "labels": labels,
                         "annotations": annotations,
                         "ownerReferences": [new_controller_ref(endpoints, "v1", "Endpoints")]},
            "addressType": "IPv4", "endpoints": copy.deepcopy(content.endpoints),
            "ports": copy.deepcopy(content.ports)}
