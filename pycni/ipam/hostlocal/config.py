"""host-local's config: ranges (or the old single ``subnet``), routes, dataDir, requested IPs.

Follows the reference's ``allocator/config.go`` and ``range.go``: defaults for
rangeStart (.1), rangeEnd (last usable), gateway (.1), the same validation,
and messages that name the field.
"""

from __future__ import annotations

import ipaddress

from pycni.errors import InvalidNetworkConfig
from pycni.spec import IPAddress, IPNetwork, Route, version_at_least

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from typing import Any

DEFAULT_DATA_DIR = "/var/lib/cni/networks"


class Range:
    """One range of a range set, canonicalised (plain class: cheaper to import)."""

    __slots__ = ("gateway", "range_end", "range_start", "subnet")

    def __init__(self, subnet: IPNetwork, range_start: IPAddress, range_end: IPAddress,
                 gateway: IPAddress) -> None:
        self.subnet, self.range_start, self.range_end, self.gateway = (
            subnet, range_start, range_end, gateway)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Range) and (self.subnet, self.range_start, self.range_end,
                                             self.gateway) == (other.subnet, other.range_start,
                                                               other.range_end, other.gateway)

    __hash__ = None  # type: ignore[assignment]

    def contains(self, ip: IPAddress) -> bool:
        return (ip.version == self.subnet.version and ip in self.subnet
                and self.range_start <= ip <= self.range_end)  # type: ignore[operator]

    def overlaps(self, other: Range) -> bool:
        if self.subnet.version != other.subnet.version:
            return False
        return (self.contains(other.range_start) or self.contains(other.range_end)
                or other.contains(self.range_start) or other.contains(self.range_end))

    def __str__(self) -> str:
        return f"{self.range_start}-{self.range_end}"


RangeSet = list[Range]


def rangeset_str(rs: RangeSet) -> str:
    return ",".join(str(r) for r in rs)


def rangeset_contains(rs: RangeSet, ip: IPAddress) -> bool:
    return any(r.contains(ip) for r in rs)


class IPAMConfig:
    """host-local's whole config, validated."""

    def __init__(self, name: str, ranges: list[RangeSet], routes: list[Route] | None = None,
                 data_dir: str = DEFAULT_DATA_DIR, resolv_conf: str = "",
                 requested_ips: list[IPAddress] | None = None) -> None:
        self.name, self.ranges, self.routes = name, ranges, routes or []
        self.data_dir, self.resolv_conf = data_dir, resolv_conf
        self.requested_ips = requested_ips or []


def _ip(value: Any, where: str) -> IPAddress:
    if not isinstance(value, str):
        raise InvalidNetworkConfig(f'{where}: must be a string IP address, got {value!r}')
    try:
        return ipaddress.ip_address(value)
    except ValueError as exc:
        raise InvalidNetworkConfig(f"{where}: invalid IP address {value!r}") from exc


def parse_range(d: Any, where: str) -> Range:
    """One range, canonicalised as range.go's Canonicalize does."""
    if not isinstance(d, dict):
        raise InvalidNetworkConfig(f"{where}: must be an object")
    raw_subnet = d.get("subnet")
    if not isinstance(raw_subnet, str):
        raise InvalidNetworkConfig(f'{where}.subnet: missing or not a string (want "10.1.2.0/24")')
    try:
        subnet = ipaddress.ip_network(raw_subnet, strict=False)
    except ValueError as exc:
        raise InvalidNetworkConfig(f"{where}.subnet: invalid CIDR {raw_subnet!r}") from exc
    if subnet.prefixlen > subnet.max_prefixlen - 2:
        raise InvalidNetworkConfig(f"{where}.subnet: Network {subnet} too small to allocate from")
    first = subnet.network_address + 1
    last = subnet.broadcast_address - 1 if subnet.version == 4 else subnet.broadcast_address

    def in_subnet(key: str, default: IPAddress) -> IPAddress:
        if d.get(key) in (None, ""):
            return default
        ip = _ip(d[key], f"{where}.{key}")
        if ip.version != subnet.version:
            raise InvalidNetworkConfig(
                f"{where}.{key}: IP {ip} is not the same protocol as subnet {subnet}")
        if ip not in subnet:
            raise InvalidNetworkConfig(f"{where}.{key}: {ip} not in network {subnet}")
        return ip

    gateway = in_subnet("gateway", first)
    start = in_subnet("rangeStart", first)
    end = in_subnet("rangeEnd", last)
    if start > end:  # type: ignore[operator]
        raise InvalidNetworkConfig(f"{where}: rangeStart {start} is after rangeEnd {end}")
    return Range(subnet, start, end, gateway)


def _requested_from_args(cni_args: str) -> list[IPAddress]:
    for pair in cni_args.split(";"):
        key, _, value = pair.partition("=")
        if key == "IP" and value:
            return [_ip(value, "CNI_ARGS IP")]
    return []


