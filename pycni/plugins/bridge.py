"""The bridge plugin: a Linux bridge on the host, a veth pair into the container netns.

Behaves as the reference ``plugins/main/bridge`` (1.1.1): the same config keys
(bridge, isGateway, isDefaultGateway, forceAddress, ipMasq, mtu, hairpinMode,
promiscMode, vlan, preserveDefaultVlan, mac via CNI_ARGS/args/runtimeConfig), the
same result (interfaces bridge, host veth, container veth[, vlan gateway]), the
same gateway and masquerade rules. Where we differ, to leak nothing and change
nothing on bad input:

* ADD asks IPAM first, so a bad IPAM config or an exhausted range fails before a
  link exists; any later failure removes what this ADD made;
* DEL removes the masquerade chain even when the netns is already gone (addresses
  from the cached prevResult, else the chain's POSTROUTING jumps found by name),
  and still removes links and rules when the IPAM DEL fails;
* spec 1.1.0 GC (IPAM GC, then stale masquerade chains).
"""

from __future__ import annotations

import errno
import ipaddress
import os

from pycni import ns
from pycni.errors import CNIError, InvalidNetNS, InvalidNetworkConfig
from pycni.ip import addr as ipaddr
from pycni.ip import link as iplink
from pycni.ip import route as iproute
from pycni.ip import sysctl
from pycni.ip.netlink import NetlinkError, RtNetlink
from pycni.ipam.configure import configure_iface
from pycni.skel import CmdArgs, Plugin, plugin_main
from pycni.spec import Interface, IPInterface, NetConf, Result, Route

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from typing import Any, NoReturn

DEFAULT_BRIDGE = "cni0"
CONTAINER_IF_INDEX = 2  # result.interfaces: [bridge, host veth, container veth]


class BridgeConf:
    """The bridge plugin's own keys of a config (a plain class: cheaper to import)."""

    def __init__(self, netconf: NetConf, bridge: str = DEFAULT_BRIDGE, is_gw: bool = False,
                 is_default_gw: bool = False, force_address: bool = False,
                 ip_masq: bool = False, mtu: int = 0, hairpin: bool = False,
                 promisc: bool = False, vlan: int = 0, preserve_default_vlan: bool = True,
                 mac: str = "") -> None:
        self.netconf, self.bridge, self.is_gw, self.is_default_gw = (
            netconf, bridge, is_gw, is_default_gw)
        self.force_address, self.ip_masq, self.mtu = force_address, ip_masq, mtu
        self.hairpin, self.promisc, self.vlan = hairpin, promisc, vlan
        self.preserve_default_vlan, self.mac = preserve_default_vlan, mac

    @property
    def ipam_type(self) -> str:
        value = self.netconf.ipam.get("type", "")
        return value if isinstance(value, str) else ""


def _field(raw: dict[str, Any], key: str, typ: type, default: Any) -> Any:
    value = raw.get(key)
    if value is None:
        return default
    if typ is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidNetworkConfig(f'field "{key}" must be an integer, got {value!r}')
    if not isinstance(value, typ):
        raise InvalidNetworkConfig(f'field "{key}" must be a {typ.__name__}, got {value!r}')
    return value


def _requested_mac(conf: NetConf, cni_args: str) -> str:
    """The container MAC asked for: CNI_ARGS MAC=, then args.cni.mac, then runtimeConfig.mac
    (each later one wins, as the reference reads them)."""
    mac = ""
    where = ""
    for pair in cni_args.split(";"):
        key, _, value = pair.partition("=")
        if key == "MAC" and value:
            mac, where = value, "CNI_ARGS MAC"
    given = conf.args.get("cni")
    cni: dict[str, Any] = given if isinstance(given, dict) else {}
    if cni.get("mac"):
        mac, where = cni["mac"], "args.cni.mac"
    if conf.runtime_config.get("mac"):
        mac, where = conf.runtime_config["mac"], "runtimeConfig.mac"
    if not mac:
        return ""
    parts = mac.split(":") if isinstance(mac, str) else []
    if len(parts) != 6 or not all(len(p) == 2 and all(c in "0123456789abcdefABCDEF" for c in p)
                                  for p in parts):
        raise InvalidNetworkConfig(f'{where}: invalid MAC address "{mac}"')
    return mac.lower()


