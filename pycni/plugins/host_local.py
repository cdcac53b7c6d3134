"""The host-local IPAM plugin: addresses from configured ranges, kept in files on the host.

Interchangeable with the reference ``host-local`` (same config, same data-dir
format and lock), so either can allocate and the other release.
"""

from __future__ import annotations

from pycni.errors import CNIError, InvalidNetworkConfig
from pycni.ipam.hostlocal.allocator import AllocationError, IPAllocator
from pycni.ipam.hostlocal.config import load_ipam_config, rangeset_contains
from pycni.ipam.hostlocal.disk import DiskStore
from pycni.skel import CmdArgs, Plugin, plugin_main
from pycni.spec import DNS, Result

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from typing import NoReturn


def parse_resolv_conf(path: str) -> DNS:
    """nameserver/domain/search/options lines of a resolv.conf (the reference's dns.go)."""
    dns = DNS()
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise CNIError(f"failed to read resolvConf {path}: {exc.strerror}") from exc
    for raw in lines:
        fields = raw.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        key, values = fields[0], fields[1:]
        if key == "nameserver":
            dns.nameservers.append(values[0])
        elif key == "domain":
            dns.domain = values[0]
        elif key == "search":
            dns.search = values
        elif key == "options":
            dns.options.extend(values)
    return dns


def cmd_add(args: CmdArgs) -> Result:
    conf = args.netconf()
    ipam = load_ipam_config(conf.raw, args.args)
    result = Result(cni_version=conf.cni_version)
    if ipam.resolv_conf:
        result.dns = parse_resolv_conf(ipam.resolv_conf)
    with DiskStore(ipam.name, ipam.data_dir) as store:
        store.lock()
        try:
            requested = list(ipam.requested_ips)
            for idx, rangeset in enumerate(ipam.ranges):
                want = next((ip for ip in requested if rangeset_contains(rangeset, ip)), None)
                if want is not None:
                    requested.remove(want)
                try:
                    ipc = IPAllocator(rangeset, store, idx).get(args.container_id, args.ifname,
                                                                want)
                except AllocationError as exc:
                    if result.ips:
                        store.release_by_id(args.container_id, args.ifname)
                    raise AllocationError(f"failed to allocate for range {idx}: {exc.msg}") \
                        from exc
                result.ips.append(ipc)
            if requested:
                store.release_by_id(args.container_id, args.ifname)
                raise AllocationError("failed to allocate all requested IPs: "
                                      + " ".join(str(ip) for ip in requested))
        finally:
            store.unlock()
    result.routes = list(ipam.routes)
    return result


def cmd_del(args: CmdArgs) -> None:
    ipam = load_ipam_config(args.netconf().raw, args.args)
    with DiskStore(ipam.name, ipam.data_dir) as store:
        store.lock()
        try:
            store.release_by_id(args.container_id, args.ifname)
        finally:
            store.unlock()


def cmd_check(args: CmdArgs) -> None:
    ipam = load_ipam_config(args.netconf().raw, args.args)
    with DiskStore(ipam.name, ipam.data_dir) as store:
        store.lock()
        try:
            found = store.find_by_id(args.container_id, args.ifname)
        finally:
            store.unlock()
    if not found:
        raise CNIError(
            f"host-local: Failed to find address added by container {args.container_id}")


def valid_attachments(raw: dict[str, object]) -> set[tuple[str, str]]:
    """``cni.dev/valid-attachments`` of a GC config as (container ID, ifname) pairs."""
    value = raw.get("cni.dev/valid-attachments") or []
    if not isinstance(value, list):
        raise InvalidNetworkConfig('field "cni.dev/valid-attachments" must be a list')
    out = set()
    for i, att in enumerate(value):
        if not isinstance(att, dict) or not isinstance(att.get("containerID"), str) \
                or not isinstance(att.get("ifname"), str):
            raise InvalidNetworkConfig(
                f'cni.dev/valid-attachments[{i}]: want {{"containerID": str, "ifname": str}}')
        out.add((att["containerID"], att["ifname"]))
    return out


def cmd_gc(args: CmdArgs) -> None:
    """Spec 1.1.0 GC: release every address not held by a valid attachment."""
    raw = args.netconf().raw
    ipam = load_ipam_config(raw, args.args)
    valid = valid_attachments(raw)
    with DiskStore(ipam.name, ipam.data_dir) as store:
        store.lock()
        try:
            store.release_all_but(valid)
        finally:
            store.unlock()


PLUGIN = Plugin(name="pycni-host-local", add=cmd_add, delete=cmd_del, check=cmd_check,
                gc=cmd_gc, about="pycni host-local: IP address management from local ranges")


def main() -> NoReturn:
    plugin_main(PLUGIN)
