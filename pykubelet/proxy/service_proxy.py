"""The service proxy as a part of the node agent: informers over Services and EndpointSlices
feed the change tracking of the proxier the node config's ``serviceProxy.mode`` picks
(kube-proxy's ``iptables`` or ``nftables``), and one rate-limited runner syncs the rules
(kube-proxy's ProxyServer: the config handlers, then ``syncRunner.Run()``; no polling).

The first sync waits for both lists (the proxier is initialized by them); a clean stop
removes every rule it made (the issue's contract: a node stopped cleanly leaves no rules).
"""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import CollectorRegistry

from pykubelet.client.informer import Informer
from pykubelet.client.rest import Resource, RESTClient
from pykubelet.config import ServiceProxyConfig
from pykubelet.proxy.conntrack import ConntrackCleaner
from pykubelet.proxy.iptables_restore import Iptables
from pykubelet.proxy.iptables_rules import Options
from pykubelet.proxy.metrics import ProxyMetrics
from pykubelet.proxy.nft import Nft
from pykubelet.proxy.nft_proxier import NftProxier
from pykubelet.proxy.proxier import Proxier
from pykubelet.proxy.runner import BoundedFrequencyRunner

log = logging.getLogger(__name__)

SERVICES = Resource("", "v1", "services")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices")
#: kube-proxy's informers' selector (server.go): Services another proxy implements
#: (service.kubernetes.io/service-proxy-name) and headless Services' slices are not ours
LABEL_SELECTOR = "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless"

Obj = dict[str, Any]


def make_proxier(node_name: str, config: ServiceProxyConfig,
                 metrics: ProxyMetrics | None = None, iptables: Iptables | None = None,
                 nft: Nft | None = None) -> Proxier | NftProxier:
    """The proxier ``config.mode`` names (kube-proxy's --proxy-mode), on the host's tables
    unless a test passes its own tool."""
    if config.mode == "nftables":
        options = Options(cluster_cidr=config.clusterCIDR, masquerade_all=config.masqueradeAll,
                          random_fully=True)
        tool = nft or Nft.default()
        return NftProxier(tool, node_name, options, metrics=metrics,
                          conntrack=ConntrackCleaner(tool.netns) if nft is None else None)
    ipt = iptables or Iptables()
    options = Options(cluster_cidr=config.clusterCIDR, masquerade_all=config.masqueradeAll,
                      random_fully=ipt.has_random_fully())
    return Proxier(ipt, node_name, options, metrics,
                   ConntrackCleaner(ipt.netns) if iptables is None else None)


def other_mode(mode: str, iptables: Iptables | None = None,
               nft: Nft | None = None) -> Proxier | NftProxier:
    """A proxier of the mode not in use, only to clean up after it: kube-proxy removes the
    other modes' rules at start, so switching serviceProxy.mode leaves nothing behind."""
    if mode == "nftables":
        return Proxier(iptables or Iptables())
    return NftProxier(nft or Nft.default())


class ServiceProxy:
    def __init__(self, client: RESTClient, node_name: str, config: ServiceProxyConfig,
                 registry: CollectorRegistry | None = None,
                 iptables: Iptables | None = None, nft: Nft | None = None) -> None:
        self.proxier = make_proxier(
            node_name, config, ProxyMetrics(registry) if registry is not None else None,
            iptables, nft)
        # the host's tables only (a test passing its own tools keeps the host untouched)
        self._other = (other_mode(config.mode) if iptables is None and nft is None
                       else None)
        min_period, period = config.sync_periods()
        self.runner = BoundedFrequencyRunner("service-proxy", self.proxier.sync, min_period,
                                             period)
        p = self.proxier
        self.services = self._informer(client, SERVICES, "proxy-services", p.on_service,
                                       p.set_services)
        self.slices = self._informer(client, ENDPOINT_SLICES, "proxy-endpointslices",
                                     p.on_endpoint_slice, p.set_endpoint_slices)

    def _informer(self, client: RESTClient, resource: Resource, name: str, on_change: Any,
                  on_set: Any) -> Informer:
        """One resource's informer into the proxier (kube-proxy's ServiceConfig and
        EndpointSliceConfig): each change as (old, new), a relist as the whole set."""
        return Informer(
            client, resource, name=name, label_selector=LABEL_SELECTOR,
            on_add=lambda o: self._changed(on_change, None, o),
            on_update=lambda old, o: self._changed(on_change, old, o),
            on_delete=lambda o: self._changed(on_change, o, None),
            on_sync=lambda items: self._synced(on_set, items))

    def _changed(self, handler: Any, old: Obj | None, new: Obj | None) -> None:
        handler(old, new)
        if self.proxier.initialized:
            self.runner.run()

    def _synced(self, handler: Any, items: list[Obj]) -> None:
        handler(items)
        if self.proxier.initialized:
            self.proxier.force_full_sync()  # a relist: write everything again
            self.runner.run()

    def start(self) -> None:
        if self._other is not None:
            try:
                self._other.cleanup()
            except Exception as exc:  # a missing tool: nothing of that mode can be there
                log.warning("service proxy: the other mode's rules not cleaned up: %s", exc)
        self.runner.start()
        self.services.start()
        self.slices.start()

    def stop(self, clean: bool = True) -> None:
        """Stop watching and syncing; with ``clean``, remove every rule made."""
        self.services.stop()
        self.slices.stop()
        self.runner.stop()
        if clean and not self.proxier.cleanup():
            log.warning("service proxy: some rules could not be removed")
