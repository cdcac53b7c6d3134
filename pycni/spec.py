"""The CNI spec's data types: network configs, results, versions.

Pure data and decoding, no I/O. Results are read in every format the spec has
had (0.1.0/0.2.0 ``ip4``/``ip6``; 0.3.x/0.4.0 ``ips`` with ``version``; 1.0.0+
``ips`` without it) into one :class:`Result`, and written back in the format of
whatever cniVersion the caller asks for, as the reference ``types`` package
converts results.

The types are plain classes with ``__slots__`` (constructor, equality and repr written
out, compared field by field as a dataclass is), not dataclasses: the exec'd plugins
import this module at every start, and ``dataclasses`` brings inspect, ast, dis and
tokenize with it (~20 ms of a ~100 ms ADD). ``typing`` is read by the type checker only.
"""

from __future__ import annotations

import ipaddress

from pycni import jsonlite
from pycni.errors import DecodingFailure, IncompatibleVersion, InvalidNetworkConfig

SPEC_VERSION = "1.1.0"
SUPPORTED_VERSIONS: tuple[str, ...] = (
    "0.1.0",
    "0.2.0",
    "0.3.0",
    "0.3.1",
    "0.4.0",
    "1.0.0",
    "1.1.0",
)
LEGACY_VERSIONS = ("0.1.0", "0.2.0")
IPS_WITH_VERSION = ("0.3.0", "0.3.1", "0.4.0")

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from typing import Any

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPInterface = ipaddress.IPv4Interface | ipaddress.IPv6Interface
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_version(version: str) -> tuple[int, int, int]:
    """``"0.4.0"`` -> ``(0, 4, 0)``; DecodingFailure on anything else."""
    parts = version.split(".") if isinstance(version, str) else []
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise DecodingFailure(f'invalid version "{version}": must be MAJOR.MINOR.PATCH')
    return int(parts[0]), int(parts[1]), int(parts[2])


def version_at_least(version: str, minimum: str) -> bool:
    """Semantic comparison of two spec versions."""
    return parse_version(version) >= parse_version(minimum)


def check_supported(version: str, supported: tuple[str, ...] = SUPPORTED_VERSIONS) -> None:
    """IncompatibleVersion unless ``version`` is one we speak (message as the reference's)."""
    if version not in supported:
        raise IncompatibleVersion(
            "incompatible CNI versions",
            f'config is "{version}", plugin supports {jsonlite.dumps(list(supported))}',
        )


# --- small decoding helpers: every error names the field ---------------------------------


def _expect(value: Any, typ: type | tuple[type, ...], where: str, what: str) -> Any:
    if isinstance(value, bool) and typ in (int, (int,)):
        raise DecodingFailure(f"{where}: must be {what}, got {type(value).__name__}")
    if not isinstance(value, typ):
        raise DecodingFailure(f"{where}: must be {what}, got {type(value).__name__}")
    return value


def _opt_str(d: dict[str, Any], key: str, where: str) -> str:
    value = d.get(key)
    if value is None:
        return ""
    return _expect(value, str, f"{where}.{key}", "a string")


