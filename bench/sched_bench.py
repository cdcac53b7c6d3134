#!/usr/bin/env python3
"""pysched benchmark with scheduler_perf-shaped workloads; prints figures, never fails on time.

Workloads (test/integration/scheduler_perf/config/performance-config.yaml shapes):
  SchedulingBasic           nodes 4 cpu / 32Gi / 110 pods; pods 100m / 500Mi
  SchedulingNodeAffinity    half the nodes in zone1; pods require zone In [zone1]
  SchedulingPodAntiAffinity pods repel each other (required, topologyKey hostname)
  SchedulingPodAffinity     pods attract each other (required, topologyKey zone; one zone)
  SchedulingPreferredPodAffinity / SchedulingPreferredPodAntiAffinity
                            the same as preferences (weight 1, topologyKey hostname)
  PreemptionBasic           nodes full of low-priority pods; high-priority pods preempt

Init pods are bound directly (as scheduler_perf's createPods with nodeName would leave them);
measured pods go through the queue and the whole cycle (filter, score, assume, bind; the
binding returns to the scheduler as the informer's update). Reported: pods/s over the measured
pods, attempt latency p50/p99 (scheduler_scheduling_attempt_duration_seconds), and, for
SchedulingBasic, the cost per pod as the node count grows.

  python bench/sched_bench.py            # the standard set
  python bench/sched_bench.py --quick    # smaller sizes
  python bench/sched_bench.py --workload SchedulingBasic --nodes 5000 --pods 10000
  python bench/sched_bench.py --workload SchedulingBasic --nodes 5000 --pods 2000 --extender

``--extender`` adds one local scheduler extender (filter + prioritize, nodeCacheCapable, weight
1), a stdlib HTTP server in its own process on 127.0.0.1 that passes every node and scores it
by its name; the figures then include the share of the time spent in extender calls
(scheduler_extender_duration_seconds, summed).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from pysched import decode as sched_decode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched.api import EmbeddedScheduler

# The bench's extender, run as `python -c EXTENDER_SERVER`: prints its port, then serves.
EXTENDER_SERVER = r"""
import json, sys, zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as Go's servers: no 40 ms delayed-ACK stalls
    def log_message(self, *a):
        pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        names = body["NodeNames"]
        if self.path.endswith("/filter"):
            out = {"NodeNames": names, "FailedNodes": {}, "Error": ""}
        else:
            out = [{"Host": n, "Score": zlib.crc32(n.encode()) % 11} for n in names]
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"""


def start_extender() -> tuple[Any, dict[str, Any]]:
    """The bench extender's process and its KubeSchedulerConfiguration entry."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", EXTENDER_SERVER], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, {"urlPrefix": f"http://127.0.0.1:{port}/ext", "filterVerb": "filter",
                  "prioritizeVerb": "prioritize", "weight": 1, "nodeCacheCapable": True}


def node(i: int, zone: str | None = None) -> Node:
    labels = {"kubernetes.io/hostname": f"node-{i}"}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    return sched_decode.node(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
        }
    )


def pod(
    name: str,
    *,
    node_name: str = "",
    cpu: str = "100m",
    memory: str = "500Mi",
    priority: int | None = None,
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
) -> Pod:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ]
    }
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if affinity:
        spec["affinity"] = affinity
    return sched_decode.pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "sched-0", "labels": labels or {}},
            "spec": spec,
        }
    )


def _term(topology_key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": topology_key}


HOSTNAME = "kubernetes.io/hostname"
# Init and measured pods of these workloads carry color=green and this affinity.
AFFINITY: dict[str, dict[str, Any]] = {
    "SchedulingPodAntiAffinity": {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(HOSTNAME)]}
    },
    "SchedulingPodAffinity": {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term("topology.kubernetes.io/zone")]
        }
    },
    "SchedulingPreferredPodAffinity": {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": _term(HOSTNAME)}
            ]
        }
    },
    "SchedulingPreferredPodAntiAffinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": _term(HOSTNAME)}
            ]
        }
    },
}