def load_conf(conf: NetConf, cni_args: str = "") -> BridgeConf:
    raw = conf.raw
    n = BridgeConf(
        netconf=conf,
        bridge=_field(raw, "bridge", str, DEFAULT_BRIDGE) or DEFAULT_BRIDGE,
        is_gw=_field(raw, "isGateway", bool, False),
        is_default_gw=_field(raw, "isDefaultGateway", bool, False),
        force_address=_field(raw, "forceAddress", bool, False),
        ip_masq=_field(raw, "ipMasq", bool, False),
        mtu=_field(raw, "mtu", int, 0),
        hairpin=_field(raw, "hairpinMode", bool, False),
        promisc=_field(raw, "promiscMode", bool, False),
        vlan=_field(raw, "vlan", int, 0),
        preserve_default_vlan=_field(raw, "preserveDefaultVlan", bool, True),
    )
    if n.is_default_gw:
        n.is_gw = True
    if len(n.bridge) > 15:
        raise InvalidNetworkConfig(f'field "bridge": name "{n.bridge}" is longer than 15 bytes')
    if n.mtu < 0 or n.mtu > 65535:
        raise InvalidNetworkConfig(f'field "mtu": {n.mtu} out of range')
    if n.hairpin and n.promisc:
        raise InvalidNetworkConfig(
            "cannot set hairpin mode and promiscuous mode at the same time.")
    if n.vlan < 0 or n.vlan > 4094:
        raise InvalidNetworkConfig(f'invalid VLAN ID {n.vlan} (must be between 0 and 4094)')
    if raw.get("vlanTrunk") is not None:
        raise InvalidNetworkConfig('field "vlanTrunk": trunk ports are not supported by '
                                   "pycni-bridge (use vlan for an access port)")
    n.mac = _requested_mac(conf, cni_args)
    if "type" in conf.ipam and not n.ipam_type:
        raise InvalidNetworkConfig('field "ipam.type" must be a non-empty string')
    return n


def _netns_socket(path: str) -> RtNetlink:
    """A netlink socket inside the container netns (the thread switches back at once)."""
    try:
        with ns.entered(path):
            return RtNetlink()
    except (ns.NetNSNotFound, ns.NotANetNS) as exc:
        raise InvalidNetNS(f'failed to open netns "{path}": {exc}') from exc


def ensure_bridge(nl: RtNetlink, n: BridgeConf) -> iplink.Link:
    try:
        iplink.create_bridge(nl, n.bridge, n.mtu or None, vlan_filtering=bool(n.vlan))
    except NetlinkError as exc:
        if exc.errno != errno.EEXIST:
            raise CNIError(f'could not add "{n.bridge}": {exc.strerror}') from exc
    br = iplink.get_link(nl, n.bridge)
    if br.kind != "bridge":
        raise CNIError(f'"{n.bridge}" already exists but is not a bridge')
    if not br.up:
        iplink.set_up(nl, br.index)
    if n.promisc and not br.promisc:
        iplink.set_flags(nl, br.index, iplink.IFF_PROMISC, iplink.IFF_PROMISC)
    try:  # we own the routes of this bridge (reference: accept_ra=0)
        sysctl.set_(f"net/ipv6/conf/{n.bridge}/accept_ra", "0")
    except OSError:
        pass
    return br


def setup_veth(nl: RtNetlink, cnl: RtNetlink, netns: str, ifname: str, br: iplink.Link,
               n: BridgeConf, mac: str = "", hairpin: bool = False,
               ) -> tuple[iplink.Link, iplink.Link]:
    """Create the pair; returns (host end, container end), both up, host end on the bridge
    (in ``n.vlan`` as an access port if set)."""
    if iplink.find_link(cnl, ifname) is not None:
        raise CNIError(f'container veth name "{ifname}" already exists')
    fd = ns.open_netns(netns)
    try:
        for _ in range(10):
            host_name = iplink.random_veth_name()
            try:
                iplink.create_veth(nl, host_name, ifname, fd, n.mtu or None, master=br.index,
                                   mac=mac)
                break
            except NetlinkError as exc:
                if exc.errno != errno.EEXIST or iplink.find_link(cnl, ifname) is not None:
                    raise CNIError(f"failed to make veth pair: {exc.strerror}") from exc
        else:
            raise CNIError("failed to make veth pair: no free host name after 10 tries")
    finally:
        os.close(fd)
    try:
        cont = iplink.get_link(cnl, ifname)
        iplink.set_up(cnl, cont.index)
        host = iplink.get_link(nl, host_name)
        if hairpin:
            iplink.set_hairpin(nl, host.index, True)
        if n.vlan:
            if not n.preserve_default_vlan:
                try:
                    iplink.bridge_vlan_del(nl, host.index, 1)
                except NetlinkError:
                    pass  # the bridge has no default vlan on its ports
            iplink.bridge_vlan_add(nl, host.index, n.vlan, pvid=True, untagged=True)
    except BaseException:
        iplink.delete_link_by_name(nl, host_name)  # the pair goes with its host end
        raise
    return host, cont


