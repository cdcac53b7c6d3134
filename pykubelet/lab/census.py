"""A census of a lab's kernel objects, so a soak can say nothing leaked (issue 29 item 2).

Each category is a multiset of identities: names where objects have stable names (network
namespaces, links, mount points, cgroup paths, files, runc container ids), the rule text
where they are rules (iptables-save and nft lines, counters and handles removed, so two
censuses of the same rules compare equal), and ``pid name`` for processes (a daemon that
restarted is a difference too). Two censuses taken with the same workload present are
equal; whatever one has that the other lacks is listed by :func:`diff`.

The scope is the lab: its node namespaces and what is inside them (veths, bridge ports,
iptables and nft rules), the runtimes' pod namespace pins, the mounts under the lab's
directories and pins, each node's host-local IPAM directory and runc state, the libcni
cache entries of the nodes' networks and pins (teardown's own rules for what is a lab's),
and every process in those namespaces or naming a node's directory. Pod cgroups are named
by pod UID (``kubepods[/<qos>]/pod<uid>``) and container cgroups by container ID under
the host's ``kubepods`` and ``pykubelet`` trees, which every pykubelet on the host shares:
a :class:`CgroupScope` (the UIDs and container IDs the lab's pods had, which the soak
collects as it goes, and the nodes' own parents) keeps the lab's part only, so a census
stays exact while other tests run pods beside the lab. Without one the trees count whole.

Processes younger than ``MIN_PROCESS_AGE`` are left out: an ``iptables-restore`` or a
``runc state`` the agents run for a moment is no resident of the lab.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from pykubelet.lab.layout import NETNS_DIR, LabLayout, NodeLayout

CATEGORIES = ("netns", "veths", "bridge ports", "mounts", "iptables rules", "nft rules",
              "cgroups", "IPAM files", "runc state", "CNI cache", "processes")
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_TREES = ("kubepods", "pykubelet")  # the pod and container parents every node uses
# Every node's own parents: kubelet's QoS cgroups and the runtime's default parent (shared
# by every node on the host, and kept while any lives: teardown leaves them).
NODE_CGROUP_PARENTS = ("kubepods", "kubepods/burstable", "kubepods/besteffort", "pykubelet")
CNI_RESULTS = Path("/var/lib/cni/results")
MOUNTINFO = Path("/proc/self/mountinfo")
MIN_PROCESS_AGE = 3.0  # seconds

Runner = Callable[[list[str]], str]


def run_command(argv: list[str]) -> str:
    """The command's stdout; "" when it fails (a namespace gone between two reads)."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return res.stdout if res.returncode == 0 else ""


@dataclass
class Census:
    """category -> multiset of identities."""

    objects: dict[str, Counter[str]] = field(
        default_factory=lambda: {c: Counter() for c in CATEGORIES})

    def add(self, category: str, items: Iterable[str]) -> None:
        self.objects[category].update(items)

    def count(self, category: str) -> int:
        return sum(self.objects[category].values())


@dataclass(frozen=True)
class Difference:
    """What one category gained (``new``) and lost (``gone``) from before to after."""

    category: str
    new: list[str]
    gone: list[str]


# ---------------------------------------------------------------------- parsers (pure)
def parse_links(prefix: str, ip_json: str) -> tuple[list[str], list[str]]:
    """(veths, bridge ports) from ``ip -j -d link show``: ``prefix:name`` and
    ``prefix:name@master``."""
    try:
        links = json.loads(ip_json or "[]")
    except ValueError:
        return [], []
    veths, ports = [], []
    for link in links if isinstance(links, list) else []:
        name = link.get("ifname", "?")
        kind = ((link.get("linkinfo") or {}).get("info_kind")) or ""
        if kind == "veth":
            veths.append(f"{prefix}:{name}")
        if link.get("master"):
            ports.append(f"{prefix}:{name}@{link['master']}")
    return veths, ports


