"""host-local's config parsing and allocator over the in-memory store (no root, no disk)."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from pycni.errors import InvalidNetworkConfig
from pycni.ipam.hostlocal.allocator import AllocationError, IPAllocator
from pycni.ipam.hostlocal.config import load_ipam_config
from pycni.ipam.hostlocal.store import MemoryStore
from pycni.masq import chain_name, comment


def conf(ipam: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"cniVersion": "1.0.0", "name": "net", "type": "bridge", "ipam": ipam, **top}


def ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(s)


def test_range_defaults_like_the_reference() -> None:
    c = load_ipam_config(conf({"type": "host-local", "ranges": [[{"subnet": "10.1.2.0/24"}]]}))
    (r,) = c.ranges[0]
    assert (str(r.range_start), str(r.range_end), str(r.gateway)) == (
        "10.1.2.1", "10.1.2.254", "10.1.2.1")
    assert c.data_dir == "/var/lib/cni/networks"
    v6 = load_ipam_config(conf({"ranges": [[{"subnet": "fd00::/120"}]]})).ranges[0][0]
    assert str(v6.range_end) == "fd00::ff"


def test_old_style_subnet_and_runtime_ranges_are_prepended() -> None:
    c = load_ipam_config(conf({"subnet": "10.1.0.0/24", "ranges": [[{"subnet": "10.2.0.0/24"}]]},
                              runtimeConfig={"ipRanges": [[{"subnet": "10.3.0.0/24"}]]}))
    assert [str(rs[0].subnet) for rs in c.ranges] == ["10.3.0.0/24", "10.1.0.0/24",
                                                     "10.2.0.0/24"]


def test_requested_ips_from_args_env_and_runtime_config() -> None:
    c = load_ipam_config(conf({"ranges": [[{"subnet": "10.1.0.0/24"}]]},
                              args={"cni": {"ips": ["10.1.0.9"]}},
                              runtimeConfig={"ips": ["10.1.0.8/24"]}),
                         "K8S_POD_NAME=x;IP=10.1.0.7")
    assert [str(x) for x in c.requested_ips] == ["10.1.0.7", "10.1.0.9", "10.1.0.8"]


@pytest.mark.parametrize(("ipam", "needle"), [
    ({}, "no IP ranges specified"),
    ({"ranges": [[{"subnet": "10.1.0.0/31"}]]}, "too small"),
    ({"ranges": [[{"subnet": "10.1.0.0/24", "gateway": "10.2.0.1"}]]}, "gateway: 10.2.0.1 not in"),
    ({"ranges": [[{"subnet": "10.1.0.0/24", "rangeStart": "10.1.0.9",
                   "rangeEnd": "10.1.0.3"}]]}, "after rangeEnd"),
    ({"ranges": [[{"subnet": "nope"}]]}, "ipam.ranges[0][0].subnet: invalid CIDR"),
    ({"ranges": [[{"subnet": 7}]]}, "subnet: missing or not a string"),
    ({"ranges": "10.1.0.0/24"}, "ipam.ranges: must be a list"),
    ({"ranges": [[{"subnet": "10.1.0.0/24"}], [{"subnet": "10.1.0.0/25"}]]}, "overlaps"),
    ({"ranges": [[{"subnet": "10.1.0.0/24"}]], "routes": [{"dst": "x"}]}, "routes[0].dst"),
    ({"ranges": [[{"subnet": "10.1.0.0/24", "rangeStart": "fd00::1"}]]}, "not the same protocol"),
])
def test_bad_configs_name_the_field(ipam: dict[str, Any], needle: str) -> None:
    with pytest.raises(InvalidNetworkConfig) as err:
        load_ipam_config(conf(ipam))
    assert needle in err.value.msg


def test_missing_ipam_key() -> None:
    with pytest.raises(InvalidNetworkConfig, match="missing 'ipam' key"):
        load_ipam_config({"cniVersion": "1.0.0", "name": "n", "type": "bridge"})


def test_two_v4_ranges_need_spec_0_3_0() -> None:
    ipam = {"ranges": [[{"subnet": "10.1.0.0/24"}], [{"subnet": "10.2.0.0/24"}]]}
    assert len(load_ipam_config(conf(ipam)).ranges) == 2
    with pytest.raises(InvalidNetworkConfig, match="more than 1 address per family"):
        load_ipam_config(dict(conf(ipam), cniVersion="0.2.0"))


def allocator(ranges: list[dict[str, Any]], store: MemoryStore | None = None) -> IPAllocator:
    c = load_ipam_config(conf({"ranges": [ranges]}))
    return IPAllocator(c.ranges[0], store or MemoryStore(), 0)


def test_round_robin_skips_the_gateway_and_wraps() -> None:
    store = MemoryStore()
    a = allocator([{"subnet": "10.1.0.0/29"}], store)  # .1 gateway, .2-.6 usable
    got = [str(a.get(f"c{i}", "eth0").address) for i in range(5)]
    assert got == [f"10.1.0.{i}/29" for i in range(2, 7)]
    with pytest.raises(AllocationError, match="no IP addresses available in range set"):
        a.get("c5", "eth0")
    store.release_by_id("c1", "eth0")  # frees .3; the search starts after .6 and wraps
    assert str(a.get("c6", "eth0").address) == "10.1.0.3/29"


def test_round_robin_continues_after_last_reserved_even_after_release() -> None:
    store = MemoryStore()
    a = allocator([{"subnet": "10.1.0.0/24"}], store)
    assert str(a.get("c0", "eth0").address.ip) == "10.1.0.2"
    store.release_by_id("c0", "eth0")
    assert str(a.get("c1", "eth0").address.ip) == "10.1.0.3"


def test_multiple_ranges_in_a_set_are_walked_in_order() -> None:
    a = allocator([{"subnet": "10.1.0.0/24", "rangeStart": "10.1.0.10", "rangeEnd": "10.1.0.11"},
                   {"subnet": "10.9.0.0/24", "rangeStart": "10.9.0.5", "rangeEnd": "10.9.0.5",
                    "gateway": "10.9.0.254"}])
    got = [a.get(f"c{i}", "eth0") for i in range(3)]
    assert [str(g.address) for g in got] == ["10.1.0.10/24", "10.1.0.11/24", "10.9.0.5/24"]
    assert [str(g.gateway) for g in got] == ["10.1.0.1", "10.1.0.1", "10.9.0.254"]


def test_requested_ip_and_its_errors() -> None:
    a = allocator([{"subnet": "10.1.0.0/24"}])
    assert str(a.get("c0", "eth0", ip("10.1.0.50")).address) == "10.1.0.50/24"
    with pytest.raises(AllocationError, match="not available"):
        a.get("c1", "eth0", ip("10.1.0.50"))
    with pytest.raises(AllocationError, match="is subnet's gateway"):
        a.get("c2", "eth0", ip("10.1.0.1"))
    with pytest.raises(AllocationError, match="not in range set"):
        a.get("c3", "eth0", ip("10.7.0.1"))


def test_duplicate_allocation_refused_but_other_ifname_fine() -> None:
    a = allocator([{"subnet": "10.1.0.0/24"}])
    a.get("c0", "eth0")
    with pytest.raises(AllocationError, match="duplicate allocation is not allowed"):
        a.get("c0", "eth0")
    assert str(a.get("c0", "net1").address.ip) == "10.1.0.3"


def test_release_of_files_from_older_versions_by_id_alone() -> None:
    store = MemoryStore()
    store.held[ip("10.1.0.9")] = "old-container"
    assert store.find_by_id("old-container", "eth0")
    store.release_by_id("old-container", "eth0")
    assert store.held == {}


def test_masquerade_names_match_the_reference_format() -> None:
    # sha512("net" + "abc") hex, cut to 28 characters with the CNI- prefix
    assert chain_name("net", "abc") == "CNI-" + __import__("hashlib").sha512(
        b"netabc").hexdigest()[:24]
    assert len(chain_name("a" * 50, "b" * 64)) == 28
    assert comment("net", 'a"b') == 'name: "net" id: "a\\"b"'


def test_masquerade_rules_render_as_the_reference_adds_them() -> None:
    from pycni.masq.rules import chain_rules, jump_rule, line

    addr = ipaddress.ip_interface("10.1.2.3/24")
    cmt = comment("net", "cid")
    assert [line("-A", "CNI-x", r) for r in chain_rules(addr, cmt)] == [
        '-A CNI-x -d 10.1.2.0/24 -m comment --comment "name: \\"net\\" id: \\"cid\\"" -j ACCEPT',
        '-A CNI-x ! -d 224.0.0.0/4 -m comment --comment "name: \\"net\\" id: \\"cid\\"" '
        "-j MASQUERADE",
    ]
    assert line("-A", "POSTROUTING", jump_rule(addr, "CNI-x", cmt)) == (
        '-A POSTROUTING -s 10.1.2.3/32 -m comment --comment "name: \\"net\\" id: \\"cid\\"" '
        "-j CNI-x")
    v6 = ipaddress.ip_interface("fd00::5/64")
    assert "! -d ff00::/8" in line("-A", "CNI-x", chain_rules(v6, cmt)[1])
    assert "-s fd00::5/128" in line("-A", "POSTROUTING", jump_rule(v6, "CNI-x", cmt))


def test_resolv_conf_parsing(tmp_path: Any) -> None:
    from pycni.plugins.host_local import parse_resolv_conf

    path = tmp_path / "resolv.conf"
    path.write_text("nameserver 10.0.0.2 # main\n#nameserver 10.0.0.9\ndomain d.example\n"
                    "search a.example b.example\noptions ndots:5\noptions edns0\n")
    dns = parse_resolv_conf(str(path))
    assert (dns.nameservers, dns.domain, dns.search, dns.options) == (
        ["10.0.0.2"], "d.example", ["a.example", "b.example"], ["ndots:5", "edns0"])
