#!/usr/bin/env python3
"""A node's memory footprint (issue 23 item 3): its agent's and runtime's RSS and PSS,
idle and with pods running, on a worker of the one-host lab (run as root):

    sudo flock /tmp/pykube-root-tests.lock .venv/bin/python bench/node_footprint.py \
        [--pods 30,110] [--nodes 2] [--mappings 8] [--runtime-in-agent]

``pykubelet lab up --nodes 2`` (node1 is the control plane and a node; node2, measured,
is only a node, as a worker of a cluster is); then, idle and with each ``--pods`` count
of busybox ``sleep`` pods bound to node2 and Running (110 is kubelet's default
max-pods), the table of each process of node2: the agent and its embedded runtime (or
"in the agent" when the agent serves CRI itself), without the container monitors and
containers, which are per-pod and measured by the CRI bench. Columns, in MiB: RSS
(psutil), PSS (``/proc/PID/smaps_rollup``: shared pages split between the processes
that map them, so agent + runtime sums honestly), USS (psutil's memory_full_info: what
the process alone holds), then threads and open fds. ``--mappings N`` adds each
process's N largest mappings by PSS (the heap, the Python extensions' .so files), and
the Python extension packages mapped: where the memory goes. ``--runtime-in-agent``
restarts node2's agent with ``runtimeInAgent: true`` first. Target: agent + runtime
<= 80 MB with 30 pods (the k3s agent is the anchor). Figures only; ``lab down`` at the
end (``--keep`` leaves the lab up).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pykubelet.client.rest import PODS, RESTClient  # noqa: E402

PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
NAME = "footprint"
IMAGE = "localhost/busybox:latest"
MIB = 1024 * 1024


def lab(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYKUBELET, "lab", *args], capture_output=True, text=True,
                          check=check)


@dataclass
class Footprint:
    """One process's memory, in bytes, and its thread and fd counts."""

    role: str
    pid: int
    rss: int
    pss: int
    uss: int
    threads: int
    fds: int


def smaps_rollup_pss(pid: int) -> int:
    """PSS in bytes from /proc/PID/smaps_rollup (one read, not the whole smaps)."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def footprint(role: str, proc: psutil.Process) -> Footprint:
    full = proc.memory_full_info()
    return Footprint(role, proc.pid, full.rss, smaps_rollup_pss(proc.pid), full.uss,
                     proc.num_threads(), proc.num_fds())


def node_processes(node: str) -> list[tuple[str, psutil.Process]]:
    """The node's agent and its embedded runtime (a child running ``runtime``), if any."""
    status = json.loads(lab("status", "--name", NAME, "-o", "json").stdout)
    entry = next(n for n in status["nodes"] if n["name"] == node)
    agent = psutil.Process(entry["agentPid"])
    role = "agent + control plane" if entry.get("controlPlanePid") == agent.pid else "agent"
    out = [(role, agent)]
    for child in agent.children(recursive=False):
        if "runtime" in child.cmdline():
            out.append(("runtime", child))
    return out


def runtime_into_agent(node: str) -> None:
    """Restart ``node``'s agent with ``runtimeInAgent: true`` in its config: the runtime
    then runs in the agent's process (the lab writes the config; restart-node starts the
    agent again on it)."""
    (_, agent), *runtime = node_processes(node)
    cmd = agent.cmdline()
    path = Path(cmd[cmd.index("--config") + 1])
    cfg = yaml.safe_load(path.read_text())
    cfg["runtimeInAgent"] = True
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    agent.terminate()  # it stops its runtime child too
    psutil.wait_procs([agent] + [p for _, p in runtime], timeout=30)
    lab("restart-node", node, "--name", NAME)


def top_mappings(pid: int, n: int) -> list[tuple[str, int]]:
    """The ``n`` largest mappings of ``pid`` by PSS, summed per file (anonymous memory
    as [anon], the heap as [heap])."""
    by_name: dict[str, int] = defaultdict(int)
    name = ""
    header = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if header.match(line):
            parts = line.split(None, 5)
            name = parts[5].strip() if len(parts) > 5 else "[anon]"
        elif line.startswith("Pss:"):
            by_name[name] += int(line.split()[1]) * 1024
    return sorted(by_name.items(), key=lambda kv: -kv[1])[:n]


def extension_packages(pid: int) -> list[str]:
    """The site-packages distributions whose extension modules ``pid`` has mapped:
    which libraries a process imported (numpy, grpc, cryptography...)."""
    seen: set[str] = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        path = line.split(None, 5)[-1] if line.count(" ") >= 5 else ""
        if "site-packages/" in path and path.endswith(".so"):
            seen.add(path.split("site-packages/", 1)[1].split("/", 1)[0])
    return sorted(seen)


def pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "footprint"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": IMAGE,
                                     "imagePullPolicy": "IfNotPresent",
                                     "command": ["sleep", "3600"]}]}}


def running_on(client: RESTClient, node: str) -> int:
    items = client.list(PODS, "default", labelSelector="app=footprint",
                        fieldSelector=f"spec.nodeName={node}")["items"]
    return sum(1 for p in items if (p.get("status") or {}).get("phase") == "Running")


def fill(client: RESTClient, node: str, have: int, want: int, timeout: float) -> int:
    """Create pods ``have``..``want`` on ``node``; wait until ``want`` run. Returns the
    count Running at the end (fewer on a timeout)."""
    for i in range(have, want):
        client.create(PODS, pod(f"fp-{i:03d}", node), "default")
    end = time.monotonic() + timeout
    count = running_on(client, node)
    while count < want and time.monotonic() < end:
        time.sleep(2)
        count = running_on(client, node)
    return count


def print_phase(label: str, rows: list[Footprint]) -> None:
    for r in rows:
        print(f"{label:14s} {r.role:22s} {r.pid:>7d} {r.rss / MIB:8.1f} {r.pss / MIB:8.1f} "
              f"{r.uss / MIB:8.1f} {r.threads:8d} {r.fds:6d}")
    if len(rows) == 1:
        print(f"{label:14s} {'runtime':22s} {'in the agent':>7s}")
    print(f"{label:14s} {'agent + runtime':22s} {'':>7s} "
          f"{sum(r.rss for r in rows) / MIB:8.1f} {sum(r.pss for r in rows) / MIB:8.1f} "
          f"{sum(r.uss for r in rows) / MIB:8.1f} {sum(r.threads for r in rows):8d} "
          f"{sum(r.fds for r in rows):6d}", flush=True)


def measure(node: str, label: str, mappings: int) -> list[Footprint]:
    rows = [footprint(role, p) for role, p in node_processes(node)]
    print_phase(label, rows)
    if mappings:
        for r in rows:
            top = ", ".join(f"{Path(n).name or n} {v / MIB:.1f}"
                            for n, v in top_mappings(r.pid, mappings))
            print(f"    {r.role} largest mappings (PSS MiB): {top}")
            print(f"    {r.role} extension packages: {' '.join(extension_packages(r.pid))}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", default="30,110",
                    help="pod counts to measure at, ascending, comma-separated")
    ap.add_argument("--nodes", type=int, default=2, help="lab nodes (>= 2: the last one "
                    "is measured, a worker without the control plane)")
    ap.add_argument("--settle", type=float, default=10.0,
                    help="seconds to wait before each measure (threads, caches settle)")
    ap.add_argument("--mappings", type=int, default=0,
                    help="print each process's N largest mappings and its extensions")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds to wait for each pod count to run")
    ap.add_argument("--keep", action="store_true", help="leave the lab up")
    ap.add_argument("--runtime-in-agent", action="store_true",
                    help="measure the node with runtimeInAgent: true (the runtime served "
                         "from the agent's process)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    counts = [int(c) for c in args.pods.split(",") if c]
    node = f"node{args.nodes}"
    lab("down", "--name", NAME, check=False)
    up = lab("up", "--nodes", str(args.nodes), "--name", NAME, check=False)
    if up.returncode != 0:
        print(up.stdout, up.stderr, file=sys.stderr)
        lab("down", "--name", NAME, check=False)
        return 1
    try:
        client = RESTClient.from_kubeconfig(context=f"pykube-{NAME}", user_agent="footprint")
        if args.runtime_in_agent:
            runtime_into_agent(node)
        mode = "runtimeInAgent" if args.runtime_in_agent else "runtime as a child process"
        print(f"{node} of a {args.nodes}-node lab ({mode}); MiB (RSS, PSS from "
              "smaps_rollup, USS)")
        print(f"{'phase':14s} {'process':22s} {'pid':>7s} {'RSS':>8s} {'PSS':>8s} "
              f"{'USS':>8s} {'threads':>8s} {'fds':>6s}")
        time.sleep(args.settle)
        measure(node, "idle", args.mappings)
        have = 0
        for want in counts:
            t0 = time.monotonic()
            ran = fill(client, node, have, want, args.timeout)
            have = want
            note = "" if ran >= want else f" (only {ran} Running after {args.timeout:.0f} s)"
            print(f"# {want} pods Running in {time.monotonic() - t0:.0f} s{note}", flush=True)
            time.sleep(args.settle)
            measure(node, f"{want} pods", args.mappings)
        print("target: agent + runtime <= 80 MB (76.3 MiB) with 30 pods")
    finally:
        if not args.keep:
            down = lab("down", "--name", NAME, check=False)
            print("lab down:", "ok" if down.returncode == 0 else down.stderr.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