_CHAIN_COUNTERS = re.compile(r"\s*\[\d+:\d+\]\s*$")


def normalize_iptables(prefix: str, save: str) -> list[str]:
    """The rules and chains of ``iptables-save`` output, per table, without counters."""
    out: list[str] = []
    table = ""
    for raw in save.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line == "COMMIT":
            continue
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":"):
            out.append(f"{prefix}:{table} {_CHAIN_COUNTERS.sub('', line)}")
        else:
            out.append(f"{prefix}:{table} {line}")
    return out


_NFT_VOLATILE = [
    (re.compile(r"\s*# handle \d+"), ""),
    (re.compile(r"counter packets \d+ bytes \d+"), "counter"),
    (re.compile(r"\s+expires \S+"), ""),
]


def normalize_nft(prefix: str, ruleset: str) -> list[str]:
    """Each line of ``nft list ruleset`` inside a table, named by its table and chain (or
    set/map), handles and counters removed."""
    out: list[str] = []
    table, inner = "", ""
    for raw in ruleset.splitlines():
        line = raw.strip()
        for pattern, repl in _NFT_VOLATILE:
            line = pattern.sub(repl, line)
        line = line.strip()
        if not line:
            continue
        if line.startswith("table ") and line.endswith("{"):
            table, inner = line[6:-1].strip(), ""
            out.append(f"{prefix}:table {table}")
        elif re.match(r"(chain|set|map|flowtable) \S+ \{$", line):
            inner = line[:-1].strip()
            out.append(f"{prefix}:{table}/{inner}")
        elif line == "}":
            if inner:
                inner = ""
            else:
                table = ""
        else:
            out.append(f"{prefix}:{table}/{inner}: {line}")
    return out


def mounts_under(mountinfo: str, prefixes: list[str]) -> list[str]:
    """Mount points in ``mountinfo`` text at or below one of ``prefixes``."""
    out = []
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) > 4:
            mp = parts[4].replace("\\040", " ")
            if any(mp == p.rstrip("/") or mp.startswith(p.rstrip("/") + "/") for p in prefixes):
                out.append(mp)
    return out


def diff(before: Census, after: Census) -> list[Difference]:
    """The categories whose multisets differ, with what came and went."""
    out = []
    for cat in CATEGORIES:
        b, a = before.objects[cat], after.objects[cat]
        new, gone = sorted((a - b).elements()), sorted((b - a).elements())
        if new or gone:
            out.append(Difference(cat, new, gone))
    return out


def table(before: Census, after: Census, limit: int = 5) -> str:
    """The census as a table (category, before, after, verdict), then up to ``limit`` of
    each difference's objects."""
    diffs = {d.category: d for d in diff(before, after)}
    width = max(len(c) for c in CATEGORIES)
    lines = [f"{'kernel object':<{width}}  {'before':>7}  {'after':>7}  same"]
    for cat in CATEGORIES:
        same = "yes" if cat not in diffs else "NO"
        lines.append(f"{cat:<{width}}  {before.count(cat):>7}  {after.count(cat):>7}  {same}")
    for d in diffs.values():
        for sign, items in (("+", d.new), ("-", d.gone)):
            for item in items[:limit]:
                lines.append(f"  {sign} {d.category}: {item}")
            if len(items) > limit:
                lines.append(f"  {sign} {d.category}: ... {len(items) - limit} more")
    return "\n".join(lines)


# ---------------------------------------------------------------------- collectors
def pod_pin_prefixes(lab: LabLayout) -> list[str]:
    """The /run/netns name prefix of each node runtime's pod namespace pins."""
    from pykubelet.runtime.service import default_netns_prefix

    return [default_netns_prefix(n.root_dir) for n in lab.node_layouts()]


def netns_names(lab: LabLayout, netns_dir: Path = NETNS_DIR) -> list[str]:
    """The lab's node namespaces and its runtimes' pod pins."""
    if not netns_dir.is_dir():
        return []
    ours = (f"pykube-{lab.name}-", *pod_pin_prefixes(lab))
    return [n for n in os.listdir(netns_dir) if n.startswith(ours)]


