"""Dual-stack bridge, ours against the reference, inside a throwaway "host" netns.

An IPv6 gateway makes the plugin turn on ``net.ipv6.conf.all.forwarding``, which on
the real host would change how its uplink treats router advertisements. So the
plugins run in an outer netns that plays the host: the bridge, the forwarding
sysctls and the ip6tables rules all live and die there.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import REFERENCE_BIN

from pycni.install import install

pytestmark = [pytest.mark.root, pytest.mark.netns,
              pytest.mark.skipif(not os.path.exists(os.path.join(REFERENCE_BIN, "bridge")),
                                 reason="reference plugins not installed")]


@pytest.fixture
def outer(netns_factory: Callable[[str], str]) -> str:
    """The namespace both plugin flavours run in, by name (``ip netns exec``)."""
    return os.path.basename(netns_factory("6o"))


def in_outer(outer: str, *cmd: str, stdin: bytes | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["ip", "netns", "exec", outer, *cmd], input=stdin, env=env,
                          capture_output=True, timeout=60, check=False)


def run_flavor(outer: str, tmp: Path, flavor: str,
               make_netns: Callable[[str], str]) -> dict[str, Any]:
    if flavor == "ours":
        bin_dir = str(tmp / "bin")
        install(bin_dir)
        bridge_type, ipam_type = "pycni-bridge", "pycni-host-local"
    else:
        bin_dir, bridge_type, ipam_type = REFERENCE_BIN, "bridge", "host-local"
    conf = {"cniVersion": "1.0.0", "name": "pck6net", "type": bridge_type, "bridge": "pck6br",
            "isDefaultGateway": True, "ipMasq": True,
            "ipam": {"type": ipam_type, "dataDir": str(tmp / f"data-{flavor}"),
                     "ranges": [[{"subnet": "10.92.106.0/24"}], [{"subnet": "fd92:106::/64"}]]}}
    cont = make_netns("6c")
    c = os.path.basename(cont)
    env = dict(os.environ, CNI_CONTAINERID="pck6-container", CNI_NETNS=cont,
               CNI_IFNAME="eth0", CNI_PATH=bin_dir)
    exe = os.path.join(bin_dir, bridge_type)
    try:
        add = in_outer(outer, exe, stdin=json.dumps(conf).encode(),
                       env=dict(env, CNI_COMMAND="ADD"))
        assert add.returncode == 0, (flavor, add.stdout, add.stderr)
        res = json.loads(add.stdout)
        seen: dict[str, Any] = {"ips": res["ips"], "routes": res["routes"]}
        addr = json.loads(subprocess.run(["ip", "-n", c, "-j", "addr", "show", "eth0"],
                                         capture_output=True, check=True).stdout)[0]
        seen["addrs"] = sorted(f"{a['local']}/{a['prefixlen']}" for a in addr["addr_info"]
                               if a.get("scope") == "global")
        seen["routes6"] = sorted((r["dst"], r.get("gateway", "")) for r in json.loads(
            subprocess.run(["ip", "-n", c, "-6", "-j", "route", "show"], capture_output=True,
                           check=True).stdout) if not r["dst"].startswith("fe80"))
        nat6 = in_outer(outer, "ip6tables", "-t", "nat", "-S").stdout.decode().splitlines()
        seen["nat6"] = sorted(r for r in nat6 if "CNI-" in r)
        seen["forwarding6"] = in_outer(outer, "sysctl", "-n",
                                       "net.ipv6.conf.all.forwarding").stdout.strip()
        deadline = time.monotonic() + 5  # the bridge's address may still be tentative (DAD)
        while True:
            ok = subprocess.run(["ip", "netns", "exec", c, "ping", "-6", "-c", "1", "-W", "1",
                                 "fd92:106::1"], capture_output=True, check=False).returncode == 0
            if ok or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        seen["ping6_gateway"] = ok
        dele = in_outer(outer, exe, stdin=json.dumps(dict(conf, prevResult=res)).encode(),
                        env=dict(env, CNI_COMMAND="DEL"))
        assert dele.returncode == 0, (flavor, dele.stdout, dele.stderr)
        nat6 = in_outer(outer, "ip6tables", "-t", "nat", "-S").stdout.decode().splitlines()
        seen["nat6_after_del"] = [r for r in nat6 if "CNI-" in r]
        return seen
    finally:
        in_outer(outer, "ip", "link", "del", "pck6br")


def test_dual_stack_matches_the_reference(
    outer: str, tmp_path: Path, netns_factory: Callable[[str], str]
) -> None:
    ref = run_flavor(outer, tmp_path, "reference", netns_factory)
    ours = run_flavor(outer, tmp_path, "ours", netns_factory)
    assert ours == ref
    assert ref["addrs"] == ["10.92.106.2/24", "fd92:106::2/64"]
    assert ("default", "fd92:106::1") in ref["routes6"]
    assert any("! -d ff00::/8" in r and "MASQUERADE" in r for r in ref["nat6"])
    assert ref["forwarding6"] == b"1"
    assert ref["ping6_gateway"]
    assert ref["nat6_after_del"] == []
