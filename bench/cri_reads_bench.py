#!/usr/bin/env python3
"""Read-only CRI RPCs of our runtime: what kubelet's PLEG relist and status sync pay.

    sudo .venv/bin/python bench/cri_reads_bench.py [--pods 30] [-n 200]
        [-o after.json] [--baseline before.json]

Starts ``pykubelet runtime`` on a temp root (reference bridge + host-local on ``rrdb0``,
10.93.77.0/24), makes ``--pods`` sandboxes, each with one running container (``sleep``)
and one that has exited (``true``, like a finished init container), then times ``-n``
calls of ListContainers, ContainerStatus (rotating over every container), ListPodSandbox
and PodSandboxStatus (rotating over every pod) from one client, serially, and Version as
the floor (an RPC that does nothing: gRPC's own cost). Prints, per RPC,
the client-side median and p99 in ms and the runtime process's CPU time per call (user +
system, from /proc: what a busy runtime takes from its create/start path under the GIL);
then once more while another client loops create/start/stop/remove in one more pod (the
write path the reads contend with when kubelet starts pods).
``-o`` writes the figures as JSON; ``--baseline`` prints a before/after table against such
a file. Never passes or fails on time. Everything it made is removed at the end.

To measure older code, export its tree and put it first on the runtime's path::

    git archive <commit> pykubelet | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before .venv/bin/python bench/cri_reads_bench.py -o before.json
    .venv/bin/python bench/cri_reads_bench.py --baseline before.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pykubelet._proto.runtime.v1 import api_pb2 as pb  # noqa: E402
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc  # noqa: E402

IMAGE = "localhost/busybox:latest"
BRIDGE = "rrdb0"
SUBNET = "10.93.77.0/24"
PREFIX = "rrdbench-"
CGROUP_PARENT = "/rrdbench"
RPCS = ("ListContainers", "ContainerStatus", "ListPodSandbox", "PodSandboxStatus", "Version")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` (the gRPC workers included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Runtime:
    """``pykubelet runtime`` on a temp root with its own bridge and the busybox image."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="rrdbench-"))
        self.root = self.base / "root"
        self.sock = str(self.base / "cri.sock")
        self.conf_dir = self.base / "net.d"
        self.conf_dir.mkdir(parents=True)
        conf = {"cniVersion": "1.0.0", "name": "rrdbench", "plugins": [
            {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False,
             "ipam": {"type": "host-local", "dataDir": str(self.base / "ipam"),
                      "ranges": [[{"subnet": SUBNET}]]}}]}
        (self.conf_dir / "10-rrdbench.conflist").write_text(json.dumps(conf))
        from pykubelet.runtime.image_build import build_busybox_image
        from pykubelet.runtime.images import ImageStore

        archive = self.base / "busybox-oci.tar"
        build_busybox_image(archive, name=IMAGE)
        ImageStore(self.root / "images").import_archive(archive, name=IMAGE)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"unix://{self.sock}"

    def start(self) -> None:
        logf = open(self.base / "runtime.log", "ab")  # noqa: SIM115 (the child owns it)
        self.proc = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "pykubelet"), "runtime", "--root", str(self.root),
             "--listen", self.endpoint, "--cni-conf-dir", str(self.conf_dir),
             "--cni-bin-dir", "/usr/lib/cni", "--cni-cache-dir", str(self.base / "cni-cache"),
             "--netns-prefix", PREFIX, "--log-level", "warning"],
            stdout=logf, stderr=logf, stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        deadline = time.monotonic() + 30
        with grpc.insecure_channel(self.endpoint) as ch:
            stub = pb_grpc.RuntimeServiceStub(ch)
            while True:
                try:
                    stub.Version(pb.VersionRequest(version="v1"), timeout=1)
                    return
                except grpc.RpcError:
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        raise
                    time.sleep(0.1)

    def destroy(self) -> None:
        """Pods over CRI, then the process, and whatever still lingers."""
        with contextlib.suppress(Exception):
            if self.proc is not None and self.proc.poll() is None:
                remove_everything(self.endpoint)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        runc_root = self.root / "runc"
        for d in runc_root.iterdir() if runc_root.is_dir() else []:
            subprocess.run(["runc", "--root", str(runc_root), "delete", "--force", d.name],
                           capture_output=True)
        with open("/proc/self/mountinfo") as f:
            mps = [ln.split()[4] for ln in f]
        ours = (str(self.base) + "/", f"/run/netns/{PREFIX}")
        for mp in sorted((m for m in mps if m.startswith(ours)), key=len, reverse=True):
            subprocess.run(["umount", "-l", mp], capture_output=True)
        for n in os.listdir("/run/netns") if os.path.isdir("/run/netns") else []:
            if n.startswith(PREFIX):
                with contextlib.suppress(OSError):
                    os.unlink(f"/run/netns/{n}")
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
        with contextlib.suppress(OSError):
            for d in sorted(Path("/sys/fs/cgroup" + CGROUP_PARENT).glob("**/"),
                            key=lambda p: len(str(p)), reverse=True):
                with contextlib.suppress(OSError):
                    d.rmdir()
        shutil.rmtree(self.base, ignore_errors=True)


