"""Services and EndpointSlices as the API's JSON, for the proxy's tests (makeTestService,
makeTestEndpointSlice in kube-proxy's proxier_test.go)."""

from __future__ import annotations

import subprocess
from typing import Any

from pykubelet.proxy.iptables_restore import RestoreError
from pykubelet.proxy.serviceport import (
    EndpointInfo,
    ServicePortInfo,
    ServicePortName,
    endpoints_map,
    service_ports,
)


def service(ns: str, name: str, cluster_ip: str, ports: list[dict[str, Any]],
            **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"namespace": ns, "name": name},
            "spec": {"clusterIP": cluster_ip, "ports": ports, **spec}}


def port(name: str, number: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "port": number, "protocol": "TCP", **extra}


def endpoint(ip: str, *, ready: bool | None = None, serving: bool | None = None,
             terminating: bool | None = None, node: str | None = None) -> dict[str, Any]:
    cond = {k: v for k, v in (("ready", ready), ("serving", serving),
                              ("terminating", terminating)) if v is not None}
    ep: dict[str, Any] = {"addresses": [ip], "conditions": cond}
    if node:
        ep["nodeName"] = node
    return ep


def endpoint_slice(ns: str, svc: str, endpoints: list[dict[str, Any]],
                   ports: list[dict[str, Any]], suffix: str = "1") -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"namespace": ns, "name": f"{svc}-{suffix}",
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4", "endpoints": endpoints, "ports": ports}


def maps(services: list[dict[str, Any]], slices: list[dict[str, Any]], node: str = "node1"
         ) -> tuple[dict[ServicePortName, ServicePortInfo],
                    dict[ServicePortName, list[EndpointInfo]]]:
    ports = {p.name: p for s in services for p in service_ports(s)}
    return ports, endpoints_map(slices, node)


def sort_rules(text: str) -> str:
    """proxier_test.go's sortIPTablesRules: per table, KUBE-NODEPORTS and KUBE-SERVICES
    first, then the other chains by name; rules grouped by chain in that order, each chain's
    rules in their written order (the order that matters to iptables)."""
    tables: dict[str, list[str]] = {}
    table: list[str] = []
    for line in text.strip().splitlines():
        if line.startswith("*"):
            table = tables.setdefault(line, [])
        elif line != "COMMIT":
            table.append(line)
    out: list[str] = []
    for name in sorted(tables):  # *filter, then *nat, as upstream's goldens show them
        lines = tables[name]
        chains = [ln for ln in lines if ln.startswith(":")]

        def key(ln: str) -> tuple[int, str]:
            chain = ln[1:].split()[0]
            return ({"KUBE-NODEPORTS": 0, "KUBE-SERVICES": 1}.get(chain, 2), chain)

        chains.sort(key=key)
        out += [name, *chains]
        for c in chains:
            chain = c[1:].split()[0]
            out += [ln for ln in lines if ln.split()[:2] == ["-A", chain]]
        out += [ln for ln in lines if not ln.startswith((":", "-A"))]
        out.append("COMMIT")
    return "\n".join(out)


class FakeIptables:
    """Records restores; ``saved`` is what iptables-save prints; ``fail`` refuses restores."""

    def __init__(self) -> None:
        self.restores: list[str] = []
        self.saves = 0
        self.saved = {"nat": "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n", "filter": ""}
        self.fail = ""
        self.commands: list[tuple[str, ...]] = []
        self.canary = True
        # what iptables-nft says deleting a rule that is not there
        self.run_error = "iptables: Bad rule (does a matching rule exist in that chain?)."

    def restore(self, text: str) -> None:
        if self.fail:
            raise RestoreError(self.fail, 3)
        self.restores.append(text)

    def save(self, table: str) -> str:
        self.saves += 1
        return self.saved[table]

    def chain_exists(self, table: str, chain: str) -> bool:
        self.commands.append(("-t", table, "-S", chain, "1"))
        return self.canary

    def has_random_fully(self) -> bool:
        return False

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        self.commands.append(args)
        return subprocess.CompletedProcess(list(args), 1, "", self.run_error)
