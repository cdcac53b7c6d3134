"""The nftables proxier over a fake nft: the first sync replaces any earlier table in the
same transaction, an endpoint change rewrites only that service's chains and elements and
leaves the same state a full sync would, a deleted service's chains are flushed then
deleted a sync later, a refused transaction is logged once and followed by a full sync,
a table removed under us is written again, cleanup deletes the table."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fake_nft import FakeNft
from prometheus_client import CollectorRegistry
from proxy_builders import endpoint, endpoint_slice, port, service

from pykubelet.proxy import nft_proxier
from pykubelet.proxy.iptables_rules import Options
from pykubelet.proxy.metrics import ProxyMetrics
from pykubelet.proxy.nft_proxier import NftProxier

OPTS = Options(cluster_cidr="10.244.0.0/16")


def svcs() -> list[dict[str, Any]]:
    return [service("a", "one", "10.96.0.1", [port("", 80)]),
            service("b", "two", "10.96.0.2", [port("", 80, nodePort=30080)], type="NodePort")]


def slice_one(*ips: str) -> dict[str, Any]:
    return endpoint_slice("a", "one", [endpoint(ip) for ip in ips], [port("", 80)])


def slice_two() -> dict[str, Any]:
    return endpoint_slice("b", "two", [endpoint("10.244.0.9")], [port("", 80)])


def make(nft: FakeNft | None = None) -> tuple[NftProxier, FakeNft, CollectorRegistry]:
    nft = nft or FakeNft()
    reg = CollectorRegistry()
    p = NftProxier(nft, "node1", OPTS, metrics=ProxyMetrics(reg))  # type: ignore[arg-type]
    p.set_services(svcs())
    p.set_endpoint_slices([slice_one("10.244.0.1", "10.244.0.2"), slice_two()])
    return p, nft, reg


def fresh_state(p: NftProxier) -> list[str]:
    """What a new proxier's full sync of the same input leaves."""
    q = NftProxier(FakeNft(), "node1", OPTS)  # type: ignore[arg-type]
    q.set_services(list(p._services.values()))
    q.set_endpoint_slices([s for by in p._slices.values() for s in by.values()])
    assert q.sync()
    return sorted(q.nft.dump())  # type: ignore[attr-defined]


def test_no_sync_before_both_lists_then_a_first_sync_replacing_any_old_table() -> None:
    nft = FakeNft()
    nft.run("add table ip kube-proxy\nadd chain ip kube-proxy service-OLD-x/y/tcp/\n")
    p = NftProxier(nft, "node1", OPTS)  # type: ignore[arg-type]
    p.set_services(svcs())
    assert not p.sync()
    p.set_endpoint_slices([slice_one("10.244.0.1"), slice_two()])
    assert p.sync()
    text = nft.runs[-1]
    assert text.startswith("add table ip kube-proxy\ndelete table ip kube-proxy\n")
    assert "service-OLD-x/y/tcp/" not in nft.chains()  # the leftover went in the same commit
    assert sorted(nft.dump()) == fresh_state(p)


def test_an_endpoint_change_writes_only_that_service() -> None:
    p, nft, reg = make()
    assert p.sync()
    two = [c for c in nft.chains() if "b/two" in c]
    assert two
    p.on_endpoint_slice(None, slice_one("10.244.0.1", "10.244.0.3"))
    assert p.pending()
    assert p.sync()
    text = nft.runs[-1]
    assert "add table" not in text
    assert "flush map" not in text
    assert not any("b/two" in ln for ln in text.splitlines())  # the other service untouched
    # no chain per endpoint: the service chain DNATs through a numgen map
    assert ("dnat to numgen random mod 2 map { 0 : 10.244.0.1 . 80 , 1 : 10.244.0.3 . 80 }"
            in text)
    assert not any(c.startswith("endpoint-") for c in nft.chains())
    # the hairpin set follows: the one that left goes, the new one comes
    assert "delete element ip kube-proxy hairpin-endpoints { 10.244.0.2 . 10.244.0.2 }" in text
    assert "add element ip kube-proxy hairpin-endpoints { 10.244.0.3 . 10.244.0.3 }" in text
    assert reg.get_sample_value(
        "kubeproxy_sync_partial_proxy_rules_duration_seconds_count") == 1
    assert sorted(nft.dump()) == fresh_state(p)


def test_an_affinity_service_keeps_endpoint_chains_flushed_then_deleted() -> None:
    """ClientIP affinity needs a chain per endpoint (its affinity set's update): an endpoint
    leaving has its chain flushed at once and deleted by a later sync."""
    nft = FakeNft()
    p = NftProxier(nft, "node1", OPTS)  # type: ignore[arg-type]
    p.set_services([service("a", "one", "10.96.0.1", [port("", 80)],
                            sessionAffinity="ClientIP")])
    p.set_endpoint_slices([slice_one("10.244.0.1", "10.244.0.2")])
    assert p.sync()
    assert len([c for c in nft.chains() if c.startswith("endpoint-")]) == 2
    assert nft.containers["hairpin-endpoints"][1] == {}  # its endpoint chains masquerade
    p.on_endpoint_slice(None, slice_one("10.244.0.1", "10.244.0.3"))
    assert p.sync()
    text = nft.runs[-1]
    assert "dnat to 10.244.0.3:80" in text
    gone = next(c for c in nft.chains() if c.endswith("__10.244.0.2/80"))
    assert f"flush chain ip kube-proxy {gone}" in text
    assert nft.chain_rules(gone) == []
    nft_proxier.STALE_CHAIN_DELAY, old = 0.0, nft_proxier.STALE_CHAIN_DELAY
    try:
        assert p.sync()
    finally:
        nft_proxier.STALE_CHAIN_DELAY = old
    assert nft.runs[-1] == (f"add table ip kube-proxy\nadd chain ip kube-proxy {gone}\n"
                            f"delete chain ip kube-proxy {gone}\n")
    assert sorted(nft.dump()) == fresh_state(p)


