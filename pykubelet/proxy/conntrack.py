"""Stale UDP conntrack entries, removed after a sync (pkg/proxy/conntrack/cleanup.go).

UDP has no connection to end: a client that keeps sending from one port stays on the
endpoint its first datagram was DNATed to, through the conntrack entry, even after that
endpoint left the rules (a DNS server pod replaced, and every lookup from a long-lived
resolver socket goes nowhere). As upstream's CleanStaleEntries: every UDP entry whose
original destination is a service's IP and port (or a NodePort) and whose reply source is
not one of that service's serving endpoints is deleted; for a service without endpoints
that is every entry to it. Read and deleted over netlink (pyroute2), in the proxier's
network namespace.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykubelet.proxy.serviceport import EndpointInfo, ServicePortInfo, ServicePortName

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Flow:
    """The parts of a conntrack entry the cleanup decides on (``entry``: the entry itself)."""

    orig_dst: str
    orig_dport: int
    reply_src: str
    entry: Any = field(default=None, compare=False)


def stale_udp_flows(flows: Iterable[Flow], services: Mapping[ServicePortName, ServicePortInfo],
                    endpoints: Mapping[ServicePortName, list[EndpointInfo]]) -> list[Flow]:
    """The UDP flows (all given flows are UDP) to delete, as CleanStaleEntries picks them."""
    by_ip_port: dict[tuple[str, int], set[str]] = {}
    by_node_port: dict[int, set[str]] = {}
    for name, svc in services.items():
        if svc.protocol != "udp":
            continue
        serving: set[str] = {e.ip for e in endpoints.get(name, ()) if e.serving}
        by_ip_port[(svc.cluster_ip, svc.port)] = serving
        for ip in svc.external_ips:
            by_ip_port[(ip, svc.port)] = serving
        if svc.node_port:
            by_node_port[svc.node_port] = serving
    out = []
    for f in flows:
        to_ip = by_ip_port.get((f.orig_dst, f.orig_dport))
        if to_ip is not None and f.reply_src not in to_ip:
            out.append(f)
            continue
        to_node_port = by_node_port.get(f.orig_dport)
        if to_node_port is not None and f.reply_src not in to_node_port:
            out.append(f)
    return out


class ConntrackCleaner:
    """Deletes stale UDP entries in one network namespace (``netns``: a path, or this one)."""

    def __init__(self, netns: str = "") -> None:
        self.netns = netns

    def _udp_flows(self, ct: Any) -> Iterator[Flow]:
        for entry in ct.dump_entries():
            orig, reply = entry.tuple_orig, entry.tuple_reply
            if orig.proto == socket.IPPROTO_UDP and orig.family == socket.AF_INET:
                yield Flow(str(orig.daddr), int(orig.dport or 0), str(reply.saddr), entry)

    def clean(self, services: Mapping[ServicePortName, ServicePortInfo],
              endpoints: Mapping[ServicePortName, list[EndpointInfo]]) -> int:
        """Delete the stale flows; how many were deleted. Nothing to do without UDP
        services (no dump of the conntrack table then)."""
        if not any(s.protocol == "udp" for s in services.values()):
            return 0
        from pyroute2.conntrack import Conntrack

        deleted = 0
        # pyroute2 opens its socket lazily, on its own loop: entering the namespace around
        # the constructor would read the host's table; its netns argument opens it there
        ct = Conntrack(netns=self.netns) if self.netns else Conntrack()
        try:
            for flow in stale_udp_flows(list(self._udp_flows(ct)), services, endpoints):
                try:
                    ct.delete(flow.entry)
                    deleted += 1
                except Exception as exc:  # gone meanwhile (it timed out): fine
                    log.debug("conntrack delete %s: %s", flow, exc)
        finally:
            ct.close()
        if deleted:
            log.info("deleted %d stale UDP conntrack entries", deleted)
        return deleted
