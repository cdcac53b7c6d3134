"""Links over rtnetlink: look up, create bridges and veth pairs, set flags, delete.

Mirrors what the reference's ``pkg/ip/link_linux.go`` and the bridge plugin do,
with fewer round trips: a veth pair is created in one message with the peer
already in the container netns, both ends up, and the host end on its bridge.
"""

from __future__ import annotations

import errno
import os
import struct

from pycni.ip.netlink import (
    NLM_F_CREATE,
    NLM_F_DUMP,
    NLM_F_EXCL,
    RTM_DELLINK,
    RTM_GETLINK,
    RTM_NEWLINK,
    RTM_SETLINK,
    NetlinkError,
    RtNetlink,
    attr_str,
    attr_u32,
    nla,
    nla_nested,
    nla_str,
    nla_u8,
    nla_u32,
    parse_attrs,
)

AF_UNSPEC = 0
AF_BRIDGE = 7
IFF_UP = 0x1
IFF_PROMISC = 0x100

IFLA_ADDRESS = 1
IFLA_IFNAME = 3
IFLA_MTU = 4
IFLA_LINK = 5
IFLA_MASTER = 10
IFLA_PROTINFO = 12
IFLA_LINKINFO = 18
IFLA_NET_NS_FD = 28
IFLA_LINK_NETNSID = 37
IFLA_INFO_KIND = 1
IFLA_INFO_DATA = 2
VETH_INFO_PEER = 1
IFLA_BRPORT_MODE = 4
IFLA_BR_VLAN_FILTERING = 7

_IFINFO = struct.Struct("=BxHiII")


class LinkNotFound(LookupError):
    """No link with that name (the reference's ErrLinkNotFound)."""


class Link:
    """One link as RTM_GETLINK reports it (a plain class: a dataclass costs import time)."""

    __slots__ = ("flags", "index", "kind", "mac", "master", "mtu", "name", "peer_index")

    def __init__(self, index: int, name: str, flags: int, mtu: int, mac: str, master: int,
                 kind: str, peer_index: int) -> None:
        self.index, self.name, self.flags, self.mtu = index, name, flags, mtu
        self.mac, self.master, self.kind = mac, master, kind
        self.peer_index = peer_index  # IFLA_LINK: a veth's peer ifindex (in its netns)

    def __repr__(self) -> str:
        return (f"Link(index={self.index}, name={self.name!r}, flags={self.flags:#x}, "
                f"mtu={self.mtu}, mac={self.mac!r}, master={self.master}, kind={self.kind!r}, "
                f"peer_index={self.peer_index})")

    @property
    def up(self) -> bool:
        return bool(self.flags & IFF_UP)

    @property
    def promisc(self) -> bool:
        return bool(self.flags & IFF_PROMISC)


def _ifinfo(index: int = 0, flags: int = 0, change: int = 0, family: int = AF_UNSPEC) -> bytes:
    return _IFINFO.pack(family, 0, index, flags, change)


