#!/usr/bin/env python3
"""Workload benchmark on a 3-node lab, through the real kubectl (run as root from the
repository; issue 19's "Measured"):

1. ``kubectl apply`` of a Deployment of 30 replicas to ``kubectl rollout status`` done
   (every replica updated and available; target <= 10 s);
2. a rolling update of it (maxSurge 25%, maxUnavailable 25%: a new pod template) to
   ``kubectl rollout status`` done (target <= 20 s);
3. idle CPU of the control plane with 100 Deployments (every tenth of 1 replica, the others
   of 0, so the machine holds them): CPU seconds of node 1's process (the control plane
   with the controllers, embedded in node 1's agent) over 30 s, as a share of one core
   (target <= 2%), beside the same figure with no Deployments and another node's agent
   alone (what node 1's agent costs without the control plane).

Figures only, one table at the end; a target missed is reported, never a failure.

    .venv/bin/python bench/workload_bench.py [--replicas 30] [--deployments 100]
        [--idle 30] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
NAME = "wlbench"
IMAGE = "localhost/busybox:1.35"  # on every node: IfNotPresent starts at once
SLEEPER = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]  # leaves on SIGTERM


def lab(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYKUBELET, "lab", *args, "--name", NAME], capture_output=True,
                          text=True, check=check)


def kubectl(*args: str, input: str | None = None) -> str:
    res = subprocess.run(["kubectl", "--context", f"pykube-{NAME}", *args], input=input,
                         capture_output=True, text=True, timeout=300, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def deployment(name: str, replicas: int, env: str = "1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                         "maxSurge": "25%", "maxUnavailable": "25%"}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "terminationGracePeriodSeconds": 5, "containers": [{
                             "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                             "command": SLEEPER, "env": [{"name": "ROUND", "value": env}],
                             "resources": {"requests": {"cpu": "10m"}}}]}}}}


def timed_rollout(manifest: dict[str, Any]) -> float:
    """Seconds from ``kubectl apply`` to ``kubectl rollout status`` returning done."""
    name = manifest["metadata"]["name"]
    t0 = time.perf_counter()
    kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
    kubectl("rollout", "status", f"deployment/{name}", "--timeout=300s")
    return time.perf_counter() - t0


def running_pods(selector: str) -> int:
    """Pods of ``selector`` Running with every container ready (rollout status's word,
    checked against the pods themselves)."""
    items = json.loads(kubectl("get", "pods", "-l", selector, "-o", "json"))["items"]
    return sum(1 for p in items if (p.get("status") or {}).get("phase") == "Running" and all(
        c.get("ready") for c in (p.get("status") or {}).get("containerStatuses") or [{}]))


def cpu_seconds(pids: dict[str, int], seconds: float) -> dict[str, float]:
    """CPU seconds (user + system, the process's threads, not its children) each process
    spent over ``seconds`` of wall time."""
    procs = {n: psutil.Process(p) for n, p in pids.items()}
    before = {n: sum(p.cpu_times()[:2]) for n, p in procs.items()}
    time.sleep(seconds)
    return {n: sum(p.cpu_times()[:2]) - before[n] for n, p in procs.items()}


def all_observed(count: int) -> bool:
    """Every bench Deployment's status caught up with its spec."""
    items = json.loads(kubectl("get", "deployments", "-l", "bench=idle", "-o", "json"))["items"]
    return len(items) == count and all(
        (d.get("status") or {}).get("observedGeneration") == d["metadata"]["generation"]
        and (d.get("status") or {}).get("availableReplicas", 0) == d["spec"]["replicas"]
        for d in items)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=int, default=30)
    ap.add_argument("--deployments", type=int, default=100)
    ap.add_argument("--idle", type=float, default=30.0, help="seconds of idle measured")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    lab("down", check=False)
    up = lab("up", "--nodes", "3", check=False)
    if up.returncode != 0:
        print(up.stdout, up.stderr, file=sys.stderr)
        lab("down", check=False)
        return 1
    rows: list[tuple[str, str, str, bool]] = []
    try:
        nodes = {n["name"]: n for n in json.loads(lab("status", "-o", "json").stdout)["nodes"]}
        cp_pid = nodes["node1"]["controlPlanePid"] or nodes["node1"]["agentPid"]
        pids = {"node1 (control plane + agent)": cp_pid, "node2 (agent)":
                nodes["node2"]["agentPid"]}

        up_s = timed_rollout(deployment("big", args.replicas))
        print(f"{running_pods('app=big')} pods of big Running and ready", file=sys.stderr)
        rows.append((f"apply -> rollout status done, {args.replicas} replicas",
                     f"{up_s:.1f} s", "<= 10 s", up_s <= 10))
        upd_s = timed_rollout(deployment("big", args.replicas, env="2"))
        rows.append((f"rolling update (maxSurge 25%), {args.replicas} replicas",
                     f"{upd_s:.1f} s", "<= 20 s", upd_s <= 20))
        kubectl("delete", "deployment", "big", "--cascade=foreground", "--wait=true")

        empty = cpu_seconds(pids, args.idle)
        docs = []
        for i in range(args.deployments):
            d = deployment(f"idle-{i:03d}", 1 if i % 10 == 0 else 0)
            d["metadata"]["labels"] = {"bench": "idle"}
            docs.append(d)
        kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
        end = time.monotonic() + 120
        while not all_observed(args.deployments):
            if time.monotonic() > end:
                raise RuntimeError("the Deployments did not settle in 120 s")
            time.sleep(1)
        time.sleep(3)  # the last status writes and events pass
        busy = cpu_seconds(pids, args.idle)
        for who in pids:
            share = 100 * busy[who] / args.idle
            is_cp = who.startswith("node1")
            rows.append((f"idle CPU, {args.deployments} Deployments: {who}",
                         f"{share:.2f}% ({busy[who]:.2f} s / {args.idle:.0f} s)",
                         "<= 2% of a core" if is_cp else "-", share <= 2 if is_cp else True))
            rows.append((f"idle CPU, no Deployments: {who}",
                         f"{100 * empty[who] / args.idle:.2f}%", "-", True))
    finally:
        if not args.keep:
            lab("down", check=False)
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'figure':<24}  {'target':<16}  met")
    for what, fig, target, met in rows:
        print(f"{what:<{width}}  {fig:<24}  {target:<16}  {'yes' if met else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
