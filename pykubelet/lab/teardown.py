"""`lab down`: remove every trace of a lab, whatever state it is in.

Gentle first, then thorough. The pods are stopped first, through each node's runtime,
while the agents are frozen so that none restarts them; then the agents, node 1's
control plane and the embedded runtimes. Then a sweep that needs nothing but the
lab's names and directories, so it works after a crash of `up` or of the node processes:
every process left in a node's or pod's network namespace or naming a node's directory
(container monitors, containers) is killed, runc state and the pods' cgroups are removed,
every mount under the lab's directories and every pod namespace pin of its runtimes is
unmounted, then the namespaces, the links, the CNI cache entries, the directories (the
local registry's data with them) and the kubeconfig context go. Every part is
idempotent and tolerant of what is already gone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pykubelet import state_lock
from pykubelet.lab import kubecontext, network, processes
from pykubelet.lab.layout import NETNS_DIR, RUN_ROOT, STATE_ROOT, LabLayout, NodeLayout
from pykubelet.lab.state import LabState, ProcessRef, StateError, load
from pykubelet.lab.status import StatusPrinter

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CNI_CACHE_DIR = Path("/var/lib/cni")
POD_STOP_GRACE = 2  # seconds a container gets between SIGTERM and SIGKILL on `down`
PROCESS_STOP_TIMEOUT = 15.0


@dataclass
class Removed:
    """What `down` found and removed (tests and the summary line read it)."""

    existed: bool = False
    pods: int = 0
    processes: int = 0
    mounts: int = 0
    namespaces: int = 0
    links: int = 0
    notes: list[str] = field(default_factory=list)


def lab_for(name: str, state: LabState | None, state_root: Path, run_root: Path) -> LabLayout:
    """The lab's layout, with every node index found on disk or in namespaces (a crashed
    `up` may have made more than its state says, or the state may be gone)."""
    indices = set(range(1, (state.nodes if state else 0) + 1))
    nodes_dir = state_root / name / "nodes"
    if nodes_dir.is_dir():
        for d in nodes_dir.iterdir():
            m = re.fullmatch(r"node(\d+)", d.name)
            if m:
                indices.add(int(m.group(1)))
    if NETNS_DIR.is_dir():
        for ns in os.listdir(NETNS_DIR):
            m = re.fullmatch(rf"pykube-{re.escape(name)}-node(\d+)", ns)
            if m:
                indices.add(int(m.group(1)))
    n = max(indices) if indices else 0
    return LabLayout(name, n, state.subnet_index if state else 0, state_root, run_root)


def exists(name: str, state_root: Path = STATE_ROOT, run_root: Path = RUN_ROOT) -> bool:
    lab = LabLayout(name, 0, 0, state_root, run_root)
    return (lab.state_dir.exists() or lab.run_dir.exists() or network.link_exists(lab.bridge)
            or lab_for(name, None, state_root, run_root).nodes > 0)


def down(name: str, state_root: Path = STATE_ROOT, run_root: Path = RUN_ROOT,
         kubeconfig: str | None = None, printer: StatusPrinter | None = None) -> Removed:
    """Remove the lab ``name``; safe to call again, and on a lab that never finished."""
    def say(message: str) -> None:
        if printer is not None:
            printer.start(message)
    out = Removed()
    try:
        state = load(LabLayout(name, 0, 0, state_root, run_root).state_file)
    except StateError as exc:
        out.notes.append(str(exc))
        state = None
    lab = lab_for(name, state, state_root, run_root)
    out.existed = state is not None or exists(name, state_root, run_root)
    nodes = lab.node_layouts()

    say("Stopping pods")
    out.pods = stop_pods(state, nodes)
    say("Stopping node agents and the control plane")
    out.processes += stop_node_processes(state, nodes)
    say("Removing containers, mounts and cgroups")
    out.processes += kill_leftovers(nodes, (str(lab.front_state_file),
                                            str(lab.registry_config_file)))
    for node in nodes:
        remove_runc_state(node)
        remove_cgroups(node)
    out.mounts = unmount_all(lab, nodes)
    say("Removing the lab network")
    for node in nodes:
        out.namespaces += network.delete_netns(node.netns)
        out.links += network.delete_link(node.host_veth)
    out.links += network.delete_link(lab.bridge)
    for link in network.links_with_alias(lab.link_alias):
        out.links += network.delete_link(link)
    say("Removing directories and the kubeconfig context")
    for node in nodes:
        remove_cni_cache(node)
    shutil.rmtree(lab.state_dir, ignore_errors=True)
    shutil.rmtree(lab.run_dir, ignore_errors=True)
    with contextlib.suppress(OSError):
        lab.lock_file.unlink()  # the caller's flock holds until it closes
    if not any(state_root.glob("*/lab.json")):  # the last lab on this host
        with contextlib.suppress(OSError):
            (run_root / "subnets.lock").unlink()
    for d in (state_root, run_root):
        with contextlib.suppress(OSError):
            d.rmdir()  # only when no other lab is left
    note = kubecontext.remove(lab.context, kubeconfig or (state.kubeconfig if state else None))
    if note:
        out.notes.append(note)
    if printer is not None:
        printer.end(True)
    return out


# ---------------------------------------------------------------------- pods
def _agents(state: LabState | None) -> list[ProcessRef]:
    if state is None:
        return []
    return [p.agent for p in state.processes.values() if p.agent is not None and p.agent.alive()]


def stop_pods(state: LabState | None, nodes: list[NodeLayout]) -> int:
    """Stop every pod before the agents, through each node's runtime: containers get a
    short grace (POD_STOP_GRACE), then their sandboxes are stopped (CNI DEL, namespace
    pins released) and removed. The agents are frozen (SIGSTOP) meanwhile, so none starts
    a pod again or holds a container in its own, longer, graceful stop. Returns how many
    sandboxes there were."""
    for ref in _agents(state):
        with contextlib.suppress(OSError):
            os.kill(ref.pid, signal.SIGSTOP)
    live = [n for n in nodes if n.cri_socket.exists()]
    if not live:
        return 0
    with ThreadPoolExecutor(max_workers=len(live)) as pool:
        return sum(pool.map(_stop_node_pods, live))


def _stop_node_pods(node: NodeLayout) -> int:
    """StopContainer (POD_STOP_GRACE), then StopPodSandbox and RemovePodSandbox, for all
    of a node's pods, in parallel; 0 when its runtime does not answer."""
    from pykubelet.kubelet.cri.cri_client import CRICallError, CRIClient

    try:
        with CRIClient(f"unix://{node.cri_socket}", timeout=POD_STOP_GRACE + 10) as cri:
            sandboxes = [s.id for s in cri.list_pod_sandbox()]
            containers = [c.id for c in cri.list_containers()]

            def stop_container(cid: str) -> None:
                with contextlib.suppress(CRICallError):
                    cri.stop_container(cid, POD_STOP_GRACE)

            def remove_sandbox(sid: str) -> None:
                with contextlib.suppress(CRICallError):
                    cri.stop_pod_sandbox(sid)
                    cri.remove_pod_sandbox(sid)

            with ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(stop_container, containers))
                list(pool.map(remove_sandbox, sandboxes))
            return len(sandboxes)
    except (CRICallError, OSError) as exc:
        log.info("%s: runtime not reachable for pod stop (%s)", node.name, exc)
        return 0


