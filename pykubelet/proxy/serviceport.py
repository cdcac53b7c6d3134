"""Per-port views of Services and EndpointSlices, as kube-proxy's change trackers build them.

pkg/proxy/serviceport.go (``BaseServicePortInfo``), endpoint.go (``BaseEndpointInfo``),
endpointslicecache.go and topology.go (``CategorizeEndpoints``): the proxier never looks at
a Service or an EndpointSlice itself, only at these. Input is the API's JSON (what the
informers hold), so this module depends on no typed model.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Obj = Mapping[str, Any]

#: discovery.k8s.io's label naming the Service an EndpointSlice belongs to
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
#: v1.DefaultClientIPServiceAffinitySeconds
DEFAULT_STICKY_SECONDS = 10800


def port_proto_hash(service_port_name: str, protocol: str) -> str:
    """proxier.go portProtoHash: base32(sha256(name + protocol))[:16], so a chain name fits
    iptables' 28 characters and stays the same for the same service port."""
    digest = hashlib.sha256((service_port_name + protocol).encode()).digest()
    return base64.b32encode(digest[:10]).decode()  # 10 bytes are the first 16 characters


@dataclass(frozen=True, order=True)
class ServicePortName:
    """proxy.ServicePortName: a Service's port by name (and protocol, for the map key)."""

    namespace: str
    name: str
    port: str = ""
    protocol: str = "TCP"

    def __str__(self) -> str:
        """``ns/name:port``, or ``ns/name`` for an unnamed port (fmtPortName)."""
        suffix = f":{self.port}" if self.port else ""
        return f"{self.namespace}/{self.name}{suffix}"

    @property
    def service(self) -> tuple[str, str]:
        return (self.namespace, self.name)


@dataclass(frozen=True)
class ServicePortInfo:
    """One port of one Service with a cluster IP (BaseServicePortInfo + the iptables
    proxier's precomputed chain names)."""

    name: ServicePortName
    cluster_ip: str
    port: int
    node_port: int = 0
    session_affinity_client_ip: bool = False
    sticky_max_age_seconds: int = DEFAULT_STICKY_SECONDS
    external_ips: tuple[str, ...] = ()
    external_policy_local: bool = False
    internal_policy_local: bool = False
    name_string: str = field(init=False)
    protocol: str = field(init=False)  # lower case, as the rules spell it
    hash: str = field(init=False)  # computed once, as newServiceInfo stores the chain names

    def __post_init__(self) -> None:
        object.__setattr__(self, "name_string", str(self.name))
        object.__setattr__(self, "protocol", self.name.protocol.lower())
        object.__setattr__(self, "hash", port_proto_hash(self.name_string, self.protocol))

    def chain(self, prefix: str) -> str:
        """KUBE-SVC-/KUBE-SVL-/KUBE-EXT-/KUBE-FW- + the port's hash."""
        return prefix + self.hash

    @property
    def externally_accessible(self) -> bool:
        return self.node_port != 0 or bool(self.external_ips)

    @property
    def uses_cluster_endpoints(self) -> bool:
        """Cluster policy on either side (serviceport.go UsesClusterEndpoints)."""
        return not self.internal_policy_local or (
            self.externally_accessible and not self.external_policy_local)

    @property
    def uses_local_endpoints(self) -> bool:
        return self.internal_policy_local or (
            self.externally_accessible and self.external_policy_local)


@dataclass(frozen=True)
class EndpointInfo:
    """One address:port behind a service port (BaseEndpointInfo), with its KUBE-SEP chain."""

    ip: str
    port: int
    is_local: bool = False
    ready: bool = True
    serving: bool = True
    terminating: bool = False
    chain: str = ""

    def __str__(self) -> str:
        """net.JoinHostPort: IPv6 addresses in brackets."""
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


def endpoint_chain(name: ServicePortName, endpoint: str) -> str:
    """servicePortEndpointChainName: KUBE-SEP- + base32(sha256(name + protocol + ip:port))."""
    digest = hashlib.sha256((str(name) + name.protocol.lower() + endpoint).encode()).digest()
    return "KUBE-SEP-" + base64.b32encode(digest[:10]).decode()


