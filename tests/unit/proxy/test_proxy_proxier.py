"""The proxier over a fake iptables: when it syncs, what it writes (full, then partial), a
refused restore (logged once, the next sync full), the jump rules only where missing, the
metrics, and cleanup's input."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry
from proxy_builders import FakeIptables, endpoint, endpoint_slice, port, service

from pykubelet.proxy.iptables_rules import JUMP_RULES, Options
from pykubelet.proxy.metrics import ProxyMetrics
from pykubelet.proxy.proxier import Proxier, missing_jumps
from pykubelet.proxy.serviceport import port_proto_hash


def svc_chain(ns: str, name: str) -> str:
    return "KUBE-SVC-" + port_proto_hash(f"{ns}/{name}", "tcp")


def make() -> tuple[Proxier, FakeIptables, CollectorRegistry]:
    ipt = FakeIptables()
    reg = CollectorRegistry()
    proxier = Proxier(ipt, "node1", Options(cluster_cidr="10.244.0.0/16"),  # type: ignore[arg-type]
                      ProxyMetrics(reg))
    proxier.set_services([service("a", "one", "10.96.0.1", [port("", 80)]),
                          service("b", "two", "10.96.0.2", [port("", 80)])])
    return proxier, ipt, reg


def test_no_sync_before_both_lists_and_a_full_one_after() -> None:
    proxier, ipt, reg = make()
    assert not proxier.sync()
    assert ipt.restores == []
    proxier.set_endpoint_slices([
        endpoint_slice("a", "one", [endpoint("10.244.0.1")], [port("", 80)]),
        endpoint_slice("b", "two", [endpoint("10.244.0.2")], [port("", 80)])])
    assert proxier.sync()
    assert ipt.saves == 2  # a full sync reads nat and filter
    text = ipt.restores[-1]
    assert f":{svc_chain('a', 'one')} - [0:0]" in text
    assert f":{svc_chain('b', 'two')} - [0:0]" in text
    # every jump is missing from the fake's tables: all are inserted, in the same restore
    assert text.count("-I PREROUTING 1 ") == 1
    assert sum(ln.startswith("-I ") for ln in text.splitlines()) == len(JUMP_RULES)
    assert reg.get_sample_value("kubeproxy_sync_proxy_rules_iptables_total",
                                {"table": "nat"}) == proxier.last_rules.nat_rules  # type: ignore[union-attr]
    assert reg.get_sample_value("kubeproxy_sync_proxy_rules_duration_seconds_count") == 1
    assert reg.get_sample_value("kubeproxy_sync_full_proxy_rules_duration_seconds_count") == 1
    assert reg.get_sample_value("kubeproxy_sync_proxy_rules_no_local_endpoints_total",
                                {"traffic_policy": "external"}) == 0


def test_an_endpoint_change_is_a_partial_sync_of_that_service() -> None:
    proxier, ipt, reg = make()
    proxier.set_endpoint_slices([
        endpoint_slice("a", "one", [endpoint("10.244.0.1")], [port("", 80)]),
        endpoint_slice("b", "two", [endpoint("10.244.0.2")], [port("", 80)])])
    assert proxier.sync()
    assert not proxier.pending()
    proxier.on_endpoint_slice(None, endpoint_slice(
        "b", "two", [endpoint("10.244.0.2"), endpoint("10.244.0.3")], [port("", 80)]))
    assert proxier.pending()
    assert proxier.sync()
    text = ipt.restores[-1]
    assert ipt.saves == 2  # no iptables-save for a partial sync
    assert svc_chain("b", "two") in text
    assert f":{svc_chain('a', 'one')}" not in text
    assert "-I " not in text
    # KUBE-SERVICES and the other top-level chains did not change: not written again
    assert ":KUBE-SERVICES" not in text
    assert ":KUBE-POSTROUTING" not in text
    assert reg.get_sample_value("kubeproxy_sync_partial_proxy_rules_duration_seconds_count") == 1
    # the service's endpoints all gone: its cluster IP rule leaves KUBE-SERVICES, a REJECT
    # enters filter KUBE-SERVICES; both chains are written whole
    proxier.on_endpoint_slice(endpoint_slice("b", "two", [], []), None)
    assert proxier.sync()
    text = ipt.restores[-1]
    assert f"-j {svc_chain('a', 'one')}" in text
    assert text.count(":KUBE-SERVICES - [0:0]") == 2
    assert '"b/two has no endpoints"' in text
    assert ":KUBE-POSTROUTING" not in text


def test_a_refused_restore_is_logged_once_and_the_next_sync_is_full(
        caplog: pytest.LogCaptureFixture) -> None:
    proxier, ipt, reg = make()
    proxier.set_endpoint_slices([])
    assert proxier.sync()
    ipt.fail = "iptables-restore: line 3 failed"
    caplog.set_level(logging.ERROR, "pykubelet.proxy.proxier")
    proxier.on_endpoint_slice(None, endpoint_slice("a", "one", [endpoint("10.244.0.1")],
                                                   [port("", 80)]))
    assert not proxier.sync()
    assert not proxier.sync()
    errors = [r for r in caplog.records if "iptables-restore" in r.getMessage()]
    assert len(errors) == 1
    assert "last good rules stay in place" in errors[0].getMessage()
    assert reg.get_sample_value(
        "kubeproxy_sync_proxy_rules_iptables_restore_failures_total") == 2
    assert reg.get_sample_value(
        "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total") == 1
    ipt.fail = ""
    saves = ipt.saves
    assert proxier.sync()
    assert ipt.saves == saves + 2  # full
    assert f":{svc_chain('a', 'one')} - [0:0]" in ipt.restores[-1]  # the change not lost


def test_a_periodic_run_checks_the_canary_and_resyncs_when_it_is_gone() -> None:
    proxier, ipt, _ = make()
    proxier.set_endpoint_slices([])
    assert proxier.sync()
    assert ipt.restores[-1].count(":KUBE-PROXY-CANARY - [0:0]") == 2  # nat and filter
    restores, saves = len(ipt.restores), ipt.saves
    assert proxier.sync()  # nothing changed, canary there: nothing written
    assert len(ipt.restores) == restores
    assert ipt.commands[-1] == ("-t", "filter", "-S", "KUBE-PROXY-CANARY", "1")
    ipt.canary = False  # someone flushed the tables
    assert proxier.sync()
    assert len(ipt.restores) == restores + 1
    assert ipt.saves == saves + 2  # a full sync
    assert ":KUBE-SERVICES - [0:0]" in ipt.restores[-1]


def test_jump_rules_are_inserted_only_where_missing() -> None:
    present = {"nat": "-A PREROUTING -m comment --comment \"kubernetes service portals\" "
                      "-j KUBE-SERVICES\n", "filter": ""}
    missing = missing_jumps(present)
    assert len(missing) == len(JUMP_RULES) - 1
    assert not any(j.table == "nat" and j.src == "PREROUTING" for j in missing)


@pytest.mark.parametrize(("stderr", "ok"), [
    ("iptables v1.8.9 (legacy): Couldn't load target `KUBE-SERVICES':No such file or "
     "directory", True),  # legacy, the jump's target chain already gone
    ("iptables: No chain/target/match by that name.", True),
    ("iptables v1.8.9 (nf_tables): Chain 'KUBE-SERVICES' does not exist", True),
    ("iptables v1.8.9 (legacy): can't initialize iptables table `nat': Permission denied",
     False),
])
def test_cleanup_takes_what_is_already_gone_as_done(stderr: str, ok: bool) -> None:
    """utiliptables.IsNotFoundError's strings, for both variants."""
    proxier, ipt, _ = make()
    ipt.run_error = stderr
    assert proxier.cleanup() is ok


def test_cleanup_deletes_jumps_and_every_chain_of_ours() -> None:
    proxier, ipt, _ = make()
    ipt.saved = {"nat": "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-X - [0:0]\n"
                        ":KUBE-SEP-Y - [0:0]\n:CNI-abc - [0:0]\nCOMMIT\n",
                 "filter": "*filter\n:KUBE-FORWARD - [0:0]\n:OTHER - [0:0]\nCOMMIT\n"}
    assert proxier.cleanup()  # "no matching rule" counts as done
    assert len(ipt.commands) == len(JUMP_RULES)
    assert ipt.commands[0][:4] == ("-t", "filter", "-D", "INPUT")
    text = ipt.restores[-1]
    assert [ln for ln in text.splitlines() if ln.startswith("-X")] == [
        "-X KUBE-SERVICES", "-X KUBE-SEP-Y", "-X KUBE-SVC-X", "-X KUBE-FORWARD"]
    assert "CNI-abc" not in text
    assert "OTHER" not in text
