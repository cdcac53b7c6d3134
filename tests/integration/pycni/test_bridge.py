"""The bridge plugin (with host-local) on real namespaces, exec'd and in-process."""

from __future__ import annotations

import concurrent.futures
import ipaddress
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import (
    chain_rules,
    cni,
    drop_chain,
    host_link,
    ip_json,
    netns_link,
    ping,
    subnet_octet,
    unique,
)

from pycni import ns
from pycni.install import install
from pycni.masq import chain_name

pytestmark = [pytest.mark.root, pytest.mark.netns]

MODES = ("exec", "inproc")


class Lab:
    """One test's bridge, subnet, data dir and namespaces; everything removed at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.bin = str(tmp / "bin")
        install(self.bin)
        self.bridge = unique("br")
        self.net = unique("n")
        self.octet = subnet_octet()
        self.subnet = f"10.92.{self.octet}.0/24"
        self.data_dir = str(tmp / "ipam")
        self.namespaces: list[str] = []
        self.cids: list[str] = []

    def netns(self) -> str:
        name = unique("ns")
        path = ns.create_netns(name)
        self.namespaces.append(path)
        return path

    def cid(self) -> str:
        c = unique("c") + "-container"
        self.cids.append(c)
        return c

    def conf(self, **over: Any) -> dict[str, Any]:
        ipam = {"type": "pycni-host-local", "ranges": [[{"subnet": self.subnet}]],
                "routes": [{"dst": "0.0.0.0/0"}], "dataDir": self.data_dir}
        ipam.update(over.pop("ipam", {}))
        conf: dict[str, Any] = {"cniVersion": "1.0.0", "name": self.net, "type": "pycni-bridge",
                                "bridge": self.bridge, "isGateway": True, "ipMasq": True,
                                "ipam": ipam}
        conf.update(over)
        return conf

    def call(self, command: str, conf: dict[str, Any] | bytes, cid: str, netns: str,
             mode: str = "exec", **kw: Any) -> Any:
        return cni("pycni-bridge", command, conf, cid=cid, netns=netns, path=[self.bin],
                   mode=mode, **kw)

    def ipam_files(self) -> list[str]:
        d = os.path.join(self.data_dir, self.net)
        if not os.path.isdir(d):
            return []
        return sorted(f for f in os.listdir(d) if f[0].isdigit())

    def cleanup(self) -> None:
        for path in self.namespaces:
            ns.delete_netns(path)
        for cid in self.cids:
            drop_chain(self.net, cid)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    lab = Lab(tmp_path)
    try:
        yield lab
    finally:
        lab.cleanup()


@pytest.mark.parametrize("mode", MODES)
def test_two_namespaces_ping_each_other_and_the_gateway(lab: Lab, mode: str) -> None:
    a, b = lab.netns(), lab.netns()
    ca, cb = lab.cid(), lab.cid()
    ra = lab.call("ADD", lab.conf(), ca, a, mode)
    rb = lab.call("ADD", lab.conf(), cb, b, mode)
    assert ra.status == 0, ra.raw
    assert rb.status == 0, rb.raw
    ip_a = ra.out["ips"][0]["address"].split("/")[0]
    ip_b = rb.out["ips"][0]["address"].split("/")[0]
    gw = f"10.92.{lab.octet}.1"
    assert ip_a != ip_b
    assert ra.out["ips"][0]["gateway"] == gw
    assert [i["name"] for i in ra.out["interfaces"]][::2] == [lab.bridge, "eth0"]
    assert ra.out["interfaces"][2]["sandbox"] == a
    assert ping(a, ip_b)
    assert ping(b, ip_a)
    assert ping(a, gw)
    # the host end is on the bridge, the gateway address on the bridge, forwarding on
    host = host_link(ra.out["interfaces"][1]["name"])
    br = host_link(lab.bridge)
    assert host is not None
    assert br is not None
    assert host.master == br.index
    assert any(x["local"] == gw for x in ip_json(None, "addr", "show", lab.bridge)[0]["addr_info"])
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "1"
    for cid, r in ((ca, ra), (cb, rb)):
        assert lab.call("DEL", dict(lab.conf(), prevResult=r.out), cid, a if cid == ca else b,
                        mode).status == 0
    assert lab.ipam_files() == []


@pytest.mark.parametrize("mode", MODES)
def test_masquerade_chain_visible_to_iptables_and_removed_on_del(lab: Lab, mode: str) -> None:
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(), cid, netns, mode)
    assert r.status == 0, r.raw
    ip = r.out["ips"][0]["address"].split("/")[0]
    chain = chain_name(lab.net, cid)
    cmt = f'"name: \\"{lab.net}\\" id: \\"{cid}\\""'
    rules = chain_rules(lab.net, cid)
    assert f"-N {chain}" in rules
    assert f"-A POSTROUTING -s {ip}/32 -m comment --comment {cmt} -j {chain}" in rules
    assert f"-A {chain} -d {lab.subnet} -m comment --comment {cmt} -j ACCEPT" in rules
    assert f"-A {chain} ! -d 224.0.0.0/4 -m comment --comment {cmt} -j MASQUERADE" in rules
    proc = subprocess.run(["iptables", "-t", "nat", "-S", chain], capture_output=True, text=True,
                          check=True)
    assert "incompatible" not in proc.stderr
    assert lab.call("DEL", dict(lab.conf(), prevResult=r.out), cid, netns, mode).status == 0
    assert chain_rules(lab.net, cid) == []


@pytest.mark.parametrize("mode", MODES)
def test_del_twice_succeeds(lab: Lab, mode: str) -> None:
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(), cid, netns, mode)
    assert r.status == 0, r.raw
    conf = dict(lab.conf(), prevResult=r.out)
    first = lab.call("DEL", conf, cid, netns, mode)
    second = lab.call("DEL", conf, cid, netns, mode)
    assert (first.status, second.status) == (0, 0), (first.raw, second.raw)
    assert netns_link(netns, "eth0") is None
    assert lab.ipam_files() == []
    assert chain_rules(lab.net, cid) == []


@pytest.mark.parametrize("with_prev", [True, False], ids=["prevResult", "no-prevResult"])
@pytest.mark.parametrize("mode", MODES)
def test_del_after_netns_gone_leaks_nothing(lab: Lab, mode: str, with_prev: bool) -> None:
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(), cid, netns, mode)
    assert r.status == 0, r.raw
    host_veth = r.out["interfaces"][1]["name"]
    assert lab.ipam_files()
    assert chain_rules(lab.net, cid)
    ns.delete_netns(netns)
    conf = dict(lab.conf(), prevResult=r.out) if with_prev else lab.conf()
    d = lab.call("DEL", conf, cid, netns, mode)
    assert d.status == 0, d.raw
    assert lab.ipam_files() == []
    assert chain_rules(lab.net, cid) == []
    deadline = time.monotonic() + 5  # without prevResult, the kernel reaps the pair async
    while host_link(host_veth) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_link(host_veth) is None


@pytest.mark.parametrize("mode", MODES)
def test_check_passes_then_fails_once_the_interface_is_removed(lab: Lab, mode: str) -> None:
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(), cid, netns, mode)
    assert r.status == 0, r.raw
    conf = dict(lab.conf(), prevResult=r.out)
    ok = lab.call("CHECK", conf, cid, netns, mode)
    assert ok.status == 0, ok.raw
    subprocess.run(["ip", "-n", os.path.basename(netns), "link", "del", "eth0"], check=True)
    bad = lab.call("CHECK", conf, cid, netns, mode)
    assert bad.status != 0
    assert bad.out is not None
    assert bad.out["code"]
    assert "eth0" in bad.out["msg"]
    assert lab.call("DEL", conf, cid, netns, mode).status == 0


@pytest.mark.parametrize("mode", MODES)
def test_exhausted_range_errors_and_allocates_nothing(lab: Lab, mode: str) -> None:
    base = f"10.92.{lab.octet}"
    conf = lab.conf(ipam={"ranges": [[{"subnet": lab.subnet, "rangeStart": f"{base}.10",
                                        "rangeEnd": f"{base}.11"}]]})
    spaces = [lab.netns() for _ in range(3)]
    cids = [lab.cid() for _ in range(3)]
    for i in range(2):
        r = lab.call("ADD", conf, cids[i], spaces[i], mode)
        assert r.status == 0, r.raw
    assert lab.ipam_files() == [f"{base}.10", f"{base}.11"]
    r = lab.call("ADD", conf, cids[2], spaces[2], mode)
    assert r.status != 0
    assert r.out is not None
    assert "no IP addresses available" in r.out["msg"]
    assert lab.ipam_files() == [f"{base}.10", f"{base}.11"]
    # the failed ADD left no interface, no host veth, no chain
    assert netns_link(spaces[2], "eth0") is None
    assert chain_rules(lab.net, cids[2]) == []
    br = host_link(lab.bridge)
    ports = [x for x in ip_json(None, "link", "show", "master", lab.bridge)]
    assert br is not None
    assert len(ports) == 2


def test_ten_concurrent_adds_get_ten_distinct_addresses(lab: Lab) -> None:
    spaces = [lab.netns() for _ in range(10)]
    cids = [lab.cid() for _ in range(10)]
    conf = lab.conf()
    with concurrent.futures.ThreadPoolExecutor(10) as pool:  # ten plugin processes at once
        results = list(pool.map(lambda i: lab.call("ADD", conf, cids[i], spaces[i], "exec"),
                                range(10)))
    assert [r.status for r in results] == [0] * 10, [r.raw for r in results if r.status]
    addrs = {r.out["ips"][0]["address"] for r in results}
    assert len(addrs) == 10
    assert len(lab.ipam_files()) == 10
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        dels = list(pool.map(lambda i: lab.call("DEL", dict(conf, prevResult=results[i].out),
                                                cids[i], spaces[i], "exec"), range(10)))
    assert [d.status for d in dels] == [0] * 10
    assert lab.ipam_files() == []


def test_mtu_hairpin_and_default_gateway(lab: Lab) -> None:
    netns, cid = lab.netns(), lab.cid()
    conf = lab.conf(mtu=1400, hairpinMode=True, isDefaultGateway=True,
                    ipam={"routes": []})
    r = lab.call("ADD", conf, cid, netns)
    assert r.status == 0, r.raw
    host_veth = r.out["interfaces"][1]["name"]
    assert netns_link(netns, "eth0").mtu == 1400
    assert host_link(host_veth).mtu == 1400
    assert host_link(lab.bridge).mtu == 1400
    with open(f"/sys/class/net/{host_veth}/brport/hairpin_mode") as f:
        assert f.read().strip() == "1"
    gw = f"10.92.{lab.octet}.1"
    assert {"dst": "0.0.0.0/0", "gw": gw} in r.out["routes"]
    routes = ip_json(netns, "route", "show")
    assert any(x["dst"] == "default" and x.get("gateway") == gw for x in routes)
    assert lab.call("DEL", dict(conf, prevResult=r.out), cid, netns).status == 0


def test_promisc_mode_on_the_bridge(lab: Lab) -> None:
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(promiscMode=True, ipMasq=False), cid, netns)
    assert r.status == 0, r.raw
    assert host_link(lab.bridge).promisc
    assert lab.call("DEL", dict(lab.conf(), prevResult=r.out), cid, netns).status == 0


def test_force_address_replaces_a_foreign_bridge_address(lab: Lab) -> None:
    subprocess.run(["ip", "link", "add", lab.bridge, "type", "bridge"], check=True)
    subprocess.run(["ip", "addr", "add", f"10.92.{lab.octet}.200/24", "dev", lab.bridge],
                   check=True)
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(ipMasq=False), cid, netns)
    assert r.status != 0
    assert "already has an IP address" in r.out["msg"]
    assert lab.ipam_files() == []  # rolled back
    assert netns_link(netns, "eth0") is None
    r = lab.call("ADD", lab.conf(ipMasq=False, forceAddress=True), cid, netns)
    assert r.status == 0, r.raw
    addrs = [x["local"] for x in ip_json(None, "addr", "show", lab.bridge)[0]["addr_info"]
             if x["family"] == "inet"]
    assert addrs == [f"10.92.{lab.octet}.1"]
    assert lab.call("DEL", dict(lab.conf(), prevResult=r.out), cid, netns).status == 0


def test_existing_non_bridge_link_is_an_error(lab: Lab) -> None:
    subprocess.run(["ip", "link", "add", lab.bridge, "type", "veth", "peer", "name",
                    lab.bridge + "p"], check=True)
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(), cid, netns)
    assert r.status != 0
    assert "is not a bridge" in r.out["msg"]
    assert lab.ipam_files() == []


def _malformed(lab: Lab) -> dict[str, tuple[bytes | dict[str, Any], tuple[str, ...], int]]:
    good = lab.conf()
    no_name = {k: v for k, v in good.items() if k != "name"}
    return {
        "bad-json": (b'{"cniVersion": "1.0.0", "name": ', (), 6),
        "missing-name": (no_name, (), 7),
        "missing-type": ({k: v for k, v in good.items() if k != "type"}, (), 7),
        "missing-cniVersion": ({k: v for k, v in good.items() if k != "cniVersion"}, (), 7),
        "ipam-without-ranges": (lab.conf(ipam={"ranges": None}), (), 7),
        "rangeStart-outside-subnet": (lab.conf(ipam={"ranges": [[{
            "subnet": lab.subnet, "rangeStart": "10.93.0.5"}]]}), (), 7),
        "name-not-string": (dict(good, name=42), (), 7),
        "isGateway-not-bool": (dict(good, isGateway="yes"), (), 7),
        "mtu-not-int": (dict(good, mtu="1500"), (), 7),
        "hairpin-and-promisc": (dict(good, hairpinMode=True, promiscMode=True), (), 7),
        "ranges-not-list": (lab.conf(ipam={"ranges": {"subnet": lab.subnet}}), (), 7),
        "subnet-not-cidr": (lab.conf(ipam={"ranges": [[{"subnet": "10.92.300.0/24"}]]}), (), 7),
        "unknown-cniVersion": (dict(good, cniVersion="9.9.9"), (), 1),
        "missing-CNI_NETNS": (good, ("CNI_NETNS",), 4),
    }


@pytest.mark.parametrize("case", ["bad-json", "missing-name", "missing-type",
                                  "missing-cniVersion", "ipam-without-ranges",
                                  "rangeStart-outside-subnet", "name-not-string",
                                  "isGateway-not-bool", "mtu-not-int", "hairpin-and-promisc",
                                  "ranges-not-list", "subnet-not-cidr", "unknown-cniVersion",
                                  "missing-CNI_NETNS"])
def test_malformed_config_gives_error_json_and_changes_nothing(lab: Lab, case: str) -> None:
    conf, drop, code = _malformed(lab)[case]
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", conf, cid, netns, "exec", drop=drop)
    assert r.status != 0
    assert r.out is not None, r.raw
    assert r.out["code"] == code, r.out
    assert isinstance(r.out["msg"], str)
    assert r.out["msg"]
    assert "cniVersion" in r.out
    assert host_link(lab.bridge) is None
    assert netns_link(netns, "eth0") is None
    assert lab.ipam_files() == []


@pytest.mark.parametrize("mode", MODES)
def test_add_result_in_older_spec_versions(lab: Lab, mode: str) -> None:
    for version in ("0.3.1", "0.4.0"):
        netns, cid = lab.netns(), lab.cid()
        r = lab.call("ADD", lab.conf(cniVersion=version), cid, netns, mode)
        assert r.status == 0, r.raw
        assert r.out["cniVersion"] == version
        assert r.out["ips"][0]["version"] == "4"
        ipaddress.ip_interface(r.out["ips"][0]["address"])
        assert lab.call("DEL", dict(lab.conf(cniVersion=version), prevResult=r.out), cid, netns,
                        mode).status == 0


def test_ten_concurrent_in_process_adds_from_threads(lab: Lab) -> None:
    """The runtime calls plugins in-process from a threaded gRPC server: each thread
    switches netns only for itself and always comes back; the file lock still serialises."""
    spaces = [lab.netns() for _ in range(10)]
    cids = [lab.cid() for _ in range(10)]
    conf = lab.conf()
    host_ns = os.stat("/proc/self/ns/net").st_ino

    def add(i: int) -> Any:
        r = lab.call("ADD", conf, cids[i], spaces[i], "inproc")
        assert os.stat("/proc/thread-self/ns/net").st_ino == host_ns
        return r

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        results = list(pool.map(add, range(10)))
    assert [r.status for r in results] == [0] * 10, [r.raw for r in results if r.status]
    assert len({r.out["ips"][0]["address"] for r in results}) == 10
    assert os.stat("/proc/thread-self/ns/net").st_ino == host_ns
    for i in (0, 9):
        assert ping(spaces[i], f"10.92.{lab.octet}.1")
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        dels = list(pool.map(lambda i: lab.call("DEL", dict(conf, prevResult=results[i].out),
                                                cids[i], spaces[i], "inproc"), range(10)))
    assert [d.status for d in dels] == [0] * 10
    assert lab.ipam_files() == []
    assert all(chain_rules(lab.net, c) == [] for c in cids)


def _kernel_has_bridge_vlan_filtering() -> bool:
    name = unique("vf")
    proc = subprocess.run(["ip", "link", "add", name, "type", "bridge", "vlan_filtering", "1"],
                          capture_output=True, check=False)
    subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
    return proc.returncode == 0


VLAN_FILTERING = _kernel_has_bridge_vlan_filtering()


@pytest.mark.skipif(not VLAN_FILTERING, reason="kernel without CONFIG_BRIDGE_VLAN_FILTERING")
def test_vlan_access_ports_isolate_and_gateway_on_the_vlan_interface(lab: Lab) -> None:
    a, b, c = lab.netns(), lab.netns(), lab.netns()
    ca, cb, cc = lab.cid(), lab.cid(), lab.cid()
    vlan_if = f"{lab.bridge}.10"
    try:
        ra = lab.call("ADD", lab.conf(vlan=10), ca, a)
        rb = lab.call("ADD", lab.conf(vlan=10), cb, b)
        # vlan 20, same subnet, no gateway: it must not reach vlan 10
        rc = lab.call("ADD", lab.conf(vlan=20, isGateway=False, ipMasq=False), cc, c)
        assert [r.status for r in (ra, rb, rc)] == [0, 0, 0], (ra.raw, rb.raw, rc.raw)
        assert ra.out["interfaces"][3]["name"] == vlan_if
        ip_a, ip_b = (r.out["ips"][0]["address"].split("/")[0] for r in (ra, rb))
        assert ping(a, ip_b)
        assert ping(b, f"10.92.{lab.octet}.1")
        assert not ping(c, ip_a)
        out = subprocess.run(["bridge", "-j", "vlan", "show"], capture_output=True, text=True,
                             check=True).stdout
        table = {e["ifname"]: e["vlans"] for e in json.loads(out)}
        port = ra.out["interfaces"][1]["name"]
        assert {"vlan": 10, "flags": ["PVID", "Egress Untagged"]} in table[port]
        addrs = [x["local"] for x in ip_json(None, "addr", "show", vlan_if)[0]["addr_info"]
                 if x["family"] == "inet"]
        assert addrs == [f"10.92.{lab.octet}.1"]
        for cid, r, n in ((ca, ra, a), (cb, rb, b)):
            assert lab.call("CHECK", dict(lab.conf(vlan=10), prevResult=r.out), cid, n).status == 0
            assert lab.call("DEL", dict(lab.conf(vlan=10), prevResult=r.out), cid, n).status == 0
    finally:
        subprocess.run(["ip", "link", "del", vlan_if], capture_output=True, check=False)


@pytest.mark.skipif(VLAN_FILTERING, reason="kernel supports vlan filtering")
def test_vlan_without_kernel_support_fails_cleanly(lab: Lab) -> None:
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(vlan=10), cid, netns)
    assert r.status != 0
    assert "Operation not supported" in r.out["msg"]
    assert lab.ipam_files() == []
    assert netns_link(netns, "eth0") is None
    assert host_link(lab.bridge) is None


def test_requested_mac_and_config_dns(lab: Lab) -> None:
    netns, cid = lab.netns(), lab.cid()
    dns = {"nameservers": ["10.92.0.53"], "search": ["pck.local"]}
    conf = lab.conf(runtimeConfig={"mac": "0a:58:0a:5c:00:99"}, dns=dns)
    r = lab.call("ADD", conf, cid, netns)
    assert r.status == 0, r.raw
    assert r.out["interfaces"][2]["mac"] == "0a:58:0a:5c:00:99"
    assert netns_link(netns, "eth0").mac == "0a:58:0a:5c:00:99"
    assert r.out["dns"] == dns
    bad = lab.call("ADD", lab.conf(runtimeConfig={"mac": "zz:58"}), lab.cid(), lab.netns())
    assert bad.status != 0
    assert "runtimeConfig.mac" in bad.out["msg"]
    assert lab.call("DEL", dict(conf, prevResult=r.out), cid, netns).status == 0


@pytest.mark.parametrize("mode", MODES)
def test_gc_releases_what_no_valid_attachment_holds(lab: Lab, mode: str) -> None:
    spaces = [lab.netns() for _ in range(3)]
    cids = [lab.cid() for _ in range(3)]
    conf = lab.conf(cniVersion="1.1.0")
    results = [lab.call("ADD", conf, cids[i], spaces[i], mode) for i in range(3)]
    assert [r.status for r in results] == [0, 0, 0], [r.raw for r in results]
    keep = results[0].out["ips"][0]["address"].split("/")[0]
    gc_conf = dict(conf, **{"cni.dev/valid-attachments": [{"containerID": cids[0],
                                                           "ifname": "eth0"}]})
    r = lab.call("GC", gc_conf, "", "", mode, drop=("CNI_CONTAINERID", "CNI_NETNS",
                                                    "CNI_IFNAME"))
    assert r.status == 0, r.raw
    assert lab.ipam_files() == [keep]
    assert chain_rules(lab.net, cids[0])
    assert chain_rules(lab.net, cids[1]) == []
    assert chain_rules(lab.net, cids[2]) == []
    bad = lab.call("GC", dict(conf, **{"cni.dev/valid-attachments": [{"containerID": 1}]}),
                   "", "", mode, drop=("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"))
    assert bad.status != 0
    assert "valid-attachments[0]" in bad.out["msg"]
    assert lab.ipam_files() == [keep]
    old = lab.call("GC", dict(lab.conf(), **{"cni.dev/valid-attachments": []}), "", "", mode,
                   drop=("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"))
    assert old.status != 0  # GC needs a 1.1.0 config
    assert lab.call("DEL", dict(conf, prevResult=results[0].out), cids[0], spaces[0],
                    mode).status == 0


@pytest.mark.parametrize("mode", MODES)
def test_del_with_an_unmounted_netns_file_left_behind(lab: Lab, mode: str) -> None:
    """After a sandbox's netns is unmounted, its path may remain as a plain file: DEL
    treats it like a gone netns instead of failing on setns."""
    netns, cid = lab.netns(), lab.cid()
    r = lab.call("ADD", lab.conf(), cid, netns, mode)
    assert r.status == 0, r.raw
    ns.delete_netns(netns)
    Path(netns).write_text("")
    try:
        d = lab.call("DEL", dict(lab.conf(), prevResult=r.out), cid, netns, mode)
        assert d.status == 0, d.raw
        assert lab.ipam_files() == []
        assert chain_rules(lab.net, cid) == []
        lo = cni("pycni-loopback", "DEL", {"cniVersion": "1.0.0", "name": "lo",
                                            "type": "pycni-loopback"},
                 cid=cid, netns=netns, path=[lab.bin], mode=mode)
        assert lo.status == 0, lo.raw
    finally:
        Path(netns).unlink()


@pytest.mark.parametrize("mode", MODES)
def test_layer2_only_without_ipam(lab: Lab, mode: str) -> None:
    netns, cid = lab.netns(), lab.cid()
    conf = {k: v for k, v in lab.conf().items() if k != "ipam"}
    r = lab.call("ADD", conf, cid, netns, mode)
    assert r.status == 0, r.raw
    assert "ips" not in r.out
    assert len(r.out["interfaces"]) == 3
    eth0 = netns_link(netns, "eth0")
    assert eth0 is not None
    assert eth0.up
    assert chain_rules(lab.net, cid) == []  # no address, nothing to masquerade
    assert r.out["interfaces"][0]["mac"] == host_link(lab.bridge).mac
    assert lab.call("DEL", dict(conf, prevResult=r.out), cid, netns, mode).status == 0
    assert netns_link(netns, "eth0") is None


def test_two_networks_in_one_netns(lab: Lab) -> None:
    netns, cid = lab.netns(), lab.cid()
    other_bridge, other_net = unique("br"), unique("n")
    other_octet = (lab.octet + 101) % 250 + 1
    conf_b = lab.conf(bridge=other_bridge, name=other_net,
                      ipam={"ranges": [[{"subnet": f"10.92.{other_octet}.0/24"}]], "routes": []})
    try:
        ra = lab.call("ADD", lab.conf(), cid, netns)
        rb = lab.call("ADD", conf_b, cid, netns, ifname="net1")
        assert (ra.status, rb.status) == (0, 0), (ra.raw, rb.raw)
        assert ping(netns, f"10.92.{lab.octet}.1")
        assert ping(netns, f"10.92.{other_octet}.1")
        assert chain_rules(lab.net, cid)
        assert chain_rules(other_net, cid)
        assert lab.call("DEL", dict(conf_b, prevResult=rb.out), cid, netns,
                        ifname="net1").status == 0
        assert netns_link(netns, "net1") is None
        assert netns_link(netns, "eth0") is not None  # the other attachment is untouched
        assert chain_rules(other_net, cid) == []
        assert chain_rules(lab.net, cid)
        assert lab.call("DEL", dict(lab.conf(), prevResult=ra.out), cid, netns).status == 0
    finally:
        drop_chain(other_net, cid)
        subprocess.run(["ip", "link", "del", other_bridge], capture_output=True, check=False)