def remove_everything(endpoint: str) -> None:
    with grpc.insecure_channel(endpoint) as ch:
        rt = pb_grpc.RuntimeServiceStub(ch)
        for c in rt.ListContainers(pb.ListContainersRequest(), timeout=60).containers:
            with contextlib.suppress(grpc.RpcError):
                rt.RemoveContainer(pb.RemoveContainerRequest(container_id=c.id), timeout=60)
        for p in rt.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=60).items:
            with contextlib.suppress(grpc.RpcError):
                rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=p.id), timeout=60)


def _pod_config(i: int, log_root: Path) -> pb.PodSandboxConfig:
    name, uid = f"rrd-{i}", f"rrd-uid-{i}"
    log_dir = log_root / f"default_{name}_{uid}"
    log_dir.mkdir(parents=True, exist_ok=True)
    ns = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace="default"),
        hostname=name, log_directory=str(log_dir),
        labels={"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default",
                "io.kubernetes.pod.uid": uid},
        annotations={"kubernetes.io/config.source": "file"},
        linux=pb.LinuxPodSandboxConfig(cgroup_parent=CGROUP_PARENT,
                                       security_context=pb.LinuxSandboxSecurityContext(
                                           namespace_options=ns)))


def _container_config(name: str, command: list[str]) -> pb.ContainerConfig:
    return pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image=IMAGE),
        command=command, log_path=f"{name}/0.log",
        labels={"io.kubernetes.container.name": name},
        annotations={"io.kubernetes.container.restartCount": "0"},
        linux=pb.LinuxContainerConfig(resources=pb.LinuxContainerResources(
            cpu_period=100000, cpu_shares=2, oom_score_adj=1000)))


def populate(rt: pb_grpc.RuntimeServiceStub, pods: int, log_root: Path,
             ) -> tuple[list[str], list[str]]:
    """``pods`` sandboxes, each with a running ``app`` and an exited ``init``."""
    pod_ids: list[str] = []
    cids: list[str] = []
    for i in range(pods):
        cfg = _pod_config(i, log_root)
        pid = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=60).pod_sandbox_id
        pod_ids.append(pid)
        for name, cmd in (("init", ["true"]), ("app", ["sleep", "3600"])):
            cid = rt.CreateContainer(pb.CreateContainerRequest(
                pod_sandbox_id=pid, config=_container_config(name, cmd), sandbox_config=cfg),
                timeout=60).container_id
            rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
            cids.append(cid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # every init has exited
        states = [c.state for c in rt.ListContainers(pb.ListContainersRequest()).containers
                  if c.metadata.name == "init"]
        if all(s == pb.CONTAINER_EXITED for s in states):
            break
        time.sleep(0.1)
    return pod_ids, cids


def measure(pid: int, n: int, call: Callable[[int], Any]) -> dict[str, float]:
    for i in range(min(n, 20)):  # warm-up
        call(i)
    times = []
    cpu0 = cpu_seconds(pid)
    for i in range(n):
        t0 = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - t0) * 1000)
    cpu = (cpu_seconds(pid) - cpu0) * 1000 / n
    return {"median_ms": statistics.median(times), "p99_ms": percentile(times, 0.99),
            "server_cpu_ms": cpu}


