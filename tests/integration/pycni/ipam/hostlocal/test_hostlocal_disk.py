"""host-local against the reference host-local on one data dir: either takes over the other's.

No netns needed (host-local only touches files), so no root either; the reference
binary comes from the containernetworking-plugins package.
"""

from __future__ import annotations

import concurrent.futures
import os
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import REFERENCE_BIN, cni

from pycni.install import install

REFERENCE = os.path.join(REFERENCE_BIN, "host-local")
pytestmark = pytest.mark.skipif(not os.path.exists(REFERENCE),
                                reason="reference host-local not installed")

SUBNET = "10.92.240.0/24"


@pytest.fixture
def bin_dir(tmp_path: Path) -> str:
    d = str(tmp_path / "bin")
    install(d)
    os.symlink(REFERENCE, os.path.join(d, "host-local"))
    return d


def conf(tmp_path: Path, **ipam: Any) -> dict[str, Any]:
    body = {"type": "host-local", "ranges": [[{"subnet": SUBNET}]],
            "dataDir": str(tmp_path / "data")}
    body.update(ipam)
    return {"cniVersion": "1.0.0", "name": "pckhl", "type": "bridge", "ipam": body}


def call(which: str, command: str, c: dict[str, Any], cid: str, bin_dir: str,
         ifname: str = "eth0", **kw: Any) -> Any:
    plugin = "pycni-host-local" if which == "ours" else "host-local"
    return cni(plugin, command, c, cid=cid, netns="/run/netns/pck-unused", path=[bin_dir],
               ifname=ifname, **kw)


def files(tmp_path: Path) -> dict[str, bytes]:
    d = tmp_path / "data" / "pckhl"
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())} if d.exists() else {}


@pytest.mark.parametrize(("first", "second"), [("ours", "ref"), ("ref", "ours")])
def test_allocate_with_one_release_with_the_other(tmp_path: Path, bin_dir: str, first: str,
                                                  second: str) -> None:
    c = conf(tmp_path)
    r = call(first, "ADD", c, "pck-a", bin_dir)
    assert r.status == 0, r.raw
    assert r.out["ips"][0]["address"] == "10.92.240.2/24"
    assert r.out["ips"][0]["gateway"] == "10.92.240.1"
    on_disk = files(tmp_path)
    assert on_disk["10.92.240.2"] == b"pck-a\r\neth0"
    assert on_disk["last_reserved_ip.0"] == b"10.92.240.2"
    assert "lock" in on_disk
    assert call(second, "CHECK", c, "pck-a", bin_dir).status == 0
    # the other one continues round-robin after the first one's last reservation
    r2 = call(second, "ADD", c, "pck-b", bin_dir)
    assert r2.status == 0, r2.raw
    assert r2.out["ips"][0]["address"] == "10.92.240.3/24"
    # and refuses a duplicate allocation it did not make
    dup = call(second, "ADD", c, "pck-a", bin_dir)
    assert dup.status != 0
    assert "duplicate allocation" in dup.out["msg"]
    assert call(second, "DEL", c, "pck-a", bin_dir).status == 0
    assert call(first, "DEL", c, "pck-b", bin_dir).status == 0
    assert set(files(tmp_path)) == {"lock", "last_reserved_ip.0"}
    assert call(first, "CHECK", c, "pck-a", bin_dir).status != 0


def test_same_bytes_as_the_reference(tmp_path: Path, bin_dir: str) -> None:
    ours, ref = tmp_path / "ours", tmp_path / "ref"
    ipam = {"ranges": [[{"subnet": SUBNET, "rangeStart": "10.92.240.50",
                         "rangeEnd": "10.92.240.52"}], [{"subnet": "10.92.241.0/24"}]]}
    for which, root in (("ours", ours), ("ref", ref)):
        c = conf(root, **ipam)
        for i, cid in enumerate(("pck-x", "pck-y")):
            r = call(which, "ADD", c, cid, bin_dir, ifname=f"net{i}")
            assert r.status == 0, r.raw
        assert call(which, "DEL", c, "pck-x", bin_dir, ifname="net0").status == 0
        r = call(which, "ADD", c, "pck-z", bin_dir)
        assert r.status == 0, r.raw
    assert files(ours) == files(ref)
    assert len(files(ours)) == 7  # 2 addresses x 2 containers, 2 last_reserved_ip, lock


