"""The whole iptables-restore input for a set of service ports: kube-proxy's layout, pure.

pkg/proxy/iptables/proxier.go syncProxyRules, written as a function of its inputs:
ClusterIP traffic enters nat KUBE-SERVICES (from PREROUTING and OUTPUT), jumps per service
port to KUBE-SVC-<hash>, which picks an endpoint chain KUBE-SEP-<hash> with
``-m statistic --mode random --probability 1/n`` (1/n, then 1/(n-1), ... the last one
unconditional), which DNATs. NodePorts go through KUBE-NODEPORTS (the last rule of
KUBE-SERVICES) to KUBE-EXT-<hash>, which marks for masquerade and goes on to the policy
chain (KUBE-SVC, or KUBE-SVL for externalTrafficPolicy Local). Packets that need SNAT
(hairpin: an endpoint reaching itself through its service; off-cluster sources; NodePort)
jump to KUBE-MARK-MASQ (mark 0x4000), and KUBE-POSTROUTING masquerades what carries the
mark. A service port without endpoints gets no nat chains but a REJECT in filter
KUBE-SERVICES (KUBE-EXTERNAL-SERVICES for its NodePort), so clients fail at once.

Names are upstream's hashes (see :mod:`.serviceport`), so they are stable from sync to sync
and a partial sync can leave the chains of unchanged services as they are: with
``changed`` given, only those services' chains are written (the top-level chains always
are); chains that exist but are no longer wanted are flushed and deleted in the same
input. Not here (no LoadBalancer in this cluster): KUBE-FW-*, KUBE-PROXY-FIREWALL,
health-check node ports, localhost NodePorts (route_localnet).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pykubelet.proxy.serviceport import (
    EndpointInfo,
    ServicePortInfo,
    ServicePortName,
    categorize_endpoints,
    policy_chains,
)

KUBE_SERVICES = "KUBE-SERVICES"
KUBE_EXTERNAL_SERVICES = "KUBE-EXTERNAL-SERVICES"
KUBE_NODEPORTS = "KUBE-NODEPORTS"
KUBE_POSTROUTING = "KUBE-POSTROUTING"
KUBE_MARK_MASQ = "KUBE-MARK-MASQ"
KUBE_FORWARD = "KUBE-FORWARD"
#: kube-proxy's canary: gone means someone flushed the tables (ipt.Monitor)
KUBE_PROXY_CANARY = "KUBE-PROXY-CANARY"

SVC_PREFIX = "KUBE-SVC-"
SVL_PREFIX = "KUBE-SVL-"
EXT_PREFIX = "KUBE-EXT-"
FW_PREFIX = "KUBE-FW-"
SEP_PREFIX = "KUBE-SEP-"
SERVICE_CHAIN_PREFIXES = (SVC_PREFIX, SVL_PREFIX, EXT_PREFIX, FW_PREFIX, SEP_PREFIX)

#: the top-level chains every full sync declares, per table (in upstream's order)
FILTER_CHAINS = (KUBE_SERVICES, KUBE_EXTERNAL_SERVICES, KUBE_FORWARD, KUBE_NODEPORTS)
NAT_CHAINS = (KUBE_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_MARK_MASQ)

#: proxier.go largeClusterEndpointsThreshold: past it, endpoint rules carry no comments
LARGE_CLUSTER_ENDPOINTS_THRESHOLD = 1000


@dataclass(frozen=True)
class JumpRule:
    """A rule in a built-in chain sending traffic into ours (iptablesJumpChains)."""

    table: str
    src: str
    dst: str
    comment: str
    extra: tuple[str, ...] = ()

    def args(self) -> list[str]:
        return [*self.extra, "-m", "comment", "--comment", f'"{self.comment}"', "-j", self.dst]


_NEW = ("-m", "conntrack", "--ctstate", "NEW")
JUMP_RULES = (
    JumpRule("filter", "INPUT", KUBE_EXTERNAL_SERVICES,
             "kubernetes externally-visible service portals", _NEW),
    JumpRule("filter", "FORWARD", KUBE_EXTERNAL_SERVICES,
             "kubernetes externally-visible service portals", _NEW),
    JumpRule("filter", "INPUT", KUBE_NODEPORTS, "kubernetes health check service ports"),
    JumpRule("filter", "FORWARD", KUBE_SERVICES, "kubernetes service portals", _NEW),
    JumpRule("filter", "OUTPUT", KUBE_SERVICES, "kubernetes service portals", _NEW),
    JumpRule("filter", "FORWARD", KUBE_FORWARD, "kubernetes forwarding rules"),
    JumpRule("nat", "OUTPUT", KUBE_SERVICES, "kubernetes service portals"),
    JumpRule("nat", "PREROUTING", KUBE_SERVICES, "kubernetes service portals"),
    JumpRule("nat", "POSTROUTING", KUBE_POSTROUTING, "kubernetes postrouting rules"),
)


def is_service_chain(name: str) -> bool:
    """isServiceChainName: one of the per-service or per-endpoint chains."""
    return name.startswith(SERVICE_CHAIN_PREFIXES)


@dataclass(frozen=True)
class Options:
    """The proxier's settings that shape rules (kube-proxy's flags of the same meaning)."""

    masquerade_mark: str = "0x4000"  # 1 << --iptables-masquerade-bit (14)
    masquerade_all: bool = False
    #: --cluster-cidr: traffic from outside it to a cluster IP is masqueraded
    cluster_cidr: str = ""
    random_fully: bool = False  # MASQUERADE --random-fully, where iptables has it
    conntrack_tcp_liberal: bool = False  # nf_conntrack_tcp_be_liberal set: no INVALID drop


@dataclass
class RuleSet:
    """One sync's restore input and what it amounts to (for the metrics and the next sync)."""

    text: str
    active_nat_chains: set[str] = field(default_factory=set)
    filter_rules: int = 0
    nat_rules: int = 0  # as the table holds them after the restore (skipped ones included)
    nat_rules_written: int = 0
    deleted_chains: int = 0
    services: int = 0
    endpoints: int = 0
    # service ports with a Local policy and endpoints, none of them here (DROPped)
    no_local_internal: int = 0
    no_local_external: int = 0


