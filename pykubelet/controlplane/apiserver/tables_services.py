"""Table columns of Services, Endpoints and EndpointSlices, as printers.go's
serviceColumnDefinitions/printService (NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, and
``-o wide``'s SELECTOR), endpointColumnDefinitions/formatEndpoints (NAME ENDPOINTS AGE) and
endpointSliceColumnDefinitions (NAME ADDRESSTYPE PORTS ENDPOINTS AGE)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pykubelet.api.machinery.swaggerdoc import swagger_doc

Obj = dict[str, Any]
Printer = tuple[list[Obj], Callable[[Obj, dt.datetime], list[Any]]]
Age = Callable[[str | None, dt.datetime], str]
MAX_SHOWN = 3


def format_labels(labels: dict[str, str] | None) -> str:
    """labels.FormatLabels: ``k=v,...`` sorted by key, ``<none>`` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def port_string(ports: list[Obj]) -> str:
    """makePortString: ``80/TCP``, ``80:30080/TCP`` with a node port."""
    out = []
    for p in ports:
        protocol = p.get("protocol", "")
        if p.get("nodePort"):
            out.append(f"{p.get('port', 0)}:{p['nodePort']}/{protocol}")
        else:
            out.append(f"{p.get('port', 0)}/{protocol}")
    return ",".join(out)


def external_ip(spec: Obj, status: Obj) -> str:
    """getServiceExternalIP."""
    t = spec.get("type")
    if t in ("ClusterIP", "NodePort"):
        ips = spec.get("externalIPs") or []
        return ",".join(ips) if ips else "<none>"
    if t == "LoadBalancer":
        ingress = (status.get("loadBalancer") or {}).get("ingress") or []
        lb = [i.get("ip") or i.get("hostname") or "" for i in ingress]
        found = [x for x in [*lb, *(spec.get("externalIPs") or [])] if x]
        return ",".join(found) if found else "<pending>"
    if t == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def service_printer(col: Callable[..., Obj], name: Obj, age: Obj, age_of: Age) -> Printer:
    spec_def = "io.k8s.api.core.v1.ServiceSpec"
    columns = [
        name,
        col("Type", desc=swagger_doc(spec_def, "type")),
        col("Cluster-IP", desc=swagger_doc(spec_def, "clusterIP")),
        col("External-IP", desc=swagger_doc(spec_def, "externalIPs")),
        col("Port(s)", desc=swagger_doc(spec_def, "ports")),
        age,
        col("Selector", desc=swagger_doc(spec_def, "selector"), priority=1),
    ]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        ips = spec.get("clusterIPs") or []
        ports = port_string(spec.get("ports") or [])
        return [meta.get("name", ""), spec.get("type", ""), ips[0] if ips else "<none>",
                external_ip(spec, obj.get("status") or {}), ports or "<none>",
                age_of(meta.get("creationTimestamp"), now), format_labels(spec.get("selector"))]

    return columns, cells


def format_endpoints(subsets: list[Obj]) -> str:
    """formatEndpoints: up to three ``ip:port`` (or bare ip for a subset without ports),
    then `` + N more...``."""
    if not subsets:
        return "<none>"
    shown: list[str] = []
    more = False
    count = 0
    for ss in subsets:
        addresses = ss.get("addresses") or []
        ports = ss.get("ports") or []
        if not ports:
            count += len(addresses)
            for a in addresses:
                if len(shown) == MAX_SHOWN:
                    more = True
                    break
                shown.append(str(a.get("ip", "")))
            continue
        for p in ports:
            count += len(addresses)
            for a in addresses:
                if len(shown) == MAX_SHOWN:
                    more = True
                    break
                ip = str(a.get("ip", ""))
                host = f"[{ip}]" if ":" in ip else ip
                shown.append(f"{host}:{p.get('port', 0)}")
    text = ",".join(shown)
    return f"{text} + {count - MAX_SHOWN} more..." if more else text


def endpoints_printer(col: Callable[..., Obj], name: Obj, age: Obj, age_of: Age) -> Printer:
    columns = [name, col("Endpoints", desc=swagger_doc("io.k8s.api.core.v1.Endpoints", "subsets")),
               age]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), format_endpoints(obj.get("subsets") or []),
                age_of(meta.get("creationTimestamp"), now)]

    return columns, cells


def _with_more(shown: list[str], more: bool, count: int) -> str:
    """listWithMoreString."""
    text = ",".join(shown)
    if more:
        return f"{text} + {count - MAX_SHOWN} more..."
    return text or "<unset>"


def slice_ports(ports: list[Obj]) -> str:
    """formatDiscoveryPorts: the port number, else its name, else ``*``."""
    shown: list[str] = []
    more = False
    for p in ports:
        if len(shown) < MAX_SHOWN:
            value = p.get("port")
            shown.append(str(value) if value is not None else (
                p["name"] if p.get("name") is not None else "*"))
        else:
            more = True
    return _with_more(shown, more, len(ports))


def slice_endpoints(endpoints: list[Obj]) -> str:
    """formatDiscoveryEndpoints: every endpoint's addresses, three at most."""
    shown: list[str] = []
    more = False
    count = 0
    for ep in endpoints:
        for address in ep.get("addresses") or []:
            if len(shown) < MAX_SHOWN:
                shown.append(str(address))
            else:
                more = True
            count += 1
    return _with_more(shown, more, count)


def endpoint_slice_printer(col: Callable[..., Obj], name: Obj, age: Obj,
                           age_of: Age) -> Printer:
    es_def = "io.k8s.api.discovery.v1.EndpointSlice"
    columns = [
        name,
        col("AddressType", desc=swagger_doc(es_def, "addressType")),
        col("Ports", desc=swagger_doc(es_def, "ports")),
        col("Endpoints", desc=swagger_doc(es_def, "endpoints")),
        age,
    ]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), obj.get("addressType", ""),
                slice_ports(obj.get("ports") or []), slice_endpoints(obj.get("endpoints") or []),
                age_of(meta.get("creationTimestamp"), now)]

    return columns, cells
