"""The proxier's rules in a real kernel, inside namespaces this test makes (never the host's
tables): a "node" namespace with a bridge and two pod namespaces behind veths, each pod
serving its name on TCP 8080, and a client namespace routed through the node. A ClusterIP
(10.96.0.0/12) and a NodePort reach both pods; a removed endpoint leaves the rotation; a
service without endpoints refuses at once; flushed tables are written again; a refused
restore keeps the last good rules; cleanup leaves no KUBE- chain or jump.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from pykubelet.proxy import iptables_restore
from pykubelet.proxy.conntrack import ConntrackCleaner
from pykubelet.proxy.iptables_restore import Iptables
from pykubelet.proxy.iptables_rules import Options
from pykubelet.proxy.nft import LibNft, Nft
from pykubelet.proxy.nft_proxier import NftProxier
from pykubelet.proxy.proxier import Proxier

pytestmark = [pytest.mark.root, pytest.mark.netns]

CLUSTER_IP = "10.96.7.10"
NODE_IP = "10.250.0.1"  # the node's address on the client's link
NODE_PORT = 30080
SERVER = """
import socket, sys, threading
def udp():
    while True:
        _, peer = u.recvfrom(64); u.sendto(sys.argv[1].encode(), peer)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", 5353))
threading.Thread(target=udp, daemon=True).start()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080)); s.listen(64); print("ready", flush=True)
while True:
    c, _ = s.accept(); c.sendall(sys.argv[1].encode()); c.close()
"""
UDP_CLIENT = """
import socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
u.bind(("0.0.0.0", 40053))  # one source port, as a long-lived resolver's socket
u.sendto(b"?", (sys.argv[1], 53))
try:
    print(u.recv(64).decode())
except OSError as e:
    print(type(e).__name__)
"""
CLIENT = """
import collections, json, socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seen = collections.Counter()
for _ in range(n):
    try:
        c = socket.create_connection((host, port), timeout=2)
        seen[c.recv(64).decode() or "empty"] += 1
        c.close()
    except OSError as e:
        seen[type(e).__name__] += 1
