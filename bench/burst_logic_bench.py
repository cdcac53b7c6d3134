#!/usr/bin/env python3
"""A pod burst through the cluster's logic alone: a real control plane (SQLite, the
embedded scheduler) on loopback and three real agents over the in-memory runtime, in one
process, no root. It shows the waits that are not runc's or CNI's (binding queues, watch
delivery, status writes) with the same per-stage trace as cluster_bench.py
(pykubelet.podtrace); the lab's figures add the runtime's work and the processes apart.

    .venv/bin/python bench/burst_logic_bench.py [--pods 100] [--nodes 3]

Prints, per step between traced stages, p50 / p99 / max in seconds, the time until
every pod's Running status was written, and the process's CPU seconds in that time (the
control plane's and agents' CPU per pod without runc and CNI). Figures only.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pykubelet import podtrace  # noqa: E402
from pykubelet.api.types import Pod  # noqa: E402
from pykubelet.client.bootstrap import join  # noqa: E402
from pykubelet.client.rest import PODS, RESTClient  # noqa: E402
from pykubelet.config import KubeletConfig  # noqa: E402
from pykubelet.controlplane.controllers.scheduler import run_scheduler  # noqa: E402
from pykubelet.controlplane.server import ControlPlaneThread, Options  # noqa: E402
from pykubelet.kubelet.agent import Kubelet  # noqa: E402
from pykubelet.kubelet.cluster.node import APINode, state_dir  # noqa: E402
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService  # noqa: E402

IMAGE = "busybox:1.36"


class NoCgroups:
    """Pod cgroups never made: no root here."""

    def ensure(self, pod: Pod) -> str:
        return ""

    def remove(self, uid: str) -> None:
        pass


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def wait(check: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--nodes", type=int, default=3)
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # every pod's MissingClusterDNS event, and the like
    tmp = Path(tempfile.mkdtemp(prefix="burst-logic-"))
    trace = tmp / "trace.jsonl"
    podtrace.configure(str(trace))
    cpt = ControlPlaneThread(Options(root=tmp / "cp", listen="127.0.0.1:0",
                                     controllers=False))
    cpt.cp.controllers = [run_scheduler]  # no leader election, no other controllers
    nodes: list[tuple[Kubelet, APINode]] = []
    try:
        cpt.start()
        cp = cpt.cp
        assert cp.tokens is not None
        for i in range(args.nodes):
            runtime = FakeRuntimeService()
            runtime.add_image(IMAGE)
            name = f"n{i}"
            config = KubeletConfig(nodeName=name, rootDir=str(tmp / name / "root"),
                                   staticPodPath="", podLogsDir=str(tmp / name / "logs"),
                                   healthzPort=0)
            k = Kubelet(config, runtime, pod_cgroups=NoCgroups(), memory_capacity=1 << 34,
                        node_ips=["127.0.0.1"])
            k.start()
            creds = join(cp.local_url, cp.tokens.join, cp.ca_hash, name, [],
                         state_dir(config.rootDir))
            node = APINode(k, creds, address="127.0.0.1", kubelet_version="v0",
                           server_port=0)
            node.start()
            nodes.append((k, node))
        for _, node in nodes:
            wait(node.reporter.registered.is_set, 30, "the nodes registered")
        time.sleep(1)
        admin = RESTClient.from_kubeconfig(cp.kubeconfig_path, user_agent="bench")
        names = [f"p{i:03d}" for i in range(args.pods)]

        def create(chunk: list[str]) -> None:
            for n in chunk:
                admin.create(PODS, {
                    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": n},
                    "spec": {"automountServiceAccountToken": False, "containers": [
                        {"name": "c", "image": IMAGE,
                         "resources": {"requests": {"cpu": "10m"}}}]}}, "default")

        t0 = time.time()
        cpu0 = time.process_time()
        creators = [threading.Thread(target=create, args=(names[i::10],)) for i in range(10)]
        for t in creators:
            t.start()
        for t in creators:
            t.join()

        def all_running() -> bool:
            recs = podtrace.read(trace).values()
            return sum("status_running" in r for r in recs) >= args.pods

        wait(all_running, 300, "every pod Running")
        cpu = time.process_time() - cpu0
        traces = podtrace.read(trace)
        end = max(r["status_running"] for r in traces.values())
        print(f"{args.pods} pods on {args.nodes} fake-runtime nodes: every Running status "
              f"written {end - t0:.2f} s after the first create")
        print(f"CPU of this process (control plane, agents, clients) from the first create "
              f"to the last Running status seen: {cpu:.2f} s, {1000 * cpu / args.pods:.1f} ms "
              f"per pod")
        steps = podtrace.breakdown(traces)
        order = list(podtrace.STAGES)

        def rank(step: str) -> tuple[bool, int, int]:
            a, b = step.removeprefix(podtrace.TOTAL).split(" -> ")
            return step.startswith(podtrace.TOTAL), order.index(b), order.index(a)

        print("seconds: p50 / p99 / max")
        for step in sorted(steps, key=rank):
            v = steps[step]
            print(f"  {step:40} {pct(v, .5):6.3f} {pct(v, .99):6.3f} {max(v):6.3f}")
    finally:
        for k, node in nodes:
            node.stop()
            k.stop()
        cpt.stop()
        podtrace.configure(None)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