def test_a_hairpin_element_two_services_share_stays_while_one_needs_it() -> None:
    """One pod behind two services: its ``ip . ip`` element is one element; a partial
    sync of one service dropping the pod must not delete it under the other."""
    p, nft, _ = make()
    p.on_endpoint_slice(None, endpoint_slice("b", "two", [endpoint("10.244.0.1")],
                                             [port("", 80)]))
    assert p.sync()
    hairpin = nft.containers["hairpin-endpoints"][1]
    assert set(hairpin) == {"10.244.0.1 . 10.244.0.1", "10.244.0.2 . 10.244.0.2"}
    p.on_endpoint_slice(None, slice_one("10.244.0.2"))  # a/one drops 10.244.0.1
    assert p.sync()
    assert "10.244.0.1 . 10.244.0.1" in hairpin  # b/two still sends there
    p.on_endpoint_slice(None, endpoint_slice("b", "two", [endpoint("10.244.0.9")],
                                             [port("", 80)]))
    assert p.sync()
    assert set(hairpin) == {"10.244.0.2 . 10.244.0.2", "10.244.0.9 . 10.244.0.9"}
    assert sorted(nft.dump()) == fresh_state(p)


def test_a_deleted_service_leaves_no_chain_or_element() -> None:
    p, nft, _ = make()
    assert p.sync()
    p.on_service(svcs()[1], None)
    p.on_endpoint_slice(slice_two(), None)
    assert p.sync()
    assert not any("30080" in e for _, els in nft.containers.values() for e in els)
    assert not any("10.96.0.2" in e for _, els in nft.containers.values() for e in els)
    assert all(nft.chain_rules(c) == [] for c in nft.chains() if "b/two" in c)
    nft_proxier.STALE_CHAIN_DELAY, old = 0.0, nft_proxier.STALE_CHAIN_DELAY
    try:
        assert p.sync()
    finally:
        nft_proxier.STALE_CHAIN_DELAY = old
    assert not any("b/two" in c for c in nft.chains())
    assert sorted(nft.dump()) == fresh_state(p)


def test_a_service_losing_its_endpoints_moves_to_the_reject_map() -> None:
    p, nft, _ = make()
    assert p.sync()
    p.on_endpoint_slice(None, slice_one())
    assert p.sync()
    _, elems = nft.containers["no-endpoint-services"]
    assert list(elems.values()) == ['10.96.0.1 . tcp . 80 comment "a/one" : goto reject-chain']
    assert not any(k.startswith("10.96.0.1 ") for k in nft.containers["service-ips"][1])


def test_a_refused_transaction_is_logged_once_and_the_next_sync_is_full(
        caplog: pytest.LogCaptureFixture) -> None:
    p, nft, reg = make()
    assert p.sync()
    before = sorted(nft.dump())
    nft.fail = "Error: Could not process rule: No such file or directory"
    caplog.set_level(logging.ERROR)
    p.on_endpoint_slice(None, slice_one("10.244.0.5"))
    assert not p.sync()
    p.on_endpoint_slice(None, slice_one("10.244.0.6"))
    assert not p.sync()
    assert sum("nftables sync failed" in r.message for r in caplog.records) == 1
    assert sorted(nft.dump()) == before  # nothing applied
    assert reg.get_sample_value(
        "kubeproxy_sync_proxy_rules_iptables_restore_failures_total") == 2
    nft.fail = ""
    assert p.sync()
    text = nft.runs[-1]
    assert "flush map ip kube-proxy service-ips" in text  # a full sync
    assert "delete table" not in text  # not the first: the table is kept, listed
    nft_proxier.STALE_CHAIN_DELAY, old = 0.0, nft_proxier.STALE_CHAIN_DELAY
    try:
        assert p.sync()
    finally:
        nft_proxier.STALE_CHAIN_DELAY = old
    assert sorted(nft.dump()) == fresh_state(p)


def test_an_idle_sync_rewrites_a_table_removed_under_us() -> None:
    p, nft, _ = make()
    assert p.sync()
    runs = len(nft.runs)
    assert p.sync()  # nothing new: no transaction
    assert len(nft.runs) == runs
    nft.delete_table()  # nft flush ruleset, or an admin
    assert p.sync()
    assert sorted(nft.dump()) == fresh_state(p)


def test_cleanup_deletes_the_table_and_the_next_sync_is_a_first_one() -> None:
    p, nft, _ = make()
    assert p.sync()
    assert p.cleanup()
    assert nft.dump() == []
    assert p.cleanup()  # nothing there: still fine
    assert p.sync()
    assert nft.runs[-1].startswith("add table ip kube-proxy\ndelete table")
