"""The cluster zone from Services and EndpointSlices (golden records) and the answers
built from it, per the Kubernetes DNS specification and CoreDNS's kubernetes plugin."""

from __future__ import annotations

from typing import Any

import dns.flags
import dns.message
import dns.rcode

from pykubelet.dns.records import Record, build_zone
from pykubelet.dns.server import Answerer


def svc(name: str, ns: str = "default", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def eps(svc_name: str, endpoints: list[dict[str, Any]], ports: list[dict[str, Any]],
        ns: str = "default", name: str = "") -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name or f"{svc_name}-abc", "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc_name}},
            "addressType": "IPv4", "endpoints": endpoints, "ports": ports}


SERVICES = [
    svc("kubernetes", clusterIP="10.96.0.1", clusterIPs=["10.96.0.1"],
        ports=[{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]),
    svc("web", "shop", clusterIP="10.96.0.20", ports=[{"port": 80}]),  # unnamed port: no SRV
    svc("db", "shop", clusterIP="None",
        ports=[{"name": "pg", "port": 5432, "protocol": "TCP"}]),
    svc("empty", "shop", clusterIP="None"),
    svc("ext", "shop", type="ExternalName", externalName="db.example.org"),
]
SLICES = [
    eps("db", [{"addresses": ["10.244.1.5"], "hostname": "db-0",
                "conditions": {"ready": True}},
               {"addresses": ["10.244.2.7"], "conditions": {"ready": True}},
               {"addresses": ["10.244.2.9"], "conditions": {"ready": False}}],
        [{"name": "pg", "port": 5432, "protocol": "TCP"}], ns="shop"),
    eps("web", [{"addresses": ["10.244.1.6"]}], [{"port": 8080}], ns="shop"),
]


def test_zone_golden() -> None:
    zone = build_zone(SERVICES, SLICES)
    assert zone.records == {
        "dns-version.cluster.local.": [Record("TXT", '"1.1.0"')],
        "kubernetes.default.svc.cluster.local.": [Record("A", "10.96.0.1")],
        "1.0.96.10.in-addr.arpa.": [Record("PTR", "kubernetes.default.svc.cluster.local.")],
        "_https._tcp.kubernetes.default.svc.cluster.local.": [
            Record("SRV", "0 100 443 kubernetes.default.svc.cluster.local.")],
        "web.shop.svc.cluster.local.": [Record("A", "10.96.0.20")],
        "20.0.96.10.in-addr.arpa.": [Record("PTR", "web.shop.svc.cluster.local.")],
        # headless: ready endpoints only, named by hostname or dashed address
        "db.shop.svc.cluster.local.": [Record("A", "10.244.1.5"), Record("A", "10.244.2.7")],
        "db-0.db.shop.svc.cluster.local.": [Record("A", "10.244.1.5")],
        "10-244-2-7.db.shop.svc.cluster.local.": [Record("A", "10.244.2.7")],
        "5.1.244.10.in-addr.arpa.": [Record("PTR", "db-0.db.shop.svc.cluster.local.")],
        "7.2.244.10.in-addr.arpa.": [Record("PTR", "10-244-2-7.db.shop.svc.cluster.local.")],
        "_pg._tcp.db.shop.svc.cluster.local.": [
            Record("SRV", "0 50 5432 db-0.db.shop.svc.cluster.local."),
            Record("SRV", "0 50 5432 10-244-2-7.db.shop.svc.cluster.local.")],
        "ext.shop.svc.cluster.local.": [Record("CNAME", "db.example.org.")],
    }
    assert {"shop.svc.cluster.local.", "svc.cluster.local.",
            "empty.shop.svc.cluster.local."} <= zone.names


def test_publish_not_ready_addresses() -> None:
    zone = build_zone([svc("db", "shop", clusterIP="None", publishNotReadyAddresses=True)],
                      SLICES)
    assert Record("A", "10.244.2.9") in zone.records["db.shop.svc.cluster.local."]


def ask(name: str, rdtype: str, zone_answerer: Answerer | None = None) -> dns.message.Message:
    a = zone_answerer or Answerer(build_zone(SERVICES, SLICES))
    wire = a.respond(dns.message.make_query(name, rdtype).to_wire(), 65535)
    assert wire is not None
    return dns.message.from_wire(wire)


def sections(m: dns.message.Message) -> tuple[str, list[str], list[str]]:
    return (dns.rcode.to_text(m.rcode()),
            sorted(r.to_text() for rr in m.answer for r in [rr]),
            [rr.to_text() for rr in m.authority])


SOA = ("cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. "
       "1 7200 1800 86400 5")


def test_answers_golden() -> None:
    assert sections(ask("kubernetes.default.svc.cluster.local", "A")) == (
        "NOERROR", ["kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1"], [])
    # case-insensitive, the question's case echoed
    assert sections(ask("KUBERNETES.Default.svc.cluster.local", "A"))[1] == [
        "KUBERNETES.Default.svc.cluster.local. 5 IN A 10.96.0.1"]
    assert sections(ask("_https._tcp.kubernetes.default.svc.cluster.local", "SRV"))[1] == [
        "_https._tcp.kubernetes.default.svc.cluster.local. 5 IN SRV 0 100 443 "
        "kubernetes.default.svc.cluster.local."]
    assert sections(ask("1.0.96.10.in-addr.arpa", "PTR"))[1] == [
        "1.0.96.10.in-addr.arpa. 5 IN PTR kubernetes.default.svc.cluster.local."]
    assert sections(ask("db-0.db.shop.svc.cluster.local", "A"))[1] == [
        "db-0.db.shop.svc.cluster.local. 5 IN A 10.244.1.5"]
    assert sections(ask("ext.shop.svc.cluster.local", "A"))[1] == [
        "ext.shop.svc.cluster.local. 5 IN CNAME db.example.org."]
    assert sections(ask("10-244-3-4.shop.pod.cluster.local", "A"))[1] == [
        "10-244-3-4.shop.pod.cluster.local. 5 IN A 10.244.3.4"]
    assert sections(ask("dns-version.cluster.local", "TXT"))[1] == [
        'dns-version.cluster.local. 5 IN TXT "1.1.0"']


def test_nxdomain_and_nodata_carry_the_soa() -> None:
    m = ask("nope.default.svc.cluster.local", "A")
    assert sections(m) == ("NXDOMAIN", [], [SOA])
    assert m.flags & dns.flags.AA
    # the name exists, not with that type; empty non-terminals and empty headless too
    assert sections(ask("kubernetes.default.svc.cluster.local", "AAAA")) == (
        "NOERROR", [], [SOA])
    assert sections(ask("shop.svc.cluster.local", "A")) == ("NOERROR", [], [SOA])
    assert sections(ask("empty.shop.svc.cluster.local", "A")) == ("NOERROR", [], [SOA])


def test_names_outside_the_zone_are_not_answered_here() -> None:
    a = Answerer(build_zone(SERVICES, SLICES))
    for name, t in (("example.org", "A"), ("9.9.9.9.in-addr.arpa", "PTR")):
        assert a.respond(dns.message.make_query(name, t).to_wire(), 512) is None


def test_cache_keeps_the_id_and_is_dropped_with_the_zone() -> None:
    a = Answerer(build_zone(SERVICES, SLICES))
    q1 = dns.message.make_query("web.shop.svc.cluster.local", "A")
    q2 = dns.message.make_query("web.shop.svc.cluster.local", "A")
    q2.id = (q1.id + 1) % 65536
    r1, r2 = (a.respond(q.to_wire(), 512) for q in (q1, q2))
    assert r1 is not None
    assert r2 is not None
    assert (dns.message.from_wire(r2).id, r1[2:]) == (q2.id, r2[2:])
    a.set_zone(build_zone([svc("web", "shop", clusterIP="10.96.0.99")], []))
    r3 = a.respond(q1.to_wire(), 512)
    assert r3 is not None
    assert "10.96.0.99" in dns.message.from_wire(r3).answer[0].to_text()