print(json.dumps(seen))
"""


def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def name(path: str) -> str:
    return os.path.basename(path)


@dataclass
class Lab:
    node: str
    client: str
    pods: dict[str, str] = field(default_factory=dict)  # pod name -> IP
    pod_netns: dict[str, str] = field(default_factory=dict)  # pod name -> netns path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def connect(self, host: str, port: int, n: int = 24, netns: str = "") -> dict[str, int]:
        """``n`` connections from the client (or ``netns``): what answered, or the errors."""
        out = sh("ip", "netns", "exec", name(netns or self.client), sys.executable, "-c",
                 CLIENT, host, str(port), str(n))
        return dict(json.loads(out))


@pytest.fixture
def lab(netns_factory: Callable[[str], str]) -> Iterator[Lab]:
    node, client = netns_factory("n"), netns_factory("c")
    lab = Lab(node=node, client=client)
    n = name(node)
    try:
        sh("ip", "-n", n, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", n, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        sh("ip", "-n", n, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", n, "addr", "add", "10.244.9.1/24", "dev", "br0")
        sh("ip", "-n", n, "link", "set", "br0", "up")
        # the client's link: off-cluster, routed through the node
        sh("ip", "-n", n, "link", "add", "vc", "type", "veth", "peer", "name", "eth0",
           "netns", name(client))
        sh("ip", "-n", n, "addr", "add", f"{NODE_IP}/24", "dev", "vc")
        sh("ip", "-n", n, "link", "set", "vc", "up")
        # a node has a default route: without one, a ClusterIP with no endpoints (no DNAT)
        # would fail routing before the filter table's REJECT is reached
        sh("ip", "-n", n, "route", "add", "default", "via", "10.250.0.2")
        c = name(client)
        sh("ip", "-n", c, "addr", "add", "10.250.0.2/24", "dev", "eth0")
        sh("ip", "-n", c, "link", "set", "eth0", "up")
        sh("ip", "-n", c, "link", "set", "lo", "up")
        sh("ip", "-n", c, "route", "add", "default", "via", NODE_IP)
        for i, pod in enumerate(("pod-a", "pod-b"), start=2):
            p = netns_factory("p")
            ip = f"10.244.9.{i}"
            sh("ip", "-n", n, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0",
               "netns", name(p))
            sh("ip", "-n", n, "link", "set", f"v{i}", "master", "br0", "up")
            # the bridge plugin's hairpinMode: a pod DNATed to itself goes back out its port
            sh("ip", "-n", n, "link", "set", f"v{i}", "type", "bridge_slave", "hairpin", "on")
            sh("ip", "-n", name(p), "addr", "add", f"{ip}/24", "dev", "eth0")
            sh("ip", "-n", name(p), "link", "set", "eth0", "up")
            sh("ip", "-n", name(p), "link", "set", "lo", "up")
            sh("ip", "-n", name(p), "route", "add", "default", "via", "10.244.9.1")
            proc = subprocess.Popen(["ip", "netns", "exec", name(p), sys.executable, "-c",
                                     SERVER, pod], stdout=subprocess.PIPE, text=True)
            lab.procs.append(proc)
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            lab.pods[pod] = ip
            lab.pod_netns[pod] = p
        yield lab
    finally:
        for proc in lab.procs:
            proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def web_service(node_port: int = 0) -> dict[str, object]:
    port: dict[str, object] = {"name": "http", "port": 80, "protocol": "TCP",
                               "targetPort": "web"}
    spec: dict[str, object] = {"clusterIP": CLUSTER_IP, "ports": [port]}
    if node_port:
        port["nodePort"] = node_port
        spec["type"] = "NodePort"
    return {"metadata": {"namespace": "default", "name": "web"}, "spec": spec}


def web_slice(ips: list[str]) -> dict[str, object]:
    return {"metadata": {"namespace": "default", "name": "web-abc",
                         "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def kube_lines(ipt: Iptables) -> list[str]:
    return [ln for t in ("nat", "filter") for ln in ipt.save(t).splitlines() if "KUBE-" in ln]


@pytest.mark.parametrize("variant", ["nft", "nft-all-chains", "legacy"])
def test_clusterip_and_nodeport_spread_follow_endpoints_and_clean_up(
        lab: Lab, variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both iptables variants: the rules land in the tables that variant's tools show.
    ``nft-all-chains``: every restore opens its tables with ``-Z`` as a large one does
    (iptables_restore.nft_restore_input), from the first sync into a namespace without
    the nat table's built-in chains to the cleanup."""
    if variant == "nft-all-chains":
        monkeypatch.setattr(iptables_restore, "NFT_ALL_CHAINS_AT", 0)
        variant = "nft"
    ipt = Iptables(variant, netns=lab.node)
    proxier = Proxier(ipt, node_name="node1", options=Options(cluster_cidr="10.244.0.0/16"))
    try:
        proxier.set_services([web_service(NODE_PORT)])
        proxier.set_endpoint_slices([web_slice(sorted(lab.pods.values()))])
        assert proxier.sync()
        # the ClusterIP from the client reaches both backends, spread over them
        seen = lab.connect(CLUSTER_IP, 80)
        assert set(seen) == {"pod-a", "pod-b"}, seen
        # the NodePort on the node's address too
        seen = lab.connect(NODE_IP, NODE_PORT)
        assert set(seen) == {"pod-a", "pod-b"}, seen

        # an endpoint removed leaves the rotation (a partial sync)
        proxier.on_endpoint_slice(None, web_slice([lab.pods["pod-a"]]))
        t0 = time.monotonic()
        assert proxier.sync()
        partial_s = time.monotonic() - t0
        assert lab.connect(CLUSTER_IP, 80) == {"pod-a": 24}
        assert lab.connect(NODE_IP, NODE_PORT, 6) == {"pod-a": 6}
        print(f"partial sync (one endpoint removed): {partial_s * 1000:.0f} ms")

        # the tables flushed under the proxier: its next (periodic) run sees the canary
        # gone and writes everything again, jumps included
        for table in ("nat", "filter"):
            ipt.run("-t", table, "-F")
            ipt.run("-t", table, "-X")
        assert lab.connect(CLUSTER_IP, 80, 1) == {"TimeoutError": 1}  # nothing answers
        assert proxier.sync()
        assert lab.connect(CLUSTER_IP, 80, 6) == {"pod-a": 6}

        # a restore the kernel refuses leaves the last good rules serving
        proxier.options = Options(cluster_cidr="10.244.0.0/99")  # not a CIDR: refused
        proxier.on_endpoint_slice(None, web_slice(sorted(lab.pods.values())))
        assert not proxier.sync()
        assert lab.connect(CLUSTER_IP, 80, 6) == {"pod-a": 6}
        proxier.options = Options(cluster_cidr="10.244.0.0/16")
        assert proxier.sync()  # a full one, after the failure
        assert set(lab.connect(CLUSTER_IP, 80)) == {"pod-a", "pod-b"}

        proxier.on_endpoint_slice(web_slice([]), None)
        assert proxier.sync()
        # no endpoints: refused at once (REJECT in filter KUBE-SERVICES), not a timeout
        assert lab.connect(CLUSTER_IP, 80, 2, netns=lab.node) == {"ConnectionRefusedError": 2}
    finally:
        assert proxier.cleanup()
    assert kube_lines(ipt) == []
    assert proxier.cleanup()  # again, with nothing there