def files_under(root: Path, label: str) -> list[str]:
    """``label:relative/path`` of every file below ``root``."""
    if not root.is_dir():
        return []
    return [f"{label}:{p.relative_to(root)}" for p in root.rglob("*") if not p.is_dir()]


def children(root: Path, label: str) -> list[str]:
    if not root.is_dir():
        return []
    return [f"{label}:{n}" for n in os.listdir(root)]


@dataclass
class CgroupScope:
    """Which cgroups of the host's shared pod and container trees are one lab's: those
    naming one of its pods (``pod<uid>``) or containers (the container ID) at any depth,
    and its nodes' own parents (paths relative to a hierarchy)."""

    pod_uids: set[str] = field(default_factory=set)
    container_ids: set[str] = field(default_factory=set)
    parents: set[str] = field(default_factory=lambda: set(NODE_CGROUP_PARENTS))

    def update(self, other: CgroupScope) -> None:
        self.pod_uids |= other.pod_uids
        self.container_ids |= other.container_ids
        self.parents |= other.parents

    def see_pod(self, pod: dict[str, object]) -> None:
        """Record a pod object's UID and its containers' IDs (``runtime://<id>``)."""
        meta = pod.get("metadata")
        if isinstance(meta, dict) and meta.get("uid"):
            self.pod_uids.add(str(meta["uid"]))
        status = pod.get("status")
        if not isinstance(status, dict):
            return
        for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
            for cs in status.get(key) or []:
                if isinstance(cs, dict) and cs.get("containerID"):
                    self.container_ids.add(str(cs["containerID"]).split("://", 1)[-1])

    def owns(self, rel: str) -> bool:
        """Whether the cgroup at ``rel`` (below a hierarchy's root) is the lab's."""
        rel = rel.strip("/")
        if rel in self.parents:
            return True
        return any((part.startswith("pod") and part[3:] in self.pod_uids)
                   or part in self.container_ids for part in rel.split("/"))


def node_cgroup_scope(lab: LabLayout) -> CgroupScope:
    """The pods and containers the lab's nodes hold now, from their own directories: pod
    log directories (``<ns>_<name>_<uid>``), sandbox checkpoints' cgroup parents and the
    runtime's container directories (teardown.remove_cgroups' sources)."""
    from pykubelet.lab.teardown import _pod_uids, _sandbox_cgroup_parents

    scope = CgroupScope()
    for node in lab.node_layouts():
        scope.pod_uids.update(_pod_uids(node.pod_logs_dir))
        for parent in _sandbox_cgroup_parents(node.root_dir):
            last = parent.rstrip("/").rsplit("/", 1)[-1]
            if last.startswith("pod"):
                scope.pod_uids.add(last[3:])
        containers = node.root_dir / "containers"
        if containers.is_dir():
            scope.container_ids.update(os.listdir(containers))
    return scope


def cgroup_dirs(cgroup_root: Path = CGROUP_ROOT, scope: CgroupScope | None = None) -> list[str]:
    """``hierarchy/path`` of every directory in each hierarchy's pod and container trees,
    or of those ``scope`` owns."""
    out: list[str] = []
    if not cgroup_root.is_dir():
        return out
    for h in sorted(cgroup_root.iterdir()):
        for tree in CGROUP_TREES:
            top = h / tree
            if not top.is_dir():
                continue
            rels = [tree, *(str(p.relative_to(h)) for p in top.rglob("*") if p.is_dir())]
            out += [f"{h.name}/{rel}" for rel in rels if scope is None or scope.owns(rel)]
    return out