# ---------------------------------------------------------------------- processes
def _runtime_ref(node: NodeLayout) -> ProcessRef | None:
    """The embedded runtime `pykubelet run` started (the holder of rootDir/runtime.lock),
    if it still serves this node's socket."""
    import psutil

    try:
        pid = state_lock.holder(node.root_dir / state_lock.RUNTIME_LOCK)
        if pid and f"unix://{node.cri_socket}" in psutil.Process(pid).cmdline():
            return ProcessRef.of(pid)
    except (OSError, psutil.Error):
        pass
    return None


def stop_node_processes(state: LabState | None, nodes: list[NodeLayout]) -> int:
    """The (frozen) agents are killed: their pods are gone, and so is every state they
    keep. Then the front load balancer, the local registry, the separate control planes
    and the embedded runtimes get SIGTERM, and the etcd members last (the control planes write until
    they stop)."""
    agents = _agents(state)
    processes.kill(agents)
    procs = list(state.processes.values()) if state else []
    others = [p.control_plane for p in procs
              if p.control_plane is not None and p.control_plane.alive()]
    if state is not None and state.front is not None and state.front.alive():
        others.append(state.front)
    if state is not None and state.registry is not None and state.registry.alive():
        others.append(state.registry)
    others += [r for r in (_runtime_ref(n) for n in nodes) if r is not None and r.alive()]
    processes.stop(others, PROCESS_STOP_TIMEOUT)
    members = [p.etcd for p in procs if p.etcd is not None and p.etcd.alive()]
    processes.stop(members, PROCESS_STOP_TIMEOUT)
    return len(agents) + len(others) + len(members)


