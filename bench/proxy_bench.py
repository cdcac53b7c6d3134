"""The service proxy's rule sync at kube-proxy's scale: 1,000 Services x 10 endpoints.

The rule generation alone, then, in a network namespace of its own (never the host's
tables), for each iptables variant:
(a) a full sync: rules built from the Services and EndpointSlices and applied in one
``iptables-restore --noflush`` (the proxier's first sync: iptables-save, build, restore);
(b) one endpoint change: a partial sync (KUBE-SERVICES and the one service's chains);
(c) python-iptables (libiptc, legacy tables only), rule by rule, on a slice of the same
rules, extrapolated to the whole set: why the proxier restores instead;
(d) the nftables proxier (serviceProxy.mode nftables): its first full sync (one ``nft -f``
transaction) and one endpoint change (that service's chains and map elements).
Goals (issue 20): full sync <= 1 s, one endpoint change <= 50 ms. Run as root:

    .venv/bin/python bench/proxy_bench.py [--services 1000] [--endpoints 10] [--rounds 3]
        [--variants legacy,nft,nftables]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from typing import Any

from pycni import ns
from pykubelet.proxy import iptables_rules
from pykubelet.proxy.iptables_restore import Iptables
from pykubelet.proxy.iptables_rules import Options, RuleSet
from pykubelet.proxy.nft import Nft
from pykubelet.proxy.nft_proxier import NftProxier
from pykubelet.proxy.proxier import Proxier
from pykubelet.proxy.serviceport import endpoints_map, service_ports

NETNS = "spxbench"


def services(n: int) -> list[dict[str, Any]]:
    return [{"metadata": {"namespace": "bench", "name": f"s{i}"},
             "spec": {"clusterIP": f"10.96.{i // 250}.{i % 250 + 1}",
                      "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}
            for i in range(n)]


def endpoint_slice(i: int, eps: int, skip: int = -1) -> dict[str, Any]:
    return {"metadata": {"namespace": "bench", "name": f"s{i}-x",
                         "labels": {"kubernetes.io/service-name": f"s{i}"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [f"10.{100 + i // 250}.{i % 250}.{j + 1}"],
                           "conditions": {"ready": True}} for j in range(eps) if j != skip],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def cpu() -> float:
    """User + system time of this process and its waited-for children (the restore and nft
    tools): what a sync costs on an idle host, where wall time on a shared one also counts
    the time other processes held the CPUs."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:7.1f} ms  (min {min(xs) * 1000:.1f}, " \
           f"max {max(xs) * 1000:.1f})"


def bench_generation(n: int, eps: int, rounds: int) -> None:
    """The pure part: the whole restore text from the per-port views (no I/O)."""
    ports = {p.name: p for s in services(n) for p in service_ports(s)}
    endpoints = endpoints_map([endpoint_slice(i, eps) for i in range(n)], "node1")
    took = []
    for _ in range(max(rounds, 3)):
        t0 = time.perf_counter()
        rules = iptables_rules.build(ports, endpoints, Options(cluster_cidr="10.64.0.0/10"))
        took.append(time.perf_counter() - t0)
    print(f"rule generation: {n} services x {eps} endpoints, "
          f"{len(rules.text) // 1024} KiB of restore input")
    print(f"  build                {ms(took)}")


def bench_variant(variant: str, n: int, eps: int, rounds: int) -> None:
    """One iptables variant's restore, or (``nftables``) the nftables proxier's nft -f."""
    full: list[float] = []
    partial: list[float] = []
    full_cpu: list[float] = []
    partial_cpu: list[float] = []
    for _ in range(rounds):
        path = ns.create_netns(NETNS)
        try:
            opts = Options(cluster_cidr="10.64.0.0/10")
            proxier: Proxier | NftProxier = (
                NftProxier(Nft.default(netns=path), "node1", opts) if variant == "nftables"
                else Proxier(Iptables(variant, netns=path), "node1", opts))
            proxier.set_services(services(n))
            proxier.set_endpoint_slices([endpoint_slice(i, eps) for i in range(n)])
            t0, c0 = time.perf_counter(), cpu()
            assert proxier.sync()
            full.append(time.perf_counter() - t0)
            full_cpu.append(cpu() - c0)
            for k in range(3):  # one endpoint leaves one service, then comes back
                proxier.on_endpoint_slice(None, endpoint_slice(k, eps, skip=k % eps))
                t0, c0 = time.perf_counter(), cpu()
                assert proxier.sync()
                partial.append(time.perf_counter() - t0)
                partial_cpu.append(cpu() - c0)
            last = proxier.last_rules
            assert last is not None
            size = (f"{last.nat_rules + last.filter_rules} rules" if isinstance(last, RuleSet)
                    else f"{len(last.active_chains)} service and endpoint chains")
        finally:
            ns.delete_netns(path)
    tool = "nft -f (nftables proxier)" if variant == "nftables" else \
        f"iptables-{variant}-restore"
    print(f"{tool}: {n} services x {eps} endpoints, {size}")
    print(f"  full sync            {ms(full)}")
    print(f"    cpu (us + tools)   {ms(full_cpu)}")
    print(f"  one endpoint change  {ms(partial)}")
    print(f"    cpu (us + tools)   {ms(partial_cpu)}")


def bench_iptc(n_services: int, eps: int) -> None:
    """python-iptables: the rules of a few services, each appended through libiptc and
    committed once (its best case), per rule, scaled to the whole set."""
    try:
        import iptc
    except ImportError as e:  # pragma: no cover - the xtables libraries missing
        print(f"python-iptables: not available ({e})")
        return
    path = ns.create_netns(NETNS)
    try:
        with ns.entered(path):
            table = iptc.Table(iptc.Table.NAT)
            table.autocommit = False
            t0 = time.perf_counter()
            count = 0
            for i in range(20):
                svc = table.create_chain(f"KUBE-SVC-BENCH{i:07d}")
                for j in range(eps):
                    sep = table.create_chain(f"KUBE-SEP-BENCH{i:03d}{j:04d}")
                    rule = iptc.Rule()
                    rule.protocol = "tcp"
                    rule.src = f"10.100.{i}.{j + 1}"
                    rule.create_target("MARK").set_mark = "0x4000/0x4000"
                    sep.append_rule(rule)
                    rule = iptc.Rule()
                    rule.protocol = "tcp"
                    rule.create_match("tcp")
                    rule.create_target("DNAT").to_destination = f"10.100.{i}.{j + 1}:8080"
                    sep.append_rule(rule)
                    jump = iptc.Rule()
                    if j < eps - 1:
                        m = jump.create_match("statistic")
                        m.mode = "random"
                        m.probability = f"{1 / (eps - j):0.10f}"
                    jump.create_target(sep.name)
                    svc.append_rule(jump)
                    count += 3
            table.commit()
            took = time.perf_counter() - t0
        per_rule = took / count
        whole = per_rule * n_services * eps * 3
        print(f"python-iptables (legacy): {count} rules in {took * 1000:.0f} ms, "
              f"{per_rule * 1e6:.0f} us/rule -> ~{whole:.1f} s for {n_services} x {eps}")
    finally:
        ns.delete_netns(path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--services", type=int, default=1000)
    p.add_argument("--endpoints", type=int, default=10)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--variants", default="legacy,nft,nftables")
    a = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (network namespaces)")
    bench_generation(a.services, a.endpoints, a.rounds)
    for variant in a.variants.split(","):
        bench_variant(variant, a.services, a.endpoints, a.rounds)
    bench_iptc(a.services, a.endpoints)


if __name__ == "__main__":
    main()
