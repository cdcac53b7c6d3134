"""Golden rule sets, in the style of kube-proxy's proxier_test.go: given services and
endpoint slices, the restore input is exactly this (chains sorted as its
sortIPTablesRules does, rules in each chain in order). Hashes, comments and rule text are
upstream's: the first test's lines are TestOverallIPTablesRules' for the same services
(minus what this proxier does not do: nfacct counters, localhost NodePorts, KUBE-FIREWALL,
load balancers)."""

from __future__ import annotations

from textwrap import dedent

from proxy_builders import endpoint, endpoint_slice, maps, port, service, sort_rules

from pykubelet.proxy.iptables_rules import Options, build, probability
from pykubelet.proxy.serviceport import ServicePortName, endpoint_chain, port_proto_hash

OPTS = Options(cluster_cidr="10.0.0.0/8")  # NewFakeProxier's local detector

FILTER_TAIL = """\
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"""  # noqa: E501
NAT_HEAD = """\
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE"""  # noqa: E501
NODEPORTS_LAST = ('-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: '
                  'this must be the last rule in this chain" -m addrtype --dst-type LOCAL '
                  "! -d 127.0.0.0/8 -j KUBE-NODEPORTS")


def golden(text: str) -> str:
    return sort_rules(dedent(text).replace("FILTER_TAIL", FILTER_TAIL)
                      .replace("NAT_HEAD", NAT_HEAD).replace("NODEPORTS_LAST", NODEPORTS_LAST))


def test_chain_names_are_upstreams_hashes() -> None:
    """servicePortChainName / servicePortEndpointChainName on upstream's own examples."""
    assert port_proto_hash("ns1/svc1:p80", "tcp") == "XPGD46QRK7WJZT7O"
    name = ServicePortName("ns1", "svc1", "p80", "TCP")
    assert endpoint_chain(name, "10.180.0.1:80") == "KUBE-SEP-SXIVWICOYRO3J4NJ"
    assert str(ServicePortName("ns", "svc")) == "ns/svc"


def test_probabilities_are_formatted_as_upstream() -> None:
    assert [probability(n) for n in (1, 2, 3, 7)] == [
        "1.0000000000", "0.5000000000", "0.3333333333", "0.1428571429"]


def test_clusterip_nodeport_and_no_endpoints_as_upstream_golden() -> None:
    """TestOverallIPTablesRules' svc1 (ClusterIP), svc3 (NodePort) and svc6 (no endpoints:
    REJECT in filter, no nat chains)."""
    svcs = [service("ns1", "svc1", "172.30.0.41", [port("p80", 80)]),
            service("ns3", "svc3", "172.30.0.43", [port("p80", 80, nodePort=3003)],
                    type="NodePort"),
            service("ns6", "svc6", "172.30.0.46", [port("p80", 80, targetPort=80)])]
    slices = [endpoint_slice("ns1", "svc1", [endpoint("10.180.0.1")], [port("p80", 80)]),
              endpoint_slice("ns3", "svc3", [endpoint("10.180.0.3")], [port("p80", 80)])]
    rules = build(*maps(svcs, slices), OPTS)
    assert sort_rules(rules.text) == golden("""\
        *filter
        :KUBE-NODEPORTS - [0:0]
        :KUBE-SERVICES - [0:0]
        :KUBE-EXTERNAL-SERVICES - [0:0]
        :KUBE-FORWARD - [0:0]
        -A KUBE-SERVICES -m comment --comment "ns6/svc6:p80 has no endpoints" -m tcp -p tcp -d 172.30.0.46 --dport 80 -j REJECT
        FILTER_TAIL
        COMMIT
        *nat
        :KUBE-NODEPORTS - [0:0]
        :KUBE-SERVICES - [0:0]
        :KUBE-EXT-X27LE4BHSL4DOUIK - [0:0]
        :KUBE-MARK-MASQ - [0:0]
        :KUBE-POSTROUTING - [0:0]
        :KUBE-SEP-OYPFS5VJICHGATKP - [0:0]
        :KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
        :KUBE-SVC-X27LE4BHSL4DOUIK - [0:0]
        :KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
        -A KUBE-NODEPORTS -m comment --comment ns3/svc3:p80 -m tcp -p tcp --dport 3003 -j KUBE-EXT-X27LE4BHSL4DOUIK
        -A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
        -A KUBE-SERVICES -m comment --comment "ns3/svc3:p80 cluster IP" -m tcp -p tcp -d 172.30.0.43 --dport 80 -j KUBE-SVC-X27LE4BHSL4DOUIK
        NODEPORTS_LAST
        -A KUBE-EXT-X27LE4BHSL4DOUIK -m comment --comment "masquerade traffic for ns3/svc3:p80 external destinations" -j KUBE-MARK-MASQ
        -A KUBE-EXT-X27LE4BHSL4DOUIK -j KUBE-SVC-X27LE4BHSL4DOUIK
        NAT_HEAD
        -A KUBE-SEP-OYPFS5VJICHGATKP -m comment --comment ns3/svc3:p80 -s 10.180.0.3 -j KUBE-MARK-MASQ
        -A KUBE-SEP-OYPFS5VJICHGATKP -m comment --comment ns3/svc3:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80
        -A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
        -A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
        -A KUBE-SVC-X27LE4BHSL4DOUIK -m comment --comment "ns3/svc3:p80 cluster IP" -m tcp -p tcp -d 172.30.0.43 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
        -A KUBE-SVC-X27LE4BHSL4DOUIK -m comment --comment "ns3/svc3:p80 -> 10.180.0.3:80" -j KUBE-SEP-OYPFS5VJICHGATKP
        -A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
        -A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j KUBE-SEP-SXIVWICOYRO3J4NJ
        COMMIT
        """)  # noqa: E501
    assert rules.filter_rules == 4
    assert rules.nat_rules == 18


