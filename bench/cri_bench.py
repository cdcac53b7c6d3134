#!/usr/bin/env python3
"""CRI benchmark: pykubelet's runtime against containerd 1.6 (the peer), same client, one run.

    sudo .venv/bin/python bench/cri_bench.py [-n 20] [--pods 50] [--peer-dir /tmp/peer-containerd]

1. Pod lifecycle x N (after a warm-up) on each runtime, interleaved run by run, each run
   one ``bench.py --only cri -n 1`` of the peer (its cri_client: RuntimeDefault seccomp,
   BestEffort resources, a log directory, ``sh -c 'echo hi; sleep 3600'``, ping + log +
   ExecSync checks):
   RunPodSandbox, CreateContainer+StartContainer, sandbox ready -> RUNNING, teardown.
2. Memory with ``--pods`` sleeping pods (one ``sleep`` container each) on each runtime:
   the runtime daemon's RSS idle and loaded; host memory added per pod, accounted as the
   PSS of every process the runtime keeps per pod (ours: conmon + container; containerd:
   shim + pause + container), plus the daemon's own PSS growth, plus the kernel's growth
   (Slab + KernelStack + PageTables: namespaces, veths, cgroups, mounts), divided by the
   pod count. The raw MemAvailable
   drop is reported too, but on a shared host other workloads swamp it.
Prints a JSON document and a summary with the ratios ours / containerd.

Our runtime runs from a temp root with its own bridge ``rcrib0`` on 10.94.200.0/24 (the
reference bridge + host-local + portmap plugins, like the peer's conflist); everything it
made is removed at the end. The peer must be set up (its setup.sh) in --peer-dir; it is
started with its start.sh when not running and stopped again afterwards in that case.
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
import uuid
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pykubelet._proto.runtime.v1 import api_pb2 as pb  # noqa: E402
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc  # noqa: E402

IMAGE = "localhost/busybox:latest"
OUR_SUBNET = "10.94.200.0/24"  # with the reference plugins, like the peer
PYCNI_SUBNET = "10.94.201.0/24"  # --with-pycni: our own plugins, in-process
PEER_SOCK = "/run/peer-containerd/containerd.sock"
PEER_PIDFILE = "/run/peer-containerd/containerd.pid"
PEER_SUBNET = "10.200.0.0/24"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ our runtime

class OurRuntime:
    """A `pykubelet runtime` on a temp root, with its CNI config and the peer's image."""

    def __init__(self, peer_dir: Path, pycni: bool = False) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="rtcri-bench-"))
        self.pycni = pycni
        self.bridge = "rcrib1" if pycni else "rcrib0"
        self.subnet = PYCNI_SUBNET if pycni else OUR_SUBNET
        self.prefix = "rtcri-benchp-" if pycni else "rtcri-bench-"
        self.bin_dirs = ["/usr/lib/cni"]
        self.root = self.base / "root"
        self.sock = str(self.base / "cri.sock")
        self.conf_dir = self.base / "net.d"
        self.ipam_dir = self.base / "ipam"
        self.proc: subprocess.Popen | None = None
        self.conf_dir.mkdir(parents=True)
        bridge_t, ipam_t = "bridge", "host-local"
        if pycni:
            bin_dir = self.base / "pycni-bin"
            subprocess.run([str(REPO / ".venv" / "bin" / "pycni"), "install", "--bin-dir",
                            str(bin_dir)], check=True, capture_output=True)
            self.bin_dirs.append(str(bin_dir))
            bridge_t, ipam_t = "pycni-bridge", "pycni-host-local"
        conf = {"cniVersion": "1.0.0", "name": self.prefix.rstrip("-"), "plugins": [
            {"type": bridge_t, "bridge": self.bridge, "isGateway": True, "ipMasq": True,
             "hairpinMode": True,
             "ipam": {"type": ipam_t, "dataDir": str(self.ipam_dir),
                      "ranges": [[{"subnet": self.subnet}]], "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ]}
        (self.conf_dir / "10-rtcri-bench.conflist").write_text(json.dumps(conf))
        from pykubelet.runtime.images import ImageStore

        ImageStore(self.root / "images").import_archive(peer_dir / "out" / "busybox-oci.tar",
                                                         name=IMAGE)

    @property
    def endpoint(self) -> str:
        return f"unix://{self.sock}"

    def start(self) -> None:
        logf = open(self.base / "runtime.log", "ab")  # noqa: SIM115 (the child owns it)
        self.proc = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "pykubelet"), "runtime", "--root", str(self.root),
             "--listen", self.endpoint, "--cni-conf-dir", str(self.conf_dir),
             "--cni-bin-dir", ":".join(self.bin_dirs),
             "--cni-cache-dir", str(self.base / "cni-cache"),
             "--netns-prefix", self.prefix, "--log-level", "warning"],
            stdout=logf, stderr=logf, stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        wait_ready(self.endpoint, 30)

    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def pod_processes(self) -> list[int]:
        """conmon monitors (their cmdline names our root) and everything below them."""
        me = self.proc.pid if self.proc is not None else -1
        tops = [p for p in _all_pids() if p != me and str(self.root) in _cmdline(p)]
        return _with_descendants(tops)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def destroy(self) -> None:
        """Leave nothing: pods over CRI first, then anything that still lingers."""
        with contextlib.suppress(Exception):
            if self.proc is not None and self.proc.poll() is None:
                remove_everything(self.endpoint)
        self.stop()
        runc_root = self.root / "runc"
        if runc_root.is_dir():
            for d in runc_root.iterdir():
                subprocess.run(["runc", "--root", str(runc_root), "delete", "--force", d.name],
                               capture_output=True)
        for pid in self.pod_processes() if self.root.exists() else []:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with open("/proc/self/mountinfo") as f:
            mps = [ln.split()[4] for ln in f]
        ours = (str(self.base) + "/", f"/run/netns/{self.prefix}")
        for mp in sorted((m for m in mps if m.startswith(ours)), key=len, reverse=True):
            subprocess.run(["umount", "-l", mp], capture_output=True)
        for n in os.listdir("/run/netns") if os.path.isdir("/run/netns") else []:
            if n.startswith(self.prefix):
                with contextlib.suppress(OSError):
                    os.unlink(f"/run/netns/{n}")
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)


# ------------------------------------------------------------------ CRI client bits

def wait_ready(endpoint: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(endpoint) as ch:
        stub = pb_grpc.RuntimeServiceStub(ch)
        while True:
            try:
                stub.Version(pb.VersionRequest(version="v1"), timeout=1)
                return
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def pod_config(name: str, log_root: Path, labels: dict[str, str]) -> pb.PodSandboxConfig:
    uid = str(uuid.uuid4())
    log_dir = log_root / f"default_{name}_{uid}"
    log_dir.mkdir(parents=True, exist_ok=True)
    ns = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace="default"),
        hostname=name, log_directory=str(log_dir),
        labels={"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default",
                "io.kubernetes.pod.uid": uid, **labels},
        linux=pb.LinuxPodSandboxConfig(security_context=pb.LinuxSandboxSecurityContext(
            namespace_options=ns,
            seccomp=pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault))),
    )


