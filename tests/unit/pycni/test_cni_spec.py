"""Spec types: results in every version, configs and their validation."""

from __future__ import annotations

import ipaddress
import json

import pytest

from pycni.errors import DecodingFailure, IncompatibleVersion, InvalidNetworkConfig
from pycni.spec import (
    DNS,
    SPEC_VERSION,
    SUPPORTED_VERSIONS,
    Interface,
    IPConfig,
    Result,
    Route,
    parse_netconf,
    version_at_least,
)


def _result() -> Result:
    return Result(
        cni_version="1.0.0",
        interfaces=[
            Interface(name="cni0", mac="aa:bb:cc:dd:ee:01"),
            Interface(name="eth0", mac="aa:bb:cc:dd:ee:02", sandbox="/run/netns/x"),
        ],
        ips=[
            IPConfig(ipaddress.ip_interface("10.91.0.5/24"), ipaddress.ip_address("10.91.0.1"), 1),
            IPConfig(ipaddress.ip_interface("fd00:91::5/64"), None, 1),
        ],
        routes=[
            Route(ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_address("10.91.0.1")),
            Route(ipaddress.ip_network("::/0")),
        ],
        dns=DNS(nameservers=["10.91.0.1"], search=["svc.local"]),
    )


def test_versions() -> None:
    assert SPEC_VERSION == "1.1.0"
    assert SUPPORTED_VERSIONS[-1] == "1.1.0"
    assert version_at_least("0.4.0", "0.4.0")
    assert version_at_least("1.0.0", "0.4.0")
    assert not version_at_least("0.3.1", "0.4.0")
    assert version_at_least("0.10.0", "0.4.0")  # numeric, not lexical
    with pytest.raises(DecodingFailure):
        version_at_least("1.0", "0.4.0")


def test_1_0_0_json_has_interface_index_and_no_ip_version() -> None:
    doc = _result().to_dict()
    assert doc["cniVersion"] == "1.0.0"
    assert doc["ips"][0] == {"interface": 1, "address": "10.91.0.5/24", "gateway": "10.91.0.1"}
    assert "version" not in doc["ips"][1]
    assert doc["interfaces"][1] == {"name": "eth0", "mac": "aa:bb:cc:dd:ee:02",
                                    "sandbox": "/run/netns/x"}
    assert doc["routes"] == [{"dst": "0.0.0.0/0", "gw": "10.91.0.1"}, {"dst": "::/0"}]
    assert doc["dns"] == {"nameservers": ["10.91.0.1"], "search": ["svc.local"]}


@pytest.mark.parametrize("version", ["0.3.0", "0.3.1", "0.4.0"])
def test_0_3_and_0_4_json_add_the_ip_version(version: str) -> None:
    doc = _result().to_dict(version)
    assert doc["cniVersion"] == version
    assert [ip["version"] for ip in doc["ips"]] == ["4", "6"]
    expected = _result()
    expected.cni_version = version
    assert Result.from_dict(doc) == expected


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0"])
def test_legacy_json_has_ip4_and_ip6_blocks(version: str) -> None:
    doc = _result().to_dict(version)
    assert doc == {
        "cniVersion": version,
        "ip4": {"ip": "10.91.0.5/24", "gateway": "10.91.0.1",
                "routes": [{"dst": "0.0.0.0/0", "gw": "10.91.0.1"}]},
        "ip6": {"ip": "fd00:91::5/64", "routes": [{"dst": "::/0"}]},
        "dns": {"nameservers": ["10.91.0.1"], "search": ["svc.local"]},
    }
    back = Result.from_dict(doc)
    assert [str(ip.address) for ip in back.ips] == ["10.91.0.5/24", "fd00:91::5/64"]
    assert back.interfaces == []


def test_empty_result_keeps_an_empty_dns_object_as_go_does() -> None:
    assert Result(cni_version="0.2.0").to_dict() == {"cniVersion": "0.2.0", "dns": {}}
    assert Result(cni_version="1.0.0").to_dict() == {"cniVersion": "1.0.0", "dns": {}}


def test_reads_a_reference_bridge_result() -> None:
    text = """{"cniVersion": "0.4.0",
      "interfaces": [{"name": "cni0", "mac": "16:c2:d6:2e:6a:3f"},
                     {"name": "veth1", "mac": "2a:1b:3c:4d:5e:6f"},
                     {"name": "eth0", "mac": "de:ad:be:ef:00:01", "sandbox": "/var/run/netns/t"}],
      "ips": [{"version": "4", "interface": 2, "address": "10.91.3.2/24",
               "gateway": "10.91.3.1"}],
      "routes": [{"dst": "0.0.0.0/0"}], "dns": {}}"""
    r = Result.from_dict(json.loads(text))
    assert r.cni_version == "0.4.0"
    assert r.ips[0].interface == 2
    assert r.interfaces[r.ips[0].interface].sandbox == "/var/run/netns/t"
    assert r.to_dict("1.0.0")["ips"] == [
        {"interface": 2, "address": "10.91.3.2/24", "gateway": "10.91.3.1"}]


