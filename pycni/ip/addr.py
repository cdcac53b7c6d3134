"""Interface addresses over rtnetlink: list, add (EEXIST tolerated), delete."""

from __future__ import annotations

import errno
import ipaddress
import struct

from pycni.ip.netlink import (
    NLM_F_CREATE,
    NLM_F_DUMP,
    NLM_F_EXCL,
    RTM_DELADDR,
    RTM_GETADDR,
    RTM_NEWADDR,
    NetlinkError,
    RtNetlink,
    nla,
    parse_attrs,
)
from pycni.spec import IPInterface

IFA_ADDRESS = 1
IFA_LOCAL = 2
IFA_BROADCAST = 4
AF_INET, AF_INET6 = 2, 10
_IFADDR = struct.Struct("=BBBBI")


def _family(version: int) -> int:
    return AF_INET if version == 4 else AF_INET6


def list_addrs(nl: RtNetlink, index: int, version: int | None = None) -> list[IPInterface]:
    """Addresses on link ``index`` (of one IP version if given), with their prefix."""
    family = 0 if version is None else _family(version)
    out: list[IPInterface] = []
    for body in nl.request(RTM_GETADDR, _IFADDR.pack(family, 0, 0, 0, 0), NLM_F_DUMP):
        fam, plen, _flags, _scope, idx = _IFADDR.unpack_from(body)
        if idx != index or (family and fam != family):
            continue
        attrs = parse_attrs(body, _IFADDR.size)
        raw = attrs.get(IFA_LOCAL) or attrs.get(IFA_ADDRESS)
        if raw is None:
            continue
        out.append(ipaddress.ip_interface((ipaddress.ip_address(raw), plen)))
    return out


def _msg(index: int, addr: IPInterface) -> bytes:
    packed = addr.ip.packed
    body = _IFADDR.pack(_family(addr.version), addr.network.prefixlen, 0, 0, index)
    body += nla(IFA_LOCAL, packed) + nla(IFA_ADDRESS, packed)
    if addr.version == 4 and addr.network.prefixlen < 31:
        body += nla(IFA_BROADCAST, addr.network.broadcast_address.packed)
    return body


def add_addr(nl: RtNetlink, index: int, addr: IPInterface) -> None:
    """Add ``addr`` to link ``index``; already present is fine."""
    try:
        nl.request(RTM_NEWADDR, _msg(index, addr), NLM_F_CREATE | NLM_F_EXCL)
    except NetlinkError as exc:
        if exc.errno != errno.EEXIST:
            raise


def del_addr(nl: RtNetlink, index: int, addr: IPInterface) -> None:
    """Remove ``addr``; already gone is fine."""
    try:
        nl.request(RTM_DELADDR, _msg(index, addr))
    except NetlinkError as exc:
        if exc.errno not in (errno.EADDRNOTAVAIL, errno.ENODEV, errno.ENOENT):
            raise