def container_config(command: list[str]) -> pb.ContainerConfig:
    ns = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
    return pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name="app"), image=pb.ImageSpec(image=IMAGE),
        command=command, labels={"io.kubernetes.container.name": "app"}, log_path="app/0.log",
        linux=pb.LinuxContainerConfig(
            resources=pb.LinuxContainerResources(cpu_period=100000, cpu_shares=2,
                                                 oom_score_adj=1000),
            security_context=pb.LinuxContainerSecurityContext(
                namespace_options=ns,
                seccomp=pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault))),
    )


def remove_everything(endpoint: str, label: tuple[str, str] | None = None) -> None:
    with grpc.insecure_channel(endpoint) as ch:
        rt = pb_grpc.RuntimeServiceStub(ch)
        f = pb.PodSandboxFilter(label_selector=dict([label])) if label else None
        pods = rt.ListPodSandbox(pb.ListPodSandboxRequest(filter=f), timeout=60).items
        ids = {p.id for p in pods}
        for c in rt.ListContainers(pb.ListContainersRequest(), timeout=60).containers:
            if c.pod_sandbox_id in ids:
                with contextlib.suppress(grpc.RpcError):
                    rt.StopContainer(pb.StopContainerRequest(container_id=c.id, timeout=0),
                                     timeout=60)
                    rt.RemoveContainer(pb.RemoveContainerRequest(container_id=c.id), timeout=60)
        for p in pods:
            with contextlib.suppress(grpc.RpcError):
                rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=p.id), timeout=60)
                rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=p.id), timeout=60)


# ------------------------------------------------------------------ /proc helpers

