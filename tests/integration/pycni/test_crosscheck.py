"""One config through our plugins and through the reference plugins (/usr/lib/cni):
the same addresses, routes, MTU, gateway, masquerade rules and NAT behaviour.

Each implementation runs in turn on the same bridge name, network name and
container ID (so the chain names match), from a fresh data dir. NAT behaviour is
checked by traffic: an "outside" netns on a host veth has no route back to the
pod subnet, so its ping replies only arrive if the pod's traffic was masqueraded.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import REFERENCE_BIN, chain_rules, cni, drop_chain, ip_json, ping, unique

from pycni import ns
from pycni.install import install

pytestmark = [pytest.mark.root, pytest.mark.netns,
              pytest.mark.skipif(not os.path.exists(os.path.join(REFERENCE_BIN, "bridge")),
                                 reason="reference plugins not installed")]

OCTET = 200 + os.getpid() % 40
SUBNET = f"10.92.{OCTET}.0/24"
OUTSIDE_HOST, OUTSIDE_PEER = f"10.93.{OCTET}.1", f"10.93.{OCTET}.2"
CID = "pck-crosscheck-container"


class World:
    def __init__(self, tmp: Path, make_netns: Callable[[str], str]) -> None:
        self.tmp = tmp
        self.bin = str(tmp / "bin")
        install(self.bin)
        self.bridge = unique("xbr")
        self.net = unique("xn")
        self.out_ns = make_netns("xo")
        self.out_host = unique("xv")
        subprocess.run(["ip", "link", "add", self.out_host, "type", "veth", "peer", "name",
                        "eth0", "netns", os.path.basename(self.out_ns)], check=True)
        subprocess.run(["ip", "addr", "add", f"{OUTSIDE_HOST}/30", "dev", self.out_host],
                       check=True)
        subprocess.run(["ip", "link", "set", self.out_host, "up"], check=True)
        o = os.path.basename(self.out_ns)
        subprocess.run(["ip", "-n", o, "addr", "add", f"{OUTSIDE_PEER}/30", "dev", "eth0"],
                       check=True)
        subprocess.run(["ip", "-n", o, "link", "set", "eth0", "up"], check=True)

    def cleanup(self) -> None:
        drop_chain(self.net, CID)  # the namespace goes with netns_factory
        for link in (self.bridge, self.out_host):
            subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)


@pytest.fixture
def world(tmp_path: Path, netns_factory: Callable[[str], str]) -> Iterator[World]:
    w = World(tmp_path, netns_factory)
    try:
        yield w
    finally:
        w.cleanup()


FLAVORS = {
    # bridge type, ipam type, CNI_PATH: ours, theirs, and both mixes
    "ours": ("pycni-bridge", "pycni-host-local", "bin"),
    "reference": ("bridge", "host-local", "ref"),
    "our-bridge+their-ipam": ("pycni-bridge", "host-local", "bin+ref"),
    "their-bridge+our-ipam": ("bridge", "pycni-host-local", "bin+ref"),
}


def observe(w: World, flavor: str, extra: dict[str, Any], version: str) -> dict[str, Any]:
    """ADD, everything we compare, then DEL and what it left behind."""
    bridge_type, ipam_type, where = FLAVORS[flavor]
    path = {"bin": [w.bin], "ref": [REFERENCE_BIN], "bin+ref": [w.bin, REFERENCE_BIN]}[where]
    data = str(w.tmp / f"data-{flavor}")
    conf: dict[str, Any] = {
        "cniVersion": version, "name": w.net, "type": bridge_type, "bridge": w.bridge,
        "isGateway": True, "ipMasq": True,
        "ipam": {"type": ipam_type, "ranges": [[{"subnet": SUBNET}]], "dataDir": data,
                 "routes": [{"dst": f"10.93.{OCTET}.0/30"}]},
    }
    conf.update(extra)
    netns = ns.create_netns(unique("x"))
    try:
        r = cni(bridge_type, "ADD", conf, cid=CID, netns=netns, path=path)
        assert r.status == 0, (flavor, r.raw, r.err)
        res = r.out
        seen: dict[str, Any] = {
            "ips": res["ips"],
            "routes": res.get("routes"),
            "interfaces": [{"sandbox": i.get("sandbox") == netns, "has_mac": "mac" in i}
                           for i in res["interfaces"]],
            "names": [res["interfaces"][0]["name"], res["interfaces"][2]["name"],
                      res["interfaces"][1]["name"].startswith("veth")],
        }
        link = ip_json(netns, "addr", "show", "eth0")[0]
        seen["addrs"] = sorted(f"{a['local']}/{a['prefixlen']}" for a in link["addr_info"]
                               if a["family"] == "inet")
        seen["mtu"] = link["mtu"]
        seen["netns_routes"] = sorted((x["dst"], x.get("gateway", ""), x["dev"])
                                      for x in ip_json(netns, "route", "show"))
        host = ip_json(None, "link", "show", res["interfaces"][1]["name"])[0]
        seen["host_mtu"], seen["host_master"] = host["mtu"], host.get("master")
        br = ip_json(None, "addr", "show", w.bridge)[0]
        seen["bridge_mtu"] = br["mtu"]
        seen["bridge_addrs"] = sorted(f"{a['local']}/{a['prefixlen']}" for a in br["addr_info"]
                                      if a["family"] == "inet")
        seen["bridge_mac_in_result"] = res["interfaces"][0]["mac"] == br["address"]
        seen["nat"] = sorted(chain_rules(w.net, CID))
        seen["forward"] = Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()
        seen["ping_gateway"] = ping(netns, f"10.92.{OCTET}.1")
        seen["ping_outside_masqueraded"] = ping(netns, OUTSIDE_PEER)
        d = cni(bridge_type, "DEL", dict(conf, prevResult=res), cid=CID, netns=netns, path=path)
        assert d.status == 0, (flavor, d.raw)
        seen["after_del_nat"] = chain_rules(w.net, CID)
        seen["after_del_ipam"] = sorted(p for p in os.listdir(os.path.join(data, w.net))
                                        if p[0].isdigit())
        seen["after_del_eth0"] = any(x["ifname"] == "eth0"
                                     for x in ip_json(netns, "link", "show"))
        return seen
    finally:
        ns.delete_netns(netns)
        drop_chain(w.net, CID)
        subprocess.run(["ip", "link", "del", w.bridge], capture_output=True, check=False)


@pytest.mark.parametrize(("extra", "version"), [
    ({}, "1.0.0"),
    ({"mtu": 1400, "hairpinMode": True}, "1.0.0"),
    ({"isDefaultGateway": True}, "0.4.0"),
    ({"ipMasq": False}, "0.3.1"),
], ids=["gateway+masq", "mtu+hairpin", "default-gateway-0.4.0", "no-masq-0.3.1"])
def test_ours_and_reference_agree(world: World, extra: dict[str, Any], version: str) -> None:
    ref = observe(world, "reference", extra, version)
    ours = observe(world, "ours", extra, version)
    assert ours == ref
    # sanity: what was compared is what the config asks for
    assert ref["addrs"] == [f"10.92.{OCTET}.2/24"]
    assert ref["bridge_addrs"] == [f"10.92.{OCTET}.1/24"]
    assert ref["ping_gateway"]
    assert ref["ping_outside_masqueraded"] is extra.get("ipMasq", True)
    assert bool(ref["nat"]) is extra.get("ipMasq", True)
    assert ref["after_del_nat"] == []
    assert ref["after_del_ipam"] == []


@pytest.mark.parametrize("flavor", ["our-bridge+their-ipam", "their-bridge+our-ipam"])
def test_mixed_bridge_and_ipam_agree_with_reference(world: World, flavor: str) -> None:
    ref = observe(world, "reference", {}, "1.0.0")
    mixed = observe(world, flavor, {}, "1.0.0")
    assert mixed == ref


def test_vlan_outcome_matches_the_reference(world: World) -> None:
    """On a kernel without bridge vlan filtering both fail and allocate nothing; with it,
    both succeed with the same result shape (gateway on ``<bridge>.<vlan>``)."""
    outcomes = {}
    for flavor in ("reference", "ours"):
        bridge_type, ipam_type, where = FLAVORS[flavor]
        path = [world.bin] if where == "bin" else [REFERENCE_BIN]
        data = world.tmp / f"vlan-{flavor}"
        conf = {"cniVersion": "1.0.0", "name": world.net, "type": bridge_type,
                "bridge": world.bridge, "isGateway": True, "vlan": 10,
                "ipam": {"type": ipam_type, "ranges": [[{"subnet": SUBNET}]],
                         "dataDir": str(data)}}
        netns = ns.create_netns(unique("xv"))
        try:
            r = cni(bridge_type, "ADD", conf, cid=CID, netns=netns, path=path)
            held = [p.name for p in (data / world.net).iterdir() if p.name[0].isdigit()] \
                if (data / world.net).exists() else []
            outcomes[flavor] = (r.status == 0, len(r.out.get("interfaces", [])), held
                                if r.status else ["ok"])
            if r.status == 0:
                cni(bridge_type, "DEL", dict(conf, prevResult=r.out), cid=CID, netns=netns,
                    path=path)
        finally:
            ns.delete_netns(netns)
            for link in (world.bridge, f"{world.bridge}.10"):
                subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)
    assert outcomes["ours"] == outcomes["reference"]
