"""One ``nft -f`` transaction for a set of service ports: kube-proxy's nftables layout, pure.

pkg/proxy/nftables/proxier.go (setupNFTables, syncProxyRules) written as a function of its
inputs. Everything lives in one table, ``ip kube-proxy``, so nothing needs a KUBE- prefix
and nothing else on the host is touched. Dispatch is by verdict maps instead of a rule per
service: ``services`` looks the packet's ``daddr . l4proto . dport`` up in ``service-ips``
(ClusterIPs, external IPs) and its ``l4proto . dport`` in ``service-nodeports``, each
element a ``goto`` to the service port's chain ``service-<hash>-<ns>/<name>/<proto>/<port>``
(``external-...`` for NodePorts and external IPs, ``local-...`` for a Local policy).

Where we differ from upstream, for the kernel's sake: upstream's service chain picks an
endpoint chain ``endpoint-<hash>-...__<ip>/<port>`` with ``numgen random mod N vmap``, and
that chain marks the endpoint's own traffic for masquerade (hairpin) and DNATs. Here only a
ClientIP-affinity service keeps those chains (each endpoint's affinity set is updated in
its chain); any other DNATs in its service chain (``dnat to numgen random mod N map { i :
ip . port }``, or ``dnat to ip:port`` for one endpoint), and the hairpin check is one rule
in ``masquerading`` over the set ``hairpin-endpoints`` of ``ip . ip`` (saddr . daddr after
DNAT: a pod sent to itself), the same packets masqueraded as upstream's per-endpoint rule.
At 1,000 services x 10 endpoints that is 1,000 chains and ~2,000 rules instead of 11,000
and 32,000: the first full sync's ``nft -f`` went from 0.95 s of CPU to 0.39 s, the text
from 4.3 MB to 1.4 MB and its build from 173 ms to 61 ms (NOTES-nft.md). An element two
services share (one pod behind both) is diffed over all services, not per service.

Services without usable endpoints are elements of
``no-endpoint-services`` / ``no-endpoint-nodeports`` (reject, or drop for a Local policy
without local endpoints), checked in filter chains before DNAT; ``cluster-ips-check``
rejects other ports of a ClusterIP. Masquerade as the iptables mode: ``mark-for-masquerade``
sets the mark, ``masquerading`` (nat postrouting) masquerades what carries it.

A full sync declares the whole table (the first one of a proxier deletes what an earlier
run left, in the same transaction, so the switch is atomic). A partial sync (``changed``
given) rewrites only the changed services' chains (add + flush + rules) and adds or
deletes just the map elements that differ from the last good sync (``previous``): upstream
does the same through knftables and its nftElementStorage. Chains no longer wanted are
flushed now and deleted by a later transaction (kernels before 6.2 keep a deleted map
element's chain referenced for a moment, so upstream waits a second).
Not here (no LoadBalancer in this cluster): firewall chains (the ``firewall-ips`` map and
``firewall-check`` stay, empty, as upstream has them), health-check node ports.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pykubelet.proxy.iptables_rules import Options
from pykubelet.proxy.serviceport import (
    EndpointInfo,
    ServicePortInfo,
    ServicePortName,
    categorize_endpoints,
    policy_chains,
)

TABLE = "kube-proxy"
FAMILY = "ip"
PREFIX = f"{FAMILY} {TABLE}"

SERVICES_CHAIN = "services"
SERVICE_IPS = "service-ips"
SERVICE_NODEPORTS = "service-nodeports"
NODEPORT_IPS = "nodeport-ips"
CLUSTER_IPS = "cluster-ips"
CLUSTER_IPS_CHECK = "cluster-ips-check"
SERVICE_ENDPOINTS_CHECK = "service-endpoints-check"
NODEPORT_ENDPOINTS_CHECK = "nodeport-endpoints-check"
NO_ENDPOINT_SERVICES = "no-endpoint-services"
NO_ENDPOINT_NODEPORTS = "no-endpoint-nodeports"
REJECT_CHAIN = "reject-chain"
FIREWALL_IPS = "firewall-ips"
FIREWALL_CHECK = "firewall-check"
MARK_MASQ = "mark-for-masquerade"
MASQUERADING = "masquerading"
HAIRPIN = "hairpin-endpoints"

#: knftables.NameLengthMax (256) minus the longest prefix ("external-" and the like, 16)
CHAIN_NAME_BASE_MAX = 256 - 16

#: (name, type, hook, priority): the base chains (filter chains see pre-DNAT addresses)
BASE_CHAINS = (
    ("filter-prerouting-pre-dnat", "filter", "prerouting", -110),
    ("filter-output-pre-dnat", "filter", "output", -110),
    ("filter-forward", "filter", "forward", 0),
    ("filter-input", "filter", "input", 0),
    ("filter-output", "filter", "output", 0),
    ("nat-output", "nat", "output", -100),
    ("nat-postrouting", "nat", "postrouting", 100),
    ("nat-prerouting", "nat", "prerouting", -100),
)
#: (source base chain, extra match, target): nftablesJumpChains, in upstream's order
JUMPS = (
    ("filter-prerouting-pre-dnat", "ct state new ", FIREWALL_CHECK),
    ("filter-forward", "ct state new ", SERVICE_ENDPOINTS_CHECK),
    ("filter-forward", "ct state new ", CLUSTER_IPS_CHECK),
    ("filter-input", "ct state new ", NODEPORT_ENDPOINTS_CHECK),
    ("filter-input", "ct state new ", SERVICE_ENDPOINTS_CHECK),
    ("filter-output", "ct state new ", SERVICE_ENDPOINTS_CHECK),
    ("filter-output-pre-dnat", "ct state new ", FIREWALL_CHECK),
    ("filter-output", "ct state new ", CLUSTER_IPS_CHECK),
    ("nat-output", "", SERVICES_CHAIN),
    ("nat-postrouting", "", MASQUERADING),
    ("nat-prerouting", "", SERVICES_CHAIN),
)
#: the regular top-level chains a full sync declares (and flushes)
TOP_CHAINS = (CLUSTER_IPS_CHECK, FIREWALL_CHECK, MARK_MASQ, MASQUERADING,
              NODEPORT_ENDPOINTS_CHECK, SERVICES_CHAIN, SERVICE_ENDPOINTS_CHECK)
#: the sets and maps whose elements the sync keeps: name -> (kind, type, comment)
CONTAINERS = {
    CLUSTER_IPS: ("set", "ipv4_addr", "Active ClusterIPs"),
    FIREWALL_IPS: ("map", "ipv4_addr . inet_proto . inet_service : verdict",
                   "destinations that are subject to LoadBalancerSourceRanges"),
    NO_ENDPOINT_NODEPORTS: ("map", "inet_proto . inet_service : verdict",
                            "vmap to drop or reject packets to service nodeports with no "
                            "endpoints"),
    NO_ENDPOINT_SERVICES: ("map", "ipv4_addr . inet_proto . inet_service : verdict",
                           "vmap to drop or reject packets to services with no endpoints"),
    SERVICE_IPS: ("map", "ipv4_addr . inet_proto . inet_service : verdict",
                  "ClusterIP, ExternalIP and LoadBalancer IP traffic"),
    SERVICE_NODEPORTS: ("map", "inet_proto . inet_service : verdict", "NodePort traffic"),
    HAIRPIN: ("set", "ipv4_addr . ipv4_addr",
              "endpoint . itself: a pod sent to itself through a service is masqueraded"),
}

ServiceKey = tuple[str, str]


@dataclass
class ServiceState:
    """What one service's ports put in the table (kept per service, so a partial sync
    diffs only the changed services against what they had)."""

    chains: set[str] = field(default_factory=set)
    affinity_sets: set[str] = field(default_factory=set)
    #: (container, key) -> (value, comment); value "" for a set's element
    elements: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    #: endpoint IPs DNATed to straight from a service chain (their hairpin is in @HAIRPIN,
    #: an element two services may share, so it is diffed over all services)
    hairpin: set[str] = field(default_factory=set)
    no_local_internal: int = 0
    no_local_external: int = 0


def hash_and_truncate(name: str) -> str:
    """hashAndTruncate: the name behind 8 characters of its own hash (unique and easy to
    tell apart), cut to what a chain name may hold."""
    digest = base64.b32encode(hashlib.sha256(name.encode()).digest()).decode()
    out = f"{digest[:8]}-{name}"
    return out[:CHAIN_NAME_BASE_MAX - 3] + "..." if len(out) > CHAIN_NAME_BASE_MAX else out


def service_chain_base(name: ServicePortName) -> str:
    """servicePortChainNameBase: ``HASH-ns/name/proto/port``; "/" never occurs in the
    parts, so it marks service chains (isServiceChainName)."""
    return hash_and_truncate(
        f"{name.namespace}/{name.name}/{name.protocol.lower()}/{name.port}")


def endpoint_chain_base(name: ServicePortName, ep: EndpointInfo) -> str:
    """servicePortEndpointChainNameBase: ``HASH-ns/name/proto/port__ip/port`` (an IPv6
    address's colons, not allowed in a name, become dots)."""
    return hash_and_truncate(f"{name.namespace}/{name.name}/{name.protocol.lower()}/"
                             f"{name.port}__{ep.ip.replace(':', '.')}/{ep.port}")


def is_service_chain(name: str) -> bool:
    return "/" in name


def is_affinity_set(name: str) -> bool:
    return name.startswith("affinity-")


@dataclass(frozen=True)
class NftOptions:
    """What shapes the nftables rules beyond the iptables mode's :class:`Options`."""

    #: the service CIDRs, comma-separated: traffic to an unallocated ClusterIP is dropped
    service_cidrs: str = ""
    #: --nodeport-addresses resolved: the node IPs that accept NodePorts; empty: all local
    node_port_ips: tuple[str, ...] = ()


@dataclass
class NftRuleSet:
    """One sync's transaction and what it leaves (for the next sync and the metrics)."""

    text: str
    state: dict[ServiceKey, ServiceState] = field(default_factory=dict)
    active_chains: set[str] = field(default_factory=set)
    active_affinity_sets: set[str] = field(default_factory=set)
    flushed_stale: set[str] = field(default_factory=set)  # to delete by a later sync
    services: int = 0
    endpoints: int = 0
    chains_written: int = 0
    no_local_internal: int = 0
    no_local_external: int = 0


class _Names:
    """Chain names, computed once per service port and endpoint (newServiceInfo and
    newEndpointInfo store them): hashing is most of the build's time at 10,000 endpoints."""

    def __init__(self) -> None:
        self.services: dict[ServicePortName, str] = {}
        self.endpoints: dict[tuple[ServicePortName, str], str] = {}

    def service(self, name: ServicePortName) -> str:
        base = self.services.get(name)
        if base is None:
            base = self.services[name] = service_chain_base(name)
        return base

    def endpoint(self, name: ServicePortName, ep: EndpointInfo) -> str:
        key = (name, str(ep))
        base = self.endpoints.get(key)
        if base is None:
            base = self.endpoints[key] = endpoint_chain_base(name, ep)
        return base


NAMES = _Names()


def _setup(opts: Options, nopts: NftOptions) -> list[str]:
    """setupNFTables: the table, base chains, top-level chains, containers, fixed rules.
    Base and top-level chains are flushed and written whole; containers are flushed and
    refilled by the caller."""
    mark = opts.masquerade_mark
    out = [f'add table {PREFIX} {{ comment "rules for kube-proxy" ; }}']
    for name, typ, hook, prio in BASE_CHAINS:
        out.append(f"add chain {PREFIX} {name} {{ type {typ} hook {hook} priority {prio} ; }}")
        out.append(f"flush chain {PREFIX} {name}")
    for chain in TOP_CHAINS:
        out.append(f"add chain {PREFIX} {chain}")
        out.append(f"flush chain {PREFIX} {chain}")
    out.append(f'add chain {PREFIX} {REJECT_CHAIN} '
               '{ comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }')
    out.append(f"flush chain {PREFIX} {REJECT_CHAIN}")
    for name, (kind, typ, comment) in CONTAINERS.items():
        out.append(f'add {kind} {PREFIX} {name} {{ type {typ} ; comment "{comment}" ; }}')
        out.append(f"flush {kind} {PREFIX} {name}")
    if nopts.node_port_ips:
        out.append(f"add set {PREFIX} {NODEPORT_IPS} "
                   '{ type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }')
        out.append(f"flush set {PREFIX} {NODEPORT_IPS}")
        out.extend(f"add element {PREFIX} {NODEPORT_IPS} {{ {ip} }}"
                   for ip in nopts.node_port_ips)
        nodeport_match = f"ip daddr @{NODEPORT_IPS}"
        nodeport_check = nodeport_match
    else:  # every local address but localhost (localhost NodePorts are not supported)
        nodeport_match = "fib daddr type local ip daddr != 127.0.0.0/8"
        nodeport_check = "ip daddr != 127.0.0.0/8"
    for src, extra, dst in JUMPS:
        out.append(f"add rule {PREFIX} {src} {extra}jump {dst}")
    rules = [
        (CLUSTER_IPS_CHECK, f'ip daddr @{CLUSTER_IPS} reject '
                            'comment "Reject traffic to invalid ports of ClusterIPs"'),
    ]
    if nopts.service_cidrs:
        rules.append((CLUSTER_IPS_CHECK, f"ip daddr {{ {nopts.service_cidrs} }} drop "
                                         'comment "Drop traffic to unallocated ClusterIPs"'))
    rules += [
        (FIREWALL_CHECK, f"ip daddr . meta l4proto . th dport vmap @{FIREWALL_IPS}"),
        (MARK_MASQ, f"mark set mark or {mark}"),
        (MASQUERADING, f"ct status dnat ip saddr . ip daddr @{HAIRPIN} jump {MARK_MASQ}"),
        (MASQUERADING, f"mark and {mark} == 0 return"),
        (MASQUERADING, f"mark set mark xor {mark}"),
        (MASQUERADING, "masquerade fully-random"),
        (NODEPORT_ENDPOINTS_CHECK,
         f"{nodeport_check} meta l4proto . th dport vmap @{NO_ENDPOINT_NODEPORTS}"),
        # a TCP reset first: the kernel rate-limits ICMP errors per client host (1/s after a
        # burst; none at all right after it sent that host a redirect), so a client
        # retrying, or one the node forwards for out the interface it came in, would
        # time out on an ICMP-only reject (upstream #90810); UDP has only ICMP
        (REJECT_CHAIN, "meta l4proto tcp reject with tcp reset"),
        (REJECT_CHAIN, "reject"),
        (SERVICES_CHAIN, f"ip daddr . meta l4proto . th dport vmap @{SERVICE_IPS}"),
        (SERVICES_CHAIN,
         f"{nodeport_match} meta l4proto . th dport vmap @{SERVICE_NODEPORTS}"),
        (SERVICE_ENDPOINTS_CHECK,
         f"ip daddr . meta l4proto . th dport vmap @{NO_ENDPOINT_SERVICES}"),
    ]
    out.extend(f"add rule {PREFIX} {chain} {rule}" for chain, rule in rules)
    return out


def element_line(op: str, container: str, key: str, value: str = "", comment: str = "") -> str:
    """``add``/``delete element``: a set's ``{ key }`` or a map's ``{ key : value }``."""
    c = f' comment "{comment}"' if comment and op == "add" else ""
    v = f" : {value}" if value and op == "add" else ""
    return f"{op} element {PREFIX} {container} {{ {key}{c}{v} }}"


def build(services: Mapping[ServicePortName, ServicePortInfo],
          endpoints: Mapping[ServicePortName, list[EndpointInfo]],
          opts: Options | None = None, nopts: NftOptions | None = None, *,
          changed: set[ServiceKey] | None = None,
          previous: Mapping[ServiceKey, ServiceState] | None = None,
          existing_chains: Iterable[str] = (),
          existing_affinity_sets: Iterable[str] = (),
          delete_table_first: bool = False) -> NftRuleSet:
    """The transaction for ``services`` over ``endpoints``.

    ``changed`` None: a full sync (setup, every service, every element); else the
    (namespace, name) of the services to rewrite, with ``previous`` what the last good sync
    left per service: only those services are looked at, so a partial sync costs the same
    at 10 services as at 1,000. ``existing_chains`` / ``existing_affinity_sets`` (a full
    sync): ours in the kernel now; service chains among them no longer wanted are flushed
    (and reported in ``flushed_stale`` to delete later), affinity sets deleted at once.
    ``delete_table_first``: start by deleting the whole table (a proxier's first sync:
    whatever an earlier run left goes in the same transaction, and no chain needs a flush).
    """
    opts = opts or Options()
    nopts = nopts or NftOptions()
    full = changed is None
    prev = dict(previous or {}) if not full else {}
    head: list[str] = []
    if delete_table_first:
        head += [f"add table {PREFIX}", f"delete table {PREFIX}"]
    if full:
        head += _setup(opts, nopts)
    existing = set() if delete_table_first else set(existing_chains)
    out = _Out(existing=existing, flush_all=not full)
    state: dict[ServiceKey, ServiceState] = {} if full else prev
    fresh: dict[ServiceKey, ServiceState] = {}
    for name, svc in sorted(services.items()):
        key = name.service
        if changed is not None and key not in changed:
            continue
        st = fresh.setdefault(key, ServiceState())
        _service_port(out, st, name, svc, endpoints.get(name, []), opts)

    removals: list[str] = []
    elements: list[str] = []
    tail: list[str] = []
    stale: set[str] = set()
    stale_sets: set[str] = set()
    touched = (fresh.keys() | (changed or set())) if not full else fresh.keys()
    hairpin_before = set().union(*(prev[k].hairpin for k in touched if k in prev))
    for key in touched:
        old = prev.get(key, ServiceState())
        new = fresh.get(key, ServiceState())
        for ek, (value, comment) in new.elements.items():
            was = old.elements.get(ek)
            if was == (value, comment):
                continue
            if was is not None:
                removals.append(element_line("delete", ek[0], ek[1]))
            elements.append(element_line("add", ek[0], ek[1], value, comment))
        removals.extend(element_line("delete", ek[0], ek[1])
                        for ek in old.elements if ek not in new.elements)
        stale |= old.chains - new.chains
        stale_sets |= old.affinity_sets - new.affinity_sets
        if key in fresh:
            state[key] = new
        else:
            state.pop(key, None)
    hairpin_after = set().union(*(st.hairpin for st in fresh.values()))
    others = set().union(*(st.hairpin for k, st in state.items() if k not in touched))
    removals.extend(element_line("delete", HAIRPIN, f"{ip} . {ip}")
                    for ip in sorted(hairpin_before - hairpin_after - others))
    elements.extend(element_line("add", HAIRPIN, f"{ip} . {ip}")
                    for ip in sorted(hairpin_after - hairpin_before - others))
    active = set().union(*(st.chains for st in state.values())) if state else set()
    affinity = set().union(*(st.affinity_sets for st in state.values())) if state else set()
    if full:
        stale = {c for c in existing if is_service_chain(c)} - active
        stale_sets = {s for s in existing_affinity_sets if is_affinity_set(s)} - affinity
    else:
        stale -= active
        stale_sets -= affinity
    tail.extend(f"flush chain {PREFIX} {c}" for c in sorted(stale))
    tail.extend(f"delete set {PREFIX} {s}" for s in sorted(stale_sets))
    # element deletions first (a re-added key must be deleted before it is added), new
    # chains before the elements that jump to them, stale chains flushed last
    text = "\n".join([*head, *removals, *out.chains, *out.rules, *elements, *tail, ""])
    return NftRuleSet(
        text=text, state=state, active_chains=active, active_affinity_sets=affinity,
        flushed_stale=stale, services=len(services),
        endpoints=sum(len(endpoints.get(n, ())) for n in services),
        chains_written=out.written,
        no_local_internal=sum(st.no_local_internal for st in state.values()),
        no_local_external=sum(st.no_local_external for st in state.values()))


class _Out:
    """The chain declarations and rules of the services being written."""

    def __init__(self, existing: set[str], flush_all: bool) -> None:
        self.existing = existing
        self.flush_all = flush_all
        self.chains: list[str] = []
        self.rules: list[str] = []
        self.written = 0

    def chain(self, st: ServiceState, chain: str) -> None:
        """ensureChain: declared once, flushed if it may hold rules of an earlier sync."""
        if chain in st.chains:
            return
        st.chains.add(chain)
        self.chains.append(f"add chain {PREFIX} {chain}")
        if self.flush_all or chain in self.existing:
            self.chains.append(f"flush chain {PREFIX} {chain}")
        self.written += 1

    def rule(self, chain: str, text: str) -> None:
        self.rules.append(f"add rule {PREFIX} {chain} {text}")


def _service_port(out: _Out, st: ServiceState, name: ServicePortName, svc: ServicePortInfo,
                  eps: list[EndpointInfo], opts: Options) -> None:
    """One service port's chains, rules and elements (syncProxyRules' loop body)."""
    proto = svc.protocol
    spn = svc.name_string
    base = NAMES.service(name)
    cat = categorize_endpoints(eps, svc)
    affinity = svc.session_affinity_client_ip
    # endpoint chains only where ClientIP affinity needs one per endpoint (its set update)
    ep_chain = {str(ep): "endpoint-" + NAMES.endpoint(name, ep)
                for ep in cat.all_reachable} if affinity else {}
    for chain in ep_chain.values():
        out.chain(st, chain)
    if not affinity:
        st.hairpin.update(ep.ip for ep in cat.all_reachable)
    cluster_chain = "service-" + base
    local_chain = "local-" + base
    ext_chain = "external-" + base
    uses_cluster = bool(cat.cluster) and svc.uses_cluster_endpoints
    if uses_cluster:
        out.chain(st, cluster_chain)
    uses_local = bool(cat.local) and svc.uses_local_endpoints
    if uses_local:
        out.chain(st, local_chain)
    internal_chain, has_internal, external_policy_chain, has_external = policy_chains(
        svc, cat, cluster_chain, local_chain)
    uses_ext = cat.has_any and svc.externally_accessible
    if uses_ext:
        out.chain(st, ext_chain)
    int_verdict = ext_verdict = f"goto {REJECT_CHAIN}"
    if cat.has_any:
        int_verdict = ext_verdict = "drop"
        st.no_local_internal += not has_internal
        st.no_local_external += not has_external

    el = st.elements
    dport = f"{proto} . {svc.port}"
    el[(CLUSTER_IPS, svc.cluster_ip)] = ("", "")
    if has_internal:
        el[(SERVICE_IPS, f"{svc.cluster_ip} . {dport}")] = (f"goto {internal_chain}", "")
    else:
        el[(NO_ENDPOINT_SERVICES, f"{svc.cluster_ip} . {dport}")] = (int_verdict, spn)
    for ip in svc.external_ips:
        if cat.has_any:
            el[(SERVICE_IPS, f"{ip} . {dport}")] = (f"goto {ext_chain}", "")
        if not has_external:
            el[(NO_ENDPOINT_SERVICES, f"{ip} . {dport}")] = (ext_verdict, spn)
    if svc.node_port:
        key = f"{proto} . {svc.node_port}"
        if cat.has_any:
            el[(SERVICE_NODEPORTS, key)] = (f"goto {ext_chain}", "")
        if not has_external:
            el[(NO_ENDPOINT_NODEPORTS, key)] = (ext_verdict, spn)

    rule = out.rule
    not_local = f" ip saddr != {opts.cluster_cidr}" if opts.cluster_cidr else ""
    if has_internal:
        if opts.masquerade_all:
            rule(internal_chain, f"ip daddr {svc.cluster_ip} jump {MARK_MASQ}")
        elif not_local:
            rule(internal_chain, f"ip daddr {svc.cluster_ip}{not_local} jump {MARK_MASQ}")
    if uses_ext:
        if not svc.external_policy_local:
            rule(ext_chain, f"jump {MARK_MASQ}")
        else:
            if opts.cluster_cidr:
                rule(ext_chain, f"ip saddr {opts.cluster_cidr} goto {cluster_chain} "
                                'comment "short-circuit pod traffic"')
            rule(ext_chain, f"fib saddr type local jump {MARK_MASQ} "
                            'comment "masquerade local traffic"')
            rule(ext_chain, f"fib saddr type local goto {cluster_chain} "
                            'comment "short-circuit local traffic"')
        if has_external:
            rule(ext_chain, f"goto {external_policy_chain}")
    if affinity:
        for ep in cat.all_reachable:
            aff = "affinity-" + NAMES.endpoint(name, ep)
            st.affinity_sets.add(aff)
            out.chains.append(f"add set {PREFIX} {aff} {{ type ipv4_addr ; "
                              f"flags dynamic,timeout ; timeout {svc.sticky_max_age_seconds}s"
                              " ; }")
    if uses_cluster:
        _service_to_endpoints(rule, svc, name, cluster_chain, cat.cluster, ep_chain)
    if uses_local:
        _service_to_endpoints(rule, svc, name, local_chain, cat.local, ep_chain)
    for ep in cat.all_reachable if affinity else ():
        chain = ep_chain[str(ep)]
        rule(chain, f"ip saddr {ep.ip} jump {MARK_MASQ}")
        rule(chain, f"update @affinity-{NAMES.endpoint(name, ep)} {{ ip saddr }}")
        rule(chain, f"meta l4proto {proto} dnat to {ep}")


def _service_to_endpoints(add: Callable[[str, str], None], svc: ServicePortInfo,
                          name: ServicePortName, chain: str, eps: list[EndpointInfo],
                          ep_chain: Mapping[str, str]) -> None:
    """writeServiceToEndpointRules: affinity lookups first, then the random spread; with
    no affinity, the spread DNATs at once (``numgen`` over an address . port map) instead
    of jumping to a chain per endpoint: a tenth of the chains and rules for the kernel."""
    if ep_chain:
        for ep in eps:
            add(chain, f"ip saddr @affinity-{NAMES.endpoint(name, ep)} "
                       f"goto {ep_chain[str(ep)]}")
        vmap = " , ".join(f"{i} : goto {ep_chain[str(ep)]}" for i, ep in enumerate(eps))
        add(chain, f"numgen random mod {len(eps)} vmap {{ {vmap} }}")
        return
    proto = svc.protocol
    if len(eps) == 1:
        add(chain, f"meta l4proto {proto} dnat to {eps[0]}")
        return
    dmap = " , ".join(f"{i} : {ep.ip} . {ep.port}" for i, ep in enumerate(eps))
    add(chain, f"meta l4proto {proto} dnat to numgen random mod {len(eps)} map {{ {dmap} }}")