def nft_tables(netns: str) -> str:
    return sh("ip", "netns", "exec", name(netns), "nft", "list", "tables")


@pytest.mark.parametrize("tool", ["libnftables", "nft"])
def test_nftables_clusterip_and_nodeport_follow_endpoints_and_clean_up(lab: Lab,
                                                                       tool: str) -> None:
    """serviceProxy.mode nftables: the same traffic through one ``ip kube-proxy`` table,
    written through libnftables in this process or the ``nft`` tool."""
    nft = LibNft(netns=lab.node) if tool == "libnftables" else Nft(netns=lab.node)
    # an earlier run's table with a stale chain: replaced by the first sync, atomically
    nft.run("add table ip kube-proxy\nadd chain ip kube-proxy service-OLD-x/y/tcp/\n")
    proxier = NftProxier(nft, node_name="node1", options=Options(cluster_cidr="10.244.0.0/16"))
    try:
        proxier.set_services([web_service(NODE_PORT)])
        proxier.set_endpoint_slices([web_slice(sorted(lab.pods.values()))])
        assert proxier.sync()
        assert "service-OLD-x/y/tcp/" not in nft.chains()
        seen = lab.connect(CLUSTER_IP, 80)
        assert set(seen) == {"pod-a", "pod-b"}, seen
        seen = lab.connect(NODE_IP, NODE_PORT)
        assert set(seen) == {"pod-a", "pod-b"}, seen
        # from the node itself (nat output)
        assert set(lab.connect(CLUSTER_IP, 80, 12, netns=lab.node)) == {"pod-a", "pod-b"}

        # an endpoint removed leaves the rotation (a partial sync)
        proxier.on_endpoint_slice(None, web_slice([lab.pods["pod-a"]]))
        t0 = time.monotonic()
        assert proxier.sync()
        partial_s = time.monotonic() - t0
        assert "add table" not in nft_transaction(proxier)
        assert lab.connect(CLUSTER_IP, 80) == {"pod-a": 24}
        assert lab.connect(NODE_IP, NODE_PORT, 6) == {"pod-a": 6}
        print(f"nftables partial sync (one endpoint removed): {partial_s * 1000:.0f} ms")

        # the table deleted under the proxier: its next periodic run writes it again
        sh("ip", "netns", "exec", name(lab.node), "nft", "delete", "table", "ip", "kube-proxy")
        assert lab.connect(CLUSTER_IP, 80, 1) == {"TimeoutError": 1}
        assert proxier.sync()
        assert lab.connect(CLUSTER_IP, 80, 6) == {"pod-a": 6}

        # a transaction the kernel refuses leaves the last good rules serving
        proxier.options = Options(cluster_cidr="10.244.0.0/99")  # not a CIDR: refused
        proxier.on_endpoint_slice(None, web_slice(sorted(lab.pods.values())))
        assert not proxier.sync()
        assert lab.connect(CLUSTER_IP, 80, 6) == {"pod-a": 6}
        proxier.options = Options(cluster_cidr="10.244.0.0/16")
        assert proxier.sync()  # a full one, after the failure
        assert set(lab.connect(CLUSTER_IP, 80)) == {"pod-a", "pod-b"}

        proxier.on_endpoint_slice(web_slice([]), None)
        assert proxier.sync()
        # no endpoints: refused at once (no-endpoint-services -> reject), not a timeout
        assert lab.connect(CLUSTER_IP, 80, 2, netns=lab.node) == {"ConnectionRefusedError": 2}
        # another port of the ClusterIP: rejected by cluster-ips-check
        assert lab.connect(CLUSTER_IP, 81, 1, netns=lab.node) == {"ConnectionRefusedError": 1}
    finally:
        assert proxier.cleanup()
    assert "kube-proxy" not in nft_tables(lab.node)
    assert proxier.cleanup()  # again, with nothing there


