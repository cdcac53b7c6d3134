"""Which UDP conntrack flows are stale after a sync (conntrack/cleanup_test.go's cases):
to a service IP or NodePort, answered by an address that is no serving endpoint of it."""

from __future__ import annotations

from proxy_builders import endpoint, endpoint_slice, maps, port, service

from pykubelet.proxy.conntrack import Flow, stale_udp_flows


def test_stale_flows_are_those_not_answered_by_a_serving_endpoint() -> None:
    svcs = [service("kube-system", "dns", "10.96.0.10",
                    [port("dns", 53, protocol="UDP", nodePort=30053)], type="NodePort"),
            service("ns", "empty", "10.96.0.11", [port("", 53, protocol="UDP")]),
            service("ns", "tcp", "10.96.0.12", [port("", 53)])]
    slices = [endpoint_slice("kube-system", "dns",
                             [endpoint("10.244.1.2"),
                              endpoint("10.244.1.3", ready=False, serving=True,
                                       terminating=True),
                              endpoint("10.244.1.4", ready=False, serving=False)],
                             [port("dns", 5353, protocol="UDP")])]
    flows = [
        Flow("10.96.0.10", 53, "10.244.1.2"),  # to a ready endpoint: kept
        Flow("10.96.0.10", 53, "10.244.1.3"),  # serving (terminating): kept
        Flow("10.96.0.10", 53, "10.244.1.4"),  # not serving: stale
        Flow("10.96.0.10", 53, "10.244.9.9"),  # an endpoint gone: stale
        Flow("10.250.0.11", 30053, "10.244.9.9"),  # the NodePort, to one gone: stale
        Flow("10.250.0.11", 30053, "10.244.1.2"),  # the NodePort, to a ready one: kept
        Flow("10.96.0.11", 53, "10.96.0.11"),  # a service without endpoints: stale
        Flow("10.96.0.12", 53, "10.244.9.9"),  # a TCP service's port: not ours to judge
        Flow("8.8.8.8", 53, "8.8.8.8"),  # not a service: kept
    ]
    stale = stale_udp_flows(flows, *maps(svcs, slices))
    assert stale == [flows[2], flows[3], flows[4], flows[6]]
