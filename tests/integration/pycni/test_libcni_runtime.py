"""The runtime side against real namespaces, bridges, IPAM files and masquerade rules.

Every scenario runs with four plugin sets: the reference Go plugins
(/usr/lib/cni), ours called in-process, ours exec'd through the launchers
``pycni install`` writes, and ours as drop-ins under the reference names.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pycni.conf import conflist_from_bytes, loopback_network
from pycni.errors import CNIError
from pycni.install import install
from pycni.libcni import CNIConfig, RuntimeConf
from pycni.masq import chain_name
from pycni.spec import NetConfList

pytestmark = [pytest.mark.root, pytest.mark.netns]

REFERENCE_BIN = "/usr/lib/cni"
FLAVORS = ("reference", "inproc", "exec", "dropin")


@dataclass
class Env:
    flavor: str
    netns: str  # path
    bridge: str
    subnet_octet: int
    cid: str
    tmp: Path
    bin_dirs: list[str]
    in_process: bool

    @property
    def types(self) -> dict[str, str]:
        if self.flavor in ("reference", "dropin"):
            return {"loopback": "loopback", "bridge": "bridge", "ipam": "host-local"}
        return {"loopback": "pycni-loopback", "bridge": "pycni-bridge",
                "ipam": "pycni-host-local"}

    @property
    def ipam_dir(self) -> Path:
        return self.tmp / "ipam"

    def network(self, name: str = "pccnet", version: str = "1.0.0", masq: bool = True,
                extra: list[dict] | None = None) -> NetConfList:
        bridge = {
            "type": self.types["bridge"], "bridge": self.bridge, "isGateway": True,
            "ipMasq": masq,
            "ipam": {"type": self.types["ipam"], "dataDir": str(self.ipam_dir),
                     "ranges": [[{"subnet": f"10.91.{self.subnet_octet}.0/24"}]],
                     "routes": [{"dst": "0.0.0.0/0"}]},
        }
        doc = {"cniVersion": version, "name": name, "plugins": [bridge, *(extra or [])]}
        return conflist_from_bytes(json.dumps(doc).encode())

    def cni(self) -> CNIConfig:
        return CNIConfig(self.bin_dirs, cache_dir=str(self.tmp / "cache"),
                         in_process=self.in_process)

    def rt(self) -> RuntimeConf:
        return RuntimeConf(self.cid, self.netns, "eth0",
                           args=[("IgnoreUnknown", "1"), ("K8S_POD_NAME", "pcc")])


def _ip(*args: str, netns: str | None = None) -> list[dict]:
    """``ip -j`` output; ``netns`` is a path under /run/netns."""
    if netns is None:
        cmd = ["ip", "-j", *args]
    else:
        cmd = ["ip", "-n", os.path.basename(netns), "-j", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else []


def _nat_rules() -> str:
    out = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True,
                         check=False)
    return out.stdout


def _reservations(env: Env, name: str = "pccnet") -> list[str]:
    d = env.ipam_dir / name
    if not d.exists():
        return []
    return sorted(p.name for p in d.iterdir()
                  if p.name != "lock" and not p.name.startswith("last_reserved_ip"))


def _drop_masq(cid: str, name: str = "pccnet") -> None:
    """Remove what a leaking DEL left: POSTROUTING jumps and the chain of this container."""
    chain = chain_name(name, cid)
    for line in _nat_rules().splitlines():
        if line.startswith("-A POSTROUTING") and f"-j {chain}" in line:
            delete = "iptables -t nat " + line.replace("-A ", "-D ", 1)
            subprocess.run(["sh", "-c", delete], check=False, capture_output=True)
    subprocess.run(["iptables", "-t", "nat", "-F", chain], check=False, capture_output=True)
    subprocess.run(["iptables", "-t", "nat", "-X", chain], check=False, capture_output=True)


@pytest.fixture(params=FLAVORS)
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Env]:
    flavor: str = request.param
    token = secrets.token_hex(3)
    ns_name = f"pcc-{token}"
    bin_dirs = [REFERENCE_BIN]
    if flavor != "reference":
        ours = tmp_path / "bin"
        install(str(ours), drop_in=flavor == "dropin")
        bin_dirs = [str(ours), REFERENCE_BIN]
    subprocess.run(["ip", "netns", "add", ns_name], check=True)
    e = Env(flavor=flavor, netns=f"/run/netns/{ns_name}", bridge=f"pcc{flavor[:2]}{token}",
            subnet_octet=10 + FLAVORS.index(flavor) * 10 + secrets.randbelow(10),
            cid=f"pcc-{flavor}-{token}", tmp=tmp_path, bin_dirs=bin_dirs,
            in_process=flavor != "exec")
    try:
        yield e
    finally:
        subprocess.run(["ip", "netns", "del", ns_name], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", e.bridge], check=False, capture_output=True)
        _drop_masq(e.cid)


def _addresses(netns: str, ifname: str) -> list[str]:
    return [f"{a['local']}/{a['prefixlen']}" for link in _ip("addr", "show", "dev", ifname,
                                                               netns=netns)
            for a in link.get("addr_info", []) if a.get("family") == "inet"]


def test_add_check_del_lifecycle(env: Env) -> None:
    cni, rt, net = env.cni(), env.rt(), env.network()
    lo = loopback_network(env.types["loopback"])
    cni.add_network_list(lo, rt)
    result = cni.add_network_list(net, rt)

    # The result describes what is really there.
    eth0 = result.interfaces[result.ips[0].interface or 0]
    assert (eth0.name, eth0.sandbox) == ("eth0", env.netns)
    address = str(result.ips[0].address)
    assert address.startswith(f"10.91.{env.subnet_octet}.")
    assert _addresses(env.netns, "eth0") == [address]
    assert "UP" in _ip("link", "show", "lo", netns=env.netns)[0]["flags"]
    assert _ip("link", "show", env.bridge)
    assert chain_name("pccnet", env.cid) in _nat_rules()
    assert _reservations(env) == [address.split("/")[0]]
    ping = subprocess.run(["ping", "-c1", "-W2", address.split("/")[0]], capture_output=True,
                          check=False)
    assert ping.returncode == 0

    # The cache is libcni's file, and CHECK passes against it.
    cache_file = env.tmp / "cache" / "results" / f"pccnet-{env.cid}-eth0"
    cached = json.loads(cache_file.read_text())
    assert (cached["kind"], cached["containerId"], cached["ifName"], cached["networkName"]) == (
        "cniCacheV1", env.cid, "eth0", "pccnet")
    assert cached["cniArgs"] == [["IgnoreUnknown", "1"], ["K8S_POD_NAME", "pcc"]]
    assert cached["result"]["ips"][0]["address"] == address
    assert (env.tmp / "cache" / "results" / f"cni-loopback-{env.cid}-eth0").exists()
    cni.check_network_list(net, rt)

    # DEL, twice: everything is gone and the second one is a no-op.
    cni.del_network_list(net, rt)
    cni.del_network_list(net, rt)
    cni.del_network_list(lo, rt)
    cni.del_network_list(lo, rt)
    assert not _ip("link", "show", "eth0", netns=env.netns)
    assert _reservations(env) == []
    assert chain_name("pccnet", env.cid) not in _nat_rules()
    assert not cache_file.exists()


def test_check_fails_once_the_interface_is_removed(env: Env) -> None:
    cni, rt, net = env.cni(), env.rt(), env.network()
    cni.add_network_list(net, rt)
    cni.check_network_list(net, rt)
    subprocess.run(["ip", "-n", env.netns.rsplit("/", 1)[1], "link", "del", "eth0"], check=True)
    with pytest.raises(CNIError) as exc:
        cni.check_network_list(net, rt)
    assert 'failed (check)' in exc.value.msg
    cni.del_network_list(net, rt)


def test_check_fails_once_the_address_is_changed(env: Env) -> None:
    cni, rt, net = env.cni(), env.rt(), env.network()
    result = cni.add_network_list(net, rt)
    ns_name = env.netns.rsplit("/", 1)[1]
    subprocess.run(["ip", "-n", ns_name, "addr", "del", str(result.ips[0].address),
                    "dev", "eth0"], check=True)
    with pytest.raises(CNIError):
        cni.check_network_list(net, rt)
    cni.del_network_list(net, rt)


def test_del_after_the_netns_is_gone(env: Env) -> None:
    cni, rt, net = env.cni(), env.rt(), env.network()
    lo = loopback_network(env.types["loopback"])
    cni.add_network_list(lo, rt)
    cni.add_network_list(net, rt)
    subprocess.run(["ip", "netns", "del", env.netns.rsplit("/", 1)[1]], check=True)
    cni.del_network_list(net, rt)
    cni.del_network_list(net, rt)
    cni.del_network_list(lo, rt)
    assert _reservations(env) == []
    assert not (env.tmp / "cache" / "results" / f"pccnet-{env.cid}-eth0").exists()
    if env.flavor != "reference":  # the reference leaks its masquerade chain here
        assert chain_name("pccnet", env.cid) not in _nat_rules()


def test_del_with_empty_netns_after_it_is_gone(env: Env) -> None:
    cni, net = env.cni(), env.network()
    cni.add_network_list(net, env.rt())
    subprocess.run(["ip", "netns", "del", env.netns.rsplit("/", 1)[1]], check=True)
    cni.del_network_list(net, RuntimeConf(env.cid, "", "eth0"))
    assert _reservations(env) == []
    if env.flavor != "reference":
        assert chain_name("pccnet", env.cid) not in _nat_rules()


def test_failed_add_rolls_back_what_it_made(env: Env) -> None:
    failing = env.tmp / "failbin"
    failing.mkdir()
    script = failing / "pcc-fail"
    script.write_text('#!/bin/sh\ncat >/dev/null\n[ "$CNI_COMMAND" = ADD ] || exit 0\n'
                      'echo \'{"code": 11, "msg": "pcc-fail says later"}\'\nexit 1\n')
    script.chmod(0o755)
    env.bin_dirs.append(str(failing))
    cni, rt = env.cni(), env.rt()
    net = env.network(extra=[{"type": "pcc-fail"}])
    with pytest.raises(CNIError) as exc:
        cni.add_network_list(net, rt)
    assert exc.value.code == 11
    assert exc.value.msg == 'plugin type="pcc-fail" failed (add): pcc-fail says later'
    assert not _ip("link", "show", "eth0", netns=env.netns)
    assert _reservations(env) == []
    assert chain_name("pccnet", env.cid) not in _nat_rules()
    assert cni.get_cached_result(net, rt) is None
    bridge = _ip("link", "show", "master", env.bridge)
    assert bridge == []  # no veth left on the bridge


def test_failed_ipam_leaves_no_interface(env: Env) -> None:
    cni, rt = env.cni(), env.rt()
    net = env.network()
    net.plugins[0]["ipam"]["ranges"] = [[{"subnet": f"10.91.{env.subnet_octet}.0/30"}]]
    cni.add_network_list(net, rt)  # takes the only free address (.2)
    other = RuntimeConf(env.cid + "b", env.netns, "eth1")
    with pytest.raises(CNIError):
        cni.add_network_list(net, other)
    assert not _ip("link", "show", "eth1", netns=env.netns)
    assert len(_reservations(env)) == 1
    cni.del_network_list(net, rt)
    assert _reservations(env) == []


def test_0_3_1_list_gets_results_in_its_version(env: Env) -> None:
    cni, rt = env.cni(), env.rt()
    net = env.network(version="0.3.1", masq=False)
    result = cni.add_network_list(net, rt)
    assert result.cni_version == "0.3.1"
    cached = json.loads((env.tmp / "cache" / "results" / f"pccnet-{env.cid}-eth0").read_text())
    assert cached["result"]["cniVersion"] == "0.3.1"
    assert cached["result"]["ips"][0]["version"] == "4"
    cni.del_network_list(net, rt)
    assert _reservations(env) == []


@pytest.mark.parametrize("ipam_side", ["reference", "ours"])
def test_bridge_delegates_to_either_ipam(tmp_path: Path, ipam_side: str) -> None:
    """Our bridge with the reference host-local, and the reference bridge with ours."""
    token = secrets.token_hex(3)
    ns_name, bridge, cid = f"pcc-{token}", f"pccdg{token}", f"pcc-dg-{token}"
    ours = tmp_path / "bin"
    install(str(ours))
    bridge_type, ipam_type = (
        ("pycni-bridge", "host-local") if ipam_side == "reference"
        else ("bridge", "pycni-host-local"))
    doc = {"cniVersion": "1.0.0", "name": "pccnet", "plugins": [{
        "type": bridge_type, "bridge": bridge, "isGateway": True, "ipMasq": True,
        "ipam": {"type": ipam_type, "dataDir": str(tmp_path / "ipam"),
                 "ranges": [[{"subnet": "10.91.99.0/24"}]]}}]}
    net = conflist_from_bytes(json.dumps(doc).encode())
    cni = CNIConfig([str(ours), REFERENCE_BIN], cache_dir=str(tmp_path / "cache"))
    rt = RuntimeConf(cid, f"/run/netns/{ns_name}")
    subprocess.run(["ip", "netns", "add", ns_name], check=True)
    try:
        result = cni.add_network_list(net, rt)
        assert str(result.ips[0].address).startswith("10.91.99.")
        assert os.listdir(tmp_path / "ipam" / "pccnet")
        assert _addresses(rt.netns, "eth0") == [str(result.ips[0].address)]
        cni.del_network_list(net, rt)
        files = set(os.listdir(tmp_path / "ipam" / "pccnet"))
        assert {f for f in files if f != "lock" and not f.startswith("last_reserved")} == set()
    finally:
        subprocess.run(["ip", "netns", "del", ns_name], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], check=False, capture_output=True)
        _drop_masq(cid)