def test_1_1_0_route_and_interface_fields_survive() -> None:
    doc = {"cniVersion": "1.1.0",
           "interfaces": [{"name": "eth0", "mtu": 1400, "socketPath": "/s", "pciID": "0000:01"}],
           "routes": [{"dst": "10.0.0.0/8", "mtu": 1300, "advmss": 1200, "priority": 5,
                       "table": 100, "scope": 0}], "dns": {}}
    assert Result.from_dict(doc).to_dict() == doc


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.1"}]}, "ips[0].address"),
        ({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.300/24"}]}, "ips[0].address"),
        ({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.3/24", "interface": 4}]},
         "ips[0].interface"),
        ({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.3/24", "gateway": 7}]},
         "ips[0].gateway"),
        ({"cniVersion": "1.0.0", "interfaces": [{"mac": "x"}]}, "interfaces[0].name"),
        ({"cniVersion": "1.0.0", "routes": [{"gw": "10.0.0.1"}]}, "routes[0].dst"),
        ({"cniVersion": "1.0.0", "routes": "none"}, "routes"),
        ({"cniVersion": "1.0.0", "dns": {"nameservers": "8.8.8.8"}}, "dns.nameservers"),
        ({"cniVersion": "0.4.0", "ips": [{"version": "6", "address": "10.0.0.3/24"}]},
         "ips[0].version"),
    ],
)
def test_bad_results_name_the_field(doc: dict, field: str) -> None:
    with pytest.raises(DecodingFailure) as exc:
        Result.from_dict(doc)
    assert field in exc.value.msg


def test_unknown_result_version_is_incompatible() -> None:
    with pytest.raises(IncompatibleVersion):
        Result.from_dict({"cniVersion": "7.0.0"})


GOOD = {
    "cniVersion": "1.0.0", "name": "pccnet", "type": "pycni-bridge",
    "ipam": {"type": "pycni-host-local", "subnet": "10.91.4.0/24"},
    "dns": {"nameservers": ["10.91.4.1"]},
    "runtimeConfig": {"portMappings": []},
    "args": {"cni": {"ips": ["10.91.4.9"]}},
    "bridge": "pccbr0",
    "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.91.4.2/24"}], "dns": {}},
}


def test_parse_netconf_reads_every_common_field() -> None:
    conf = parse_netconf(json.dumps(GOOD).encode())
    assert (conf.cni_version, conf.name, conf.type) == ("1.0.0", "pccnet", "pycni-bridge")
    assert conf.ipam["type"] == "pycni-host-local"
    assert conf.dns == DNS(nameservers=["10.91.4.1"])
    assert conf.prev_result is not None
    assert str(conf.prev_result.ips[0].address) == "10.91.4.2/24"
    assert conf.runtime_config == {"portMappings": []}
    assert conf.args == {"cni": {"ips": ["10.91.4.9"]}}
    assert conf.raw["bridge"] == "pccbr0"


def test_parse_netconf_defaults_when_optional_fields_are_absent() -> None:
    conf = parse_netconf(b'{"cniVersion": "0.3.1", "name": "n", "type": "t"}')
    assert conf.ipam == {}
    assert conf.dns is None
    assert conf.prev_result is None
    assert conf.runtime_config == {}
    assert conf.args == {}


def _without(key: str) -> dict:
    return {k: v for k, v in GOOD.items() if k != key}


@pytest.mark.parametrize(
    ("doc", "exc_type", "words"),
    [
        (_without("name"), InvalidNetworkConfig, '"name"'),
        (_without("type"), InvalidNetworkConfig, '"type"'),
        (_without("cniVersion"), InvalidNetworkConfig, '"cniVersion"'),
        ({**GOOD, "name": 3}, InvalidNetworkConfig, '"name" must be a string'),
        ({**GOOD, "type": ["x"]}, InvalidNetworkConfig, '"type" must be a string'),
        ({**GOOD, "cniVersion": 1.0}, InvalidNetworkConfig, '"cniVersion" must be a string'),
        ({**GOOD, "cniVersion": "one"}, InvalidNetworkConfig, '"cniVersion"'),
        ({**GOOD, "cniVersion": "9.9.9"}, IncompatibleVersion, "9.9.9"),
        ({**GOOD, "ipam": "host-local"}, InvalidNetworkConfig, '"ipam"'),
        ({**GOOD, "ipam": {"type": 1}}, InvalidNetworkConfig, '"ipam.type"'),
        ({**GOOD, "dns": {"nameservers": "x"}}, InvalidNetworkConfig, "dns"),
        ({**GOOD, "runtimeConfig": []}, InvalidNetworkConfig, '"runtimeConfig"'),
        ({**GOOD, "args": "x"}, InvalidNetworkConfig, '"args"'),
        ({**GOOD, "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "bad"}]}},
         InvalidNetworkConfig, "prevResult"),
    ],
)
def test_parse_netconf_errors_name_the_field(doc: dict, exc_type: type, words: str) -> None:
    with pytest.raises(exc_type) as exc:
        parse_netconf(json.dumps(doc).encode())
    assert words in str(exc.value)


@pytest.mark.parametrize("data", [b"{not json", b"[1, 2]", b"", b"\xff\xfe"])
def test_parse_netconf_bad_json_is_a_decoding_failure(data: bytes) -> None:
    with pytest.raises(DecodingFailure):
        parse_netconf(data)
