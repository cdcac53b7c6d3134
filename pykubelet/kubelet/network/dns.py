"""Each pod's DNS settings, as upstream's kubelet forms them (pkg/kubelet/network/dns/dns.go).

The kubelet, not the runtime, decides a pod's resolv.conf: it sends a CRI DNSConfig
(servers, searches, options) and the runtime writes it. ``dnsPolicy`` picks the base:
ClusterFirst (and ClusterFirstWithHostNet) → the cluster DNS servers, searches
``<ns>.svc.<domain> svc.<domain> <domain>`` then the node's, ``ndots:5``; Default → the
node's resolv.conf (the kubelet's ``resolvConf``); None → nothing. A hostNetwork pod
with ClusterFirst gets Default, and so does every ClusterFirst pod when the kubelet has
no ``clusterDNS`` (with the MissingClusterDNS event). The pod's ``dnsConfig`` is then
merged in and the result cut to libc's limits (3 nameservers, 32 search domains of at
most 253 characters, a 2048-character search line), with a DNSConfigForming event.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import (
    DNS_CLUSTER_FIRST,
    DNS_CLUSTER_FIRST_WITH_HOST_NET,
    DNS_DEFAULT,
    DNS_NONE,
    Pod,
    PodDNSConfigOption,
)
from pykubelet.kubelet.events.recorder import WARNING, EventRecorder

log = logging.getLogger(__name__)

# k8s.io/kubernetes/pkg/apis/core/validation: limits of libc's resolver
MAX_DNS_NAMESERVERS = 3
MAX_DNS_SEARCH_PATHS = 32
MAX_DNS_SEARCH_LIST_CHARS = 2048
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DEFAULT_DNS_OPTIONS = ("ndots:5",)
DEFAULT_RESOLV_CONF = "/etc/resolv.conf"

POD_DNS_CLUSTER, POD_DNS_HOST, POD_DNS_NONE = "cluster", "host", "none"


def omit_duplicates(items: Iterable[str]) -> list[str]:
    """The items in order, each once."""
    return list(dict.fromkeys(items))


def _append_options(options: list[str], new: Iterable[str]) -> list[str]:
    """appendOptions: an option named again replaces the earlier one (kept in its place)."""
    by_name = {o.split(":", 1)[0]: o for o in options}
    for o in new:
        by_name[o.split(":", 1)[0]] = o
    return list(by_name.values())


def parse_resolv_conf(text: str) -> tuple[list[str], list[str], list[str]]:
    """parseResolvConf: nameservers, the last ``search`` line (trailing dots trimmed, "."
    dropped) and the options merged by name."""
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    for line in text.splitlines():
        trimmed = line.strip()
        if trimmed.startswith("#"):
            continue
        fields = trimmed.split()
        if not fields:
            continue
        if fields[0] == "nameserver" and len(fields) >= 2:
            servers.append(fields[1])
        elif fields[0] == "search":
            searches = [s.removesuffix(".") for s in fields[1:] if s != "."]
        elif fields[0] == "options":
            options = _append_options(options, fields[1:])
    return servers, searches, options


def pod_dns_type(pod: Pod) -> str:
    """getPodDNSType: which base a pod's DNS settings start from."""
    policy = pod.spec.dns_policy
    if policy == DNS_NONE:
        return POD_DNS_NONE
    if policy == DNS_CLUSTER_FIRST_WITH_HOST_NET:
        return POD_DNS_CLUSTER
    if policy == DNS_CLUSTER_FIRST and not pod.spec.host_network:
        return POD_DNS_CLUSTER
    if policy in (DNS_CLUSTER_FIRST, DNS_DEFAULT):
        return POD_DNS_HOST
    # the API rejects other policies; upstream logs and uses ClusterFirst
    log.error("Failed to get DNS type for pod: invalid DNSPolicy=%s. Falling back to "
              "DNSClusterFirst policy.", policy)
    return POD_DNS_CLUSTER


def merge_dns_options(existing: list[str], extra: list[PodDNSConfigOption]) -> list[str]:
    """mergeDNSOptions: the pod's options replace the base's of the same name."""
    by_name: dict[str, str] = {}
    for op in existing:
        name, _, value = op.partition(":")
        by_name[name] = value
    for o in extra:
        by_name[o.name] = o.value or ""
    return [f"{n}:{v}" if v else n for n, v in by_name.items()]


def _pod_ref(pod: Pod) -> str:
    """format.Pod: name_namespace(uid)."""
    return f"{pod.name}_{pod.namespace}({pod.uid})"