def ensure_vlan_interface(nl: RtNetlink, br: iplink.Link, n: BridgeConf) -> iplink.Link:
    """``<bridge>.<vlan>``: a veth in the host whose peer is an access port of the vlan,
    to carry the vlan's gateway address (the reference's ensureVlanInterface)."""
    name = f"{br.name}.{n.vlan}"
    if len(name) > 15:
        raise CNIError(f'vlan gateway interface name "{name}" is longer than 15 bytes')
    link = iplink.find_link(nl, name)
    if link is None:
        try:
            _, link = setup_veth(nl, nl, "/proc/thread-self/ns/net", name, br, n)
        except CNIError:
            link = iplink.find_link(nl, name)  # a concurrent ADD made it first
            if link is None:
                raise
    return link


def calc_gateways(result: Result, n: BridgeConf) -> list[IPInterface]:
    """Fill in gateways (isGateway) and default routes (isDefaultGateway); the bridge's
    addresses to add, as the reference's calcGateways."""
    gws: list[IPInterface] = []
    default_found: set[int] = set()
    for ipc in result.ips:
        ipc.interface = CONTAINER_IF_INDEX
        if ipc.gateway is None and n.is_gw:
            ipc.gateway = ipc.address.network.network_address + 1
        version = ipc.address.version
        if n.is_default_gw and version not in default_found:
            default = ipaddress.ip_network("0.0.0.0/0" if version == 4 else "::/0")
            if not any(r.gw is not None and r.dst == default for r in result.routes):
                result.routes.append(Route(dst=default, gw=ipc.gateway))
            default_found.add(version)
        if ipc.gateway is not None:
            gws.append(ipaddress.ip_interface((ipc.gateway, ipc.address.network.prefixlen)))
    return gws


def ensure_addr(nl: RtNetlink, ifname: str, gw: IPInterface, force: bool) -> None:
    """The gateway address on the bridge (or its vlan interface); another address in the way
    is an error unless forceAddress (then it is replaced), as the reference's ensureAddr."""
    br = iplink.get_link(nl, ifname)  # fresh: a bridge MAC follows its ports until pinned
    for a in ipaddr.list_addrs(nl, br.index, gw.version):
        if a == gw:
            return
        if a.version == 6 and a.ip.is_link_local:
            continue
        if gw.version == 4 or gw.ip in a.network or a.ip in gw.network:
            if not force:
                raise CNIError(f'"{br.name}" already has an IP address different from {gw}')
            ipaddr.del_addr(nl, br.index, a)
    ipaddr.add_addr(nl, br.index, gw)
    # pin the bridge's MAC, else it follows the lowest port MAC as veths come and go
    if br.mac.strip("0:"):
        iplink.set_mac(nl, br.index, br.mac)


def masq_backend() -> Any:
    from pycni.masq.select import get_backend

    return get_backend()


def _masq_names(n: BridgeConf, container_id: str) -> tuple[str, str]:
    from pycni.masq import chain_name, comment

    return chain_name(n.netconf.name, container_id), comment(n.netconf.name, container_id)


