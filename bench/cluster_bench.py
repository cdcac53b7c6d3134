#!/usr/bin/env python3
"""Cluster benchmark on a 3-node lab (run as root from the repository):

1. ``pykubelet lab up --nodes 3`` to every node Ready (wall time);
2. each node's agent + runtime RSS, idle;
3. 100 pods created at once (10 clients) to all Running as the agents report it: per-pod
   p50/p99 from the create request to the watch event showing ``phase: Running`` with
   every container ready, and the API's p99 for single-object reads during that load;
   where that time goes: p50/p99 of each step between the stages the components trace
   (pykubelet.podtrace, turned on for the lab through ``PYKUBE_POD_TRACE``: created,
   scheduled, seen by the agent, sandbox ready, container created and started, status
   patched Running, and this bench's watch saw Running), the CPU seconds each process of
   the lab spent during the burst, and the CPU floor (bench/cpu_floor.py: runc create +
   start and a CNI ADD per pod, times the pods, over the cores) the p99 stands against;
4. each node's agent + runtime RSS with about 30 pods;
5. ``kubectl exec POD -- true`` round trips through the API server, the node's server and
   the runtime's streaming server (issue 11's target: <= 300 ms);
6. ``lab down``.

Targets (issue 9): creation -> Running p99 <= 2 s; API p99 <= 100 ms under that load;
lab up <= 10 s; agent + runtime RSS with 30 pods <= 80 MB. Figures only.

    .venv/bin/python bench/cluster_bench.py [--pods 100] [--keep] [--no-floor] [--no-exec]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import cpu_floor  # noqa: E402

from pykubelet import podtrace  # noqa: E402
from pykubelet.client.rest import PODS, RESTClient  # noqa: E402

PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
NAME = "bench"
IMAGE = "localhost/busybox:latest"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def lab(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYKUBELET, "lab", *args], capture_output=True, text=True,
                          check=check)


def rss_by_node() -> dict[str, float]:
    """MiB of each node's agent plus its embedded runtime (not containers or monitors)."""
    status = json.loads(lab("status", "--name", NAME, "-o", "json").stdout)
    out: dict[str, float] = {}
    for node in status["nodes"]:
        total = 0
        try:
            agent = psutil.Process(node["agentPid"])
            procs = [agent] + [c for c in agent.children(recursive=False)
                               if "runtime" in " ".join(c.cmdline())]
            total = sum(p.memory_info().rss for p in procs)
        except (psutil.Error, TypeError):
            pass
        out[node["name"]] = total / 2**20
    return out


def lab_processes() -> dict[str, list[psutil.Process]]:
    """The lab's processes by role: the control plane, each node's agent, and each node's
    runtime with what it started (container monitors, containers)."""
    status = json.loads(lab("status", "--name", NAME, "-o", "json").stdout)
    out: dict[str, list[psutil.Process]] = {}
    for node in status["nodes"]:
        for role, key in (("control plane", "controlPlanePid"), ("etcd", "etcdPid")):
            # a control plane inside the agent's process is counted with the agent
            if node.get(key) and node[key] != node.get("agentPid"):
                try:
                    out[f"{node['name']} {role}"] = [psutil.Process(node[key])]
                except psutil.Error:
                    pass
        try:
            agent = psutil.Process(node["agentPid"])
        except (psutil.Error, TypeError):
            continue
        role = "agent + control plane" if node.get("controlPlanePid") == agent.pid else "agent"
        out[f"{node['name']} {role}"] = [agent]
        runtime: list[psutil.Process] = []
        for child in agent.children(recursive=False):
            try:
                if "runtime" in " ".join(child.cmdline()):
                    runtime += [child, *child.children(recursive=True)]
            except psutil.Error:
                pass
        out[f"{node['name']} runtime"] = runtime
    return out