def kill_leftovers(nodes: list[NodeLayout], named: tuple[str, ...] = ()) -> int:
    """SIGKILL every process in a node's or a pod's namespace of this lab, and every
    process naming a node's directory (monitors whose namespaces are gone) or one of
    ``named`` (the front load balancer's state file, the registry's config)."""
    inodes: set[int] = set()
    for node in nodes:
        ino = network.netns_inode(node.netns_path)
        if ino is not None:
            inodes.add(ino)
        for pin in _pod_pins(node):
            ino = network.netns_inode(pin)
            if ino is not None:
                inodes.add(ino)
    pids = set(processes.pids_in_netns(inodes)) if inodes else set()
    for node in nodes:
        pids.update(processes.pids_with_arg(str(node.dir) + "/"))
        pids.update(processes.pids_with_arg(str(node.node_run_dir) + "/"))
    for fragment in named:
        pids.update(processes.pids_with_arg(fragment))
    refs = [ProcessRef.of(p) for p in sorted(pids)]
    processes.kill(refs)
    return len(refs)


# ---------------------------------------------------------------------- runc, cgroups
def remove_runc_state(node: NodeLayout) -> None:
    remove_runc_containers(node.root_dir)


def remove_runc_containers(root_dir: Path) -> None:
    """Every runc container of the runtime rooted at ``root_dir``, killed and deleted
    (their monitors end with them): what no runtime is left to stop."""
    runc_root = root_dir / "runc"
    if not runc_root.is_dir():
        return
    for cid in os.listdir(runc_root):
        subprocess.run(["runc", "--root", str(runc_root), "delete", "--force", cid],
                       capture_output=True, timeout=30, check=False)


def _sandbox_cgroup_parents(root_dir: Path) -> list[str]:
    from pykubelet.runtime.sandbox import CHECKPOINT, decode_checkpoint

    out = []
    sandboxes = root_dir / "sandboxes"
    if sandboxes.is_dir():
        for d in sandboxes.iterdir():
            with contextlib.suppress(OSError, ValueError, KeyError):
                info = decode_checkpoint((d / CHECKPOINT).read_bytes())
                if info.cgroup_parent:
                    out.append(info.cgroup_parent)
    return out


def _pod_uids(pod_logs_dir: Path) -> list[str]:
    """Pod UIDs from a node's log directories (``<ns>_<name>_<uid>``)."""
    if not pod_logs_dir.is_dir():
        return []
    return [d.name.rsplit("_", 1)[-1] for d in pod_logs_dir.iterdir() if "_" in d.name]


def remove_cgroups(node: NodeLayout) -> None:
    remove_pod_cgroups(node.root_dir, node.pod_logs_dir)


