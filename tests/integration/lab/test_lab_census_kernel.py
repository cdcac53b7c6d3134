"""The soak's census against the real kernel (issue 29 item 2): one object of every
category made by hand in a lab-shaped layout (a node namespace named as a lab's, its
directories under a temporary state root) shows in the census as that category's
difference, and the census is back to equal once they are removed."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pycni import ns
from pykubelet.lab import census
from pykubelet.lab.layout import LabLayout

pytestmark = [pytest.mark.root, pytest.mark.exclusive]  # a host-wide census

LAB = "soakcns"


def sh(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, text=True)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[LabLayout]:
    layout = LabLayout(LAB, 1, 0, tmp_path / "state", tmp_path / "run")
    node = layout.node(1)
    ns.create_netns(node.netns)
    try:
        yield layout
    finally:
        with contextlib.suppress(OSError, ValueError):
            ns.delete_netns(str(node.netns_path))


def test_every_category_is_seen_and_comes_back(lab: LabLayout) -> None:
    node = lab.node(1)
    before = census.take(lab)
    assert before.objects["netns"] == {node.netns: 1}

    cgroup = census.CGROUP_ROOT / "pids" / "kubepods" / f"{LAB}-test"
    cache = census.CNI_RESULTS / f"{node.network_name}-0123456789ab-eth0"
    mount = lab.state_dir / "mnt"
    sleeper: subprocess.Popen[bytes] | None = None
    try:
        sh("ip", "-n", node.netns, "link", "add", "cnstbr", "type", "bridge")
        sh("ip", "-n", node.netns, "link", "add", "cnsta", "type", "veth", "peer", "name",
           "cnstb")
        sh("ip", "-n", node.netns, "link", "set", "cnsta", "master", "cnstbr")
        sh("ip", "netns", "exec", node.netns, "iptables", "-t", "nat", "-A", "POSTROUTING",
           "-s", "10.244.1.5/32", "-j", "MASQUERADE")
        sh("ip", "netns", "exec", node.netns, "nft", "add", "table", "ip", "soakcns")
        (node.cni_data_dir / "net").mkdir(parents=True)
        (node.cni_data_dir / "net" / "10.244.1.5").write_text("cid\neth0")
        (node.root_dir / "runc" / "cid").mkdir(parents=True)
        cgroup.mkdir()
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text("{}")
        mount.mkdir(parents=True)
        sh("mount", "-t", "tmpfs", "soakcns", str(mount))
        sleeper = subprocess.Popen(["ip", "netns", "exec", node.netns, "sleep", "300"])
        time.sleep(census.MIN_PROCESS_AGE + 0.5)

        during = census.take(lab)
        diffs = {d.category: d for d in census.diff(before, during)}
        assert set(diffs) == set(census.CATEGORIES) - {"netns"}, census.table(before, during)
        assert all(not d.gone for d in diffs.values())
        assert sorted(diffs["veths"].new) == ["node1:cnsta", "node1:cnstb"]
        assert diffs["bridge ports"].new == ["node1:cnsta@cnstbr"]
        assert any("MASQUERADE" in r for r in diffs["iptables rules"].new)
        assert "node1:table ip soakcns" in diffs["nft rules"].new
        assert diffs["IPAM files"].new == ["node1:net/10.244.1.5"]
        assert diffs["runc state"].new == ["node1:cid"]
        assert diffs["cgroups"].new == [f"pids/kubepods/{LAB}-test"]
        assert diffs["CNI cache"].new == [cache.name]
        assert diffs["mounts"].new == [str(mount)]
        assert diffs["processes"].new == [f"{sleeper.pid} sleep"]
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        subprocess.run(["umount", str(mount)], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            cgroup.rmdir()
        with contextlib.suppress(OSError):
            cache.unlink()
        for argv in (["ip", "-n", node.netns, "link", "del", "cnsta"],
                     ["ip", "-n", node.netns, "link", "del", "cnstbr"],
                     ["ip", "netns", "exec", node.netns, "iptables", "-t", "nat", "-D",
                      "POSTROUTING", "-s", "10.244.1.5/32", "-j", "MASQUERADE"],
                     ["ip", "netns", "exec", node.netns, "nft", "delete", "table", "ip",
                      "soakcns"],
                     # iptables made the nat table and its built-in chains: a census
                     # difference of their own
                     ["ip", "netns", "exec", node.netns, "nft", "delete", "table", "ip",
                      "nat"]):
            subprocess.run(argv, capture_output=True, check=False)
        shutil.rmtree(node.cni_data_dir, ignore_errors=True)
        shutil.rmtree(node.root_dir / "runc", ignore_errors=True)

    after = census.take(lab)
    assert census.diff(before, after) == [], census.table(before, after)