def test_results_and_errors_match_the_reference(tmp_path: Path, bin_dir: str) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("# comment\nnameserver 10.92.0.53\nnameserver 10.92.0.54\n"
                      "domain pck.example\nsearch a.pck b.pck\noptions ndots:2 rotate\n")
    cases = [
        ({"ranges": [[{"subnet": SUBNET}]], "resolvConf": str(resolv)}, {}),
        ({"routes": [{"dst": "0.0.0.0/0"}, {"dst": "10.92.0.0/16", "gw": "10.92.240.254"}],
          "ranges": [[{"subnet": SUBNET, "gateway": "10.92.240.254"}]]}, {}),
        ({"ranges": [[{"subnet": SUBNET}]]}, {"CNI_ARGS": "IP=10.92.240.77"}),
        ({"subnet": SUBNET, "ranges": None}, {}),
    ]
    for i, (ipam, env) in enumerate(cases):
        outs = []
        for which in ("ours", "ref"):
            c = conf(tmp_path / f"{which}{i}", **ipam)
            r = call(which, "ADD", c, "pck-r", bin_dir, env_extra=env)
            assert r.status == 0, r.raw
            outs.append(r.out)
        assert outs[0] == outs[1], i


@pytest.mark.parametrize("ipam", [
    {"ranges": [[{"subnet": "10.92.240.0/31"}]]},
    {"ranges": [[{"subnet": SUBNET, "rangeStart": "10.92.99.5"}]]},
    {"ranges": []},
], ids=["too-small", "start-outside", "no-ranges"])
def test_bad_ranges_fail_in_both(tmp_path: Path, bin_dir: str, ipam: dict[str, Any]) -> None:
    for which in ("ours", "ref"):
        r = call(which, "ADD", conf(tmp_path / which, **ipam), "pck-bad", bin_dir)
        assert r.status != 0, (which, r.raw)
        assert r.out["msg"]
        assert not any(k[0].isdigit() for k in files(tmp_path / which))


def test_gateway_outside_the_subnet_is_rejected(tmp_path: Path, bin_dir: str) -> None:
    """Stricter than 1.1.1, which hands out .1 with a gateway it cannot reach (later
    reference versions reject it too, with this message)."""
    c = conf(tmp_path, ranges=[[{"subnet": SUBNET, "gateway": "10.92.99.1"}]])
    r = call("ours", "ADD", c, "pck-gw", bin_dir)
    assert r.status != 0
    assert "10.92.99.1 not in network 10.92.240.0/24" in r.out["msg"]
    assert files(tmp_path) == {}


def test_exhaustion_and_concurrency_with_both_implementations(tmp_path: Path,
                                                              bin_dir: str) -> None:
    c = conf(tmp_path, ranges=[[{"subnet": SUBNET, "rangeStart": "10.92.240.10",
                                 "rangeEnd": "10.92.240.21"}]])
    jobs = [("ours" if i % 2 else "ref", f"pck-{i}") for i in range(12)]
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        results = list(pool.map(lambda j: call(j[0], "ADD", c, j[1], bin_dir), jobs))
    assert [r.status for r in results] == [0] * 12, [r.raw for r in results]
    assert len({r.out["ips"][0]["address"] for r in results}) == 12
    for which in ("ours", "ref"):
        full = call(which, "ADD", c, f"pck-full-{which}", bin_dir)
        assert full.status != 0
        assert "no IP addresses available" in full.out["msg"]
    assert len([k for k in files(tmp_path) if k[0].isdigit()]) == 12