def remove_pod_cgroups(root_dir: Path, pod_logs_dir: Path) -> None:
    """The pod and container cgroups of the runtime rooted at ``root_dir`` whose pods log
    under ``pod_logs_dir`` (empty once their processes are gone)."""
    rels = [p.strip("/") for p in _sandbox_cgroup_parents(root_dir)]
    for uid in _pod_uids(pod_logs_dir):
        rels += [f"kubepods/pod{uid}", f"kubepods/burstable/pod{uid}",
                 f"kubepods/besteffort/pod{uid}"]
    containers = root_dir / "containers"
    if containers.is_dir():
        rels += [f"pykubelet/{cid}" for cid in os.listdir(containers)]
    if not CGROUP_ROOT.is_dir():
        return
    hierarchies = [CGROUP_ROOT, *(h for h in CGROUP_ROOT.iterdir() if h.is_dir())]
    for rel in set(rels):
        if not rel or rel in ("kubepods", "pykubelet"):
            continue
        for h in hierarchies:
            _rmdir_tree(h / rel)


def _rmdir_tree(d: Path) -> None:
    if not d.is_dir():
        return
    for sub in sorted((p for p in d.rglob("*") if p.is_dir()), key=lambda p: len(str(p)),
                      reverse=True):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        d.rmdir()


# ---------------------------------------------------------------------- mounts
def _pod_pins(node: NodeLayout) -> list[Path]:
    """The pod namespace pins of the node's runtime (its prefix under /run/netns)."""
    from pykubelet.runtime.service import default_netns_prefix

    prefix = default_netns_prefix(node.root_dir)
    if not NETNS_DIR.is_dir():
        return []
    return [NETNS_DIR / n for n in os.listdir(NETNS_DIR) if n.startswith(prefix)]


def mounts_under(prefixes: list[str]) -> list[str]:
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 4:
                mp = parts[4].replace("\\040", " ")
                if any(mp == p.rstrip("/") or mp.startswith(p) for p in prefixes):
                    out.append(mp)
    return out


def unmount_all(lab: LabLayout, nodes: list[NodeLayout]) -> int:
    from pykubelet.runtime.netns import NamespaceError, unmount

    pins = [p for n in nodes for p in _pod_pins(n)]
    prefixes = [str(lab.state_dir) + "/", str(lab.run_dir) + "/", *(str(p) for p in pins)]
    count = 0
    for _ in range(3):  # a lazy unmount can reveal a mount that was beneath it
        found = sorted(set(mounts_under(prefixes)), key=len, reverse=True)
        if not found:
            break
        for mp in found:
            with contextlib.suppress(NamespaceError):
                unmount(mp)
                count += 1
    for p in pins:
        with contextlib.suppress(OSError):
            p.unlink()
    return count


def remove_cni_cache(node: NodeLayout) -> None:
    """libcni's cached results of the node's pods (the runtime keeps them in the host's
    /var/lib/cni/results; a clean pod stop removes them, a crash may not): those of the
    node's network by name, and those of any network (the implicit cni-loopback too) whose
    namespace is one of the node runtime's pins."""
    from pykubelet.runtime.service import default_netns_prefix

    results = CNI_CACHE_DIR / "results"
    if not results.is_dir():
        return
    ours = re.compile(re.escape(node.network_name) + r"-[0-9a-f]+-[A-Za-z0-9_.]+")
    pins = default_netns_prefix(node.root_dir)
    for f in results.iterdir():
        if ours.fullmatch(f.name) or Path(cached_netns(f)).name.startswith(pins):
            with contextlib.suppress(OSError):
                f.unlink()


def cached_netns(entry: Path) -> str:
    """The namespace path a libcni cache entry was made for ("" when unreadable)."""
    try:
        netns = json.loads(entry.read_text()).get("netns", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return netns if isinstance(netns, str) else ""
