#!/usr/bin/env python3
"""What one resource-metrics scrape costs with ``--pods`` running pods (issue 28 item 3):

    sudo flock /tmp/pykube-root-tests.lock .venv/bin/python bench/resource_metrics_bench.py \
        [--pods 30] [-n 50]

Starts ``pykubelet runtime`` on a temp root (cri_reads_bench's: bridge ``rrdb0``), makes
``--pods`` sandboxes each with one running ``sleep`` container labelled as kubelet labels
them, then times ``-n`` scrapes, serially, split into the three parts a scrape is:

1. the runtime's side: ListContainers + ListContainerStats (cgroup reads and the writable
   layer's du per container), as the runtime process's CPU (user + system, /proc);
2. the agent's side: the two CRI calls from the client, the root cgroup read and the
   Prometheus text (``/metrics/resource``'s handler, in this process), CPU and wall time;
3. the control plane's side: decoding that text into points and storing them
   (metrics-server's decode + store), CPU per node scraped.

Prints per-scrape medians/p99 in ms and the body's size. Figures only, never pass/fail.
Everything it made is removed at the end.

First run (2 shared cores, 30 pods, 50 scrapes; 15.9 kB body): wall 23.0 ms median /
29.7 ms p99 at the agent; the runtime's CPU 19.2 ms a scrape (mean; ListContainerStats'
cgroup reads and du of each writable layer are most of it), the agent's 5.0 ms, the
control plane's decode + store 1.4 ms. At metrics-server's 15 s resolution that is about
0.17% of one core per node, and none while nobody asks for metrics.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cri_reads_bench import (
    IMAGE,
    Runtime,
    _pod_config,
    cpu_seconds,
    log,
    percentile,
)

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc
from pykubelet.controlplane.metricsserver.decode import decode
from pykubelet.controlplane.metricsserver.storage import Storage
from pykubelet.kubelet.cri.cri_client import CRIClient
from pykubelet.kubelet.stats import resource_metrics
from pykubelet.kubelet.stats.cri_stats import list_pods_usage
from pykubelet.kubelet.stats.node_stats import read_node_usage


def populate(rt: pb_grpc.RuntimeServiceStub, pods: int, log_root: Path) -> None:
    for i in range(pods):
        cfg = _pod_config(i, log_root)
        sid = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=60).pod_sandbox_id
        labels = dict(cfg.labels, **{"io.kubernetes.container.name": "app"})
        cid = rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, sandbox_config=cfg, config=pb.ContainerConfig(
                metadata=pb.ContainerMetadata(name="app"), image=pb.ImageSpec(image=IMAGE),
                command=["sleep", "3600"], log_path="app/0.log", labels=labels,
                linux=pb.LinuxContainerConfig(resources=pb.LinuxContainerResources(
                    cpu_period=100000, cpu_shares=2, oom_score_adj=1000)))),
            timeout=60).container_id
        rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)


def stats(values: list[float]) -> str:
    return f"median {statistics.median(values):7.2f}  p99 {percentile(values, 0.99):7.2f}"


def run(pods: int, n: int) -> None:
    runtime = Runtime()
    try:
        runtime.start()
        assert runtime.proc is not None
        with grpc.insecure_channel(runtime.endpoint) as ch:
            log(f"creating {pods} pods...")
            populate(pb_grpc.RuntimeServiceStub(ch), pods, runtime.base / "logs")
        cri = CRIClient(runtime.endpoint)
        storage = Storage()

        def scrape() -> bytes:
            return resource_metrics.collect(read_node_usage, lambda: list_pods_usage(cri))

        for _ in range(3):  # warm-up
            body = scrape()
        walls, agent_cpu, runtime_cpu, cp_cpu = [], [], [], []
        for _ in range(n):
            r0, c0, w0 = cpu_seconds(runtime.proc.pid), time.process_time(), time.perf_counter()
            body = scrape()
            walls.append((time.perf_counter() - w0) * 1000)
            agent_cpu.append((time.process_time() - c0) * 1000)
            runtime_cpu.append((cpu_seconds(runtime.proc.pid) - r0) * 1000)
            c1 = time.process_time()
            storage.store("node", decode(body.decode()))
            cp_cpu.append((time.process_time() - c1) * 1000)
        cri.close()
        shown = sum(1 for line in body.decode().splitlines()
                    if line.startswith("container_cpu_usage_seconds_total{"))
        print(f"/metrics/resource scrape, {pods} pods ({shown} containers in the body, "
              f"{len(body)} bytes), {n} scrapes, ms per scrape")
        print(f"  wall (agent, incl. CRI round trips)  {stats(walls)}")
        print(f"  runtime CPU (ListContainers+Stats)   {stats(runtime_cpu)}  "
              "(/proc, 10 ms ticks: the mean is the figure)"
              f"  mean {statistics.mean(runtime_cpu):6.2f}")
        print(f"  agent CPU (client, cgroups, text)    {stats(agent_cpu)}")
        print(f"  control plane CPU (decode + store)   {stats(cp_cpu)}")
    finally:
        runtime.destroy()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pods", type=int, default=30)
    ap.add_argument("-n", type=int, default=50, help="scrapes")
    args = ap.parse_args()
    run(args.pods, args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