def test_nftables_a_pod_reaches_itself_through_its_service_masqueraded(lab: Lab) -> None:
    """The rule shape that is not upstream's: a service without affinity DNATs through a
    ``numgen`` map in its own chain (no chain per endpoint), and a pod sent to itself
    through its service is masqueraded by @hairpin-endpoints, so it gets an answer
    (unmasqueraded, it would see its own address as the source and drop the packet)."""
    nft = LibNft(netns=lab.node)
    proxier = NftProxier(nft, node_name="node1", options=Options(cluster_cidr="10.244.0.0/16"))
    try:
        proxier.set_services([web_service()])
        proxier.set_endpoint_slices([web_slice([lab.pods["pod-a"]])])
        assert proxier.sync()
        assert not any(c.startswith("endpoint-") for c in nft.chains())
        assert lab.connect(CLUSTER_IP, 80, 4, netns=lab.pod_netns["pod-a"]) == {"pod-a": 4}
        assert "10.244.9.2 . 10.244.9.2" in sh(
            "ip", "netns", "exec", name(lab.node), "nft", "list", "set", "ip", "kube-proxy",
            "hairpin-endpoints")
        # both pods behind it (the numgen map): each pod reaches both, itself included
        proxier.on_endpoint_slice(None, web_slice(sorted(lab.pods.values())))
        assert proxier.sync()
        for pod in lab.pods:
            seen = lab.connect(CLUSTER_IP, 80, netns=lab.pod_netns[pod])
            assert set(seen) == {"pod-a", "pod-b"}, (pod, seen)
    finally:
        assert proxier.cleanup()


def test_nftables_a_forwarded_client_of_a_service_without_endpoints_is_refused(
        lab: Lab) -> None:
    """A client the node forwards for (not the node itself) to a ClusterIP with no
    endpoints is refused at once by filter-forward's reject-chain, not left to time out.
    The client's route back leaves by the link it came in on, so the node first sends it
    an ICMP redirect, and the kernel's per-host ICMP rate limit then swallows an ICMP
    port-unreachable: TCP is refused with a reset, which no rate limit holds back."""
    proxier = NftProxier(LibNft(netns=lab.node), node_name="node1",
                         options=Options(cluster_cidr="10.244.0.0/16"))
    try:
        proxier.set_services([web_service()])
        proxier.set_endpoint_slices([web_slice([])])
        assert proxier.sync()
        t0 = time.monotonic()
        assert lab.connect(CLUSTER_IP, 80, 5) == {"ConnectionRefusedError": 5}
        took = time.monotonic() - t0
        assert took < 1.5, f"refused after {took:.1f} s: a timeout, not a refusal"
        # and a pod on the node (forwarded from the bridge to the default route)
        assert lab.connect(CLUSTER_IP, 80, 5, netns=lab.pod_netns["pod-a"]) == {
            "ConnectionRefusedError": 5}
        print(f"forwarded client, no endpoints: 5 refusals in {took * 1000:.0f} ms")
    finally:
        assert proxier.cleanup()