class Informer:
    """Binder that hands every binding back to the scheduler, as the pod informer would."""

    def __init__(self) -> None:
        self.sched: EmbeddedScheduler | None = None
        self.bound = 0
        self.pending: list[tuple[Pod, str]] = []

    def bind(self, p: Pod, node_name: str) -> None:
        self.bound += 1
        self.pending.append((p, node_name))

    def flush(self) -> None:
        assert self.sched is not None
        for p, _ in self.pending:
            old = self.sched.get_pod(p) or p
            self.sched.on_pod_update(old, p)
        self.pending.clear()

    # status writer
    def set_pod_condition(self, p: Pod, reason: str, message: str) -> None:
        pass

    def set_nominated_node_name(self, p: Pod, node_name: str) -> None:
        pass

    def evict(self, victim: Pod, preemptor: Pod, node_name: str) -> None:
        assert self.sched is not None
        self.sched.on_pod_delete(victim)


def run(
    workload: str,
    nodes: int,
    init_pods: int,
    pods: int,
    fast: bool = True,
    seed: int = 0,
    extender: dict[str, Any] | None = None,
) -> dict[str, Any]:
    inf = Informer()
    config = None
    if extender is not None:
        from pysched.config import load_config

        config = load_config({"apiVersion": "kubescheduler.config.k8s.io/v1",
                              "kind": "KubeSchedulerConfiguration", "extenders": [extender]})
    s = EmbeddedScheduler(inf, config=config, status_writer=inf, rng=random.Random(seed),
                          fast=fast)
    inf.sched = s
    for i in range(nodes):
        zone = None
        if workload == "SchedulingNodeAffinity":
            zone = "zone1" if i % 2 == 0 else "zone2"
        elif workload == "SchedulingPodAffinity":
            zone = "zone1"
        s.on_node_add(node(i, zone))
    pod_aff = AFFINITY.get(workload)
    for j in range(init_pods):
        n = f"node-{j % nodes}"
        if workload == "PreemptionBasic":
            s.on_pod_add(pod(f"init-{j}", node_name=n, cpu="900m", priority=1))
        elif pod_aff is not None:
            s.on_pod_add(pod(f"init-{j}", node_name=n, labels={"color": "green"}, affinity=pod_aff))
        else:
            s.on_pod_add(pod(f"init-{j}", node_name=n))
    measured = []
    for j in range(pods):
        if workload == "SchedulingNodeAffinity":
            aff = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": ["zone1"],
                                    }
                                ]
                            }
                        ]
                    }
                }
            }
            measured.append(pod(f"p-{j}", affinity=aff))
        elif pod_aff is not None:
            measured.append(pod(f"p-{j}", labels={"color": "green"}, affinity=pod_aff))
        elif workload == "PreemptionBasic":
            measured.append(pod(f"p-{j}", cpu="900m", priority=10))
        else:
            measured.append(pod(f"p-{j}"))
    s.cache.update_snapshot(s.snapshot)  # warm: the first snapshot is built before timing
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        c0 = time.process_time()
        for p in measured:
            s.on_pod_add(p)
        scheduled = 0
        attempts = 0
        while True:
            rec = s.schedule_one(timeout=0)
            if rec is None:
                if inf.pending:
                    inf.flush()
                    continue
                # preemption leaves preemptors waiting in backoff: let them come back
                if workload == "PreemptionBasic" and s.pending_pods()["backoff"]:
                    s.queue.flush_backoff_q_completed()
                    if s.pending_pods()["active"] == 0:
                        _advance_backoff(s)
                    continue
                break
            attempts += 1
            if rec.result == "scheduled":
                scheduled += 1
            inf.flush()
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
    finally:
        gc.enable()
    durations = sorted(s.metrics.all_durations())
    st = s.scheduler.fast.stats if s.scheduler.fast is not None else {}
    return {
        "workload": workload,
        "nodes": nodes,
        "init_pods": init_pods,
        "pods": pods,
        "scheduled": scheduled,
        "attempts": attempts,
        "seconds": elapsed,
        "pods_per_s": scheduled / elapsed if elapsed else 0.0,
        "cpu_seconds": cpu,
        "pods_per_cpu_s": scheduled / cpu if cpu else 0.0,
        "p50_ms": _q(durations, 0.5) * 1e3,
        "p99_ms": _q(durations, 0.99) * 1e3,
        "fast": st,
        "extender_share": s.metrics.extender_seconds / elapsed if elapsed else 0.0,
    }