def chain_line(chain: str) -> str:
    return f":{chain} - [0:0]"


_probabilities: list[str] = ["<bad value>"]


def probability(n: int) -> str:
    """computeProbability: 1/n with ten decimals (Go's %0.10f), computed once per n."""
    while len(_probabilities) <= n:
        _probabilities.append(f"{1.0 / len(_probabilities):0.10f}")
    return _probabilities[n]


def build(services: Mapping[ServicePortName, ServicePortInfo],
          endpoints: Mapping[ServicePortName, list[EndpointInfo]],
          opts: Options = Options(), *,
          changed: set[tuple[str, str]] | None = None,
          existing_chains: Iterable[str] = (),
          jumps: Iterable[JumpRule] = (), canary: bool = False) -> RuleSet:
    """The restore input for ``services`` over ``endpoints``.

    ``changed``: (namespace, name) of the services whose chains must be rewritten (a partial
    sync); None rewrites all. ``existing_chains``: nat chains present now; those of ours not
    wanted any more are flushed and deleted. ``jumps``: jump rules missing from the built-in
    chains, inserted at their top in the same restore (EnsureRule Prepend). ``canary``:
    declare the empty KUBE-PROXY-CANARY chain in both tables (a full sync).
    """
    mark = opts.masquerade_mark
    filter_chains = [chain_line(c) for c in FILTER_CHAINS]
    filter_rules: list[str] = []
    nat_chains = [chain_line(c) for c in NAT_CHAINS]
    nat_rules = [
        f"-A {KUBE_POSTROUTING} -m mark ! --mark {mark}/{mark} -j RETURN",
        f"-A {KUBE_POSTROUTING} -j MARK --xor-mark {mark}",
        f'-A {KUBE_POSTROUTING} -m comment --comment "kubernetes service traffic requiring SNAT"'
        f" -j MASQUERADE{' --random-fully' if opts.random_fully else ''}",
        f"-A {KUBE_MARK_MASQ} -j MARK --or-mark {mark}",
    ]
    skipped = 0  # rules of unchanged services, left as they are (partial sync)
    no_local_internal = no_local_external = 0
    active: set[str] = set()
    nodeport_rules: list[str] = []
    ext_filter_rules: list[str] = []

    ordered = sorted(services.items())
    total_endpoints = sum(len(endpoints.get(name, ())) for name, _ in ordered)
    large = total_endpoints > LARGE_CLUSTER_ENDPOINTS_THRESHOLD
    not_local = f" ! -s {opts.cluster_cidr}" if opts.cluster_cidr else ""

    for name, svc in ordered:
        proto = svc.protocol
        spn = svc.name_string
        cat = categorize_endpoints(endpoints.get(name, []), svc)
        cluster_chain = svc.chain(SVC_PREFIX)
        local_chain = svc.chain(SVL_PREFIX)
        ext_chain = svc.chain(EXT_PREFIX)
        uses_cluster_chain = bool(cat.cluster) and svc.uses_cluster_endpoints
        uses_local_chain = bool(cat.local) and svc.uses_local_endpoints

        internal_chain, has_internal, external_policy_chain, has_external = policy_chains(
            svc, cat, cluster_chain, local_chain)
        uses_ext_chain = cat.has_any and svc.externally_accessible

        if not cat.has_any:
            int_target = ext_target = "REJECT"
            int_comment = ext_comment = f'"{spn} has no endpoints"'
        else:
            int_target = ext_target = "DROP"
            int_comment = ext_comment = f'"{spn} has no local endpoints"'
            no_local_internal += not has_internal
            no_local_external += not has_external

        dst = f"-m {proto} -p {proto} -d {svc.cluster_ip} --dport {svc.port}"
        if has_internal:
            nat_rules.append(f'-A {KUBE_SERVICES} -m comment --comment "{spn} cluster IP" '
                             f"{dst} -j {internal_chain}")
        else:
            filter_rules.append(f"-A {KUBE_SERVICES} -m comment --comment {int_comment} "
                                f"{dst} -j {int_target}")
        for ip in svc.external_ips:
            edst = f"-m {proto} -p {proto} -d {ip} --dport {svc.port}"
            if cat.has_any:
                nat_rules.append(f'-A {KUBE_SERVICES} -m comment --comment "{spn} external IP" '
                                 f"{edst} -j {ext_chain}")
            if not has_external:
                ext_filter_rules.append(f"-A {KUBE_EXTERNAL_SERVICES} -m comment --comment "
                                        f"{ext_comment} {edst} -j {ext_target}")
        if svc.node_port:
            if cat.has_any:
                nodeport_rules.append(f"-A {KUBE_NODEPORTS} -m comment --comment {spn} "
                                      f"-m {proto} -p {proto} --dport {svc.node_port} "
                                      f"-j {ext_chain}")
            if not has_external:
                ext_filter_rules.append(
                    f"-A {KUBE_EXTERNAL_SERVICES} -m comment --comment {ext_comment} "
                    f"-m addrtype --dst-type LOCAL -m {proto} -p {proto} "
                    f"--dport {svc.node_port} -j {ext_target}")

        # the service's own chains: skipped (but still wanted) when it did not change
        if changed is not None and name.service not in changed:
            # not written, only accounted for: its chains stay wanted, its rules counted
            n = 1 if has_internal and (opts.masquerade_all or not_local) else 0
            if uses_ext_chain:
                active.add(ext_chain)
                n += (2 + bool(opts.cluster_cidr)) if svc.external_policy_local else 1
                n += has_external
            per_endpoint = 2 if svc.session_affinity_client_ip else 1
            if uses_cluster_chain:
                active.add(cluster_chain)
                n += per_endpoint * len(cat.cluster)
            if uses_local_chain:
                active.add(local_chain)
                n += per_endpoint * len(cat.local)
            active.update(ep.chain for ep in cat.all_reachable)
            skipped += n + 2 * len(cat.all_reachable)
            continue
        chains_out = nat_chains
        rules_out = nat_rules

        if has_internal:
            if opts.masquerade_all:
                rules_out.append(f'-A {internal_chain} -m comment --comment "{spn} cluster IP" '
                                 f"{dst} -j {KUBE_MARK_MASQ}")
            elif not_local:
                rules_out.append(f'-A {internal_chain} -m comment --comment "{spn} cluster IP" '
                                 f"{dst}{not_local} -j {KUBE_MARK_MASQ}")

        if uses_ext_chain:
            chains_out.append(chain_line(ext_chain))
            active.add(ext_chain)
            if not svc.external_policy_local:
                rules_out.append(f"-A {ext_chain} -m comment --comment "
                                 f'"masquerade traffic for {spn} external destinations" '
                                 f"-j {KUBE_MARK_MASQ}")
            else:
                if opts.cluster_cidr:
                    rules_out.append(f"-A {ext_chain} -m comment --comment "
                                     f'"pod traffic for {spn} external destinations" '
                                     f"-s {opts.cluster_cidr} -j {cluster_chain}")
                rules_out.append(f"-A {ext_chain} -m comment --comment "
                                 f'"masquerade LOCAL traffic for {spn} external destinations" '
                                 f"-m addrtype --src-type LOCAL -j {KUBE_MARK_MASQ}")
                rules_out.append(f"-A {ext_chain} -m comment --comment "
                                 f'"route LOCAL traffic for {spn} external destinations" '
                                 f"-m addrtype --src-type LOCAL -j {cluster_chain}")
            if has_external:
                rules_out.append(f"-A {ext_chain} -j {external_policy_chain}")

        if uses_cluster_chain:
            chains_out.append(chain_line(cluster_chain))
            active.add(cluster_chain)
            _service_to_endpoints(rules_out, spn, svc, cluster_chain, cat.cluster, large)
        if uses_local_chain:
            chains_out.append(chain_line(local_chain))
            active.add(local_chain)
            _service_to_endpoints(rules_out, spn, svc, local_chain, cat.local, large)

        for ep in cat.all_reachable:
            chains_out.append(chain_line(ep.chain))
            active.add(ep.chain)
            head = f"-A {ep.chain}" if large else f"-A {ep.chain} -m comment --comment {spn}"
            # hairpin: an endpoint reaching itself through the service must be SNATed
            rules_out.append(f"{head} -s {ep.ip} -j {KUBE_MARK_MASQ}")
            recent = (f" -m recent --name {ep.chain} --set"
                      if svc.session_affinity_client_ip else "")
            rules_out.append(f"{head}{recent} -m {proto} -p {proto} -j DNAT "
                             f"--to-destination {ep}")

    deleted = 0
    for chain in sorted(set(existing_chains) - active):
        if is_service_chain(chain):
            nat_chains.append(chain_line(chain))
            nat_rules.append(f"-X {chain}")
            deleted += 1

    nat_rules.extend(nodeport_rules)
    # the NodePort catch-all: after every service's rules (localhost NodePorts not served)
    nat_rules.append(f"-A {KUBE_SERVICES} -m comment --comment "
                     '"kubernetes service nodeports; NOTE: this must be the last rule in this '
                     'chain" -m addrtype --dst-type LOCAL ! -d 127.0.0.0/8 '
                     f"-j {KUBE_NODEPORTS}")
    filter_rules.extend(ext_filter_rules)
    if not opts.conntrack_tcp_liberal:
        filter_rules.append(f"-A {KUBE_FORWARD} -m conntrack --ctstate INVALID -j DROP")
    filter_rules.append(f'-A {KUBE_FORWARD} -m comment --comment "kubernetes forwarding rules" '
                        f"-m mark --mark {mark}/{mark} -j ACCEPT")
    filter_rules.append(f"-A {KUBE_FORWARD} -m comment --comment "
                        '"kubernetes forwarding conntrack rule" '
                        "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT")

    # nat first: iptables-restore commits table by table and stops at the first error, so
    # a nat table it refuses leaves both tables as they were (upstream writes filter first)
    if canary:
        nat_chains.append(chain_line(KUBE_PROXY_CANARY))
        filter_chains.append(chain_line(KUBE_PROXY_CANARY))
    nat_rules.extend(_insert_jumps(jumps, "nat"))
    filter_rules_all = filter_rules + _insert_jumps(jumps, "filter")
    text = "\n".join(["*nat", *nat_chains, *nat_rules, "COMMIT",
                      "*filter", *filter_chains, *filter_rules_all, "COMMIT", ""])
    return RuleSet(text=text, active_nat_chains=active, filter_rules=len(filter_rules),
                   nat_rules=len(nat_rules) + skipped - deleted,
                   nat_rules_written=len(nat_rules) - deleted, deleted_chains=deleted,
                   services=len(ordered), endpoints=total_endpoints,
                   no_local_internal=no_local_internal, no_local_external=no_local_external)