class Churn:
    """Create, start, stop and remove containers in one more pod, in a loop, from a thread:
    the write path the reads contend with (GIL, locks) while kubelet starts pods."""

    def __init__(self, endpoint: str, log_root: Path) -> None:
        self.endpoint = endpoint
        self.log_root = log_root
        self.stop = threading.Event()
        self.cycles = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Churn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(120)

    def _loop(self) -> None:
        with grpc.insecure_channel(self.endpoint) as ch:
            rt = pb_grpc.RuntimeServiceStub(ch)
            cfg = _pod_config(9999, self.log_root)
            pod = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=60).pod_sandbox_id
            i = 0
            while not self.stop.is_set():
                cc = _container_config("churn", ["sleep", "1000"])
                cc.metadata.attempt = i
                cid = rt.CreateContainer(pb.CreateContainerRequest(
                    pod_sandbox_id=pod, config=cc, sandbox_config=cfg), timeout=60).container_id
                rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
                rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=0), timeout=60)
                rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=60)
                i += 1
                self.cycles = i
            rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod), timeout=60)


def run(pods: int, n: int) -> dict[str, Any]:
    runtime = Runtime()
    try:
        runtime.start()
        assert runtime.proc is not None
        with grpc.insecure_channel(runtime.endpoint) as ch:
            rt = pb_grpc.RuntimeServiceStub(ch)
            log(f"creating {pods} pods ({2 * pods} containers)...")
            pod_ids, cids = populate(rt, pods, runtime.base / "logs")
            calls: dict[str, Callable[[int], Any]] = {
                "ListContainers": lambda i: rt.ListContainers(pb.ListContainersRequest()),
                "ContainerStatus": lambda i: rt.ContainerStatus(
                    pb.ContainerStatusRequest(container_id=cids[i % len(cids)])),
                "ListPodSandbox": lambda i: rt.ListPodSandbox(pb.ListPodSandboxRequest()),
                "PodSandboxStatus": lambda i: rt.PodSandboxStatus(
                    pb.PodSandboxStatusRequest(pod_sandbox_id=pod_ids[i % len(pod_ids)])),
                # the floor: an RPC that does no work, i.e. what gRPC's Python server costs
                "Version": lambda i: rt.Version(pb.VersionRequest(version="v1")),
            }
            results = {name: measure(runtime.proc.pid, n, calls[name]) for name in RPCS}
            log("again, while another client creates/starts/stops/removes containers...")
            with Churn(runtime.endpoint, runtime.base / "logs") as churn:
                # server CPU is not per call here: the churn's share is in it
                churned = {name: measure(runtime.proc.pid, n, calls[name]) for name in RPCS}
            log(f"  ({churn.cycles} container lifecycles meanwhile)")
        return {"pods": pods, "containers": len(cids), "calls": n, "rpcs": results,
                "rpcs_under_churn": churned, "churn_cycles": churn.cycles}
    finally:
        runtime.destroy()


def report(res: dict[str, Any], baseline: dict[str, Any] | None) -> None:
    print(f"read-only CRI RPCs, {res['pods']} pods / {res['containers']} containers, "
          f"{res['calls']} serial calls each, {os.cpu_count()} CPUs")
    for phase, title in (("rpcs", "idle runtime"),
                         ("rpcs_under_churn", "while containers are created/started/removed")):
        if phase not in res:
            continue
        print(f"-- {title}")
        if baseline is None or phase not in baseline:
            print(f"{'rpc':18} {'median ms':>10} {'p99 ms':>8} {'server cpu ms':>14}")
            for name in RPCS:
                if name not in res[phase]:
                    continue
                r = res[phase][name]
                print(f"{name:18} {r['median_ms']:10.2f} {r['p99_ms']:8.2f} "
                      f"{r['server_cpu_ms']:14.2f}")
            continue
        print(f"{'rpc':18} {'median ms before/after':>23} {'p99 ms before/after':>20} "
              f"{'server cpu ms before/after':>27}")
        for name in RPCS:
            if name not in res[phase] or name not in baseline[phase]:
                continue
            a, b = res[phase][name], baseline[phase][name]
            print(f"{name:18} {b['median_ms']:11.2f} /{a['median_ms']:9.2f} "
                  f"{b['p99_ms']:9.2f} /{a['p99_ms']:8.2f} "
                  f"{b['server_cpu_ms']:13.2f} /{a['server_cpu_ms']:11.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pods", type=int, default=30)
    ap.add_argument("-n", type=int, default=200, help="calls per RPC")
    ap.add_argument("-o", "--output", type=Path, help="write the figures as JSON here")
    ap.add_argument("--baseline", type=Path, help="a JSON from -o to compare against")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("cri_reads_bench: needs root (namespaces, runc)", file=sys.stderr)
        return 2
    res = run(args.pods, args.n)
    if args.output:
        args.output.write_text(json.dumps(res, indent=1))
    baseline = json.loads(args.baseline.read_text()) if args.baseline else None
    report(res, baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
