"""Each pod's DNS settings as upstream's kubelet forms them (pkg/kubelet/network/dns)."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.kubelet.events.recorder import EventRecorder
from pykubelet.kubelet.network.dns import Configurer, parse_resolv_conf

HOST = "# generated\nnameserver 192.0.2.1\nnameserver 192.0.2.2\nsearch corp.example. lab\n" \
       "options timeout:2 attempts:3\noptions timeout:1\n"


def make_pod(**spec: Any) -> Any:
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web", "namespace": "ns1", "uid": "u-1"},
           "spec": {"containers": [{"name": "app", "image": "busybox:1"}], **spec}}
    pod = decode_pod(obj)
    set_defaults_pod(pod)
    return pod


@pytest.fixture
def host_resolv(tmp_path: Any) -> str:
    p = tmp_path / "resolv.conf"
    p.write_text(HOST)
    return str(p)


def dns_of(cfg: Any) -> tuple[list[str], list[str], list[str]]:
    return list(cfg.servers), list(cfg.searches), list(cfg.options)


def test_parse_resolv_conf_as_upstream() -> None:
    # the last search line wins, trailing dots trimmed; options merged by name
    assert parse_resolv_conf(HOST) == (["192.0.2.1", "192.0.2.2"], ["corp.example", "lab"],
                                       ["timeout:1", "attempts:3"])


CLUSTER = (["10.96.0.10"], ["ns1.svc.cluster.local", "svc.cluster.local", "cluster.local",
                            "corp.example", "lab"], ["ndots:5"])
HOSTDNS = (["192.0.2.1", "192.0.2.2"], ["corp.example", "lab"], ["timeout:1", "attempts:3"])


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({}, CLUSTER),  # defaulted to ClusterFirst
        ({"dnsPolicy": "ClusterFirst"}, CLUSTER),
        ({"dnsPolicy": "Default"}, HOSTDNS),
        # hostNetwork pods with ClusterFirst fall back to Default ...
        ({"dnsPolicy": "ClusterFirst", "hostNetwork": True}, HOSTDNS),
        # ... unless they ask for ClusterFirstWithHostNet
        ({"dnsPolicy": "ClusterFirstWithHostNet", "hostNetwork": True}, CLUSTER),
        ({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"],
                                             "searches": ["a.example"],
                                             "options": [{"name": "ndots", "value": "2"},
                                                         {"name": "edns0"}]}},
         (["1.1.1.1"], ["a.example"], ["ndots:2", "edns0"])),
        # dnsConfig merged: servers and searches appended without duplicates, options
        # replaced by name
        ({"dnsConfig": {"nameservers": ["10.96.0.10", "1.1.1.1"],
                        "searches": ["lab", "extra.example"],
                        "options": [{"name": "ndots", "value": "1"},
                                    {"name": "single-request"}]}},
         (["10.96.0.10", "1.1.1.1"], [*CLUSTER[1], "extra.example"],
          ["ndots:1", "single-request"])),
        ({"dnsPolicy": "Default", "dnsConfig": {"nameservers": ["1.1.1.1", "1.0.0.1"]}},
         # at most 3 nameservers
         (["192.0.2.1", "192.0.2.2", "1.1.1.1"], HOSTDNS[1], HOSTDNS[2])),
    ],
)
def test_pod_dns_by_policy(host_resolv: str, spec: dict[str, Any],
                           want: tuple[list[str], list[str], list[str]]) -> None:
    c = Configurer(cluster_dns=["10.96.0.10"], cluster_domain="cluster.local",
                   resolver_config=host_resolv)
    assert dns_of(c.get_pod_dns(make_pod(**spec))) == want


def test_no_cluster_dns_falls_back_to_default_with_the_event(host_resolv: str) -> None:
    rec = EventRecorder("n1")
    c = Configurer(cluster_dns=[], cluster_domain="cluster.local", resolver_config=host_resolv,
                   recorder=rec)
    assert dns_of(c.get_pod_dns(make_pod())) == HOSTDNS
    [ev] = rec.list()
    assert (ev["type"], ev["reason"]) == ("Warning", "MissingClusterDNS")
    assert ev["message"] == (
        'pod: "web_ns1(u-1)". kubelet does not have ClusterDNS IP configured and cannot '
        'create Pod using "ClusterFirst" policy. Falling back to "Default" policy.')


def test_empty_resolv_conf_setting_means_localhost() -> None:
    c = Configurer(cluster_dns=[], cluster_domain="cluster.local", resolver_config="")
    assert dns_of(c.get_pod_dns(make_pod(dnsPolicy="Default"))) == (["127.0.0.1"], ["."], [])


def test_no_cluster_domain_keeps_host_searches(host_resolv: str) -> None:
    c = Configurer(cluster_dns=["10.96.0.10"], cluster_domain="", resolver_config=host_resolv)
    assert dns_of(c.get_pod_dns(make_pod())) == (["10.96.0.10"], HOSTDNS[1], ["ndots:5"])


def test_search_limits(tmp_path: Any) -> None:
    rec = EventRecorder("n1")
    long = "x" * 256  # over 253: dropped (glibc aborts on such a search path)
    many = [f"d{i}.example" for i in range(40)]
    p = tmp_path / "resolv.conf"
    p.write_text(f"nameserver 192.0.2.1\nsearch {long} {' '.join(many)}\n")
    c = Configurer(cluster_dns=["10.96.0.10"], cluster_domain="cluster.local",
                   resolver_config=str(p), recorder=rec)
    searches = list(c.get_pod_dns(make_pod()).searches)
    assert len(searches) == 31  # 32 kept, then the 256-char one dropped
    assert long not in searches
    assert searches[:4] == ["ns1.svc.cluster.local", "svc.cluster.local", "cluster.local",
                            "d0.example"]
    [ev] = rec.list()
    assert ev["reason"] == "DNSConfigForming"
    assert ev["message"].startswith("Search Line limits were exceeded, some search paths have "
                                    "been omitted, the applied search line is: ns1.svc.")


def test_search_line_of_more_than_2048_chars_cut_from_the_end(tmp_path: Any) -> None:
    doms = [("a" * 60) + f"{i:03d}.example" for i in range(30)]  # 30 x 71 chars
    p = tmp_path / "resolv.conf"
    p.write_text(f"search {' '.join(doms)}\n")
    c = Configurer(cluster_dns=["10.96.0.10"], cluster_domain="cluster.local",
                   resolver_config=str(p))
    searches = list(c.get_pod_dns(make_pod()).searches)
    assert len(" ".join(searches)) <= 2048
    assert searches[-1] == doms[len(searches) - 4]
    assert len(searches) < 32


def test_nameserver_limit_event(host_resolv: str) -> None:
    rec = EventRecorder("n1")
    c = Configurer(cluster_dns=["10.96.0.10", "10.96.0.11"], cluster_domain="cluster.local",
                   resolver_config=host_resolv, recorder=rec)
    pod = make_pod(dnsConfig={"nameservers": ["1.1.1.1", "1.0.0.1"]})
    assert list(c.get_pod_dns(pod).servers) == ["10.96.0.10", "10.96.0.11", "1.1.1.1"]
    [ev] = rec.list()
    assert ev["message"] == ("Nameserver limits were exceeded, some nameservers have been "
                             "omitted, the applied nameserver line is: 10.96.0.10 10.96.0.11 "
                             "1.1.1.1")


def test_missing_resolv_conf_is_an_error(tmp_path: Any) -> None:
    c = Configurer(cluster_dns=["10.96.0.10"], cluster_domain="cluster.local",
                   resolver_config=str(tmp_path / "absent"))
    with pytest.raises(OSError):
        c.get_pod_dns(make_pod())