def load_ipam_config(raw: dict[str, Any], cni_args: str = "") -> IPAMConfig:
    """The IPAM config from a plugin's whole stdin config (LoadIPAMConfig)."""
    ipam = raw.get("ipam")
    if not isinstance(ipam, dict):
        raise InvalidNetworkConfig("IPAM config missing 'ipam' key")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidNetworkConfig('missing required field "name"')

    requested = _requested_from_args(cni_args)
    args = raw.get("args")
    if isinstance(args, dict) and isinstance(args.get("cni"), dict):
        for i, ip in enumerate(args["cni"].get("ips") or []):
            requested.append(_ip(ip, f"args.cni.ips[{i}]"))
    rc = raw.get("runtimeConfig")
    runtime: dict[str, Any] = rc if isinstance(rc, dict) else {}
    for i, ip in enumerate(runtime.get("ips") or []):
        text = ip.split("/", 1)[0] if isinstance(ip, str) else ip
        requested.append(_ip(text, f"runtimeConfig.ips[{i}]"))

    ranges_raw: list[Any] = []
    if ipam.get("subnet") not in (None, ""):
        ranges_raw.append([{k: ipam.get(k) for k in ("subnet", "rangeStart", "rangeEnd",
                                                      "gateway")}])
    rt_ranges = runtime.get("ipRanges") or []
    if not isinstance(rt_ranges, list):
        raise InvalidNetworkConfig("runtimeConfig.ipRanges: must be a list of range sets")
    ranges_field = ipam.get("ranges", [])
    if ranges_field is None:
        ranges_field = []
    if not isinstance(ranges_field, list):
        raise InvalidNetworkConfig("ipam.ranges: must be a list of range sets")
    ranges_raw = list(rt_ranges) + ranges_raw + list(ranges_field)
    if not ranges_raw:
        raise InvalidNetworkConfig("no IP ranges specified")

    ranges: list[RangeSet] = []
    for i, rs in enumerate(ranges_raw):
        if not isinstance(rs, list) or not rs:
            raise InvalidNetworkConfig(f"ipam.ranges[{i}]: must be a non-empty list of ranges")
        rset = [parse_range(r, f"ipam.ranges[{i}][{j}]") for j, r in enumerate(rs)]
        if len({r.subnet.version for r in rset}) != 1:
            raise InvalidNetworkConfig(f"invalid range set {i}: mixed address families")
        for a in range(len(rset)):
            for b in range(a + 1, len(rset)):
                if rset[a].overlaps(rset[b]):
                    raise InvalidNetworkConfig(
                        f"invalid range set {i}: subnets {rset[a].subnet} and "
                        f"{rset[b].subnet} overlap")
        ranges.append(rset)

    v4 = sum(1 for rs in ranges if rs[0].subnet.version == 4)
    cni_version = raw.get("cniVersion") or "0.1.0"
    if (v4 > 1 or len(ranges) - v4 > 1) and isinstance(cni_version, str) and \
            not version_at_least(cni_version, "0.3.0"):
        raise InvalidNetworkConfig(
            f"CNI version {cni_version} does not support more than 1 address per family")
    for i, p1 in enumerate(ranges):
        for j in range(i + 1, len(ranges)):
            if any(a.overlaps(b) for a in p1 for b in ranges[j]):
                raise InvalidNetworkConfig(f"range set {i} overlaps with {j}")

    routes: list[Route] = []
    raw_routes = ipam.get("routes") or []
    if not isinstance(raw_routes, list):
        raise InvalidNetworkConfig("ipam.routes: must be a list")
    for i, r in enumerate(raw_routes):
        if not isinstance(r, dict) or not isinstance(r.get("dst"), str):
            raise InvalidNetworkConfig(f'ipam.routes[{i}].dst: missing or not a string')
        try:
            dst = ipaddress.ip_network(r["dst"], strict=False)
        except ValueError as exc:
            raise InvalidNetworkConfig(f"ipam.routes[{i}].dst: invalid CIDR {r['dst']!r}") from exc
        gw = _ip(r["gw"], f"ipam.routes[{i}].gw") if r.get("gw") else None
        routes.append(Route(dst=dst, gw=gw))

    data_dir = ipam.get("dataDir") or DEFAULT_DATA_DIR
    if not isinstance(data_dir, str):
        raise InvalidNetworkConfig("ipam.dataDir: must be a string")
    resolv = ipam.get("resolvConf") or ""
    if not isinstance(resolv, str):
        raise InvalidNetworkConfig("ipam.resolvConf: must be a string")
    return IPAMConfig(name=name, ranges=ranges, routes=routes, data_dir=data_dir,
                      resolv_conf=resolv, requested_ips=requested)