def cni_cache_entries(lab: LabLayout, results: Path = CNI_RESULTS) -> list[str]:
    """libcni cache files of the nodes' networks, or of any network made in one of the
    nodes' pod pins (teardown.remove_cni_cache's rule)."""
    from pykubelet.lab.teardown import cached_netns

    if not results.is_dir():
        return []
    nets = tuple(f"{n.network_name}-" for n in lab.node_layouts())
    pins = tuple(pod_pin_prefixes(lab))
    return [f.name for f in results.iterdir()
            if f.name.startswith(nets) or Path(cached_netns(f)).name.startswith(pins)]


def lab_processes(lab: LabLayout, now: float | None = None,
                  min_age: float = MIN_PROCESS_AGE) -> list[str]:
    """``pid name`` of every process in a node or pod namespace of the lab, or naming one
    of its directories, that has run at least ``min_age`` seconds."""
    from pykubelet.lab import network, processes

    inodes: set[int] = set()
    for node in lab.node_layouts():
        for path in [node.netns_path]:
            ino = network.netns_inode(path)
            if ino is not None:
                inodes.add(ino)
    for name in netns_names(lab):
        ino = network.netns_inode(NETNS_DIR / name)
        if ino is not None:
            inodes.add(ino)
    pids = set(processes.pids_in_netns(inodes)) if inodes else set()
    pids.update(processes.pids_with_arg(str(lab.state_dir) + "/"))
    pids.update(processes.pids_with_arg(str(lab.run_dir) + "/"))
    pids.discard(os.getpid())
    now = time.time() if now is None else now
    out = []
    for pid in sorted(pids):
        try:
            p = psutil.Process(pid)
            if p.status() == psutil.STATUS_ZOMBIE or now - p.create_time() < min_age:
                continue
            out.append(f"{pid} {p.name()}")
        except psutil.Error:
            continue
    return out


def node_network(node: NodeLayout, run: Runner) -> tuple[list[str], list[str], list[str],
                                                           list[str]]:
    """(veths, bridge ports, iptables rules, nft rules) inside a node's namespace."""
    ns = node.netns
    veths, ports = parse_links(node.name, run(["ip", "-n", ns, "-j", "-d", "link", "show"]))
    ipt = normalize_iptables(node.name, run(["ip", "netns", "exec", ns, "iptables-save"]))
    nft = normalize_nft(node.name, run(["ip", "netns", "exec", ns, "nft", "list", "ruleset"]))
    return veths, ports, ipt, nft


def take(lab: LabLayout, run: Runner = run_command, scope: CgroupScope | None = None
         ) -> Census:
    """The census of ``lab`` now; given a ``scope`` (the pods and containers the caller
    saw in the lab), its cgroups are that scope's and what the nodes hold now, else the
    host's whole pod and container trees."""
    census = Census()
    census.add("netns", netns_names(lab))
    veths, ports = parse_links("host", run(["ip", "-j", "-d", "link", "show", "master",
                                            lab.bridge]))
    census.add("veths", veths)
    census.add("bridge ports", ports)
    for node in lab.node_layouts():
        if not node.netns_path.exists():
            continue
        veths, ports, ipt, nft = node_network(node, run)
        census.add("veths", veths)
        census.add("bridge ports", ports)
        census.add("iptables rules", ipt)
        census.add("nft rules", nft)
        census.add("IPAM files", files_under(node.cni_data_dir, node.name))
        census.add("runc state", children(node.root_dir / "runc", node.name))
    prefixes = [str(lab.state_dir) + "/", str(lab.run_dir) + "/",
                *(str(NETNS_DIR / n) for n in netns_names(lab))]
    census.add("mounts", mounts_under(MOUNTINFO.read_text(errors="replace"), prefixes))
    if scope is not None:
        scope = CgroupScope(set(scope.pod_uids), set(scope.container_ids), set(scope.parents))
        scope.update(node_cgroup_scope(lab))
    census.add("cgroups", cgroup_dirs(scope=scope))
    census.add("CNI cache", cni_cache_entries(lab))
    census.add("processes", lab_processes(lab))
    return census