def _all_pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text.rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _with_descendants(tops: list[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for p in _all_pids():
        children.setdefault(_ppid(p), []).append(p)
    out, todo = set(), list(tops)
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.add(p)
        todo.extend(children.get(p, []))
    return sorted(out)


def _kib(pid: int, field: str, path: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/{path}").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid: int) -> int:
    return _kib(pid, "VmRSS", "status")


def pss_kib(pids: list[int]) -> int:
    return sum(_kib(p, "Pss", "smaps_rollup") for p in pids)


def meminfo_kib(field: str = "MemAvailable", samples: int = 5) -> int:
    """Median of a few samples of one /proc/meminfo field (the host is shared and noisy)."""
    vals = []
    for _ in range(samples):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                vals.append(int(line.split()[1]))
        time.sleep(0.2)
    return int(statistics.median(vals))


def kernel_kib() -> int:
    """Kernel memory a pod costs outside any process: slab (namespaces, sockets, cgroups,
    dentries), kernel stacks and page tables, from /proc/meminfo (median of samples)."""
    return sum(meminfo_kib(f, 3) for f in ("Slab", "KernelStack", "PageTables"))


def peer_pod_processes() -> list[int]:
    """containerd's shims for the peer socket and everything below them (pause, apps)."""
    tops = [p for p in _all_pids()
            if "containerd-shim" in _cmdline(p) and PEER_SOCK in _cmdline(p)]
    return _with_descendants(tops)


# ------------------------------------------------------------------ phases

def _peer_running() -> bool:
    try:
        pid = int(Path(PEER_PIDFILE).read_text().strip())
    except (OSError, ValueError):
        return False
    return "containerd" in _cmdline(pid)


def _bench_once(peer_dir: Path, endpoint: str, subnet: str, warmup: int) -> dict:
    """One pod lifecycle by the peer's bench.py (its client, its checks); its 'cri' JSON."""
    cmd = [str(peer_dir / ".venv" / "bin" / "python"), str(peer_dir / "bench.py"),
           "--endpoint", endpoint, "--only", "cri", "-n", "1", "--warmup", str(warmup),
           "--subnet", subnet]
    for attempt in range(3):
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=peer_dir)
        if "not reachable" in p.stderr and attempt < 2:
            # the shared peer daemon is being restarted by someone: wait for it, run again
            log(f"{endpoint} not reachable; waiting for it")
            wait_ready(endpoint, 60)
            continue
        break
    if p.returncode not in (0, 1) or not p.stdout.strip():
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(p.stdout)["cri"]


def _stats(xs: list[float]) -> dict | None:
    if not xs:
        return None
    return {"n": len(xs), "min": round(min(xs), 2), "median": round(statistics.median(xs), 2),
            "max": round(max(xs), 2), "mean": round(statistics.fmean(xs), 2)}


def lifecycle(peer_dir: Path, targets: dict[str, tuple[str, str]], n: int) -> dict:
    """N pod lifecycles per runtime, interleaved run by run so both see the same load.

    Each run is one ``bench.py -n 1`` of the peer (same client, same pod and container
    config, same checks: IP in subnet, host ping, "hi" in the log, ExecSync). The first
    run of each runtime warms it up and is reported apart.
    """
    runs: dict[str, list[dict]] = {name: [] for name in targets}
    meta: dict[str, dict] = {}
    failures: dict[str, list] = {name: [] for name in targets}
    for name, (endpoint, subnet) in targets.items():
        first = _bench_once(peer_dir, endpoint, subnet, warmup=1)
        meta[name] = {"runtime": first["runtime"], "endpoint": endpoint,
                      "warmup_ms": first["warmup_ms"]}
        runs[name].append(first)
    order = list(targets)
    for i in range(1, n):
        for name in order if i % 2 else reversed(order):
            endpoint, subnet = targets[name]
            runs[name].append(_bench_once(peer_dir, endpoint, subnet, warmup=0))
        log(f"lifecycle {i + 1}/{n}: " + ", ".join(
            f"{k} start={runs[k][-1]['ms']['pod_start_total']['median']:.0f} ms" for k in order))
    out = {}
    for name in targets:
        for r in runs[name]:
            failures[name].extend(r["failures"])
        keys = runs[name][0]["ms"].keys()
        out[name] = {
            **meta[name], "n": len(runs[name]), "all_checks_passed": not failures[name],
            "failures": failures[name],
            "pod_ips": sorted({ip for r in runs[name] for ip in r["pod_ips"]}),
            "ms": {k: _stats([r["ms"][k]["median"] for r in runs[name] if r["ms"].get(k)])
                   for k in keys},
        }
    return out


def memory(endpoint: str, daemon_pid: int, pod_procs, pods: int, label: str) -> dict:
    """Start `pods` sleeping pods; measure host memory and PSS per pod; remove them.

    Host memory is MemAvailable before minus with the pods, against the mean of the
    baselines taken before starting and after removing them (drift on a shared host).
    """
    log_root = Path(tempfile.mkdtemp(prefix="rtcri-bench-logs-"))
    tag = ("rtcri-bench-mem", label)
    out: dict = {}
    try:
        time.sleep(1)
        base_avail = meminfo_kib()
        base_kernel = kernel_kib()
        base_rss = rss_kib(daemon_pid)
        base_daemon_pss = pss_kib([daemon_pid])
        base_pss = pss_kib(pod_procs())
        t0 = time.perf_counter()
        started: set[str] = set()
        with grpc.insecure_channel(endpoint) as ch:
            rt = pb_grpc.RuntimeServiceStub(ch)
            for i in range(pods):
                cfg = pod_config(f"mem-{label}-{i}", log_root, {tag[0]: tag[1]})
                pid = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                       timeout=120).pod_sandbox_id
                cid = rt.CreateContainer(pb.CreateContainerRequest(
                    pod_sandbox_id=pid, config=container_config(["sleep", "3600"]),
                    sandbox_config=cfg), timeout=120).container_id
                rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=120)
                started.add(cid)
            running = sum(1 for c in rt.ListContainers(pb.ListContainersRequest(
                filter=pb.ContainerFilter(state=pb.ContainerStateValue(
                    state=pb.CONTAINER_RUNNING))), timeout=60).containers if c.id in started)
        start_s = time.perf_counter() - t0
        time.sleep(2)
        loaded_avail = meminfo_kib()
        loaded_kernel = kernel_kib()
        loaded_rss = rss_kib(daemon_pid)
        loaded_daemon_pss = pss_kib([daemon_pid])
        procs = pod_procs()
        loaded_pss = pss_kib(procs)
        out = {
            "pods": pods, "containers_running": running, "start_all_s": round(start_s, 2),
            "daemon_rss_idle_kib": base_rss, "daemon_rss_loaded_kib": loaded_rss,
            "pod_processes": len(procs),
            "pod_process_pss_kib": loaded_pss - base_pss,
            "pss_per_pod_kib": round((loaded_pss - base_pss) / pods, 1),
            "kernel_per_pod_kib": round((loaded_kernel - base_kernel) / pods, 1),
        }
        out["daemon_growth_per_pod_kib"] = round(
            (loaded_daemon_pss - base_daemon_pss) / pods, 1)
        out["accounted_per_pod_kib"] = round(out["pss_per_pod_kib"]
                                             + out["daemon_growth_per_pod_kib"]
                                             + out["kernel_per_pod_kib"], 1)
    finally:
        t1 = time.perf_counter()
        remove_everything(endpoint, tag)
        log(f"memory[{label}]: removed {pods} pods in {time.perf_counter() - t1:.1f} s")
        shutil.rmtree(log_root, ignore_errors=True)
    time.sleep(2)
    after_avail = meminfo_kib()
    baseline = (base_avail + after_avail) / 2
    out["mem_available_kib"] = {"before": base_avail, "loaded": loaded_avail,
                                "after_removal": after_avail}
    out["mem_available_drop_kib"] = round(baseline - loaded_avail)
    out["mem_available_drop_per_pod_kib"] = round((baseline - loaded_avail) / pods, 1)
    return out


