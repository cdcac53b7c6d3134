"""The cluster DNS a control plane process serves (issue 20, item 3): the ``kube-dns``
Service in kube-system (10.96.0.10, dns 53/UDP and dns-tcp 53/TCP) whose endpoints list
the DNS server, which answers the ``kubernetes`` Service's name with its ClusterIP, and a
new Service's name within a second or two; a clean stop takes it out of the endpoints."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import dns.message
import dns.query
import dns.rdatatype
import pytest
from cp_process import ControlPlaneProcess, control_plane, wait_for

from pykubelet.controlplane.controllers.kubedns import LABELS, NAME, NAMESPACE

pytestmark = [pytest.mark.root]

DNS_ADDRESS = "127.0.10.53"  # a loopback address of its own: port 53 there is ours


@pytest.fixture(scope="module")
def dns_cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlaneProcess]:
    root = tmp_path_factory.mktemp("cp-dns") / "root"
    with control_plane(root, "sqlite", ["--cluster-dns-address", DNS_ADDRESS]) as proc:
        yield proc


def _get(cp: ControlPlaneProcess, *args: str) -> Any:
    res = cp.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else None


def _a(name: str, tcp: bool = False) -> list[str]:
    """The A records the cluster DNS answers for ``name``."""
    query = dns.message.make_query(name, dns.rdatatype.A)
    send = dns.query.tcp if tcp else dns.query.udp
    answer = send(query, DNS_ADDRESS, port=53, timeout=2)
    return sorted(r.address for rrset in answer.answer for r in rrset
                  if r.rdtype == dns.rdatatype.A)


def _endpoint_ips(cp: ControlPlaneProcess) -> list[str] | None:
    ep = _get(cp, "endpoints", NAME, "-n", NAMESPACE)
    if ep is None:
        return None
    return [a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []]


def test_kube_dns_service_lists_the_dns_server(dns_cp: ControlPlaneProcess) -> None:
    wait_for(lambda: _endpoint_ips(dns_cp) == [DNS_ADDRESS], what="kube-dns endpoints")
    svc = _get(dns_cp, "service", NAME, "-n", NAMESPACE)
    assert svc["spec"]["clusterIP"] == "10.96.0.10"
    assert svc["metadata"]["labels"] == LABELS
    assert [(p["name"], p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == \
        [("dns", 53, "UDP"), ("dns-tcp", 53, "TCP")]
    assert "selector" not in svc["spec"]  # the endpoints are the control plane's to keep
    ep = _get(dns_cp, "endpoints", NAME, "-n", NAMESPACE)
    assert ep["subsets"][0]["ports"] == [{"name": "dns", "port": 53, "protocol": "UDP"},
                                         {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]
    slices = _get(dns_cp, "endpointslices", "-n", NAMESPACE, "-l",
                  f"kubernetes.io/service-name={NAME}")
    assert [[e["addresses"] for e in s["endpoints"]] for s in slices["items"]] == \
        [[[DNS_ADDRESS]]]


def test_dns_answers_the_kubernetes_service(dns_cp: ControlPlaneProcess) -> None:
    wait_for(lambda: _endpoint_ips(dns_cp) == [DNS_ADDRESS], what="kube-dns endpoints")
    ip = _get(dns_cp, "service", "kubernetes", "-n", "default")["spec"]["clusterIP"]
    assert ip == "10.96.0.1"
    assert _a("kubernetes.default.svc.cluster.local") == [ip]
    assert _a("kubernetes.default.svc.cluster.local", tcp=True) == [ip]
    assert _a("kube-dns.kube-system.svc.cluster.local") == ["10.96.0.10"]


def test_new_service_resolves_within_two_seconds(dns_cp: ControlPlaneProcess) -> None:
    wait_for(lambda: _endpoint_ips(dns_cp) == [DNS_ADDRESS], what="kube-dns endpoints")
    dns_cp.kubectl("create", "service", "clusterip", "dnsprobe", "--tcp=80:8080")
    try:
        ip = _get(dns_cp, "service", "dnsprobe")["spec"]["clusterIP"]
        start = time.monotonic()
        wait_for(lambda: _a("dnsprobe.default.svc.cluster.local") == [ip], timeout=2.0,
                 interval=0.05, what="the new Service's name")
        assert time.monotonic() - start < 2.0
    finally:
        dns_cp.kubectl("delete", "service", "dnsprobe", "--ignore-not-found", check=False)

