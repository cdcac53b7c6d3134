"""The loopback plugin: bring ``lo`` up in the container netns (down again on DEL)."""

from __future__ import annotations

from pycni import ns
from pycni.errors import CNIError
from pycni.ip import addr as ipaddr
from pycni.ip import link as iplink
from pycni.ip.netlink import RtNetlink
from pycni.skel import CmdArgs, Plugin, plugin_main
from pycni.spec import Interface, IPConfig, Result

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from typing import NoReturn

LO = "lo"


def _netns_socket(path: str) -> RtNetlink:
    try:
        with ns.entered(path):
            return RtNetlink()
    except (ns.NetNSNotFound, ns.NotANetNS) as exc:
        raise CNIError(f"failed to open netns {path!r}: {exc}") from exc


def cmd_add(args: CmdArgs) -> Result:
    conf = args.netconf()
    with _netns_socket(args.netns) as nl:
        lo = iplink.get_link(nl, LO)
        if not lo.up:
            iplink.set_up(nl, lo.index)
        addrs = ipaddr.list_addrs(nl, lo.index)
    for a in addrs:
        if not a.ip.is_loopback:
            raise CNIError(f'loopback interface found with non-loopback address "{a.ip}"')
    if conf.prev_result is not None:
        # a loopback after another plugin passes its result on untouched (reference)
        return conf.prev_result
    result = Result(cni_version=conf.cni_version,
                    interfaces=[Interface(name=LO, mac="00:00:00:00:00:00", sandbox=args.netns)])
    for version in (4, 6):
        first = next((a for a in addrs if a.version == version), None)
        if first is not None:
            result.ips.append(IPConfig(address=first, interface=0))
    return result


def cmd_del(args: CmdArgs) -> None:
    if not args.netns:
        return
    try:
        with ns.entered(args.netns):
            nl = RtNetlink()
    except (ns.NetNSNotFound, ns.NotANetNS):  # gone, or an unmounted leftover file
        return  # already gone: DEL must succeed (kubernetes#43014)
    with nl:
        lo = iplink.find_link(nl, LO)
        if lo is not None and lo.up:
            iplink.set_up(nl, lo.index, False)


def cmd_check(args: CmdArgs) -> None:
    with _netns_socket(args.netns) as nl:
        lo = iplink.get_link(nl, LO)
    if not lo.up:
        raise CNIError("loopback interface is down")


PLUGIN = Plugin(name="pycni-loopback", add=cmd_add, delete=cmd_del, check=cmd_check,
                about="pycni loopback: brings up lo in the container's network namespace")


def main() -> NoReturn:
    plugin_main(PLUGIN)
