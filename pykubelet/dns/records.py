"""The cluster zone from Services and EndpointSlices, a pure function (no API, no clock).

Inputs are the objects as the API serves them (JSON dicts), so any API that serves
core/v1 Services and discovery.k8s.io/v1 EndpointSlices works. Per the DNS specification
(schema 1.1.0) and CoreDNS's kubernetes plugin:

- ClusterIP Service: ``<svc>.<ns>.svc.<zone>`` A/AAAA the cluster IPs; SRV
  ``_<port>._<proto>.<svc>.<ns>.svc.<zone>`` per named port to that name; PTR for each
  cluster IP.
- Headless Service (``clusterIP: None``): the same name A/AAAA every ready endpoint
  address (not-ready ones too with ``publishNotReadyAddresses``); an endpoint's own name
  ``<hostname>.<svc>.<ns>.svc.<zone>`` (its ``hostname``, else its address dashed as
  CoreDNS does); SRV per named port to each endpoint's name; PTR to that name.
- ExternalName Service: a CNAME to ``spec.externalName``.
- ``dns-version.<zone>`` TXT "1.1.0".

Names are lower-cased and absolute (trailing dot). A name under the zone that has no
record but has names below it (``<ns>.svc.<zone>``) exists with no data.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = "1.1.0"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass(frozen=True)
class Record:
    """One resource record's type and data in presentation form (``10.96.0.1``,
    ``0 100 443 kubernetes.default.svc.cluster.local.``)."""

    rdtype: str
    rdata: str


@dataclass
class Zone:
    """Records by owner name, and every name that exists (empty non-terminals too)."""

    origin: str
    records: dict[str, list[Record]] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)

    def add(self, name: str, rdtype: str, rdata: str) -> None:
        name = name.lower()
        rec = Record(rdtype, rdata)
        have = self.records.setdefault(name, [])
        if rec not in have:
            have.append(rec)
        self.touch(name)

    def touch(self, name: str) -> None:
        """``name`` and every name between it and the origin exist."""
        self.names.add(name)
        if name.endswith("." + self.origin):
            labels = name[: len(name) - len(self.origin)].rstrip(".").split(".")
            for i in range(len(labels)):
                self.names.add(".".join(labels[i:]) + "." + self.origin)


def reverse_name(ip: str) -> str:
    """in-addr.arpa / ip6.arpa name of an address."""
    return ipaddress.ip_address(ip).reverse_pointer + "."


def _dashed(ip: str) -> str:
    """CoreDNS's endpoint name without a hostname: 10-244-1-5 (IPv6: colons dashed)."""
    return ip.replace(".", "-").replace(":", "-")


def address_type(ip: str) -> str:
    return "AAAA" if ipaddress.ip_address(ip).version == 6 else "A"


def _service_ips(spec: dict[str, Any]) -> list[str]:
    ips = list(spec.get("clusterIPs") or [])
    if not ips and spec.get("clusterIP"):
        ips = [spec["clusterIP"]]
    return [ip for ip in ips if ip and ip != "None"]


def _ready(ep: dict[str, Any], publish_not_ready: bool) -> bool:
    """An endpoint is served when ready (nil means ready), or always with
    publishNotReadyAddresses."""
    if publish_not_ready:
        return True
    return (ep.get("conditions") or {}).get("ready") is not False


def build_zone(services: Iterable[dict[str, Any]], slices: Iterable[dict[str, Any]],
               domain: str = "cluster.local") -> Zone:
    """The zone ``domain`` for these Services and EndpointSlices."""
    origin = domain.strip(".").lower() + "."
    zone = Zone(origin)
    zone.add(f"dns-version.{origin}", "TXT", f'"{SCHEMA_VERSION}"')
    by_service: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in slices:
        meta = s.get("metadata") or {}
        svc = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if svc:
            by_service.setdefault((meta.get("namespace", "default"), svc), []).append(s)
    for svc in services:
        meta = svc.get("metadata") or {}
        spec = svc.get("spec") or {}
        ns, name = meta.get("namespace", "default"), meta.get("name", "")
        if not name:
            continue
        base = f"{name}.{ns}.svc.{origin}".lower()
        if spec.get("type") == "ExternalName":
            if spec.get("externalName"):
                zone.add(base, "CNAME", spec["externalName"].rstrip(".") + ".")
            continue
        ports = [p for p in spec.get("ports") or [] if p.get("name")]
        ips = _service_ips(spec)
        if ips:
            for ip in ips:
                zone.add(base, address_type(ip), ip)
                zone.add(reverse_name(ip), "PTR", base)
            for p in ports:
                proto = (p.get("protocol") or "TCP").lower()
                zone.add(f"_{p['name']}._{proto}.{base}", "SRV", f"0 100 {p['port']} {base}")
            continue
        # headless: the endpoints themselves
        publish = bool(spec.get("publishNotReadyAddresses"))
        targets: list[tuple[str, dict[str, Any]]] = []  # (endpoint name, slice port)
        for s in by_service.get((ns, name), []):
            slice_ports = s.get("ports") or []
            for ep in s.get("endpoints") or []:
                if not _ready(ep, publish):
                    continue
                for ip in ep.get("addresses") or []:
                    host = ep.get("hostname") or _dashed(ip)
                    ep_name = f"{host}.{base}".lower()
                    zone.add(base, address_type(ip), ip)
                    zone.add(ep_name, address_type(ip), ip)
                    zone.add(reverse_name(ip), "PTR", ep_name)
                    targets.extend((ep_name, p) for p in slice_ports if p.get("name"))
        if not targets:
            zone.touch(base)  # a headless Service without endpoints: no data, no NXDOMAIN
        by_port: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for ep_name, p in targets:
            key = (p["name"], (p.get("protocol") or "TCP").lower())
            by_port.setdefault(key, []).append((ep_name, int(p.get("port") or 0)))
        for (pname, proto), group in by_port.items():
            weight = max(1, 100 // len(group))
            for ep_name, port in group:
                zone.add(f"_{pname}._{proto}.{base}", "SRV", f"0 {weight} {port} {ep_name}")
    return zone