def _nat_lines(text: str, chain: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(f"-A {chain} ")]


def test_two_endpoints_spread_randomly_with_hairpin_masquerade() -> None:
    """A ClusterIP over two endpoints: the first taken with probability 1/2, the second
    unconditionally; each endpoint chain masquerades its own address (hairpin)."""
    svcs = [service("ns4", "svc4", "172.30.0.44", [port("p80", 80)])]
    slices = [endpoint_slice("ns4", "svc4", [endpoint("10.180.0.5"), endpoint("10.180.0.4")],
                             [port("p80", 80)])]
    text = build(*maps(svcs, slices), OPTS).text
    svc = "KUBE-SVC-4SW47YFZTEDKD3PK"
    assert _nat_lines(text, svc) == [
        f'-A {svc} -m comment --comment "ns4/svc4:p80 cluster IP" -m tcp -p tcp '
        "-d 172.30.0.44 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ",
        f'-A {svc} -m comment --comment "ns4/svc4:p80 -> 10.180.0.4:80" -m statistic '
        "--mode random --probability 0.5000000000 -j KUBE-SEP-UKSFD7AGPMPPLUHC",
        f'-A {svc} -m comment --comment "ns4/svc4:p80 -> 10.180.0.5:80" '
        "-j KUBE-SEP-C6EBXVWJJZMIWKLZ",
    ]
    assert _nat_lines(text, "KUBE-SEP-C6EBXVWJJZMIWKLZ") == [
        "-A KUBE-SEP-C6EBXVWJJZMIWKLZ -m comment --comment ns4/svc4:p80 -s 10.180.0.5 "
        "-j KUBE-MARK-MASQ",
        "-A KUBE-SEP-C6EBXVWJJZMIWKLZ -m comment --comment ns4/svc4:p80 -m tcp -p tcp "
        "-j DNAT --to-destination 10.180.0.5:80",
    ]


def test_session_affinity_client_ip() -> None:
    """sessionAffinity ClientIP: each endpoint's recent list is checked first (timeout from
    sessionAffinityConfig), and the endpoint chain adds the client to its list."""
    svcs = [service("ns5", "svc5", "172.30.0.45", [port("p80", 80)],
                    sessionAffinity="ClientIP",
                    sessionAffinityConfig={"clientIP": {"timeoutSeconds": 10800}})]
    slices = [endpoint_slice("ns5", "svc5", [endpoint("10.180.0.3")], [port("p80", 80)])]
    text = build(*maps(svcs, slices), OPTS).text
    svc, sep = "KUBE-SVC-NUKIZ6OKUXPJNT4C", "KUBE-SEP-I77PXRDZVX7PMWMN"
    assert _nat_lines(text, svc)[1:] == [
        f'-A {svc} -m comment --comment "ns5/svc5:p80 -> 10.180.0.3:80" -m recent --name {sep} '
        f"--rcheck --seconds 10800 --reap -j {sep}",
        f'-A {svc} -m comment --comment "ns5/svc5:p80 -> 10.180.0.3:80" -j {sep}',
    ]
    assert _nat_lines(text, sep)[1] == (
        f"-A {sep} -m comment --comment ns5/svc5:p80 -m recent --name {sep} --set "
        "-m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80")


def _dnat_targets(text: str) -> list[str]:
    return sorted(ln.split()[-1] for ln in text.splitlines() if "--to-destination" in ln)


