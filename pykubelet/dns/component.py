"""Cluster DNS as one component: the zone kept from watches (ZoneKeeper) served over UDP
and TCP on one address (ServerThread), other names forwarded to the node's resolvers.
What an agent or control plane starts to serve the ``kube-dns`` Service's endpoints."""

from __future__ import annotations

from typing import Any

from pykubelet.dns.records import build_zone
from pykubelet.dns.server import (
    Answerer,
    DNSServer,
    ServerThread,
    resolv_conf_upstreams,
)
from pykubelet.dns.watch import ZoneKeeper

SYNC_TIMEOUT_S = 60.0


class ClusterDNS:
    """start() returns once the zone is built from the API and the address serves."""

    def __init__(self, client: Any, host: str, port: int = 53, *,
                 domain: str = "cluster.local", resolv_conf: str = "/etc/resolv.conf",
                 upstreams: list[tuple[str, int]] | None = None) -> None:
        self.answerer = Answerer(build_zone([], [], domain))
        self.keeper = ZoneKeeper(client, self.answerer, domain)
        ups = upstreams if upstreams is not None \
            else resolv_conf_upstreams(resolv_conf, exclude=[host])
        self.thread = ServerThread(DNSServer(self.answerer, ups), host, port)

    @property
    def port(self) -> int:
        return self.thread.port

    def start(self, sync_timeout: float = SYNC_TIMEOUT_S) -> ClusterDNS:
        self.keeper.start()
        if not self.keeper.wait_synced(sync_timeout):
            self.keeper.stop()
            raise TimeoutError("cluster DNS: Services and EndpointSlices not listed in "
                               f"{sync_timeout:g} s")
        try:
            self.thread.start()
        except Exception:
            self.keeper.stop()
            raise
        return self

    def stop(self) -> None:
        self.thread.stop()
        self.keeper.stop()