def cpu_seconds(procs: list[psutil.Process]) -> dict[int, float]:
    """pid -> CPU seconds so far, its reaped children's included (runc, CNI plugins)."""
    out: dict[int, float] = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return out


def cpu_during(before: dict[str, dict[int, float]],
               after: dict[str, dict[int, float]]) -> dict[str, float]:
    """CPU seconds each role spent between two snapshots (a process new since the first
    counts from zero)."""
    return {role: sum(v - before.get(role, {}).get(pid, 0.0) for pid, v in pids.items())
            for role, pids in after.items()}


def print_breakdown(trace_file: Path, uids: set[str]) -> None:
    """p50/p99 of each step between traced stages, in the order pods pass them."""
    traces = {u: s for u, s in podtrace.read(trace_file).items() if u in uids}
    steps = podtrace.breakdown(traces)
    order = list(podtrace.STAGES)

    def rank(step: str) -> tuple[bool, int, int]:
        a, b = step.removeprefix(podtrace.TOTAL).split(" -> ")
        return step.startswith(podtrace.TOTAL), order.index(b), order.index(a)

    print(f"where the time goes ({len(traces)} pods traced; seconds, p50 / p99 / max):")
    for step in sorted(steps, key=rank):
        v = steps[step]
        print(f"  {step:40} {pct(v, .5):6.2f} {pct(v, .99):6.2f} {max(v):6.2f}  (n={len(v)})")


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name,
                                                           "labels": {"app": "bench"}},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": IMAGE,
                                     "imagePullPolicy": "IfNotPresent",
                                     "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": "10m"}}}]}}


