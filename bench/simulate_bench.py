#!/usr/bin/env python3
"""`pysched simulate` on a big cluster: pods/s through the command, and where the time goes.

Writes two v1 Lists (JSON) that differ only in their pending pods: N nodes (4 cpu, 32Gi, 110
pods, three zones), B bound pods (100m/500Mi), then P pending pods of the same shape, or just
one. Each file goes through the command as a user runs it (``pysched simulate FILE -o json``,
output discarded), and the scheduling rate through the command is

    (P - 1) / (time with P pending - time with 1 pending)

so reading the nodes, starting Python and building the scheduler cancel out (decoding the
P - 1 extra pods and printing their results stay in, as a user pays them). Then, in this
process, the same work split: reading the file (YAML/JSON parse and object decoding), and
simulate() alone (pods/s with the input already in memory).

  python bench/simulate_bench.py                      # 5,000 nodes, 2,000 pending pods
  python bench/simulate_bench.py --nodes 500 --pending 500
  python bench/simulate_bench.py --repo /path/to/older/checkout   # the same on older code
  python bench/simulate_bench.py --against /path/to/older/checkout --repeat 5
      # both, their command runs interleaved (older, this, older, ...): on a shared machine
      # the load then weighs on both alike; each figure is the least over the runs

Prints figures; never fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ZONES = ("zone-a", "zone-b", "zone-c")


def node(i: int) -> dict[str, Any]:
    name = f"node-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
            },
        },
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def pod(name: str, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
            }
        ]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "sim"},
        "spec": spec,
    }


def cluster(nodes: int, bound: int, pending: int) -> dict[str, Any]:
    items = [node(i) for i in range(nodes)]
    items += [pod(f"bound-{j}", f"node-{j % nodes}") for j in range(bound)]
    items += [pod(f"pending-{j}") for j in range(pending)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def run_command(repo: Path, path: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``pysched simulate PATH -o json`` from ``repo``."""
    code = f"import sys; sys.path.insert(0, {str(repo)!r}); from pysched.cli import main; main()"
    argv = [sys.executable, "-c", code, "simulate", str(path), "-o", "json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"simulate failed: {p.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def in_process(repo: Path, path: Path) -> tuple[float, float, int]:
    """(seconds to read and decode, seconds in simulate(), pending pods) in this process."""
    sys.path.insert(0, str(repo))
    from pysched.simulate import load_inputs, simulate

    t0 = time.perf_counter()
    inputs = load_inputs(path)
    t1 = time.perf_counter()
    result = simulate(inputs)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, len(result["results"])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--bound", type=int, default=1000)
    ap.add_argument("--pending", type=int, default=2000)
    ap.add_argument("--repo", type=Path, default=REPO, help="the checkout whose pysched runs")
    ap.add_argument(
        "--repeat", type=int, default=1, help="command runs per file (least wall, least CPU)"
    )
    ap.add_argument(
        "--against",
        type=Path,
        default=None,
        help="another checkout: its command runs interleaved with --repo's, both reported",
    )
    a = ap.parse_args()
    if a.against is not None:
        compare(a)
        return
    load = os.getloadavg()[0]
    print(
        f"# pysched simulate: {a.nodes} nodes, {a.bound} bound pods, {a.pending} pending; "
        f"code from {a.repo}; {os.cpu_count()} CPUs, load average {load:.1f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="simbench-") as tmp:
        files = write_inputs(Path(tmp), a)
        runs = {}
        for label, path in files.items():
            best = least([run_command(a.repo, path) for _ in range(a.repeat)])
            runs[label] = best
            print(
                f"command, {1 if label == 'one' else a.pending:>5} pending: "
                f"{best[0]:7.2f} s wall {best[1]:7.2f} s CPU",
                flush=True,
            )
        dw = runs["many"][0] - runs["one"][0]
        dc = runs["many"][1] - runs["one"][1]
        n = a.pending - 1
        print(
            f"through the command: {n / dw if dw > 0 else 0:8.1f} pods/s wall "
            f"({n / dc if dc > 0 else 0:8.1f} pods per CPU-s)  [(P - 1) / (t(P) - t(1))]",
            flush=True,
        )
        read_s, sched_s, pending = in_process(a.repo, files["many"])
        print(
            f"in process: reading the List {read_s:6.2f} s; simulate() {sched_s:6.2f} s "
            f"for {pending} pods = {pending / sched_s:8.1f} pods/s (scheduler built, nodes "
            "added, every pod decided)",
            flush=True,
        )


def write_inputs(tmp: Path, a: argparse.Namespace) -> dict[str, Path]:
    """The two Lists, one pending pod and ``a.pending``: the rate is their difference's."""
    files = {"one": tmp / "one.json", "many": tmp / "many.json"}
    files["one"].write_text(json.dumps(cluster(a.nodes, a.bound, 1)))
    files["many"].write_text(json.dumps(cluster(a.nodes, a.bound, a.pending)))
    return files


def least(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The least wall and the least CPU, each over the runs (on a shared machine they may
    come from different runs: other processes inflate both, unevenly)."""
    return min(x[0] for x in runs), min(x[1] for x in runs)


def compare(a: argparse.Namespace) -> None:
    """--against: each checkout's command runs interleaved, run by run; per checkout the
    least wall and least CPU of each file over the runs, and the rate through the command."""
    repos = {"against": a.against, "repo": a.repo}
    print(
        f"# pysched simulate: {a.nodes} nodes, {a.bound} bound pods, {a.pending} pending; "
        f"{a.against} against {a.repo}, {a.repeat} interleaved runs; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="simbench-") as tmp:
        files = write_inputs(Path(tmp), a)
        got: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(a.repeat):
            for label, path in files.items():
                for name, repo in repos.items():
                    got.setdefault((name, label), []).append(run_command(repo, path))
    n = a.pending - 1
    for name, repo in repos.items():
        w = {lb: least(got[(name, lb)])[0] for lb in files}
        c = {lb: least(got[(name, lb)])[1] for lb in files}
        dw, dc = w["many"] - w["one"], c["many"] - c["one"]
        print(
            f"{repo}: through the command {n / dw if dw > 0 else 0:8.1f} pods/s wall "
            f"({n / dc if dc > 0 else 0:8.1f} pods per CPU-s); 1 pending {w['one']:.2f} s wall "
            f"{c['one']:.2f} s CPU, {a.pending} pending {w['many']:.2f} s wall "
            f"{c['many']:.2f} s CPU",
            flush=True,
        )
    print(f"# load average at the end {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