def _is_ipv4(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 4
    except ValueError:
        return False


def service_ports(service: Obj) -> list[ServicePortInfo]:
    """The proxied ports of one Service (IPv4; this proxier's family). Headless (``None``),
    unallocated and ExternalName services have no virtual IP and so no rules."""
    meta, spec = service.get("metadata") or {}, service.get("spec") or {}
    cluster_ip = spec.get("clusterIP") or ""
    if spec.get("type") == "ExternalName" or cluster_ip in ("", "None") \
            or not _is_ipv4(cluster_ip):
        return []
    affinity = spec.get("sessionAffinity") == "ClientIP"
    sticky = DEFAULT_STICKY_SECONDS
    if affinity:
        cfg = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
        sticky = int(cfg.get("timeoutSeconds") or DEFAULT_STICKY_SECONDS)
    external_ips = tuple(ip for ip in spec.get("externalIPs") or () if _is_ipv4(ip))
    out = []
    for p in spec.get("ports") or ():
        name = ServicePortName(meta.get("namespace") or "", meta.get("name") or "",
                               p.get("name") or "", p.get("protocol") or "TCP")
        node_port = int(p.get("nodePort") or 0)
        accessible = node_port != 0 or bool(external_ips)
        info = ServicePortInfo(
            name=name, cluster_ip=cluster_ip, port=int(p.get("port") or 0),
            node_port=node_port, session_affinity_client_ip=affinity,
            sticky_max_age_seconds=sticky, external_ips=external_ips,
            external_policy_local=accessible and spec.get("externalTrafficPolicy") == "Local",
            internal_policy_local=spec.get("internalTrafficPolicy") == "Local")
        out.append(info)
    return out


def slice_service(endpoint_slice: Obj) -> tuple[str, str] | None:
    """(namespace, service name) of a slice, from its kubernetes.io/service-name label."""
    meta = endpoint_slice.get("metadata") or {}
    svc = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
    return (meta.get("namespace") or "", svc) if svc else None


def slice_endpoints(endpoint_slice: Obj, node_name: str
                    ) -> dict[ServicePortName, list[EndpointInfo]]:
    """Endpoints of one IPv4 slice by service port name: a named target port is resolved by
    the slice's port of that name (endpointslicecache.go addEndpoints). Conditions as
    upstream reads them: ready and serving unless false, terminating only if true."""
    owner = slice_service(endpoint_slice)
    if owner is None or endpoint_slice.get("addressType") != "IPv4":
        return {}
    out: dict[ServicePortName, list[EndpointInfo]] = {}
    for p in endpoint_slice.get("ports") or ():
        port = p.get("port")
        if port is None or not 0 < int(port) < 65536:
            continue
        name = ServicePortName(owner[0], owner[1], p.get("name") or "",
                               p.get("protocol") or "TCP")
        eps = out.setdefault(name, [])
        for ep in endpoint_slice.get("endpoints") or ():
            addrs = ep.get("addresses") or ()
            if not addrs:
                continue
            cond = ep.get("conditions") or {}
            ip = addrs[0]
            text = f"{ip}:{int(port)}"
            eps.append(EndpointInfo(
                ip=ip, port=int(port), is_local=bool(node_name) and ep.get("nodeName") == node_name,
                ready=cond.get("ready") is not False, serving=cond.get("serving") is not False,
                terminating=cond.get("terminating") is True,
                chain=endpoint_chain(name, text)))
    return out


def endpoints_map(slices: Iterable[Obj], node_name: str
                  ) -> dict[ServicePortName, list[EndpointInfo]]:
    """All slices merged per service port: an address:port listed twice counts once (the
    first slice by name wins), sorted by address:port as the slice cache returns them."""
    merged: dict[ServicePortName, dict[str, EndpointInfo]] = {}
    ordered = sorted(slices, key=lambda s: str((s.get("metadata") or {}).get("name") or ""))
    for es in ordered:
        for name, eps in slice_endpoints(es, node_name).items():
            seen = merged.setdefault(name, {})
            for ep in eps:
                seen.setdefault(str(ep), ep)
    return {name: [eps[k] for k in sorted(eps)] for name, eps in merged.items()}


@dataclass
class Categorized:
    """topology.go CategorizeEndpoints' results."""

    cluster: list[EndpointInfo]
    local: list[EndpointInfo]
    all_reachable: list[EndpointInfo]
    has_any: bool


def categorize_endpoints(endpoints: list[EndpointInfo], svc: ServicePortInfo) -> Categorized:
    """Which endpoints Cluster and Local policy use: ready ones, or, when none is ready,
    the serving terminating ones (so a rollout's last pods keep answering); an endpoint that
    is neither ready nor serving-terminating is never used. No topology hints here."""
    cluster: list[EndpointInfo] = []
    local: list[EndpointInfo] = []
    has_any = False
    if svc.uses_cluster_endpoints:
        cluster = [e for e in endpoints if e.ready]
        if not cluster:
            cluster = [e for e in endpoints if e.serving and e.terminating]
        has_any = bool(cluster)
    if not svc.uses_local_endpoints:
        return Categorized(cluster, [], cluster, has_any)
    local_ready = False
    local_serving_terminating = False
    for e in endpoints:
        if e.ready:
            has_any = True
            local_ready = local_ready or e.is_local
        elif e.serving and e.terminating:
            has_any = True
            local_serving_terminating = local_serving_terminating or e.is_local
    if local_ready:
        local = [e for e in endpoints if e.is_local and e.ready]
    elif local_serving_terminating:
        local = [e for e in endpoints if e.is_local and e.serving and e.terminating]
    if not svc.uses_cluster_endpoints:
        return Categorized(cluster, local, local, has_any)
    # both policies: every endpoint either one reaches, each once
    seen = {str(e) for e in cluster}
    return Categorized(cluster, local, cluster + [e for e in local if str(e) not in seen],
                       has_any)


def policy_chains(svc: ServicePortInfo, cat: Categorized, cluster_chain: str,
                  local_chain: str) -> tuple[str, bool, str, bool]:
    """Where internal (ClusterIP) and external traffic go, as both proxiers' syncProxyRules
    decide it: the cluster or the local endpoints' chain by internalTrafficPolicy and
    externalTrafficPolicy, each with whether it has an endpoint (else the "has no (local)
    endpoints" drop or reject): ``(internal, has_internal, external, has_external)``."""
    internal, has_internal = cluster_chain, cat.has_any
    if svc.internal_policy_local:
        internal, has_internal = local_chain, cat.has_any and bool(cat.local)
    external, has_external = cluster_chain, cat.has_any
    if svc.external_policy_local:
        external, has_external = local_chain, cat.has_any and bool(cat.local)
    return internal, has_internal, external, has_external