def _merge_rounds(rounds: list[dict]) -> dict:
    """Median of every numeric figure over the rounds; the rounds themselves kept too."""
    out: dict = {"rounds": rounds}
    for key, value in rounds[0].items():
        if isinstance(value, int | float):
            out[key] = round(statistics.median(r[key] for r in rounds), 1)
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20, help="pod lifecycles per runtime")
    ap.add_argument("--pods", type=int, default=50, help="sleeping pods for the memory part")
    ap.add_argument("--peer-dir", type=Path, default=Path("/tmp/peer-containerd"))
    ap.add_argument("--mem-rounds", type=int, default=2,
                    help="memory rounds per runtime, alternated (medians are reported)")
    ap.add_argument("--skip-containerd", action="store_true")
    ap.add_argument("--with-pycni", action="store_true",
                    help="also time a runtime on pycni's own plugins (in-process)")
    ap.add_argument("--only", default="lifecycle,memory")
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cri_bench.py must run as root")
    parts = set(a.only.split(","))
    result: dict = {"meta": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                             "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(),
                             "n": a.n, "pods": a.pods}}
    ours = OurRuntime(a.peer_dir)
    ours_pycni = OurRuntime(a.peer_dir, pycni=True) if a.with_pycni else None
    started_peer = False
    try:
        ours.start()
        if ours_pycni is not None:
            ours_pycni.start()
        if not a.skip_containerd and not _peer_running():
            subprocess.run([str(a.peer_dir / "start.sh")], check=True)
            started_peer = True
        if "lifecycle" in parts:
            targets = {"pykubelet": (ours.endpoint, OUR_SUBNET)}
            if not a.skip_containerd:
                targets["containerd"] = (f"unix://{PEER_SOCK}", PEER_SUBNET)
            if ours_pycni is not None:
                targets["pykubelet+pycni"] = (ours_pycni.endpoint, PYCNI_SUBNET)
            result["lifecycle"] = lifecycle(a.peer_dir, targets, a.n)
        if "memory" in parts:
            mem_targets = {"pykubelet": (ours.endpoint, ours.pid(), ours.pod_processes)}
            if not a.skip_containerd:
                wait_ready(f"unix://{PEER_SOCK}", 60)
                peer_pid = int(Path(PEER_PIDFILE).read_text().strip())  # it may have restarted
                mem_targets["containerd"] = (f"unix://{PEER_SOCK}", peer_pid,
                                             peer_pod_processes)
            rounds: dict[str, list[dict]] = {k: [] for k in mem_targets}
            for r in range(a.mem_rounds):
                for name in mem_targets if r % 2 == 0 else reversed(list(mem_targets)):
                    endpoint, pid, procs = mem_targets[name]
                    rounds[name].append(memory(endpoint, pid, procs, a.pods, f"{name}{r}"))
            result["memory"] = {k: _merge_rounds(v) for k, v in rounds.items()}
    finally:
        ours.destroy()
        if ours_pycni is not None:
            ours_pycni.destroy()
        if started_peer:
            subprocess.run([str(a.peer_dir / "stop.sh")], check=False)
    result["meta"]["loadavg_end"] = os.getloadavg()
    summary: dict = {}
    lc = result.get("lifecycle", {})
    for span in ("run_pod_sandbox", "create_start", "ready_to_running", "pod_start_total",
                 "teardown"):
        o = (lc.get("pykubelet", {}).get("ms") or {}).get(span)
        c = (lc.get("containerd", {}).get("ms") or {}).get(span)
        summary[span] = {"pykubelet_ms": o, "containerd_ms": c,
                         "ratio_median": ratio(o and o["median"], c and c["median"])}
        p = (lc.get("pykubelet+pycni", {}).get("ms") or {}).get(span)
        if p:
            summary[span]["pykubelet_pycni_ms"] = p
            summary[span]["ratio_median_pycni"] = ratio(p["median"], c and c["median"])
    mem = result.get("memory", {})
    for key in ("accounted_per_pod_kib", "pss_per_pod_kib", "daemon_growth_per_pod_kib",
                "kernel_per_pod_kib",
                "mem_available_drop_per_pod_kib",
                "daemon_rss_idle_kib",
                "daemon_rss_loaded_kib"):
        o = mem.get("pykubelet", {}).get(key)
        c = mem.get("containerd", {}).get(key)
        summary[key] = {"pykubelet": o, "containerd": c, "ratio": ratio(o, c)}
    result["summary"] = summary
    text = json.dumps(result, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)
    log("\nspan / figure                 pykubelet            containerd           ratio")
    for k, v in summary.items():
        if "pykubelet_ms" in v:
            def fmt(s: dict | None) -> str:
                return f"{s['median']:.1f} [{s['min']:.0f}-{s['max']:.0f}] ms" if s else "-"
            log(f"{k:<28}  {fmt(v['pykubelet_ms']):<20} {fmt(v['containerd_ms']):<20} "
                f"{v['ratio_median']}")
            if "pykubelet_pycni_ms" in v:
                log(f"{'  (pykubelet+pycni)':<28}  {fmt(v['pykubelet_pycni_ms']):<20} "
                    f"{'':<20} {v['ratio_median_pycni']}")
        elif v["pykubelet"] is not None:
            log(f"{k:<28}  {v['pykubelet']!s:<20} {v['containerd']!s:<20} {v['ratio']}")
    ok = all(r.get("all_checks_passed", True) for r in lc.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