def running(obj: dict[str, Any]) -> bool:
    st = obj.get("status") or {}
    cs = st.get("containerStatuses") or []
    return st.get("phase") == "Running" and bool(cs) and all(c.get("ready") for c in cs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-floor", action="store_true", help="skip the CPU floor's measure")
    ap.add_argument("--no-exec", action="store_true", help="skip the kubectl exec round trips")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    floor = None if args.no_floor else cpu_floor.measure()
    trace_dir = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    trace_file = trace_dir / "pods.jsonl"
    os.environ[podtrace.ENV] = str(trace_file)  # the lab's processes inherit it
    podtrace.configure(str(trace_file))
    lab("down", "--name", NAME, check=False)
    t0 = time.monotonic()
    up = lab("up", "--nodes", "3", "--name", NAME, check=False)
    took = time.monotonic() - t0
    if up.returncode != 0:
        print(up.stdout, up.stderr, file=sys.stderr)
        return 1
    print(f"lab up --nodes 3: all nodes Ready in {took:.1f} s (target <= 10 s)")
    try:
        client = RESTClient.from_kubeconfig(context=f"pykube-{NAME}", user_agent="bench")
        idle = rss_by_node()
        print("agent + runtime RSS idle: " + ", ".join(f"{n} {v:.1f} MiB"
                                                      for n, v in idle.items()))
        sent: dict[str, float] = {}
        done: dict[str, float] = {}
        uids: set[str] = set()
        procs = lab_processes()
        cpu_before = {role: cpu_seconds(ps) for role, ps in procs.items()}
        wall_before = psutil.cpu_times()
        stop = threading.Event()
        rv = client.list(PODS, "default", limit=1)["metadata"]["resourceVersion"]

        def watch() -> None:
            for ev in client.watch(PODS, "default", resource_version=rv, timeout_seconds=300):
                obj = ev.get("object") or {}
                name = (obj.get("metadata") or {}).get("name", "")
                if name in sent and name not in done and running(obj):
                    done[name] = time.perf_counter()
                    uid = obj["metadata"].get("uid", "")
                    uids.add(uid)
                    podtrace.stage("watch_running", uid)
                if len(done) >= args.pods or stop.is_set():
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        api_lat: list[float] = []

        def prober() -> None:
            while not stop.is_set():
                t = time.perf_counter()
                client.list(PODS, "kube-system", limit=1)
                api_lat.append(time.perf_counter() - t)
                time.sleep(0.02)

        probe = threading.Thread(target=prober, daemon=True)
        probe.start()
        names = [f"bench-{i:03d}" for i in range(args.pods)]

        def creator(chunk: list[str]) -> None:
            for n in chunk:
                sent[n] = time.perf_counter()
                client.create(PODS, pod(n), "default")

        t_start = time.perf_counter()
        creators = [threading.Thread(target=creator, args=(names[i::10],)) for i in range(10)]
        for t in creators:
            t.start()
        for t in creators:
            t.join()
        watcher.join(300)
        stop.set()
        probe.join(5)
        machine = psutil.cpu_times()
        after: dict[str, dict[int, float]] = {}
        for role, ps in lab_processes().items():
            known = {p.pid for p in ps}
            after[role] = cpu_seconds(ps + [p for p in procs.get(role, [])
                                            if p.pid not in known])
        lat = [done[n] - sent[n] for n in names if n in done]
        took_all = max(done.values(), default=t_start) - t_start
        print(f"{args.pods} pods at once: {len(done)} Running after "
              f"{took_all:.1f} s ({len(done) / took_all if took_all else 0:.1f} pods/s); "
              f"creation -> Running p50 {pct(lat, .5):.2f} s, p99 {pct(lat, .99):.2f} s "
              "(target p99 <= 3 s)")
        print_breakdown(trace_file, uids)
        spent = cpu_during(cpu_before, after)
        print("CPU seconds during the burst: " + ", ".join(
            f"{role} {v:.2f}" for role, v in sorted(spent.items())) +
            f"; lab total {sum(spent.values()):.2f}; machine (all users) "
            f"{machine.user + machine.system - wall_before.user - wall_before.system:.2f}")
        if floor is not None:
            cores = os.cpu_count() or 1
            f_s = args.pods * floor["total"] / cores
            print(f"CPU floor: runc create+start {floor['runc'] * 1000:.1f} ms + CNI ADD "
                  f"{floor['cni_add'] * 1000:.1f} ms per pod; x {args.pods} pods / {cores} "
                  f"cores = {f_s:.2f} s; p99 {pct(lat, .99):.2f} s is "
                  f"{pct(lat, .99) / f_s:.1f}x the floor")
        print(f"API during that load: {len(api_lat)} reads, p50 "
              f"{pct(api_lat, .5) * 1000:.1f} ms, p99 {pct(api_lat, .99) * 1000:.1f} ms "
              "(target p99 <= 100 ms)")
        per_node: dict[str, int] = {}
        for item in client.list(PODS, "default", labelSelector="app=bench")["items"]:
            node = (item.get("spec") or {}).get("nodeName", "")
            per_node[node] = per_node.get(node, 0) + 1
        busy = rss_by_node()
        print("agent + runtime RSS with pods: " + ", ".join(
            f"{n} {v:.1f} MiB ({per_node.get(n, 0)} pods)" for n, v in busy.items())
            + " (target <= 80 MB with 30 pods)")
        exec_times = []
        for _ in range(0 if args.no_exec else 20):
            t = time.perf_counter()
            subprocess.run(["kubectl", "--context", f"pykube-{NAME}", "exec", names[0], "--",
                            "true"], check=True, capture_output=True)
            exec_times.append(time.perf_counter() - t)
        if exec_times:
            print(f"kubectl exec POD -- true: p50 {pct(exec_times, .5) * 1000:.0f} ms, p99 "
                  f"{pct(exec_times, .99) * 1000:.0f} ms over 20 (target <= 300 ms)")
    finally:
        podtrace.configure(None)
        if not args.keep:
            down = lab("down", "--name", NAME, check=False)
            print("lab down:", "ok" if down.returncode == 0 else down.stderr.strip())
            shutil.rmtree(trace_dir, ignore_errors=True)
        else:
            print(f"pod trace kept: {trace_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
