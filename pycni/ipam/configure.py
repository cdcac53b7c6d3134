"""Apply an IPAM result to an interface (the reference's ``ipam.ConfigureIface``).

Runs with a netlink socket of the container's netns: the link up, each address
whose ``interface`` index names it, then the routes (a route without ``gw`` goes
via the first gateway of its family, as the reference does).
"""

from __future__ import annotations

from pycni.errors import CNIError
from pycni.ip import addr as ipaddr
from pycni.ip import link as iplink
from pycni.ip import route as iproute
from pycni.ip.netlink import NetlinkError, RtNetlink
from pycni.spec import IPAddress, Result


def configure_iface(nl: RtNetlink, ifname: str, result: Result,
                    link: iplink.Link | None = None) -> None:
    if not result.interfaces:
        raise CNIError("no interfaces to configure")
    if link is None:
        link = iplink.get_link(nl, ifname)
    if not link.up:
        iplink.set_up(nl, link.index)
    gws: dict[int, IPAddress] = {}
    for ipc in result.ips:
        if ipc.interface is None:
            continue
        idx = ipc.interface
        if idx < 0 or idx >= len(result.interfaces) or result.interfaces[idx].name != ifname:
            raise CNIError(f'failed to add IP addr {ipc.address} to "{ifname}": '
                           "invalid interface index")
        try:
            ipaddr.add_addr(nl, link.index, ipc.address)
        except NetlinkError as exc:
            raise CNIError(f'failed to add IP addr {ipc.address} to "{ifname}": {exc}') from exc
        if ipc.gateway is not None:
            gws.setdefault(ipc.gateway.version, ipc.gateway)
    for r in result.routes:
        gw = r.gw if r.gw is not None else gws.get(r.dst.version)
        try:
            iproute.add_route(nl, r.dst, gw, link.index, r.priority)
        except NetlinkError as exc:
            raise CNIError(f"failed to add route '{r.dst} via {gw} dev {ifname}': {exc}") from exc