def cmd_add(args: CmdArgs) -> Result:
    from pycni import invoke

    n = load_conf(args.netconf(), args.args)
    conf = n.netconf
    cnl = _netns_socket(args.netns)
    nl = RtNetlink()
    ipam_done = masq_done = False
    cont: iplink.Link | None = None
    try:
        ipam_result = None
        if n.ipam_type:
            # IPAM first (the reference asks it after making the links): a bad IPAM config
            # or an exhausted range then fails before anything exists on the host
            ipam_result = invoke.delegate_add(n.ipam_type, args, args.stdin_data)
            ipam_done = True
            if not ipam_result.ips:
                raise CNIError("IPAM plugin returned missing IP config")
        br = ensure_bridge(nl, n)
        host, cont = setup_veth(nl, cnl, args.netns, args.ifname, br, n, n.mac, n.hairpin)
        _container_sysctls(args.netns, args.ifname)
        result = Result(cni_version=conf.cni_version, interfaces=[
            Interface(name=br.name, mac=br.mac),
            Interface(name=host.name, mac=host.mac),
            Interface(name=args.ifname, mac=cont.mac, sandbox=args.netns),
        ])
        if ipam_result is not None:
            result.ips = ipam_result.ips
            result.routes = ipam_result.routes
            result.dns = ipam_result.dns
            gws = calc_gateways(result, n)
            configure_iface(cnl, args.ifname, result, cont)
            if n.is_gw and gws:
                gw_link = n.bridge
                if n.vlan:
                    vlan_if = ensure_vlan_interface(nl, br, n)
                    result.interfaces.append(Interface(name=vlan_if.name, mac=vlan_if.mac))
                    gw_link = vlan_if.name
                for gw in gws:
                    ensure_addr(nl, gw_link, gw, n.force_address)
                for version in sorted({gw.version for gw in gws}):
                    sysctl.enable_ip_forward(version)
            if n.ip_masq:
                chain, comment = _masq_names(n, args.container_id)
                masq_done = True
                masq_backend().setup([ipc.address for ipc in result.ips], chain, comment)
        # the bridge's MAC may have changed with its first port or its address (reference)
        result.interfaces[0].mac = iplink.get_link(nl, br.name).mac
        if conf.dns is not None and not conf.dns.is_empty():
            result.dns = conf.dns  # the config's DNS wins over what IPAM said
        return result
    except BaseException:
        _rollback(args, n, nl, cnl, cont, ipam_done, masq_done)
        raise
    finally:
        nl.close()
        cnl.close()


def _container_sysctls(netns: str, ifname: str) -> None:
    """As the reference: no IPv6 DAD delay on a fresh veth, gratuitous ARP on changes."""
    with ns.entered(netns):
        for name, value in ((f"net/ipv6/conf/{ifname}/accept_dad", "0"),
                            (f"net/ipv4/conf/{ifname}/arp_notify", "1")):
            try:
                sysctl.set_(name, value)
            except OSError:
                pass  # IPv6 disabled in the netns


def _rollback(args: CmdArgs, n: BridgeConf, nl: RtNetlink, cnl: RtNetlink,
              cont: iplink.Link | None, ipam_done: bool, masq_done: bool) -> None:
    """Undo a failed ADD as far as it got (best effort: the first error is the one reported)."""
    from pycni import invoke

    if cont is not None:
        try:
            iplink.delete_link(cnl, cont.index)
        except Exception:
            pass
    if masq_done:
        try:
            chain, comment = _masq_names(n, args.container_id)
            masq_backend().teardown(None, chain, comment)
        except Exception:
            pass
    if ipam_done:
        try:
            invoke.delegate_del(n.ipam_type, args, args.stdin_data)
        except Exception:
            pass


def _prev_addresses(conf: NetConf, ifname: str) -> list[IPInterface] | None:
    prev = conf.prev_result
    if prev is None or not prev.ips:
        return None
    out = []
    for ipc in prev.ips:
        idx = ipc.interface
        if idx is None or (0 <= idx < len(prev.interfaces) and prev.interfaces[idx].name == ifname):
            out.append(ipc.address)
    return out or None


def cmd_del(args: CmdArgs) -> None:
    from pycni import invoke

    n = load_conf(args.netconf(), args.args)
    ipam_error: CNIError | None = None
    if n.ipam_type:
        try:
            invoke.delegate_del(n.ipam_type, args, args.stdin_data)
        except CNIError as exc:
            ipam_error = exc  # still remove the links and rules, then report it
    _del_links_and_masq(args, n)
    if ipam_error is not None:
        raise ipam_error


