"""The minimal rtnetlink layer on its own, entirely inside a throwaway netns."""

from __future__ import annotations

import errno
import ipaddress
import os
import threading
from collections.abc import Callable, Iterator

import pytest
from plugin_harness import ip_json

from pycni import ns
from pycni.ip import addr as ipaddr
from pycni.ip import link as iplink
from pycni.ip import route as iproute
from pycni.ip.netlink import NetlinkError, RtNetlink

pytestmark = [pytest.mark.root, pytest.mark.netns]


@pytest.fixture
def nl(netns: str) -> Iterator[tuple[str, RtNetlink]]:
    with ns.entered(netns):
        sock = RtNetlink()
    with sock:
        yield netns, sock


def test_links_addresses_routes_and_idempotence(nl: tuple[str, RtNetlink]) -> None:
    path, sock = nl
    with pytest.raises(iplink.LinkNotFound):
        iplink.get_link(sock, "pck-missing")
    assert iplink.find_link(sock, "pck-missing") is None
    iplink.create_bridge(sock, "pckbr", mtu=1400)
    with pytest.raises(NetlinkError) as exists:
        iplink.create_bridge(sock, "pckbr")
    assert exists.value.errno == errno.EEXIST
    br = iplink.get_link(sock, "pckbr")
    assert (br.kind, br.mtu, br.up) == ("bridge", 1400, True)
    iplink.set_flags(sock, br.index, iplink.IFF_PROMISC, iplink.IFF_PROMISC)
    assert iplink.get_link(sock, "pckbr").promisc
    gw = ipaddress.ip_interface("10.92.55.1/24")
    ipaddr.add_addr(sock, br.index, gw)
    ipaddr.add_addr(sock, br.index, gw)  # EEXIST tolerated
    assert gw in ipaddr.list_addrs(sock, br.index, 4)
    assert ip_json(path, "addr", "show", "pckbr")[0]["addr_info"][0]["broadcast"] == \
        "10.92.55.255"
    dst = ipaddress.ip_network("10.93.0.0/16")
    iproute.add_route(sock, dst, gw.ip, br.index)
    iproute.add_route(sock, dst, gw.ip, br.index)  # EEXIST tolerated
    routes = iproute.list_routes(sock, 4, oif=br.index)
    assert (dst, gw.ip) in {(r.dst, r.gw) for r in routes}
    ipaddr.del_addr(sock, br.index, gw)
    ipaddr.del_addr(sock, br.index, gw)  # already gone: fine
    assert ipaddr.list_addrs(sock, br.index, 4) == []
    assert iplink.delete_link_by_name(sock, "pckbr")
    assert not iplink.delete_link_by_name(sock, "pckbr")
    iplink.delete_link(sock, br.index)  # ENODEV tolerated


def test_veth_pair_across_namespaces(
    nl: tuple[str, RtNetlink], netns_factory: Callable[[str], str]
) -> None:
    _path, sock = nl
    other = netns_factory("nl")
    with ns.entered(other):
        peer_sock = RtNetlink()
    fd = ns.open_netns(other)
    try:
        iplink.create_veth(sock, "pckv0", "pckv1", fd, mtu=1300, mac="0a:58:00:00:00:01")
    finally:
        os.close(fd)
    with peer_sock:
        host, peer = iplink.get_link(sock, "pckv0"), iplink.get_link(peer_sock, "pckv1")
        assert (host.kind, peer.kind, host.mtu, peer.mtu) == ("veth", "veth", 1300, 1300)
        assert peer.mac == "0a:58:00:00:00:01"
        assert host.peer_index == peer.index
        assert peer.peer_index == host.index
        assert host.up
        assert not peer.up


def test_entered_switches_only_the_calling_thread(netns: str) -> None:
    path = netns
    here = os.stat("/proc/thread-self/ns/net").st_ino
    target = os.stat(path).st_ino
    seen: dict[str, int] = {}
    inside = threading.Event()
    release = threading.Event()

    def worker() -> None:
        with ns.entered(path):
            seen["worker"] = os.stat("/proc/thread-self/ns/net").st_ino
            inside.set()
            release.wait(5)
        seen["after"] = os.stat("/proc/thread-self/ns/net").st_ino

    t = threading.Thread(target=worker)
    t.start()
    assert inside.wait(5)
    seen["main"] = os.stat("/proc/thread-self/ns/net").st_ino
    release.set()
    t.join()
    assert seen == {"worker": target, "main": here, "after": here}
    with pytest.raises(ns.NotANetNS), ns.entered("/etc/hostname"):
        pass
    with pytest.raises(ns.NetNSNotFound), ns.entered("/run/netns/pck-nope"):
        pass
    assert os.stat("/proc/thread-self/ns/net").st_ino == here