def nft_transaction(proxier: NftProxier) -> str:
    assert proxier.last_rules is not None
    return proxier.last_rules.text


def test_leftovers_of_an_earlier_run_are_removed_at_the_first_sync(lab: Lab) -> None:
    """A proxier that died without cleanup left a service's chains; the next one's first
    (full) sync deletes those no longer wanted and keeps one copy of each jump rule."""
    ipt = Iptables(netns=lab.node)
    old = Proxier(ipt, options=Options(cluster_cidr="10.244.0.0/16"))
    gone = {"metadata": {"namespace": "default", "name": "gone"},
            "spec": {"clusterIP": "10.96.7.11", "ports": [{"port": 81}]}}
    gone_slice = {"metadata": {"namespace": "default", "name": "gone-x",
                               "labels": {"kubernetes.io/service-name": "gone"}},
                  "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.9.2"]}],
                  "ports": [{"port": 8080}]}
    old.set_services([gone, web_service()])
    old.set_endpoint_slices([gone_slice, web_slice([lab.pods["pod-b"]])])
    new = Proxier(ipt, options=Options(cluster_cidr="10.244.0.0/16"))
    try:
        assert old.sync()
        stale = {ln.split()[0][1:] for ln in ipt.save("nat").splitlines()
                 if ln.startswith(":KUBE-S")}
        new.set_services([web_service()])
        new.set_endpoint_slices([web_slice([lab.pods["pod-a"]])])
        assert new.sync()
        nat = ipt.save("nat")
        now = {ln.split()[0][1:] for ln in nat.splitlines() if ln.startswith(":KUBE-S")}
        assert now == new._active_chains | {"KUBE-SERVICES"}
        assert not (stale - now) & now
        assert nat.count("-j KUBE-SERVICES") == 2  # PREROUTING and OUTPUT, once each
        assert lab.connect(CLUSTER_IP, 80, 6) == {"pod-a": 6}
    finally:
        assert new.cleanup()
    assert kube_lines(ipt) == []


DNS_IP = "10.96.7.53"


def dns_objects(ips: list[str]) -> tuple[dict[str, object], dict[str, object]]:
    svc = {"metadata": {"namespace": "kube-system", "name": "dns"},
           "spec": {"clusterIP": DNS_IP,
                    "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}}
    es = {"metadata": {"namespace": "kube-system", "name": "dns-x",
                       "labels": {"kubernetes.io/service-name": "dns"}},
          "addressType": "IPv4",
          "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips],
          "ports": [{"name": "dns", "port": 5353, "protocol": "UDP"}]}
    return svc, es


def test_a_udp_client_leaves_a_removed_endpoint(lab: Lab) -> None:
    """A client sending from one UDP port is pinned by conntrack to its first endpoint; when
    that endpoint leaves, the stale entry is deleted and the next datagram goes to one that
    is left (not into the void)."""
    ipt = Iptables(netns=lab.node)
    proxier = Proxier(ipt, node_name="node1", options=Options(cluster_cidr="10.244.0.0/16"),
                      conntrack=ConntrackCleaner(lab.node))

    def ask() -> str:
        return sh("ip", "netns", "exec", name(lab.client), sys.executable, "-c",
                  UDP_CLIENT, DNS_IP).strip()

    try:
        svc, es = dns_objects(sorted(lab.pods.values()))
        proxier.set_services([svc])
        proxier.set_endpoint_slices([es])
        assert proxier.sync()
        first = ask()
        assert first in lab.pods, first
        assert ask() == first  # pinned by its conntrack entry
        left = next(p for p in lab.pods if p != first)
        proxier.on_endpoint_slice(None, dns_objects([lab.pods[left]])[1])
        assert proxier.sync()
        assert ask() == left
    finally:
        assert proxier.cleanup()
