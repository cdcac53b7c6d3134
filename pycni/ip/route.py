"""Routes over rtnetlink: add (as netlink's RouteAddEcmp) and list the main table."""

from __future__ import annotations

import errno
import ipaddress
import struct

from pycni.ip.netlink import (
    NLM_F_APPEND,
    NLM_F_CREATE,
    NLM_F_DUMP,
    RTM_GETROUTE,
    RTM_NEWROUTE,
    NetlinkError,
    RtNetlink,
    attr_u32,
    nla,
    nla_u32,
    parse_attrs,
)
from pycni.spec import IPAddress, IPNetwork

RTA_DST = 1
RTA_OIF = 4
RTA_GATEWAY = 5
RTA_PRIORITY = 6
RTA_TABLE = 15
RT_TABLE_MAIN = 254
RTPROT_BOOT = 3
RT_SCOPE_UNIVERSE = 0
RTN_UNICAST = 1
AF_INET, AF_INET6 = 2, 10
_RTMSG = struct.Struct("=BBBBBBBBI")


class KernelRoute(tuple[IPNetwork, "IPAddress | None", int, int]):
    """(dst, gw, oif, table) of one kernel route (a tuple: cheap to define and compare)."""

    __slots__ = ()

    def __new__(cls, dst: IPNetwork, gw: IPAddress | None, oif: int, table: int) -> KernelRoute:
        return tuple.__new__(cls, (dst, gw, oif, table))

    dst = property(lambda self: self[0])
    gw = property(lambda self: self[1])
    oif = property(lambda self: self[2])
    table = property(lambda self: self[3])


def add_route(nl: RtNetlink, dst: IPNetwork, gw: IPAddress | None, oif: int,
              priority: int | None = None) -> None:
    """Add a unicast route in the main table; the same route again is fine."""
    family = AF_INET if dst.version == 4 else AF_INET6
    body = _RTMSG.pack(family, dst.prefixlen, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT,
                       RT_SCOPE_UNIVERSE, RTN_UNICAST, 0)
    if dst.prefixlen:
        body += nla(RTA_DST, dst.network_address.packed)
    if gw is not None:
        body += nla(RTA_GATEWAY, gw.packed)
    body += nla_u32(RTA_OIF, oif)
    if priority is not None:
        body += nla_u32(RTA_PRIORITY, priority)
    try:
        nl.request(RTM_NEWROUTE, body, NLM_F_CREATE | NLM_F_APPEND)
    except NetlinkError as exc:
        if exc.errno != errno.EEXIST:
            raise


def list_routes(nl: RtNetlink, version: int = 4, oif: int | None = None) -> list[KernelRoute]:
    """Unicast routes of the main table (optionally only those out of ``oif``)."""
    family = AF_INET if version == 4 else AF_INET6
    out: list[KernelRoute] = []
    for body in nl.request(RTM_GETROUTE, _RTMSG.pack(family, 0, 0, 0, 0, 0, 0, 0, 0), NLM_F_DUMP):
        fam, dst_len, _s, _t, table, _p, _sc, rtype, _f = _RTMSG.unpack_from(body)
        attrs = parse_attrs(body, _RTMSG.size)
        if RTA_TABLE in attrs:
            table = attr_u32(attrs[RTA_TABLE])
        if fam != family or rtype != RTN_UNICAST or table != RT_TABLE_MAIN:
            continue
        route_oif = attr_u32(attrs[RTA_OIF]) if RTA_OIF in attrs else 0
        if oif is not None and route_oif != oif:
            continue
        zero = b"\0" * (4 if version == 4 else 16)
        dst = ipaddress.ip_network((ipaddress.ip_address(attrs.get(RTA_DST, zero)), dst_len))
        gw = ipaddress.ip_address(attrs[RTA_GATEWAY]) if RTA_GATEWAY in attrs else None
        out.append(KernelRoute(dst, gw, route_oif, table))
    return out
