"""The ``kube-dns`` Service over an in-process control plane (issue 20, item 3): kept in
kube-system at the range's tenth address with kubeadm's ports and labels, its Endpoints
and EndpointSlice listing every live DNS server (a stale one leaves after the TTL, a
clean stop at once), and the service-IP repair left to the ``kubernetes`` Service."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from conftest import Cluster

from pykubelet.controlplane.controllers.kubedns import (
    LABELS,
    LEASE_PREFIX,
    NAME,
    NAMESPACE,
    KubeDNSService,
)
from pykubelet.controlplane.controllers.kubernetesservice import LEASE_TTL_S

SVC = f"/api/v1/namespaces/{NAMESPACE}/services/{NAME}"
EP = f"/api/v1/namespaces/{NAMESPACE}/endpoints/{NAME}"
ES = (f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices"
      f"?labelSelector=kubernetes.io/service-name={NAME}")
DNS_PORTS = [{"name": "dns", "port": 53, "protocol": "UDP"},
             {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]


def _run(cluster: Cluster, coro: Any) -> Any:
    loop = cluster.cp.loop
    assert isinstance(loop, asyncio.AbstractEventLoop)
    return asyncio.run_coroutine_threadsafe(coro, loop).result(10)


def _endpoint_ips(cluster: Cluster) -> list[str]:
    code, ep = cluster.admin("GET", EP)
    assert code == 200, ep
    return sorted(a["ip"] for s in ep.get("subsets") or [] for a in s["addresses"])


def test_kube_dns_service_lists_live_dns_servers(cluster: Cluster) -> None:
    cp = cluster.cp
    now = [2_000_000.0]
    kd = KubeDNSService(cp, "10.250.0.11", clock=lambda: now[0])
    assert not kd.repairs

    async def once() -> None:
        await kd.ensure_service()
        await kd.renew()
        await kd.reconcile()

    async def other_server(ip: str, at: float) -> None:
        await cp.registry.storage.create(LEASE_PREFIX + ip, orjson.dumps(
            {"ip": ip, "port": 53, "renewTime": at}))

    async def stop() -> None:
        await kd.remove_lease()
        await kd.reconcile()

    _run(cluster, other_server("10.250.1.11", now[0]))
    _run(cluster, once())
    code, svc = cluster.admin("GET", SVC)
    assert code == 200, svc
    assert svc["spec"]["clusterIP"] == "10.96.0.10"
    assert svc["metadata"]["labels"] == LABELS
    assert svc["spec"]["ports"] == [{**p, "targetPort": 53} for p in DNS_PORTS]
    assert "selector" not in svc["spec"]
    assert _endpoint_ips(cluster) == ["10.250.0.11", "10.250.1.11"]
    code, ep = cluster.admin("GET", EP)
    assert ep["subsets"][0]["ports"] == DNS_PORTS
    code, es = cluster.admin("GET", ES)
    assert code == 200, es
    assert [sorted(e["addresses"][0] for e in s["endpoints"]) for s in es["items"]] == \
        [["10.250.0.11", "10.250.1.11"]]
    assert es["items"][0]["ports"] == DNS_PORTS
    # the other server stops renewing: it leaves after the TTL
    now[0] += LEASE_TTL_S + 1
    _run(cluster, once())
    assert _endpoint_ips(cluster) == ["10.250.0.11"]
    # a clean stop leaves them at once
    _run(cluster, stop())
    assert _endpoint_ips(cluster) == []


def test_run_cluster_dns_serves_and_lists_itself_until_stopped(cluster: Cluster) -> None:
    """The controller end to end on loopback (port 0: no root): the DNS answers from the
    API's Services, lists itself in kube-dns's endpoints, and leaves them when cancelled."""
    import dns.message
    import dns.query
    import dns.rdatatype

    from pykubelet.controlplane.controllers.kubedns import run_cluster_dns

    opts = cluster.cp.options
    saved = (opts.cluster_dns, opts.cluster_dns_address, opts.cluster_dns_port)
    opts.cluster_dns, opts.cluster_dns_address, opts.cluster_dns_port = True, "127.0.0.1", 0
    loop = cluster.cp.loop
    assert isinstance(loop, asyncio.AbstractEventLoop)
    holder: list[asyncio.Task[None]] = []

    async def start() -> None:
        holder.append(asyncio.get_running_loop().create_task(run_cluster_dns(cluster.cp)))

    async def stop() -> None:
        for t in holder:
            t.cancel()
        await asyncio.gather(*holder, return_exceptions=True)

    _run(cluster, start())
    try:
        end = time.monotonic() + 20
        while "127.0.0.1" not in _endpoint_ips(cluster):
            assert time.monotonic() < end, "the DNS never reached kube-dns's endpoints"
            assert not holder[0].done(), holder[0]
            time.sleep(0.05)
        _, ep = cluster.admin("GET", EP)
        port = ep["subsets"][0]["ports"][0]["port"]
        assert port != 53  # the bound port, which the endpoints must name
        query = dns.message.make_query("kube-dns.kube-system.svc.cluster.local",
                                       dns.rdatatype.A)
        answer = dns.query.udp(query, "127.0.0.1", port=port, timeout=2)
        assert [r.address for rrset in answer.answer for r in rrset] == ["10.96.0.10"]
    finally:
        t0 = time.monotonic()
        _run(cluster, stop())
        took = time.monotonic() - t0
        opts.cluster_dns, opts.cluster_dns_address, opts.cluster_dns_port = saved
    assert "127.0.0.1" not in _endpoint_ips(cluster)
    # the client closed first ends the informers' watches at once: each informer's stop
    # waited 2 s for a watch that no event ended (every control plane's SIGTERM paid ~4 s)
    assert took < 1.5, took
