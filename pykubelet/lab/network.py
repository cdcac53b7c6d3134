"""The lab's links, addresses and routes, through pyroute2 (a long-lived process pays its
import once; pycni keeps its light netlink module for exec'd plugins).

Every function is idempotent: it makes what is missing and leaves what is there, so a
step can be run again after a crash. Nothing here touches the host's uplink, default
route or DNS: the host side is one bridge with the lab's /24 and one veth per node.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
from collections.abc import Iterator

from pyroute2 import IPRoute, NetlinkError
from pyroute2 import netns as pr_netns

from pycni.ip import sysctl
from pycni.ns import entered
from pykubelet.lab.layout import NETNS_DIR, LabLayout, NodeLayout
from pykubelet.runtime.netns import in_throwaway_thread, unmount

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"  # the control plane's default, as the lab leaves it
_GONE = (errno.ENODEV, errno.ENOENT, errno.ESRCH, errno.EINVAL)


@contextlib.contextmanager
def _ipr(netns: str | None = None) -> Iterator[IPRoute]:
    ipr = IPRoute(netns=netns) if netns else IPRoute()
    try:
        yield ipr
    finally:
        ipr.close()


def _index(ipr: IPRoute, name: str) -> int | None:
    found = ipr.link_lookup(ifname=name)
    return found[0] if found else None


def host_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks on the host's interfaces (a lab subnet must not overlap them)."""
    out = []
    with _ipr() as ipr:
        for msg in ipr.get_addr(family=2):
            addr = msg.get_attr("IFA_ADDRESS")
            if addr:
                out.append(ipaddress.IPv4Network(f"{addr}/{msg['prefixlen']}", strict=False))
    return out


def link_exists(name: str) -> bool:
    with _ipr() as ipr:
        return _index(ipr, name) is not None


def netns_exists(name: str) -> bool:
    return (NETNS_DIR / name).exists()


def _ensure_addr(ipr: IPRoute, index: int, address: str, prefixlen: int) -> None:
    try:
        ipr.addr("add", index=index, address=address, prefixlen=prefixlen)
    except NetlinkError as exc:
        if exc.code != errno.EEXIST:
            raise


def ensure_bridge(lab: LabLayout) -> None:
    """The host bridge with the lab's gateway address, up."""
    with _ipr() as ipr:
        idx = _index(ipr, lab.bridge)
        if idx is None:
            ipr.link("add", ifname=lab.bridge, kind="bridge")
            idx = _index(ipr, lab.bridge)
            assert idx is not None
        ipr.link("set", index=idx, ifalias=lab.link_alias)
        _ensure_addr(ipr, idx, lab.gateway, lab.prefixlen)
        ipr.link("set", index=idx, state="up")


def ensure_netns(name: str) -> None:
    if not netns_exists(name):
        pr_netns.create(name)


def ensure_node_link(lab: LabLayout, node: NodeLayout) -> None:
    """The node's veth: the host end on the lab bridge, eth0 with the node's address in
    its namespace, lo up, forwarding on, and host-gw routes to the other nodes' pods."""
    ensure_netns(node.netns)
    with _ipr() as ipr:
        bridge = _index(ipr, lab.bridge)
        assert bridge is not None, f"{lab.bridge}: the lab bridge is missing"
        host = _index(ipr, node.host_veth)
        if host is None:
            with _ipr(node.netns) as nipr:  # a half-made pair from a crashed run
                stale = _index(nipr, node.node_veth)
                if stale is not None:
                    nipr.link("del", index=stale)
            ipr.link("add", ifname=node.host_veth, kind="veth",
                     peer={"ifname": node.node_veth, "net_ns_fd": node.netns})
            host = _index(ipr, node.host_veth)
            assert host is not None
        ipr.link("set", index=host, master=bridge, ifalias=lab.link_alias)
        ipr.link("set", index=host, state="up")
    with _ipr(node.netns) as nipr:
        lo = _index(nipr, "lo")
        if lo is not None:
            nipr.link("set", index=lo, state="up")
        eth = _index(nipr, node.node_veth)
        assert eth is not None, f"{node.netns}: {node.node_veth} is missing"
        _ensure_addr(nipr, eth, node.address, lab.prefixlen)
        nipr.link("set", index=eth, state="up")
        for cidr, via in lab.pod_routes(node.index):
            net = ipaddress.ip_network(cidr)
            nipr.route("replace", dst=str(net.network_address), dst_len=net.prefixlen,
                       gateway=via, oif=eth)
        # a kind node has a default route, so a ClusterIP leaves its own namespace (the
        # node, hostNetwork pods) and OUTPUT's DNAT rewrites it: the lab routes only the
        # service range, on the lab link without a gateway (a ClusterIP no rule takes
        # goes nowhere, never to the host's uplink)
        svc = ipaddress.ip_network(SERVICE_CLUSTER_IP_RANGE)
        nipr.route("replace", dst=str(svc.network_address), dst_len=svc.prefixlen,
                   oif=eth, prefsrc=node.address)
    set_sysctls(node.netns, {"net/ipv4/ip_forward": "1"})


def set_sysctls(netns: str, values: dict[str, str]) -> None:
    """Write sysctls as the namespace sees them (from a throwaway thread inside it)."""
    def inside() -> None:
        with entered(str(NETNS_DIR / netns)):
            for key, value in values.items():
                sysctl.set_(key, value)

    in_throwaway_thread(inside, f"sysctl-{netns}")


def node_routes(netns: str) -> list[tuple[str, str]]:
    """(dst/len, gateway) of the routes with a gateway inside a node namespace."""
    out = []
    with _ipr(netns) as nipr:
        for r in nipr.get_routes(family=2):
            gw = r.get_attr("RTA_GATEWAY")
            dst = r.get_attr("RTA_DST")
            if gw and dst:
                out.append((f"{dst}/{r['dst_len']}", gw))
    return sorted(out)


def delete_link(name: str) -> bool:
    """Delete a host link; True when it was there."""
    with _ipr() as ipr:
        idx = _index(ipr, name)
        if idx is None:
            return False
        try:
            ipr.link("del", index=idx)
        except NetlinkError as exc:
            if exc.code not in _GONE:
                raise
        return True


def links_with_alias(alias: str) -> list[str]:
    """Host links a lab tagged with its alias (found even without its state file)."""
    with _ipr() as ipr:
        return sorted(
            str(m.get_attr("IFLA_IFNAME")) for m in ipr.get_links()
            if m.get_attr("IFLA_IFALIAS") == alias)


def delete_netns(name: str) -> bool:
    """Unpin and remove a named namespace; True when it was there."""
    path = NETNS_DIR / name
    if not path.exists():
        return False
    try:
        pr_netns.remove(name)
    except OSError:
        with contextlib.suppress(OSError):
            unmount(str(path))
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return True


def netns_inode(path: str | os.PathLike[str]) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None