def test_terminating_endpoints_are_excluded_while_any_is_ready() -> None:
    """Not-ready terminating endpoints leave the rotation; serving terminating ones are only
    used when no endpoint is ready (CategorizeEndpoints); not serving ones never."""
    svcs = [service("ns", "web", "10.96.0.20", [port("", 80)])]
    ready = endpoint("10.244.1.2", ready=True)
    leaving = endpoint("10.244.1.3", ready=False, serving=True, terminating=True)
    gone = endpoint("10.244.1.4", ready=False, serving=False, terminating=True)
    unready = endpoint("10.244.1.5", ready=False, serving=False)

    def dnats(*eps: dict[str, object]) -> list[str]:
        slices = [endpoint_slice("ns", "web", list(eps), [port("", 8080)])]
        return _dnat_targets(build(*maps(svcs, slices), OPTS).text)

    assert dnats(ready, leaving, gone, unready) == ["10.244.1.2:8080"]
    assert dnats(leaving, gone, unready) == ["10.244.1.3:8080"]
    rules = build(*maps(svcs, [endpoint_slice("ns", "web", [gone, unready],
                                               [port("", 8080)])]), OPTS)
    assert _dnat_targets(rules.text) == []
    assert '--comment "ns/web has no endpoints"' in rules.text


def test_named_ports_resolve_through_the_slices_ports() -> None:
    """A Service's ports are matched to the slice's ports by name; the DNAT port is the
    slice's (the pod's resolved targetPort), not the service port."""
    svcs = [service("ns", "app", "10.96.0.30",
                    [port("http", 80, targetPort="web"), port("metrics", 9090)])]
    slices = [endpoint_slice("ns", "app", [endpoint("10.244.2.7")],
                             [port("http", 8080), port("metrics", 9102)])]
    text = build(*maps(svcs, slices), OPTS).text
    assert _dnat_targets(text) == ["10.244.2.7:8080", "10.244.2.7:9102"]
    assert '"ns/app:http cluster IP" -m tcp -p tcp -d 10.96.0.30 --dport 80 -j' in text
    assert '"ns/app:metrics cluster IP" -m tcp -p tcp -d 10.96.0.30 --dport 9090 -j' in text


def test_headless_and_external_name_services_get_no_rules() -> None:
    svcs = [service("ns", "db", "None", [port("", 5432)]),
            service("ns", "ext", "", [port("", 80)], type="ExternalName",
                    externalName="example.com")]
    rules = build(*maps(svcs, []), OPTS)
    assert rules.services == 0
    assert "ns/" not in rules.text


def test_nodeport_without_endpoints_rejects_in_external_services() -> None:
    svcs = [service("ns", "np", "10.96.0.40", [port("", 80, nodePort=30080)], type="NodePort")]
    text = build(*maps(svcs, []), OPTS).text
    assert ('-A KUBE-EXTERNAL-SERVICES -m comment --comment "ns/np has no endpoints" '
            "-m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30080 -j REJECT") in text
    assert "-A KUBE-NODEPORTS" not in text


def test_external_traffic_policy_local_uses_only_local_endpoints() -> None:
    """externalTrafficPolicy Local: NodePort traffic goes to KUBE-SVL (this node's
    endpoints) without masquerade, the cluster IP still to KUBE-SVC (all endpoints)."""
    svcs = [service("ns", "loc", "10.96.0.50", [port("", 80, nodePort=30050)],
                    type="NodePort", externalTrafficPolicy="Local")]
    slices = [endpoint_slice("ns", "loc", [endpoint("10.244.1.2", node="node1"),
                                           endpoint("10.244.2.2", node="node2")],
                             [port("", 80)])]
    text = build(*maps(svcs, slices, node="node1"), OPTS).text
    svl = "KUBE-SVL-" + port_proto_hash("ns/loc", "tcp")
    ext = "KUBE-EXT-" + port_proto_hash("ns/loc", "tcp")
    assert [ln.split()[-1] for ln in _nat_lines(text, svl)] == [
        endpoint_chain(ServicePortName("ns", "loc"), "10.244.1.2:80")]
    assert _nat_lines(text, ext)[-1] == f"-A {ext} -j {svl}"
    assert not any("masquerade traffic for" in ln for ln in _nat_lines(text, ext))


def test_local_policies_without_local_endpoints_drop_and_are_counted() -> None:
    """No endpoint on this node: NodePort traffic to an externalTrafficPolicy Local service
    and cluster IP traffic to an internalTrafficPolicy Local one are dropped in filter
    ("has no local endpoints"), and counted for sync_proxy_rules_no_local_endpoints_total."""
    svcs = [service("ns", "ext", "10.96.0.60", [port("", 80, nodePort=30060)],
                    type="NodePort", externalTrafficPolicy="Local"),
            service("ns", "int", "10.96.0.61", [port("", 80)], internalTrafficPolicy="Local")]
    slices = [endpoint_slice("ns", name, [endpoint("10.244.2.2", node="node2")],
                             [port("", 80)]) for name in ("ext", "int")]
    rules = build(*maps(svcs, slices, node="node1"), OPTS)
    assert (rules.no_local_internal, rules.no_local_external) == (1, 1)
    assert ('-A KUBE-EXTERNAL-SERVICES -m comment --comment "ns/ext has no local endpoints" '
            "-m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30060 -j DROP") in rules.text
    assert ('-A KUBE-SERVICES -m comment --comment "ns/int has no local endpoints" '
            "-m tcp -p tcp -d 10.96.0.61 --dport 80 -j DROP") in rules.text


