"""The loopback plugin, and the masquerade backends on their own."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_harness import cni, drop_chain, ip_json, nat_rules, unique

from pycni.install import install
from pycni.masq import chain_name, comment
from pycni.masq.restore import RestoreBackend
from pycni.masq.select import get_backend, probe_iptables_variant

pytestmark = [pytest.mark.root, pytest.mark.netns]


@pytest.fixture
def bin_dir(tmp_path: Path) -> str:
    d = str(tmp_path / "bin")
    install(d)
    return d


LO_CONF = {"cniVersion": "1.0.0", "name": "pcklo", "type": "pycni-loopback"}


def lo_state(netns: str) -> tuple[bool, list[str]]:
    link = ip_json(netns, "addr", "show", "lo")[0]
    return "UP" in link["flags"], [f"{a['local']}/{a['prefixlen']}" for a in link["addr_info"]]


@pytest.mark.parametrize("mode", ["exec", "inproc"])
def test_loopback_add_check_del(netns: str, bin_dir: str, mode: str) -> None:
    assert lo_state(netns)[0] is False
    chk = cni("pycni-loopback", "CHECK", LO_CONF, cid="pck-lo", netns=netns, path=[bin_dir],
              mode=mode)
    assert chk.status != 0
    assert chk.out["msg"] == "loopback interface is down"
    r = cni("pycni-loopback", "ADD", LO_CONF, cid="pck-lo", netns=netns, path=[bin_dir],
            mode=mode)
    assert r.status == 0, r.raw
    up, addrs = lo_state(netns)
    assert up
    assert "127.0.0.1/8" in addrs
    assert r.out["interfaces"] == [{"name": "lo", "mac": "00:00:00:00:00:00", "sandbox": netns}]
    assert {"interface": 0, "address": "127.0.0.1/8"} in r.out["ips"]
    assert cni("pycni-loopback", "CHECK", LO_CONF, cid="pck-lo", netns=netns, path=[bin_dir],
               mode=mode).status == 0
    for _ in range(2):  # DEL twice
        d = cni("pycni-loopback", "DEL", LO_CONF, cid="pck-lo", netns=netns, path=[bin_dir],
                mode=mode)
        assert d.status == 0, d.raw
    assert lo_state(netns)[0] is False


def test_loopback_passes_a_prev_result_through(netns: str, bin_dir: str) -> None:
    prev = {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0"}],
            "ips": [{"address": "10.92.9.9/24", "interface": 0}]}
    r = cni("pycni-loopback", "ADD", dict(LO_CONF, prevResult=prev), cid="pck-lo", netns=netns,
            path=[bin_dir])
    assert r.status == 0, r.raw
    assert r.out["ips"] == prev["ips"]
    assert lo_state(netns)[0]


def test_loopback_del_with_the_netns_gone_and_add_with_a_bad_netns(bin_dir: str) -> None:
    gone = "/run/netns/pck-never-existed"
    d = cni("pycni-loopback", "DEL", LO_CONF, cid="pck-lo", netns=gone, path=[bin_dir])
    assert d.status == 0, d.raw
    a = cni("pycni-loopback", "ADD", LO_CONF, cid="pck-lo", netns=gone, path=[bin_dir])
    assert a.status != 0
    assert gone in a.out["msg"]
    not_ns = cni("pycni-loopback", "ADD", LO_CONF, cid="pck-lo", netns="/etc/hostname",
                 path=[bin_dir])
    assert not_ns.status != 0
    assert "not a network namespace" in not_ns.out["msg"]


def test_host_probe_picks_the_iptables_variant_in_use() -> None:
    version = subprocess.run(["iptables", "-V"], capture_output=True, text=True,
                             check=True).stdout
    expected = "legacy" if "legacy" in version else "nft"
    assert probe_iptables_variant() == expected
    if expected == "nft":
        assert get_backend().name == "iptables-nft-restore"


@pytest.fixture
def masq_names() -> Iterator[tuple[str, str, str, str]]:
    net, cid = unique("mq"), unique("c")
    try:
        yield net, cid, chain_name(net, cid), comment(net, cid)
    finally:
        drop_chain(net, cid)


def test_restore_backend_setup_teardown_and_tolerance(masq_names: tuple[str, ...]) -> None:
    net, cid, chain, cmt = masq_names
    backend = RestoreBackend(probe_iptables_variant())
    addr = ipaddress.ip_interface("10.92.77.5/24")
    backend.setup([addr], chain, cmt)
    mine = [r for r in nat_rules() if chain in r]
    assert len(mine) == 4
    backend.setup([addr], chain, cmt)  # a repeat refills the chain instead of doubling it
    assert len([r for r in nat_rules() if f"-A {chain} " in r]) == 2
    backend.teardown([addr], chain, cmt)
    assert [r for r in nat_rules() if chain in r] == []
    backend.teardown([addr], chain, cmt)  # already gone: fine
    backend.setup([addr], chain, cmt)
    assert cid in backend.containers(net)
    backend.teardown(None, chain, cmt)  # addresses unknown: jumps found by chain name
    assert cid not in backend.containers(net)
    assert [r for r in nat_rules() if chain in r] == []


def test_python_iptables_backend_in_a_throwaway_netns(netns: str) -> None:
    """python-iptables drives the legacy tables; run it in its own netns so the legacy
    tables it instantiates die with the namespace instead of lingering on the host."""
    script = textwrap.dedent("""
        import ipaddress, subprocess
        from pycni.masq import chain_name, comment
        from pycni.masq.iptc_legacy import IptcBackend
        b = IptcBackend()
        a = ipaddress.ip_interface("10.92.78.5/24")
        c, cm = chain_name("pcknet", "cid"), comment("pcknet", "cid")
        b.setup([a], c, cm)
        print(subprocess.run(["iptables-legacy", "-t", "nat", "-S"], capture_output=True,
                             text=True).stdout)
        print("containers:", sorted(b.containers("pcknet")), sorted(b.containers("other")))
        print("---")
        b.teardown([a], c, cm)
        print(subprocess.run(["iptables-legacy", "-t", "nat", "-S"], capture_output=True,
                             text=True).stdout)
    """)
    proc = subprocess.run(["ip", "netns", "exec", os.path.basename(netns), sys.executable,
                           "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    before, after = proc.stdout.split("---")
    chain = chain_name("pcknet", "cid")
    cmt = '"name: \\"pcknet\\" id: \\"cid\\""'
    assert f"-A POSTROUTING -s 10.92.78.5/32 -m comment --comment {cmt} -j {chain}" in before
    assert f"-A {chain} -d 10.92.78.0/24 -m comment --comment {cmt} -j ACCEPT" in before
    assert f"-A {chain} ! -d 224.0.0.0/4 -m comment --comment {cmt} -j MASQUERADE" in before
    assert "containers: ['cid'] []" in before
    assert chain not in after


def test_backend_choice_per_host_and_call_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    from pycni.invoke import in_process_enabled

    monkeypatch.setenv("PYCNI_MASQ_BACKEND", "legacy")
    assert get_backend().name == "iptables-legacy-restore"  # exec'd: no 300 ms iptc import
    token = in_process_enabled.set(True)
    try:
        assert get_backend().name == "python-iptables"
    finally:
        in_process_enabled.reset(token)
    monkeypatch.setenv("PYCNI_MASQ_BACKEND", "nft")
    assert get_backend().name == "iptables-nft-restore"


def test_legacy_restore_backend_in_a_throwaway_netns(netns: str) -> None:
    script = textwrap.dedent("""
        import ipaddress, subprocess
        from pycni.masq import chain_name, comment
        from pycni.masq.restore import RestoreBackend
        b = RestoreBackend("legacy")
        a = ipaddress.ip_interface("10.92.79.5/24")
        c, cm = chain_name("pcknet", "cid"), comment("pcknet", "cid")
        b.setup([a], c, cm)
        print(subprocess.run(["iptables-legacy", "-t", "nat", "-S"], capture_output=True,
                             text=True).stdout)
        print("containers:", sorted(b.containers("pcknet")))
        print("---")
        b.teardown([a], c, cm)
        b.teardown([a], c, cm)
        print(subprocess.run(["iptables-legacy", "-t", "nat", "-S"], capture_output=True,
                             text=True).stdout)
    """)
    proc = subprocess.run(["ip", "netns", "exec", os.path.basename(netns), sys.executable,
                           "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    before, after = proc.stdout.split("---")
    chain = chain_name("pcknet", "cid")
    assert "-A POSTROUTING -s 10.92.79.5/32 -m comment" in before
    assert f"-A {chain} ! -d 224.0.0.0/4 -m comment" in before
    assert "containers: ['cid']" in before
    assert chain not in after