def _advance_backoff(s: EmbeddedScheduler) -> None:
    """Preemptors wait out their backoff; on a real clock that is sleeping, so skip it."""
    q = s.queue
    with q._lock:
        for pinfo in list(q._backoff.list()):
            q._backoff.delete(pinfo.key)
            pinfo.timestamp -= 60
            q._backoff.add_or_update(pinfo)
    q.flush_backoff_q_completed()


def _q(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def fmt(r: dict[str, Any]) -> str:
    return (
        f"{r['workload']:<34} nodes={r['nodes']:>6} init={r['init_pods']:>6} pods={r['pods']:>6} "
        f"scheduled={r['scheduled']:>6} {r['pods_per_s']:8.1f} pods/s "
        f"({r['pods_per_cpu_s']:7.1f} per CPU-s)  "
        f"attempt p50={r['p50_ms']:.2f} ms p99={r['p99_ms']:.2f} ms"
        + (f"  in extender calls {100 * r['extender_share']:.0f}%" if r["extender_share"] else "")
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workload")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--init-pods", type=int, default=0)
    ap.add_argument("--pods", type=int)
    ap.add_argument("--plain", action="store_true", help="plugin path only (no vectorised path)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--extender", action="store_true", help="with one local extender")
    a = ap.parse_args()
    if a.workload:
        proc, ext = start_extender() if a.extender else (None, None)
        try:
            r = run(a.workload, a.nodes or 500, a.init_pods, a.pods or 1000, fast=not a.plain,
                    extender=ext)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(5)
        print(fmt(r), flush=True)
        return
    k = 5 if a.quick else 1
    plan = [
        ("SchedulingBasic", 500, 500, 1000),
        ("SchedulingBasic", 5000, 1000, 10000 // k),
        ("SchedulingNodeAffinity", 5000, 1000, 5000 // k),
        ("SchedulingPodAntiAffinity", 5000, 1000, 1000 // k),
        ("SchedulingPodAffinity", 5000, 1000, 1000 // k),
        ("SchedulingPreferredPodAffinity", 5000, 1000, 1000 // k),
        ("SchedulingPreferredPodAntiAffinity", 5000, 1000, 1000 // k),
        ("PreemptionBasic", 500, 2000, 500 // k),
    ]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    print(
        f"# pysched scheduler_perf-style benchmark (Python, vectorised path); "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at start (others' load inflates wall "
        "times: the per-CPU-s figure is this process's own cost)",
        flush=True,
    )
    for w, n, init, p in plan:
        print(fmt(run(w, n, init, p, fast=not a.plain)), flush=True)
    print("# cost per pod vs node count (SchedulingBasic, 2000 measured pods, 1000 init pods)")
    for n in (100, 500, 5000, 15000):
        r = run("SchedulingBasic", n, 1000, 2000 // k, fast=not a.plain)
        print(
            f"nodes={n:>6}  {1e6 / r['pods_per_s']:8.1f} us/pod wall  "
            f"{1e6 / r['pods_per_cpu_s']:8.1f} us/pod CPU  {r['pods_per_s']:8.1f} pods/s  "
            f"p50={r['p50_ms']:.2f} ms p99={r['p99_ms']:.2f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