def _del_links_and_masq(args: CmdArgs, n: BridgeConf) -> None:
    conf = n.netconf
    prev = conf.prev_result
    addrs = _prev_addresses(conf, args.ifname)
    cnl: RtNetlink | None = None
    if args.netns:
        try:
            with ns.entered(args.netns):
                cnl = RtNetlink()
        except (ns.NetNSNotFound, ns.NotANetNS):  # gone, or an unmounted leftover file
            cnl = None  # gone already; its veth went with it
    try:
        cont = iplink.find_link(cnl, args.ifname) if cnl is not None else None
        if cont is not None and addrs is None:
            addrs = [a for a in ipaddr.list_addrs(cnl, cont.index)  # type: ignore[arg-type]
                     if not (a.version == 6 and a.ip.is_link_local)] or None
        finish_masq = None
        if n.ip_masq:
            # the masquerade teardown runs in a child process while we remove the veth
            chain, comment = _masq_names(n, args.container_id)
            finish_masq = masq_backend().start_teardown(addrs, chain, comment)
        try:
            if cont is not None:
                iplink.delete_link(cnl, cont.index)  # type: ignore[arg-type]
            host_ifs = [i.name for i in prev.interfaces[1:2] if not i.sandbox] if prev else []
            if host_ifs:
                # the host end, should the netns be gone but the pair still linger
                with RtNetlink() as nl:
                    host = iplink.find_link(nl, host_ifs[0])
                    if host is not None and host.kind == "veth":
                        iplink.delete_link(nl, host.index)
        finally:
            if finish_masq is not None:
                finish_masq()
    finally:
        if cnl is not None:
            cnl.close()


def cmd_check(args: CmdArgs) -> None:
    from pycni import invoke

    n = load_conf(args.netconf(), args.args)
    conf = n.netconf
    if n.ipam_type:
        invoke.delegate_check(n.ipam_type, args, args.stdin_data)
    prev = conf.prev_result
    if prev is None:
        raise CNIError("Required prevResult missing")
    cont_if = next((i for i in prev.interfaces if i.name == args.ifname and i.sandbox), None)
    if cont_if is None:
        raise CNIError(f'interface "{args.ifname}" not found in prevResult')
    with _netns_socket(args.netns) as cnl:
        cont = iplink.find_link(cnl, args.ifname)
        if cont is None:
            raise CNIError(f'Link not found: "{args.ifname}" in netns "{args.netns}"')
        if cont.kind != "veth":
            raise CNIError(f'interface "{args.ifname}" is not a veth')
        if cont_if.mac and cont_if.mac.lower() != cont.mac:
            raise CNIError(f'interface "{args.ifname}" MAC {cont.mac} does not match '
                           f"the expected {cont_if.mac}")
        have = set(ipaddr.list_addrs(cnl, cont.index))
        for ipc in prev.ips:
            if ipc.address not in have:
                raise CNIError(f'address {ipc.address} not found on "{args.ifname}"')
        routes = {(r.dst, r.gw) for v in (4, 6) for r in iproute.list_routes(cnl, v)}
        for r in prev.routes:
            if (r.dst, r.gw) not in routes and not any(d == r.dst for d, _ in routes):
                raise CNIError(f"route {r.dst} via {r.gw} not found in the container")
    with RtNetlink() as nl:
        br = iplink.find_link(nl, n.bridge)
        if br is None or br.kind != "bridge":
            raise CNIError(f'bridge "{n.bridge}" not found or not a bridge')
        if br.promisc != n.promisc:
            raise CNIError(f"Bridge interface {n.bridge} configured Promisc Mode {n.promisc} "
                           f"doesn't match current state: {br.promisc}")
        host_if = next((i for i in prev.interfaces[1:2] if not i.sandbox), None)
        host = iplink.find_link(nl, host_if.name) if host_if is not None else None
        if host is None:
            raise CNIError("host veth of the container not found")
        if host.master != br.index:
            raise CNIError(f'interface "{host.name}" is not on bridge "{n.bridge}"')
        if cont.peer_index != host.index:
            raise CNIError(f'interface "{args.ifname}" is not the peer of "{host.name}"')


def cmd_gc(args: CmdArgs) -> None:
    """Spec 1.1.0 GC: IPAM's GC, then the masquerade chains of containers no longer valid."""
    from pycni import invoke
    from pycni.plugins.host_local import valid_attachments

    n = load_conf(args.netconf(), args.args)
    valid = valid_attachments(n.netconf.raw)
    if n.ipam_type:
        path = invoke.find_plugin(n.ipam_type, args.path)
        invoke.invoke(path, CmdArgs("GC", "", "", "", args.args, list(args.path),
                                    args.stdin_data))
    backend = masq_backend()
    valid_ids = {cid for cid, _ in valid}
    for cid in sorted(backend.containers(n.netconf.name) - valid_ids):
        chain, comment = _masq_names(n, cid)
        backend.teardown(None, chain, comment)


PLUGIN = Plugin(name="pycni-bridge", add=cmd_add, delete=cmd_del, check=cmd_check, gc=cmd_gc,
                about="pycni bridge: containers on a Linux bridge through veth pairs")


def main() -> NoReturn:
    plugin_main(PLUGIN)