class Configurer:
    """The kubelet's DNS configurer: its clusterDNS, clusterDomain and resolvConf."""

    def __init__(self, cluster_dns: list[str] | None = None,
                 cluster_domain: str = "cluster.local",
                 resolver_config: str = DEFAULT_RESOLV_CONF,
                 node_ips: list[str] | None = None,
                 recorder: EventRecorder | None = None) -> None:
        self.cluster_dns = list(cluster_dns or [])
        self.cluster_domain = cluster_domain
        self.resolver_config = resolver_config
        self.node_ips = list(node_ips or [])
        self.recorder = recorder

    def _event(self, pod: Pod, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(pod, WARNING, reason, message)

    def host_dns(self) -> tuple[list[str], list[str], list[str]]:
        """getHostDNSConfig: the node's resolv.conf; none when resolvConf is ""; an
        unreadable file is an error (no sandbox starts with a guessed resolver)."""
        if not self.resolver_config:
            return [], [], []
        return parse_resolv_conf(Path(self.resolver_config).read_text())

    def cluster_searches(self, host_search: list[str], pod: Pod) -> list[str]:
        """generateSearchesForDNSClusterFirst."""
        if not self.cluster_domain:
            return host_search
        d = self.cluster_domain
        return omit_duplicates([f"{pod.namespace}.svc.{d}", f"svc.{d}", d, *host_search])

    def get_pod_dns(self, pod: Pod) -> pb.DNSConfig:
        """GetPodDNS: the DNSConfig the sandbox of ``pod`` gets."""
        servers, searches, options = self.host_dns()
        kind = pod_dns_type(pod)
        if kind == POD_DNS_NONE:
            servers, searches, options = [], [], []
        elif kind == POD_DNS_CLUSTER and self.cluster_dns:
            # the cluster DNS server is the pod's only one: it forwards the rest itself
            servers = list(self.cluster_dns)
            searches = self.cluster_searches(searches, pod)
            options = list(DEFAULT_DNS_OPTIONS)
        else:
            if kind == POD_DNS_CLUSTER:
                msg = (f"kubelet does not have ClusterDNS IP configured and cannot create Pod "
                       f'using "{DNS_CLUSTER_FIRST}" policy. Falling back to "{DNS_DEFAULT}" '
                       "policy.")
                log.warning(msg)
                self._event(pod, "MissingClusterDNS", f'pod: "{_pod_ref(pod)}". {msg}')
            if not self.resolver_config:
                # no resolv.conf: "the nameserver on the local machine", no search
                servers = ["::1" if ":" in ip else "127.0.0.1" for ip in self.node_ips] \
                    or ["127.0.0.1"]
                searches = ["."]
        cfg = pod.spec.dns_config
        if cfg is not None:
            servers = omit_duplicates([*servers, *cfg.nameservers])
            searches = omit_duplicates([*searches, *cfg.searches])
            options = merge_dns_options(options, cfg.options)
        return pb.DNSConfig(servers=self.fit_nameservers(servers, pod),
                            searches=self.fit_searches(searches, pod), options=options)

    def fit_nameservers(self, servers: list[str], pod: Pod) -> list[str]:
        """formDNSNameserversFitsLimits."""
        if len(servers) <= MAX_DNS_NAMESERVERS:
            return servers
        servers = servers[:MAX_DNS_NAMESERVERS]
        msg = ("Nameserver limits were exceeded, some nameservers have been omitted, the "
               f"applied nameserver line is: {' '.join(servers)}")
        log.error(msg)
        self._event(pod, "DNSConfigForming", msg)
        return servers

    def fit_searches(self, searches: list[str], pod: Pod) -> list[str]:
        """formDNSSearchFitsLimits: at most 32 domains, none over 253 characters, a search
        line of at most 2048 characters (cut from the end)."""
        exceeded = len(searches) > MAX_DNS_SEARCH_PATHS
        searches = searches[:MAX_DNS_SEARCH_PATHS]
        kept = [s for s in searches if len(s) <= DNS1123_SUBDOMAIN_MAX_LENGTH]
        exceeded = exceeded or len(kept) != len(searches)
        searches = kept
        line = len(" ".join(searches))
        if line > MAX_DNS_SEARCH_LIST_CHARS:
            cut, cut_len = 0, 0
            for s in reversed(searches):
                cut_len += len(s) + 1
                cut += 1
                if line - cut_len <= MAX_DNS_SEARCH_LIST_CHARS:
                    break
            searches = searches[:len(searches) - cut]
            exceeded = True
        if exceeded:
            msg = ("Search Line limits were exceeded, some search paths have been omitted, "
                   f"the applied search line is: {' '.join(searches)}")
            log.error(msg)
            self._event(pod, "DNSConfigForming", msg)
        return searches
