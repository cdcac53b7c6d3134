#!/usr/bin/env python3
"""Pod start latency of the agent, on our runtime and on containerd, in the same run.

For each runtime and each batch size (1, 10, 50 pods) the manifests appear at once in the
agent's static pod directory; a pod's start time runs from its manifest appearing to all
its containers Running in the agent's status (what /pods serves). Prints p50/p99 per batch
and runtime, and the ratio ours / containerd. Never passes or fails on time.

    sudo .venv/bin/python bench/pod_start_bench.py [--sizes 1,10,50] [--rounds-1 5]
        [--runtimes pykubelet,containerd] [-o json]

containerd is the peer in ../shared/peers/containerd (copied to /tmp, set up and started,
and stopped again if it was not running). Our runtime runs as `pykubelet runtime` on a temp
root with its own bridge (kbench0, 10.97.0.0/24). Everything is removed at the end.
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
import time
from pathlib import Path
from typing import Any

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pykubelet.config import KubeletConfig  # noqa: E402
from pykubelet.kubelet.cri.cri_client import CRICallError, CRIClient  # noqa: E402
from pykubelet.kubelet.kuberuntime.labels import NODE_NAME_ANNOTATION  # noqa: E402

PYKUBELET = REPO / ".venv" / "bin" / "pykubelet"
IMAGE = "localhost/busybox:latest"
CONTAINERD_ENDPOINT = "unix:///run/peer-containerd/containerd.sock"
BRIDGE = "kbench0"
SUBNET = "10.97.0.0/24"
NETNS_PREFIX = "kbench-"


def shared_dir() -> Path:
    beside = REPO.parent / "shared"
    return beside if (beside / "peers" / "containerd").is_dir() else Path("/work/shared")


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# --------------------------------------------------------------------------- runtimes


class Containerd:
    name = "containerd"
    endpoint = CONTAINERD_ENDPOINT

    def __init__(self) -> None:
        self.copy = Path("/tmp/kbench-peer-containerd")
        self.was_running = False

    def _running(self) -> bool:
        try:
            pid = int(Path("/run/peer-containerd/containerd.pid").read_text())
            return "/etc/peer-containerd/config.toml" in psutil.Process(pid).cmdline()
        except (OSError, ValueError, psutil.Error):
            return False

    def start(self) -> None:
        shutil.copytree(shared_dir() / "peers" / "containerd", self.copy, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".venv", "_gen", "out"))
        self.was_running = self._running()
        subprocess.run([str(self.copy / "setup.sh")], check=True, capture_output=True)
        if not self.was_running:
            subprocess.run([str(self.copy / "start.sh")], check=True, capture_output=True)

    def stop(self) -> None:
        try:  # someone else's pods on the shared peer: leave it running
            with CRIClient(self.endpoint, timeout=10) as c:
                others = any(not s.annotations.get(NODE_NAME_ANNOTATION, "").startswith("kbench-")
                             for s in c.list_pod_sandbox())
        except CRICallError:
            others = False
        if not self.was_running and not others:
            subprocess.run([str(self.copy / "clean.sh")], capture_output=True)
            for p in psutil.process_iter(["cmdline"]):  # shims left running nothing
                cmd = p.info["cmdline"] or []
                if cmd and "containerd-shim" in cmd[0] and CONTAINERD_ENDPOINT[7:] in cmd:
                    with contextlib.suppress(psutil.Error):
                        if not p.children():
                            p.kill()


class Pykubelet:
    name = "pykubelet"

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="kbench-rt-", dir="/tmp"))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"unix://{self.base}/cri.sock"

    def start(self) -> None:
        from pykubelet.runtime.image_build import build_busybox_image

        conf = self.base / "net.d"
        conf.mkdir(parents=True)
        (conf / "10-kbench.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": "kbench-net",
            "plugins": [{"type": "bridge", "bridge": BRIDGE, "isGateway": True,
                         "ipMasq": False, "hairpinMode": True,
                         "ipam": {"type": "host-local", "dataDir": str(self.base / "ipam"),
                                  "ranges": [[{"subnet": SUBNET}]]}}],
        }))
        tar = self.base / "busybox.tar"
        build_busybox_image(tar, name=IMAGE)
        subprocess.run([str(PYKUBELET), "image", "--root", str(self.base / "root"), "import",
                        str(tar)], check=True, capture_output=True)
        with open(self.base / "runtime.log", "ab") as log:
            self.proc = subprocess.Popen(
                [str(PYKUBELET), "runtime", "--root", str(self.base / "root"),
                 "--listen", self.endpoint, "--cni-conf-dir", str(conf),
                 "--cni-bin-dir", "/usr/lib/cni", "--cni-cache-dir", str(self.base / "cni"),
                 "--netns-prefix", NETNS_PREFIX],
                stdout=log, stderr=log, start_new_session=True)
        with CRIClient(self.endpoint) as c:
            c.wait_ready(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for p in psutil.process_iter(["cmdline"]):
            if str(self.base) in " ".join(p.info["cmdline"] or []):
                with contextlib.suppress(psutil.Error):
                    p.kill()
        with open("/proc/self/mountinfo") as f:
            mounts = [ln.split()[4] for ln in f]
        for m in sorted((m for m in mounts if m.startswith(
                (str(self.base) + "/", f"/run/netns/{NETNS_PREFIX}"))), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        if os.path.isdir("/run/netns"):
            for n in os.listdir("/run/netns"):
                if n.startswith(NETNS_PREFIX):
                    with contextlib.suppress(OSError):
                        os.unlink(f"/run/netns/{n}")
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)


# --------------------------------------------------------------------------- the agent


def pod_manifest(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{
                "name": "app", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"]}]}}


def run_batch(agent: Any, manifests: Path, node: str, n: int, tag: str) -> list[float]:
    names = [f"b{tag}-{i}" for i in range(n)]
    appeared: dict[str, float] = {}
    for name in names:
        tmp = manifests / f".{name}.tmp"
        tmp.write_text(yaml.safe_dump(pod_manifest(name)))
        os.replace(tmp, manifests / f"{name}.yaml")
        appeared[f"{name}-{node}"] = time.monotonic()
    done: dict[str, float] = {}
    deadline = time.monotonic() + 120 + n * 2
    while len(done) < n and time.monotonic() < deadline:
        # the statuses /pods serves, read in-process without encoding them (encoding 50
        # pods every few ms would compete with the agent for the GIL)
        pods = agent.pod_manager.pods()
        current = [(pods[u].name, st) for u, st in agent.status_manager.statuses().items()
                   if u in pods]
        now = time.monotonic()
        for pname, st in current:
            if pname in appeared and pname not in done and st.container_statuses and all(
                    cs.state.running is not None for cs in st.container_statuses):
                done[pname] = now - appeared[pname]
        time.sleep(0.01)
    if len(done) < n:
        raise RuntimeError(f"only {len(done)}/{n} pods started")
    for name in names:
        (manifests / f"{name}.yaml").unlink()
    # wait until the agent removed them from the runtime
    end = time.monotonic() + 120
    while time.monotonic() < end:
        left = [s for s in agent.cri.list_pod_sandbox()
                if s.annotations.get(NODE_NAME_ANNOTATION) == node]
        if not left:
            break
        time.sleep(0.2)
    return list(done.values())


def bench_runtime(rt: Any, sizes: list[int], rounds_1: int) -> dict[str, Any]:
    from pykubelet.kubelet.agent import Kubelet

    base = Path(tempfile.mkdtemp(prefix="kbench-", dir="/tmp"))
    node = f"kbench-{rt.name}"
    manifests = base / "manifests"
    manifests.mkdir()
    cfg = KubeletConfig(nodeName=node, rootDir=str(base / "root"), runDir=str(base / "run"),
                        containerRuntimeEndpoint=rt.endpoint, staticPodPath=str(manifests),
                        podLogsDir=str(base / "logs"), healthzPort=0)
    agent = Kubelet(cfg)
    agent.start()
    out: dict[str, Any] = {}
    try:
        run_batch(agent, manifests, node, 1, "warm")  # warm caches (image, CNI, imports)
        for n in sizes:
            samples: list[float] = []
            rounds = rounds_1 if n == 1 else 1
            for r in range(rounds):
                samples += run_batch(agent, manifests, node, n, f"{n}r{r}")
            out[str(n)] = {"n": len(samples), "p50_s": percentile(samples, 0.5),
                           "p99_s": percentile(samples, 0.99), "max_s": max(samples),
                           "mean_s": statistics.mean(samples)}
        means = agent.metrics.runtime_operation_means()
        out["cri_mean_ms"] = {op: 1000 * means[op] for op in sorted(means)
                              if op in ("RunPodSandbox", "CreateContainer", "StartContainer",
                                        "PodSandboxStatus", "ContainerStatus",
                                        "ListPodSandbox", "ListContainers")}
    finally:
        agent.stop()
        with CRIClient(rt.endpoint, timeout=60) as c:
            for s in c.list_pod_sandbox():
                if s.annotations.get(NODE_NAME_ANNOTATION) == node:
                    with contextlib.suppress(CRICallError):
                        c.stop_pod_sandbox(s.id)
                        c.remove_pod_sandbox(s.id)
        from pykubelet.kubelet.kuberuntime.sandbox_config import remove_pod_cgroups
        from pykubelet.kubelet.volumemanager.volumes import teardown_pod_dir

        pods = base / "root" / "pods"
        if pods.is_dir():
            for d in pods.iterdir():
                teardown_pod_dir(str(base / "root"), d.name)
                remove_pod_cgroups(d.name)
        shutil.rmtree(base, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,10,50")
    ap.add_argument("--rounds-1", type=int, default=5, help="rounds of the 1-pod batch")
    ap.add_argument("--runtimes", default="pykubelet,containerd")
    ap.add_argument("-o", "--output", choices=["table", "json"], default="table")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    sizes = [int(s) for s in args.sizes.split(",")]
    load0 = os.getloadavg()
    results: dict[str, Any] = {}
    for name in args.runtimes.split(","):
        rt = Pykubelet() if name == "pykubelet" else Containerd()
        try:
            rt.start()
            results[name] = bench_runtime(rt, sizes, args.rounds_1)
        finally:
            rt.stop()
    summary = {"results": results, "loadavg_start": load0, "loadavg_end": os.getloadavg(),
               "cpus": os.cpu_count()}
    if "pykubelet" in results and "containerd" in results:
        summary["ratio_pykubelet_over_containerd"] = {
            str(n): {q: results["pykubelet"][str(n)][q] / results["containerd"][str(n)][q]
                     for q in ("p50_s", "p99_s")} for n in sizes}
    if args.output == "json":
        print(json.dumps(summary, indent=2))
        return
    print(f"pod start (manifest appears -> all containers Running), {os.cpu_count()} CPUs, "
          f"load {load0[0]:.2f} -> {summary['loadavg_end'][0]:.2f}")
    print(f"{'runtime':<11} {'pods':>4} {'samples':>7} {'p50 s':>7} {'p99 s':>7} {'max s':>7}")
    for name, res in results.items():
        for n in sizes:
            r = res[str(n)]
            print(f"{name:<11} {n:>4} {r['n']:>7} {r['p50_s']:>7.3f} {r['p99_s']:>7.3f} "
                  f"{r['max_s']:>7.3f}")
    if "ratio_pykubelet_over_containerd" in summary:
        for n, r in summary["ratio_pykubelet_over_containerd"].items():
            print(f"ratio pykubelet/containerd at {n:>2} pods: p50 {r['p50_s']:.2f}x, "
                  f"p99 {r['p99_s']:.2f}x")
    for name, res in results.items():
        ops = ", ".join(f"{k} {v:.0f}" for k, v in res["cri_mean_ms"].items())
        print(f"{name} CRI mean ms: {ops}")


if __name__ == "__main__":
    main()