TopLevel = dict[tuple[str, str], tuple[str, ...]]  # (table, chain) -> its rules


def omit_unchanged_top_level(text: str, written: TopLevel) -> tuple[str, TopLevel]:
    """``text`` without the top-level chains (KUBE-SERVICES, KUBE-NODEPORTS, ...) whose rules
    are exactly ``written`` (what the last good restores put there), and the top-level
    chains' rules as ``text`` has them. An endpoint change then restores only the service's
    own chains: upstream rewrites KUBE-SERVICES (a rule per service port) on every sync,
    which at 1,000 services was most of a partial sync's restore."""
    tops = {("nat", c) for c in NAT_CHAINS} | {("filter", c) for c in FILTER_CHAINS}
    found: dict[tuple[str, str], list[str]] = {}
    table = ""
    lines = text.splitlines()
    for ln in lines:
        if ln.startswith("*"):
            table = ln[1:]
        elif ln.startswith(":"):
            key = (table, ln[1:].split(" ", 1)[0])
            if key in tops:
                found.setdefault(key, [])
        elif ln.startswith("-A "):
            key = (table, ln[3:].split(" ", 1)[0])
            if key in found:
                found[key].append(ln)
    now = {k: tuple(v) for k, v in found.items()}
    same = {k for k, v in now.items() if written.get(k) == v}
    if not same:
        return text, now
    out = []
    for ln in lines:
        if ln.startswith("*"):
            table = ln[1:]
        elif ln.startswith(":"):
            if (table, ln[1:].split(" ", 1)[0]) in same:
                continue
        elif ln.startswith("-A ") and (table, ln[3:].split(" ", 1)[0]) in same:
            continue
        out.append(ln)
    return "\n".join(out) + "\n", now


def _insert_jumps(jumps: Iterable[JumpRule], table: str) -> list[str]:
    return [" ".join(["-I", j.src, "1", *j.args()]) for j in jumps if j.table == table]


def _service_to_endpoints(out: list[str], spn: str, svc: ServicePortInfo, chain: str,
                          eps: list[EndpointInfo], large: bool) -> None:
    """writeServiceToEndpointRules: affinity checks first (each endpoint's recent list),
    then the random spread over the endpoints."""
    def head(ep: EndpointInfo) -> str:
        return f"-A {chain}" if large else f'-A {chain} -m comment --comment "{spn} -> {ep}"'

    if svc.session_affinity_client_ip:
        for ep in eps:
            out.append(f"{head(ep)} -m recent --name {ep.chain} --rcheck "
                       f"--seconds {svc.sticky_max_age_seconds} --reap -j {ep.chain}")
    n = len(eps)
    for i, ep in enumerate(eps):
        if i < n - 1:
            out.append(f"{head(ep)} -m statistic --mode random --probability "
                       f"{probability(n - i)} -j {ep.chain}")
        else:
            out.append(f"{head(ep)} -j {ep.chain}")
