"""The cluster DNS where the control plane runs, and the ``kube-dns`` Service in
``kube-system`` that points at it (kubeadm's CoreDNS addon, served here by
:class:`pykubelet.dns.component.ClusterDNS` in the control plane's process).

Each control plane with ``cluster_dns`` serves the zone on its DNS address, port 53 UDP
and TCP, and keeps a lease record of that address; the ``kube-dns`` Service (ClusterIP
the range's tenth address, 10.96.0.10 by default, in the allocator's static band) has no
selector, and its Endpoints and EndpointSlice list every live DNS server, as the
``kubernetes`` Service lists every live API server (the same reconciler,
:class:`KubernetesService`). A DNS address that cannot be bound is logged and tried again;
it never stops the control plane.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykubelet.api.services import LABEL_SERVICE_NAME
from pykubelet.controlplane.controllers.kubernetesservice import SKIP_MIRROR, KubernetesService

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]

NAME = "kube-dns"
NAMESPACE = "kube-system"
LEASE_PREFIX = "/registry/dnsleases/"
DNS_PORT = 53
CLUSTER_IP_INDEX = 9  # the range's tenth address: 10.96.0.10 in 10.96.0.0/12
LABELS = {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
          "kubernetes.io/name": "CoreDNS"}
RETRY_S = 10.0


def _ports(port: int, with_target: bool) -> list[Obj]:
    out: list[Obj] = [{"name": "dns", "port": port, "protocol": "UDP"},
                      {"name": "dns-tcp", "port": port, "protocol": "TCP"}]
    if with_target:
        for p in out:
            p["targetPort"] = port
    return out


def service_body(cluster_ip: str) -> Obj:
    """kubeadm's kube-dns Service, less the selector (the endpoints are kept here) and
    the metrics port (nothing serves it)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": dict(LABELS),
                         "annotations": {"prometheus.io/port": "9153",
                                         "prometheus.io/scrape": "true"}},
            "spec": {"type": "ClusterIP", "clusterIP": cluster_ip, "sessionAffinity": "None",
                     "ports": _ports(DNS_PORT, True)}}


class KubeDNSService(KubernetesService):
    """This control plane's DNS server in the ``kube-dns`` Service's endpoints."""

    name = NAME
    namespace = NAMESPACE
    lease_prefix = LEASE_PREFIX
    repairs = False

    def __init__(self, cp: ControlPlane, address: str, port: int = DNS_PORT,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(cp, clock)
        self.address, self.dns_port = address, port

    @property
    def ip(self) -> str:
        return self.address

    @property
    def port(self) -> int:
        return self.dns_port

    def wanted_service(self) -> Obj:
        return service_body(self.strategy.ip_range.address(CLUSTER_IP_INDEX))

    def wanted_endpoints(self, ips: list[str]) -> Obj:
        body: Obj = {"apiVersion": "v1", "kind": "Endpoints",
                     "metadata": {"name": NAME, "namespace": NAMESPACE,
                                  "labels": {SKIP_MIRROR: "true"}}}
        if ips:
            body["subsets"] = [{"addresses": [{"ip": ip} for ip in ips],
                                "ports": _ports(self.dns_port, False)}]
        return body

    def wanted_slice(self, ips: list[str]) -> Obj:
        return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": NAME, "namespace": NAMESPACE,
                             "labels": {LABEL_SERVICE_NAME: NAME}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}
                              for ip in ips],
                "ports": _ports(self.dns_port, False)}


def _client(cp: ControlPlane) -> Any:
    """A client of this control plane with the admin's token (the DNS's informers)."""
    from pykubelet.client.rest import RESTClient

    assert cp.tokens is not None
    return RESTClient(cp.local_url, token=cp.tokens.admin, ca_pem=cp.pki.ca_pem,
                      user_agent="pykubelet-dns")


async def _start_dns(cp: ControlPlane, address: str, port: int) -> tuple[Any, Any]:
    """A started ClusterDNS on ``address:port`` and its client; its start (listing,
    binding) runs off the event loop, and one started after this task was cancelled is
    stopped."""
    from pykubelet.dns.component import ClusterDNS

    client = _client(cp)
    try:
        dns = ClusterDNS(client, address, port)
    except Exception:
        client.close()
        raise
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(None, dns.start)
    try:
        await asyncio.shield(fut)
    except asyncio.CancelledError:
        # the start ends now rather than after its sync timeout (asyncio.run's exit waits
        # for the executor's threads: the process outlived SIGTERM until SIGKILLed)
        client.close()
        dns.keeper.interrupt()
        fut.add_done_callback(lambda f: _after_cancelled_start(f, dns, client))
        raise
    except BaseException:
        client.close()
        raise
    return dns, client


def _after_cancelled_start(fut: asyncio.Future[Any], dns: Any, client: Any) -> None:
    """A start whose task was cancelled: stopped once it returns; its error (the
    interrupted wait) is the expected end, taken so asyncio does not log it."""
    if fut.cancelled():
        return
    if fut.exception() is None:
        _stop_dns(dns, client)
    else:
        client.close()


def _stop_dns(dns: Any, client: Any) -> None:
    """The client first: closing it shuts the informers' open watches, so their threads
    end at once (each informer's stop otherwise waits 2 s on a watch no event ends)."""
    client.close()
    dns.stop()


async def run_cluster_dns(cp: ControlPlane) -> None:
    """Serve the cluster DNS and keep it in ``kube-dns``'s endpoints, when the control
    plane's options ask for it; a clean stop takes it out of the endpoints."""
    opts = cp.options
    if not opts.cluster_dns:
        return
    address = opts.cluster_dns_address or cp.advertise_address()
    while True:
        try:
            dns, client = await _start_dns(cp, address, opts.cluster_dns_port)
            break
        except (OSError, TimeoutError) as exc:
            log.warning("cluster DNS on %s:%d: %s; trying again in %g s", address,
                        opts.cluster_dns_port, exc, RETRY_S)
            await asyncio.sleep(RETRY_S)
    log.info("cluster DNS serving on %s:%d", address, dns.port)
    try:
        await KubeDNSService(cp, address, dns.port).run()
    finally:
        with contextlib.suppress(Exception):
            await asyncio.get_running_loop().run_in_executor(None, _stop_dns, dns, client)