def _opt_int(d: dict[str, Any], key: str, where: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    return _expect(value, int, f"{where}.{key}", "an integer")


def _str_list(d: dict[str, Any], key: str, where: str) -> list[str]:
    value = d.get(key)
    if value is None:
        return []
    _expect(value, list, f"{where}.{key}", "a list of strings")
    for i, item in enumerate(value):
        _expect(item, str, f"{where}.{key}[{i}]", "a string")
    return list(value)


def parse_ip_interface(value: Any, where: str) -> IPInterface:
    _expect(value, str, where, "an address in CIDR form")
    if "/" not in value:
        raise DecodingFailure(f'{where}: "{value}" is not in CIDR form (address/prefix)')
    try:
        return ipaddress.ip_interface(value)
    except ValueError as exc:
        raise DecodingFailure(f'{where}: invalid CIDR address "{value}"') from exc


def parse_ip_address(value: Any, where: str) -> IPAddress:
    _expect(value, str, where, "an IP address")
    try:
        return ipaddress.ip_address(value)
    except ValueError as exc:
        raise DecodingFailure(f'{where}: invalid IP address "{value}"') from exc


def parse_ip_network(value: Any, where: str) -> IPNetwork:
    _expect(value, str, where, "a network in CIDR form")
    if "/" not in value:
        raise DecodingFailure(f'{where}: "{value}" is not in CIDR form (address/prefix)')
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError as exc:
        raise DecodingFailure(f'{where}: invalid CIDR network "{value}"') from exc


# --- result types ------------------------------------------------------------------------


class Record:
    """Equality and repr over ``__slots__``, in declaration order, as a dataclass has them
    over its fields; a slot named with a leading underscore is a cache, neither compared
    nor shown. Unhashable, as a dataclass with eq and without frozen is."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> list[tuple[str, object]]:
        return [(name, getattr(self, name)) for name in self.__slots__ if name[0] != "_"]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self._fields())
        return f"{type(self).__qualname__}({shown})"


class Interface(Record):
    __slots__ = ("mac", "mtu", "name", "pci_id", "sandbox", "socket_path")

    def __init__(self, name: str, mac: str = "", mtu: int | None = None, sandbox: str = "",
                 socket_path: str = "", pci_id: str = "") -> None:
        self.name = name
        self.mac = mac
        self.mtu = mtu
        self.sandbox = sandbox
        self.socket_path = socket_path
        self.pci_id = pci_id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.mac:
            out["mac"] = self.mac
        if self.mtu:
            out["mtu"] = self.mtu
        if self.sandbox:
            out["sandbox"] = self.sandbox
        if self.socket_path:
            out["socketPath"] = self.socket_path
        if self.pci_id:
            out["pciID"] = self.pci_id
        return out

    @classmethod
    def from_dict(cls, d: Any, where: str = "interfaces[]") -> Interface:
        _expect(d, dict, where, "an object")
        name = d.get("name")
        _expect(name, str, f"{where}.name", "a string")
        return cls(
            name=name,
            mac=_opt_str(d, "mac", where),
            mtu=_opt_int(d, "mtu", where),
            sandbox=_opt_str(d, "sandbox", where),
            socket_path=_opt_str(d, "socketPath", where),
            pci_id=_opt_str(d, "pciID", where),
        )


class IPConfig(Record):
    __slots__ = ("address", "gateway", "interface")

    def __init__(self, address: IPInterface, gateway: IPAddress | None = None,
                 interface: int | None = None) -> None:
        self.address = address
        self.gateway = gateway
        self.interface = interface  # index into Result.interfaces

    @property
    def version(self) -> str:
        return "4" if self.address.version == 4 else "6"

    def to_dict(self, with_version: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if with_version:
            out["version"] = self.version
        if self.interface is not None:
            out["interface"] = self.interface
        out["address"] = str(self.address)
        if self.gateway is not None:
            out["gateway"] = str(self.gateway)
        return out

    @classmethod
    def from_dict(cls, d: Any, where: str = "ips[]") -> IPConfig:
        _expect(d, dict, where, "an object")
        if "address" not in d:
            raise DecodingFailure(f"{where}.address: missing")
        address = parse_ip_interface(d["address"], f"{where}.address")
        gateway = None
        if d.get("gateway") not in (None, ""):
            gateway = parse_ip_address(d["gateway"], f"{where}.gateway")
        interface = _opt_int(d, "interface", where)
        version = d.get("version")
        if version is not None and version not in ("4", "6"):
            raise DecodingFailure(f'{where}.version: must be "4" or "6", got {version!r}')
        if version is not None and version != str(address.version):
            raise DecodingFailure(f"{where}.version: {version} does not match address {address}")
        return cls(address=address, gateway=gateway, interface=interface)


class Route(Record):
    __slots__ = ("advmss", "dst", "gw", "mtu", "priority", "scope", "table")

    def __init__(self, dst: IPNetwork, gw: IPAddress | None = None, mtu: int | None = None,
                 advmss: int | None = None, priority: int | None = None,
                 table: int | None = None, scope: int | None = None) -> None:
        self.dst = dst
        self.gw = gw
        self.mtu = mtu
        self.advmss = advmss
        self.priority = priority
        self.table = table
        self.scope = scope

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dst": str(self.dst)}
        if self.gw is not None:
            out["gw"] = str(self.gw)
        if self.mtu:
            out["mtu"] = self.mtu
        if self.advmss:
            out["advmss"] = self.advmss
        if self.priority:
            out["priority"] = self.priority
        if self.table is not None:
            out["table"] = self.table
        if self.scope is not None:
            out["scope"] = self.scope
        return out

    @classmethod
    def from_dict(cls, d: Any, where: str = "routes[]") -> Route:
        _expect(d, dict, where, "an object")
        if "dst" not in d:
            raise DecodingFailure(f"{where}.dst: missing")
        dst = parse_ip_network(d["dst"], f"{where}.dst")
        gw = None
        if d.get("gw") not in (None, ""):
            gw = parse_ip_address(d["gw"], f"{where}.gw")
        return cls(
            dst=dst,
            gw=gw,
            mtu=_opt_int(d, "mtu", where),
            advmss=_opt_int(d, "advmss", where),
            priority=_opt_int(d, "priority", where),
            table=_opt_int(d, "table", where),
            scope=_opt_int(d, "scope", where),
        )


class DNS(Record):
    __slots__ = ("domain", "nameservers", "options", "search")

    def __init__(self, nameservers: list[str] | None = None, domain: str = "",
                 search: list[str] | None = None, options: list[str] | None = None) -> None:
        self.nameservers: list[str] = [] if nameservers is None else nameservers
        self.domain = domain
        self.search: list[str] = [] if search is None else search
        self.options: list[str] = [] if options is None else options

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.nameservers:
            out["nameservers"] = list(self.nameservers)
        if self.domain:
            out["domain"] = self.domain
        if self.search:
            out["search"] = list(self.search)
        if self.options:
            out["options"] = list(self.options)
        return out

    def is_empty(self) -> bool:
        return not (self.nameservers or self.domain or self.search or self.options)

    @classmethod
    def from_dict(cls, d: Any, where: str = "dns") -> DNS:
        if d is None:
            return cls()
        _expect(d, dict, where, "an object")
        return cls(
            nameservers=_str_list(d, "nameservers", where),
            domain=_opt_str(d, "domain", where),
            search=_str_list(d, "search", where),
            options=_str_list(d, "options", where),
        )


class Result(Record):
    __slots__ = ("cni_version", "dns", "interfaces", "ips", "routes")

    def __init__(self, cni_version: str, interfaces: list[Interface] | None = None,
                 ips: list[IPConfig] | None = None, routes: list[Route] | None = None,
                 dns: DNS | None = None) -> None:
        self.cni_version = cni_version
        self.interfaces: list[Interface] = [] if interfaces is None else interfaces
        self.ips: list[IPConfig] = [] if ips is None else ips
        self.routes: list[Route] = [] if routes is None else routes
        self.dns: DNS = DNS() if dns is None else dns

    def to_dict(self, cni_version: str | None = None) -> dict[str, Any]:
        """The spec JSON of this result in ``cni_version`` (default: its own)."""
        version = cni_version or self.cni_version
        check_supported(version)
        if version in LEGACY_VERSIONS:
            return self._to_legacy(version)
        out: dict[str, Any] = {"cniVersion": version}
        if self.interfaces:
            out["interfaces"] = [i.to_dict() for i in self.interfaces]
        if self.ips:
            out["ips"] = [ip.to_dict(with_version=version in IPS_WITH_VERSION) for ip in self.ips]
        if self.routes:
            out["routes"] = [r.to_dict() for r in self.routes]
        out["dns"] = self.dns.to_dict()
        return out

    def _to_legacy(self, version: str) -> dict[str, Any]:
        """0.1.0/0.2.0: one ``ip4`` and one ``ip6`` block; routes go by address family."""
        out: dict[str, Any] = {"cniVersion": version}
        blocks: dict[int, dict[str, Any]] = {}
        for ip in self.ips:
            if ip.address.version in blocks:
                continue
            block: dict[str, Any] = {"ip": str(ip.address)}
            if ip.gateway is not None:
                block["gateway"] = str(ip.gateway)
            blocks[ip.address.version] = block
        for route in self.routes:
            route_block = blocks.get(route.dst.version)
            if route_block is not None:
                route_block.setdefault("routes", []).append(route.to_dict())
        if 4 in blocks:
            out["ip4"] = blocks[4]
        if 6 in blocks:
            out["ip6"] = blocks[6]
        out["dns"] = self.dns.to_dict()
        return out

    def to_json(self, cni_version: str | None = None) -> str:
        return jsonlite.dumps(self.to_dict(cni_version), indent=4)

    def converted(self, cni_version: str) -> Result:
        """This result as a runtime would see it after a round trip through ``cni_version``."""
        return Result.from_dict(self.to_dict(cni_version))

    @classmethod
    def from_dict(cls, d: Any) -> Result:
        """Read any spec version's result (or prevResult); DecodingFailure naming the field."""
        _expect(d, dict, "result", "an object")
        version = d.get("cniVersion") or "0.1.0"
        _expect(version, str, "result.cniVersion", "a string")
        check_supported(version)
        if version in LEGACY_VERSIONS:
            return cls._from_legacy(d, version)
        interfaces = [
            Interface.from_dict(x, f"interfaces[{i}]")
            for i, x in enumerate(_list(d, "interfaces"))
        ]
        ips = [IPConfig.from_dict(x, f"ips[{i}]") for i, x in enumerate(_list(d, "ips"))]
        routes = [Route.from_dict(x, f"routes[{i}]") for i, x in enumerate(_list(d, "routes"))]
        for i, ip in enumerate(ips):
            if ip.interface is not None and not 0 <= ip.interface < len(interfaces):
                raise DecodingFailure(
                    f"ips[{i}].interface: index {ip.interface} out of range "
                    f"({len(interfaces)} interfaces)"
                )
        return cls(
            cni_version=version,
            interfaces=interfaces,
            ips=ips,
            routes=routes,
            dns=DNS.from_dict(d.get("dns")),
        )

    @classmethod
    def _from_legacy(cls, d: dict[str, Any], version: str) -> Result:
        ips: list[IPConfig] = []
        routes: list[Route] = []
        for key in ("ip4", "ip6"):
            block = d.get(key)
            if block is None:
                continue
            _expect(block, dict, key, "an object")
            if "ip" not in block:
                raise DecodingFailure(f"{key}.ip: missing")
            address = parse_ip_interface(block["ip"], f"{key}.ip")
            gateway = None
            if block.get("gateway") not in (None, ""):
                gateway = parse_ip_address(block["gateway"], f"{key}.gateway")
            ips.append(IPConfig(address=address, gateway=gateway))
            routes.extend(
                Route.from_dict(x, f"{key}.routes[{i}]")
                for i, x in enumerate(_list(block, "routes", key))
            )
        return cls(cni_version=version, ips=ips, routes=routes, dns=DNS.from_dict(d.get("dns")))


def _list(d: dict[str, Any], key: str, where: str = "result") -> list[Any]:
    value = d.get(key)
    if value is None:
        return []
    return _expect(value, list, f"{where}.{key}" if where != "result" else key, "a list")


# --- network configuration ---------------------------------------------------------------


class NetConf(Record):
    """One plugin's config, as a plugin receives it on stdin."""

    __slots__ = (
        "args",
        "cni_version",
        "dns",
        "ipam",
        "name",
        "prev_result",
        "raw",
        "runtime_config",
        "type",
    )

    def __init__(self, cni_version: str, name: str, type: str,
                 ipam: dict[str, Any] | None = None, dns: DNS | None = None,
                 prev_result: Result | None = None,
                 runtime_config: dict[str, Any] | None = None,
                 args: dict[str, Any] | None = None, raw: dict[str, Any] | None = None) -> None:
        self.cni_version = cni_version
        self.name = name
        self.type = type
        self.ipam: dict[str, Any] = {} if ipam is None else ipam
        self.dns = dns
        self.prev_result = prev_result
        self.runtime_config: dict[str, Any] = {} if runtime_config is None else runtime_config
        self.args: dict[str, Any] = {} if args is None else args
        self.raw: dict[str, Any] = {} if raw is None else raw


def _required_str(d: dict[str, Any], key: str) -> str:
    if key not in d or d[key] is None:
        raise InvalidNetworkConfig(f'missing required field "{key}"')
    value = d[key]
    if not isinstance(value, str):
        raise InvalidNetworkConfig(
            f'field "{key}" must be a string, got {_json_type(value)}'
        )
    if not value:
        raise InvalidNetworkConfig(f'field "{key}" must not be empty')
    return value


def _optional_object(d: dict[str, Any], key: str) -> dict[str, Any]:
    value = d.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidNetworkConfig(f'field "{key}" must be an object, got {_json_type(value)}')
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def decode_json_object(data: bytes | str, what: str = "network config") -> dict[str, Any]:
    """JSON text -> dict; DecodingFailure for bad JSON or a non-object."""
    try:
        obj = jsonlite.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodingFailure(f"error parsing {what}: {exc}") from exc
    if not isinstance(obj, dict):
        raise DecodingFailure(f"error parsing {what}: must be a JSON object, got {_json_type(obj)}")
    return obj


def parse_netconf(data: bytes) -> NetConf:
    """Decode and validate a plugin's stdin config.

    DecodingFailure on bad JSON; InvalidNetworkConfig naming the field for a
    missing or ill-typed ``cniVersion``/``name``/``type`` (and ``ipam``, ``dns``,
    ``runtimeConfig``, ``args``, ``prevResult``); IncompatibleVersion for an
    unknown ``cniVersion``.
    """
    raw = decode_json_object(data)
    cni_version = _required_str(raw, "cniVersion")
    try:
        parse_version(cni_version)
    except DecodingFailure as exc:
        raise InvalidNetworkConfig(f'field "cniVersion": {exc.msg}') from exc
    check_supported(cni_version)
    name = _required_str(raw, "name")
    type_ = _required_str(raw, "type")
    ipam = _optional_object(raw, "ipam")
    if "type" in ipam and not isinstance(ipam["type"], str):
        raise InvalidNetworkConfig(
            f'field "ipam.type" must be a string, got {_json_type(ipam["type"])}'
        )
    dns = None
    if raw.get("dns") is not None:
        try:
            dns = DNS.from_dict(raw["dns"])
        except DecodingFailure as exc:
            raise InvalidNetworkConfig(f'field "dns": {exc.msg}') from exc
    prev = None
    if raw.get("prevResult") is not None:
        try:
            prev = Result.from_dict(raw["prevResult"])
        except DecodingFailure as exc:
            raise InvalidNetworkConfig(f'field "prevResult": {exc.msg}') from exc
    return NetConf(
        cni_version=cni_version,
        name=name,
        type=type_,
        ipam=ipam,
        dns=dns,
        prev_result=prev,
        runtime_config=_optional_object(raw, "runtimeConfig"),
        args=_optional_object(raw, "args"),
        raw=raw,
    )


class NetConfList(Record):
    """A network config list (``.conflist``, or a ``.conf`` turned into a one-plugin list)."""

    __slots__ = (
        "cni_version",
        "disable_check",
        "disable_gc",
        "file",
        "name",
        "plugins",
        "raw",
        "source",
    )

    def __init__(self, cni_version: str, name: str, plugins: list[dict[str, Any]],
                 disable_check: bool = False, raw: dict[str, Any] | None = None,
                 file: str | None = None, disable_gc: bool = False,
                 source: bytes = b"") -> None:
        self.cni_version = cni_version
        self.name = name
        self.plugins = plugins
        self.disable_check = disable_check
        self.raw: dict[str, Any] = {} if raw is None else raw
        self.file = file
        self.disable_gc = disable_gc
        self.source = source  # the source JSON, cached by libcni alongside results
