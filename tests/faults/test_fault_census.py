"""The census names what a run left: what is in the second census and not the first, per
kind; and it finds pod cgroups in the unified tree and in each v1 hierarchy, the node's own
only when given its pods' UIDs (so another test's pods beside it are not its leaks)."""

from __future__ import annotations

from pathlib import Path

import fault_census


def test_leaked_names_only_what_is_new() -> None:
    before = {"netns": ["cni-a"], "bridge ports": [], "rules": ["x"]}
    after = {"netns": ["cni-a", "cni-b"], "bridge ports": ["veth1"], "rules": []}
    assert fault_census.leaked(before, after) == {"netns": ["cni-b"],
                                                  "bridge ports": ["veth1"]}
    assert fault_census.leaked(after, after) == {}


def test_pod_cgroups_in_v1_hierarchies_and_the_unified_tree(tmp_path: Path) -> None:
    uid = "0f0e0d0c-0b0a-0908-0706-050403020100"
    for rel in (f"memory/kubepods/burstable/pod{uid}", f"pids/kubepods/pod{uid}",
                f"kubepods/besteffort/pod{uid}", "memory/kubepods/burstable/other",
                f"system.slice/pod{uid}"):
        (tmp_path / rel).mkdir(parents=True)
    assert fault_census.pod_cgroups(root=tmp_path) == sorted([
        f"kubepods/besteffort/pod{uid}", f"memory/kubepods/burstable/pod{uid}",
        f"pids/kubepods/pod{uid}"])


def test_pod_cgroups_of_the_nodes_pods_only(tmp_path: Path) -> None:
    ours, theirs = "0f0e0d0c-0b0a-0908-0706-050403020100", "1f1e1d1c-1b1a-1918-1716-151413121110"
    for rel in (f"kubepods/besteffort/pod{ours}", f"kubepods/besteffort/pod{theirs}",
                # the systemd driver's spelling of a UID
                f"memory/kubepods/pod{ours.replace('-', '_')}"):
        (tmp_path / rel).mkdir(parents=True)
    assert fault_census.pod_cgroups({ours}, tmp_path) == sorted([
        f"kubepods/besteffort/pod{ours}", f"memory/kubepods/pod{ours.replace('-', '_')}"])
    assert fault_census.pod_cgroups(set(), tmp_path) == []
