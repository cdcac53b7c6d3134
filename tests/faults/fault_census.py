"""A census of the kernel and disk objects a node makes for its pods, to compare before and
after a run of faults: what is in the second and not in the first leaked.

Each entry is a sorted list of names, so a diff says exactly what is left: the node's
network namespace pins (``/run/netns/<its runtime's prefix>*``, and their nsfs mounts),
ports of the node's bridge, NAT and filter rules naming the node's pod subnet
(iptables-save and nft), the node's pod cgroups (``pod<uid>`` directories under
/sys/fs/cgroup, for the UIDs its pods had), mounts under the node's directory, runc state
dirs, libcni's cached results for the node's network, host-local IPAM reservations and the
processes living in those pod cgroups.

The census is the node's own, so it stays exact while other tests run their pods, labs and
links beside it (scripts/test.sh's parallel run): a namespace pin is named by the node's
runtime root, a pod cgroup by a UID the test saw. A host veth is not counted apart: the
node's are its bridge's ports while attached, and one detached lives only as long as its
peer's namespace, which is counted.
"""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
from collections.abc import Collection, Iterable
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CNI_RESULTS = Path("/var/lib/cni/results")
NETNS_DIR = Path("/run/netns")
POD_CGROUP = re.compile(r"^pod[0-9a-f_-]{36}$")


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _mounts() -> list[tuple[str, str]]:
    """(mount point, fs type) of this mount namespace."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            out.append((left.split()[4], right.split()[0]))
    return out


def pod_cgroups(uids: Collection[str] | None = None, root: Path = CGROUP_ROOT) -> list[str]:
    """The ``pod<uid>`` cgroup directories, relative to the cgroup root, in the unified
    tree and in each v1 hierarchy: those of ``uids`` (every one when None). Walks only the
    kubepods trees (the kubelet's), not the whole hierarchy."""
    wanted = None if uids is None else {u.replace("-", "_") for u in uids}
    found = []
    for top in [*root.glob("kubepods*"), *root.glob("*/kubepods*")]:
        for dirpath, dirnames, _ in os.walk(top):
            for d in dirnames:
                if POD_CGROUP.match(d) and (wanted is None
                                            or d[3:].replace("-", "_") in wanted):
                    found.append(str(Path(dirpath, d).relative_to(root)))
    return sorted(found)


def pod_cgroup_processes(uids: Collection[str] | None = None,
                         root: Path = CGROUP_ROOT) -> list[str]:
    """``<pid> <comm>`` of each process in a pod cgroup (of ``uids`` when given)."""
    procs = []
    for rel in pod_cgroups(uids, root):
        for dirpath, _, filenames in os.walk(root / rel):
            if "cgroup.procs" not in filenames:
                continue
            try:
                pids = Path(dirpath, "cgroup.procs").read_text().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    comm = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    comm = "?"
                procs.append(f"{pid} {comm}")
    return sorted(procs)


def rules_naming(subnet: str) -> list[str]:
    """iptables-save and nft lines naming an address of ``subnet`` (the NAT/filter rules
    the bridge plugin's ipMasq or a port map adds per pod)."""
    net = ipaddress.ip_network(subnet)
    prefix = str(net.network_address).rsplit(".", 1)[0] + "."
    lines = []
    for tool, text in (("iptables", _run(["iptables-save"])),
                       ("nft", _run(["nft", "list", "ruleset"]))):
        for line in text.splitlines():
            if prefix in line and not line.lstrip().startswith("#"):
                lines.append(f"{tool}: {line.strip()}")
    return sorted(lines)


def bridge_ports(bridge: str) -> list[str]:
    """The links enslaved to ``bridge`` (one per attached pod), read from sysfs."""
    brif = Path("/sys/class/net", bridge, "brif")
    return sorted(p.name for p in brif.iterdir()) if brif.is_dir() else []


def take(base: Path, bridge: str, subnet: str, network: str, ipam_dir: Path,
         runc_roots: Iterable[Path], netns_prefix: str,
         pod_uids: Collection[str]) -> dict[str, list[str]]:
    """The census of one node: ``base`` its directory, ``bridge`` its CNI bridge,
    ``subnet`` its pod subnet, ``network`` its CNI network name, ``netns_prefix`` its
    runtime's namespace pin prefix, ``pod_uids`` every UID its pods had."""
    mounts = _mounts()
    runc_state = sorted(
        f"{r.name}/{d.name}" for r in runc_roots if r.is_dir() for d in r.iterdir()
        if d.is_dir())
    pins = str(NETNS_DIR / netns_prefix)
    return {
        "netns": sorted(p.name for p in NETNS_DIR.glob(f"{netns_prefix}*")),
        "nsfs mounts": sorted(m for m, t in mounts if t == "nsfs" and (
            m.startswith((pins, str(base) + "/")))),
        "bridge ports": bridge_ports(bridge),
        "rules": rules_naming(subnet),
        "pod cgroups": pod_cgroups(pod_uids),
        "pod processes": pod_cgroup_processes(pod_uids),
        "mounts under the node": sorted(m for m, _ in mounts
                                        if m.startswith(str(base) + "/")),
        "runc state": runc_state,
        "cni results": sorted(p.name for p in CNI_RESULTS.glob(f"{network}-*")),
        "ipam reservations": sorted(p.name for p in ipam_dir.glob("*/*")
                                    if p.name[0].isdigit()),
    }


def leaked(before: dict[str, list[str]], after: dict[str, list[str]]) -> dict[str, list[str]]:
    """What ``after`` has that ``before`` had not, per kind (kinds with nothing omitted)."""
    out = {}
    for kind, names in after.items():
        extra = sorted(set(names) - set(before.get(kind, [])))
        if extra:
            out[kind] = extra
    return out