def _mac_str(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def _parse_link(body: bytes) -> Link:
    _fam, _type, index, flags, _change = _IFINFO.unpack_from(body)
    attrs = parse_attrs(body, _IFINFO.size)
    kind = ""
    if IFLA_LINKINFO in attrs:
        info = parse_attrs(attrs[IFLA_LINKINFO])
        kind = attr_str(info.get(IFLA_INFO_KIND, b""))
    return Link(
        index=index,
        name=attr_str(attrs.get(IFLA_IFNAME, b"")),
        flags=flags,
        mtu=attr_u32(attrs[IFLA_MTU]) if IFLA_MTU in attrs else 0,
        mac=_mac_str(attrs.get(IFLA_ADDRESS, b"")),
        master=attr_u32(attrs[IFLA_MASTER]) if IFLA_MASTER in attrs else 0,
        kind=kind,
        peer_index=attr_u32(attrs[IFLA_LINK]) if IFLA_LINK in attrs else 0,
    )


def get_link(nl: RtNetlink, name: str) -> Link:
    """The link called ``name``; LinkNotFound if there is none."""
    try:
        replies = nl.request(RTM_GETLINK, _ifinfo() + nla_str(IFLA_IFNAME, name))
    except NetlinkError as exc:
        if exc.errno in (errno.ENODEV, errno.ENOENT):
            raise LinkNotFound(f'Link not found: "{name}"') from exc
        raise
    if not replies:
        raise LinkNotFound(f'Link not found: "{name}"')
    return _parse_link(replies[0])


def get_link_by_index(nl: RtNetlink, index: int) -> Link:
    try:
        replies = nl.request(RTM_GETLINK, _ifinfo(index))
    except NetlinkError as exc:
        if exc.errno in (errno.ENODEV, errno.ENOENT):
            raise LinkNotFound(f"Link not found: index {index}") from exc
        raise
    return _parse_link(replies[0])


def find_link(nl: RtNetlink, name: str) -> Link | None:
    try:
        return get_link(nl, name)
    except LinkNotFound:
        return None


def list_links(nl: RtNetlink) -> list[Link]:
    return [_parse_link(b) for b in nl.request(RTM_GETLINK, _ifinfo(), NLM_F_DUMP)]


def create_bridge(nl: RtNetlink, name: str, mtu: int | None = None,
                  vlan_filtering: bool = False) -> None:
    """Create a bridge, up; NetlinkError(EEXIST) if the name is taken."""
    info = [nla_str(IFLA_INFO_KIND, "bridge")]
    if vlan_filtering:
        info.append(nla_nested(IFLA_INFO_DATA, nla_u8(IFLA_BR_VLAN_FILTERING, 1)))
    attrs = nla_str(IFLA_IFNAME, name) + nla_nested(IFLA_LINKINFO, *info)
    if mtu:
        attrs += nla_u32(IFLA_MTU, mtu)
    nl.request(RTM_NEWLINK, _ifinfo(0, IFF_UP, IFF_UP) + attrs, NLM_F_CREATE | NLM_F_EXCL)


def random_veth_name() -> str:
    """``veth`` + 8 hex digits, as the reference names host ends."""
    return "veth" + os.urandom(4).hex()


def create_veth(nl: RtNetlink, host_name: str, peer_name: str, peer_netns_fd: int,
                mtu: int | None = None, master: int = 0, mac: str = "") -> None:
    """Create a veth pair: ``host_name`` here, up (on ``master`` if given), and
    ``peer_name`` directly in the netns behind ``peer_netns_fd``, still down (asking for
    the peer up in the same message fails with ENOTCONN on current kernels)."""
    peer = _ifinfo() + nla_str(IFLA_IFNAME, peer_name)
    peer += nla_u32(IFLA_NET_NS_FD, peer_netns_fd)
    if mtu:
        peer += nla_u32(IFLA_MTU, mtu)
    if mac:
        peer += nla(IFLA_ADDRESS, bytes.fromhex(mac.replace(":", "")))
    info = nla_nested(IFLA_LINKINFO, nla_str(IFLA_INFO_KIND, "veth"),
                      nla_nested(IFLA_INFO_DATA, nla(VETH_INFO_PEER, peer)))
    attrs = nla_str(IFLA_IFNAME, host_name) + info
    if mtu:
        attrs += nla_u32(IFLA_MTU, mtu)
    if master:
        attrs += nla_u32(IFLA_MASTER, master)
    nl.request(RTM_NEWLINK, _ifinfo(0, IFF_UP, IFF_UP) + attrs, NLM_F_CREATE | NLM_F_EXCL)


def set_flags(nl: RtNetlink, index: int, flags: int, mask: int) -> None:
    """Set the ``mask`` bits of a link's flags to those in ``flags`` (IFF_UP, IFF_PROMISC)."""
    nl.request(RTM_NEWLINK, _ifinfo(index, flags, mask))


def set_up(nl: RtNetlink, index: int, up: bool = True) -> None:
    set_flags(nl, index, IFF_UP if up else 0, IFF_UP)


def set_master(nl: RtNetlink, index: int, master: int) -> None:
    nl.request(RTM_NEWLINK, _ifinfo(index) + nla_u32(IFLA_MASTER, master))


def set_mac(nl: RtNetlink, index: int, mac: str) -> None:
    nl.request(RTM_NEWLINK, _ifinfo(index) + nla(IFLA_ADDRESS,
                                                  bytes.fromhex(mac.replace(":", ""))))


def set_hairpin(nl: RtNetlink, index: int, on: bool) -> None:
    """Hairpin mode of a bridge port (IFLA_BRPORT_MODE in IFLA_PROTINFO, as netlink's
    LinkSetHairpin does)."""
    nl.request(RTM_SETLINK, _ifinfo(index, family=AF_BRIDGE)
               + nla_nested(IFLA_PROTINFO, nla_u8(IFLA_BRPORT_MODE, 1 if on else 0)))


IFLA_AF_SPEC = 26
IFLA_BRIDGE_FLAGS = 0
IFLA_BRIDGE_VLAN_INFO = 2
BRIDGE_FLAGS_MASTER = 1
BRIDGE_VLAN_INFO_PVID = 2
BRIDGE_VLAN_INFO_UNTAGGED = 4


def bridge_vlan_add(nl: RtNetlink, port_index: int, vid: int, pvid: bool = True,
                    untagged: bool = True) -> None:
    """Add ``vid`` to a bridge port (``bridge vlan add dev PORT vid VID pvid untagged
    master``, as netlink's BridgeVlanAdd with master=true)."""
    flags = (BRIDGE_VLAN_INFO_PVID if pvid else 0) | (BRIDGE_VLAN_INFO_UNTAGGED if untagged else 0)
    spec = nla_nested(IFLA_AF_SPEC, nla(IFLA_BRIDGE_FLAGS, struct.pack("=H", BRIDGE_FLAGS_MASTER)),
                      nla(IFLA_BRIDGE_VLAN_INFO, struct.pack("=HH", flags, vid)))
    nl.request(RTM_SETLINK, _ifinfo(port_index, family=AF_BRIDGE) + spec)


def bridge_vlan_del(nl: RtNetlink, port_index: int, vid: int) -> None:
    """Remove ``vid`` from a bridge port (``bridge vlan del ... master``)."""
    spec = nla_nested(IFLA_AF_SPEC, nla(IFLA_BRIDGE_FLAGS, struct.pack("=H", BRIDGE_FLAGS_MASTER)),
                      nla(IFLA_BRIDGE_VLAN_INFO, struct.pack("=HH", 0, vid)))
    nl.request(RTM_DELLINK, _ifinfo(port_index, family=AF_BRIDGE) + spec)


def delete_link(nl: RtNetlink, index: int) -> None:
    """Delete by index; a link already gone counts as success."""
    try:
        nl.request(RTM_DELLINK, _ifinfo(index))
    except NetlinkError as exc:
        if exc.errno not in (errno.ENODEV, errno.ENOENT):
            raise


def delete_link_by_name(nl: RtNetlink, name: str) -> bool:
    """Delete by name; False if there was no such link."""
    link = find_link(nl, name)
    if link is None:
        return False
    delete_link(nl, link.index)
    return True