def test_partial_sync_writes_only_changed_services_and_deletes_stale_chains() -> None:
    """With ``changed``, unchanged services' chains are left out (they stay as they are in
    the kernel) but still count as wanted; a chain that exists and is no longer wanted is
    flushed and deleted; the top-level chains are always rewritten."""
    svcs = [service("a", "one", "10.96.0.1", [port("", 80)]),
            service("b", "two", "10.96.0.2", [port("", 80)])]
    slices = [endpoint_slice("a", "one", [endpoint("10.244.0.1")], [port("", 80)]),
              endpoint_slice("b", "two", [endpoint("10.244.0.2")], [port("", 80)])]
    full = build(*maps(svcs, slices), OPTS)
    one_svc = "KUBE-SVC-" + port_proto_hash("a/one", "tcp")
    two_svc = "KUBE-SVC-" + port_proto_hash("b/two", "tcp")
    old_sep = endpoint_chain(ServicePortName("b", "two"), "10.244.0.2:80")
    slices[1] = endpoint_slice("b", "two", [endpoint("10.244.0.3")], [port("", 80)])
    new_sep = endpoint_chain(ServicePortName("b", "two"), "10.244.0.3:80")
    part = build(*maps(svcs, slices), OPTS, changed={("b", "two")},
                 existing_chains=full.active_nat_chains | {"CNI-foo", "KUBE-MARK-MASQ"})
    chains = {ln[1:].split()[0] for ln in part.text.splitlines() if ln.startswith(":")}
    assert one_svc not in chains
    assert {two_svc, new_sep, old_sep, "KUBE-SERVICES"} <= chains
    assert f"-X {old_sep}" in part.text.splitlines()
    assert "-X CNI-foo" not in part.text
    assert "-X KUBE-MARK-MASQ" not in part.text
    assert one_svc in part.active_nat_chains
    assert old_sep not in part.active_nat_chains
    assert f"-j {one_svc}" in part.text  # KUBE-SERVICES still jumps to the untouched chain
    assert part.nat_rules == full.nat_rules
    assert part.nat_rules_written < full.nat_rules


def test_a_partial_sync_counts_the_rules_it_leaves_as_a_full_one_writes_them() -> None:
    """The nat rule count (kubeproxy_sync_proxy_rules_iptables_total) does not depend on
    which services were written: NodePort, affinity, Local policy, no endpoints."""
    svcs = [service("a", "np", "10.96.0.1", [port("", 80, nodePort=30001)], type="NodePort"),
            service("b", "aff", "10.96.0.2", [port("", 80)], sessionAffinity="ClientIP"),
            service("c", "loc", "10.96.0.3", [port("", 80, nodePort=30003)],
                    type="NodePort", externalTrafficPolicy="Local"),
            service("d", "none", "10.96.0.4", [port("", 80)])]
    slices = [endpoint_slice(ns, name, [endpoint("10.244.1.2", node="node1"),
                                        endpoint("10.244.2.2", node="node2")], [port("", 80)])
              for ns, name in (("a", "np"), ("b", "aff"), ("c", "loc"))]
    full = build(*maps(svcs, slices), OPTS)
    nothing = build(*maps(svcs, slices), OPTS, changed=set())
    assert nothing.nat_rules == full.nat_rules
    assert nothing.active_nat_chains == full.active_nat_chains
    assert "KUBE-SEP-" not in nothing.text


def test_large_clusters_drop_endpoint_comments() -> None:
    """Past 1000 endpoints, endpoint rules carry no comment (largeClusterMode)."""
    svcs = [service("ns", f"s{i}", f"10.96.1.{i}", [port("", 80)]) for i in range(101)]
    slices = [endpoint_slice("ns", f"s{i}", [endpoint(f"10.244.{i}.{j}") for j in range(10)],
                             [port("", 80)]) for i in range(101)]
    text = build(*maps(svcs, slices), OPTS).text
    sep_rules = [ln for ln in text.splitlines() if ln.startswith("-A KUBE-SEP-")]
    assert len(sep_rules) == 2020
    assert not any("--comment" in ln for ln in sep_rules)
