#!/usr/bin/env python3
"""The cluster soak (issue 29 item 2): create/delete cycles of mixed workloads on a 3-node
lab, then whether anything stayed behind. Run as root from the repository (opt-in CI job:
scripts/soak.sh); on a shared machine under the root-test lock.

Each cycle, in a namespace of its own (``soak-<i>``), through the real kubectl:
``kubectl apply`` of a plain pod, a Deployment of 1 replica, a Service in front of it and a
Job of one completion; waits for the pod Running, the Job complete and the Service's
endpoints; ``kubectl scale`` to 3 replicas (3 endpoints), back to 1 (1 endpoint, the
others gone); ``kubectl delete namespace`` and waits until it is gone (its pods, events,
endpoint slices with it). Five pods started and stopped per cycle, over the three nodes.
``--parallel N`` runs N cycles at a time (each in its own namespace, each worker with its
own API client), so 500 cycles fit beside other work in about half an hour.

Around the cycles: ``--warmup`` cycles first (the first pod makes a node's CNI bridge, its
masquerade and proxy chains, the pod cgroup parents: objects that stay while the node
lives), then the baseline: a census of the lab's kernel objects (pykubelet/lab/census.py),
every daemon's RSS (agents, the control plane, the embedded runtimes, the registry) and
the store's figures (pykubelet/lab/storefigures.py). After the cycles, once every soak
namespace is gone, the same again, the census retaken until it equals the baseline or
``--settle`` seconds pass. The cgroups counted are the lab's own (census.CgroupScope):
the UIDs and container IDs of every pod a watch of the lab's API saw, plus the nodes' own
parents, so other tests running pods on the host do not count, and the soak needs no
root-test lock. The soak passes when:

- the census after equals the census before, category by category (a table, then every
  object that came or went);
- every daemon's RSS after is within ``--rss-tolerance`` (10%) of its RSS after warm-up;
- the store compacted to its current revision is within ``--store-tolerance`` (10%) of
  the same figure at the start, with the same live keys per resource (the control plane's
  own compaction keeps the newest 10,000 revisions every five minutes: the live file's
  figures are printed beside it).

Figures and verdicts as one report on stdout (``--report FILE`` writes it too); exit 0
when every check passed.

    .venv/bin/python bench/soak.py [--cycles 500] [--warmup 40] [--parallel 4] [--keep]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

from pykubelet import state_lock
from pykubelet.client.rest import PODS, ClientError, RESTClient, StatusError
from pykubelet.lab import census, storefigures
from pykubelet.lab.layout import LabLayout
from pykubelet.lab.provider import NetnsProvider
from pykubelet.lab.state import load

REPO = Path(__file__).resolve().parents[1]

PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
IMAGE = "localhost/busybox:1.35"  # on every node: IfNotPresent starts at once
SLEEPER = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]  # leaves on SIGTERM
WAIT = 120.0  # seconds any one step of a cycle may take


class SoakError(RuntimeError):
    """A cycle's step that did not finish in time: the soak stops and reports."""


# ---------------------------------------------------------------------- workloads
def pod_spec(**extra: Any) -> dict[str, Any]:
    return {"terminationGracePeriodSeconds": 2, **extra, "containers": [{
        "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent", "command": SLEEPER,
        "resources": {"requests": {"cpu": "10m"}}}]}


def manifests(ns: str) -> list[dict[str, Any]]:
    """The cycle's objects: a namespace, a pod, a Deployment, a Service, a Job."""
    web = {"app": "web"}
    job_spec = pod_spec(restartPolicy="Never")
    job_spec["containers"][0]["command"] = ["true"]
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": ns, "labels": {"soak": "1"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain", "namespace": ns},
         "spec": pod_spec()},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "web", "namespace": ns},
         "spec": {"replicas": 1, "selector": {"matchLabels": web},
                  "template": {"metadata": {"labels": web}, "spec": pod_spec()}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
         "spec": {"selector": web, "ports": [{"port": 80, "targetPort": 8080}]}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once", "namespace": ns},
         "spec": {"backoffLimit": 0, "template": {"spec": job_spec}}},
    ]


# ---------------------------------------------------------------------- the lab
class Soak:
    def __init__(self, name: str) -> None:
        self.name = name
        self.env = dict(os.environ, KUBECACHEDIR=f"/tmp/soak-{name}-kubecache")

    def lab(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYKUBELET, "lab", *args, "--name", self.name],
                              capture_output=True, text=True, check=check)

    def kubectl(self, *args: str, input: str | None = None) -> str:
        res = subprocess.run(["kubectl", "--context", f"pykube-{self.name}", *args],
                             input=input, capture_output=True, text=True, timeout=WAIT,
                             env=self.env, check=False)
        if res.returncode != 0:
            raise SoakError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
        return res.stdout

    @property
    def layout(self) -> LabLayout:
        state = load(LabLayout(self.name, 0).state_file)
        if state is None:
            raise SoakError(f"lab {self.name} has no state file")
        return state.layout

    def client(self) -> RESTClient:
        admin = NetnsProvider.admin_kubeconfig(self.layout)
        if admin is None:
            raise SoakError("the lab has no admin kubeconfig")
        return RESTClient.from_kubeconfig(admin, user_agent="pykube-soak")


def wait_for(what: str, probe: Callable[[], bool], timeout: float = WAIT) -> None:
    end = time.monotonic() + timeout
    while True:
        try:
            if probe():
                return
        except (ClientError, OSError, ValueError):
            pass
        if time.monotonic() > end:
            raise SoakError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.5)


def _get(api: RESTClient, path: str) -> dict[str, Any] | None:
    try:
        got = api.request("GET", path)
    except StatusError as exc:
        if exc.not_found:
            return None
        raise
    return dict(got) if isinstance(got, dict) else None


def _pods(api: RESTClient, ns: str, selector: str = "") -> list[dict[str, Any]]:
    params = {"labelSelector": selector} if selector else {}
    got = api.request("GET", f"/api/v1/namespaces/{ns}/pods", params=params)
    return list(got.get("items") or [])


def _running(pod: dict[str, Any]) -> bool:
    st = pod.get("status") or {}
    return st.get("phase") == "Running" and all(
        c.get("ready") for c in st.get("containerStatuses") or [{}])


def _endpoints(api: RESTClient, ns: str) -> int:
    ep = _get(api, f"/api/v1/namespaces/{ns}/endpoints/web") or {}
    return sum(len(s.get("addresses") or []) for s in ep.get("subsets") or [])


def _web(api: RESTClient, ns: str, replicas: int) -> bool:
    """``replicas`` web pods Running and ready, none other left, and as many endpoints."""
    pods = _pods(api, ns, "app=web")
    return (len(pods) == replicas and all(_running(p) for p in pods)
            and _endpoints(api, ns) == replicas)


def cycle(soak: Soak, api: RESTClient, ns: str) -> None:
    soak.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(manifests(ns)))
    wait_for(f"{ns}: pod plain Running", lambda: _running(
        _get(api, f"/api/v1/namespaces/{ns}/pods/plain") or {}))
    wait_for(f"{ns}: 1 web pod and its endpoint", lambda: _web(api, ns, 1))
    wait_for(f"{ns}: Job once complete", lambda: ((_get(
        api, f"/apis/batch/v1/namespaces/{ns}/jobs/once") or {}).get("status") or {}).get(
        "succeeded") == 1)
    soak.kubectl("scale", "-n", ns, "deployment/web", "--replicas=3")
    wait_for(f"{ns}: 3 web pods and endpoints", lambda: _web(api, ns, 3))
    soak.kubectl("scale", "-n", ns, "deployment/web", "--replicas=1")
    wait_for(f"{ns}: back to 1 web pod and endpoint", lambda: _web(api, ns, 1))
    soak.kubectl("delete", "namespace", ns, "--wait=false")
    wait_for(f"namespace {ns} gone", lambda: _get(api, f"/api/v1/namespaces/{ns}") is None)


class PodWitness:
    """Every pod of the lab the soak saw, by a watch of all namespaces in a thread: its
    UID and container IDs make the census's cgroup scope (the lab's part of the host's
    shared cgroup trees). A broken watch relists."""

    def __init__(self, api: RESTClient) -> None:
        self.api = api
        self.scope = census.CgroupScope()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-witness", daemon=True)

    def start(self) -> PodWitness:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def snapshot(self) -> census.CgroupScope:
        """A copy of what was seen so far (after one more list, so nothing is in flight)."""
        self._see_list()
        with self._lock:
            return census.CgroupScope(set(self.scope.pod_uids),
                                      set(self.scope.container_ids), set(self.scope.parents))

    def _see(self, pod: dict[str, Any]) -> None:
        with self._lock:
            self.scope.see_pod(pod)

    def _see_list(self) -> str:
        got = self.api.request("GET", "/api/v1/pods")
        for pod in got.get("items") or []:
            self._see(pod)
        return str((got.get("metadata") or {}).get("resourceVersion") or "")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                rv = self._see_list()
                for ev in self.api.watch(PODS, resource_version=rv, timeout_seconds=30):
                    if isinstance(ev.get("object"), dict) and ev.get("type") != "BOOKMARK":
                        self._see(ev["object"])
                    if self._stop.is_set():
                        return
            except (ClientError, OSError, ValueError):
                self._stop.wait(1.0)


def soak_namespaces(api: RESTClient) -> list[str]:
    got = api.request("GET", "/api/v1/namespaces", params={"labelSelector": "soak=1"})
    return [n["metadata"]["name"] for n in got.get("items") or []]


# ---------------------------------------------------------------------- figures
def daemons(soak: Soak) -> dict[str, int]:
    """name -> pid of every long-running process of the lab that is not a pod's."""
    state = load(LabLayout(soak.name, 0).state_file)
    assert state is not None
    out: dict[str, int] = {}
    for node in state.layout.node_layouts():
        procs = state.processes.get(node.name)
        if procs is not None and procs.agent is not None:
            cp = " + control plane" if node.index == 1 and state.embedded_control_plane else ""
            out[f"{node.name} agent{cp}"] = procs.agent.pid
        if procs is not None and procs.control_plane is not None:
            out[f"{node.name} control plane"] = procs.control_plane.pid
        if procs is not None and procs.etcd is not None:
            out[f"{node.name} etcd"] = procs.etcd.pid
        runtime = state_lock.holder(node.root_dir / state_lock.RUNTIME_LOCK)
        if runtime:
            out[f"{node.name} runtime"] = runtime
    if state.registry is not None:
        out["registry"] = state.registry.pid
    return out


@dataclass
class Usage:
    rss: int
    fds: int
    threads: int


def usage(pids: dict[str, int]) -> dict[str, Usage]:
    out = {}
    for name, pid in pids.items():
        try:
            p = psutil.Process(pid)
            out[name] = Usage(p.memory_info().rss, p.num_fds(), p.num_threads())
        except psutil.Error:
            out[name] = Usage(0, 0, 0)  # gone: reported, and fails the check
    return out


def store_path(soak: Soak) -> Path:
    return soak.layout.control_node.control_plane_root / "store.db"


def settle_census(soak: Soak, target: census.Census | None, timeout: float,
                  scope: Callable[[], census.CgroupScope]) -> census.Census:
    """The census once it stops changing (two in a row equal, 5 s apart), or, given a
    ``target``, once it equals it; the last one taken when ``timeout`` passes."""
    end = time.monotonic() + timeout
    last = census.take(soak.layout, scope=scope())
    while time.monotonic() < end:
        if target is not None and not census.diff(target, last):
            return last
        time.sleep(5)
        now = census.take(soak.layout, scope=scope())
        if target is None and not census.diff(last, now):
            return now
        last = now
    return last


def wait_namespaces_gone(api: RESTClient) -> None:
    wait_for("every soak namespace gone", lambda: not soak_namespaces(api), timeout=300)


@dataclass
class Cycles:
    """What a run of cycles did: how many, each one's seconds, the first failure."""

    done: int = 0
    times: list[float] = field(default_factory=list)
    failure: str = ""


def run_cycles(soak: Soak, prefix: str, count: int, parallel: int, budget_s: float = 0.0,
               progress: Callable[[Cycles], None] | None = None) -> Cycles:
    """``count`` cycles in namespaces ``<prefix>-<i>``, ``parallel`` at a time (each worker
    with its own client); no cycle starts after ``budget_s`` seconds (0: no budget) or
    after one failed."""
    out = Cycles()
    lock = threading.Lock()
    next_i = 0
    t0 = time.monotonic()

    def worker() -> None:
        nonlocal next_i
        api = soak.client()
        try:
            while True:
                with lock:
                    if next_i >= count or out.failure or (
                            budget_s and time.monotonic() - t0 > budget_s):
                        return
                    i, next_i = next_i, next_i + 1
                c0 = time.monotonic()
                try:
                    cycle(soak, api, f"{prefix}-{i}")
                except SoakError as exc:
                    with lock:
                        out.failure = out.failure or f"cycle {i}: {exc}"
                    try:  # its namespace goes too, so the figures after can be taken
                        soak.kubectl("delete", "namespace", f"{prefix}-{i}", "--wait=false")
                    except (SoakError, subprocess.TimeoutExpired):
                        pass
                    return
                with lock:
                    out.times.append(time.monotonic() - c0)
                    out.done += 1
                    if progress is not None:
                        progress(out)
        finally:
            api.close()

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for f in [pool.submit(worker) for _ in range(max(1, parallel))]:
            f.result()
    return out


# ---------------------------------------------------------------------- report
def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def rss_rows(before: dict[str, Usage], after: dict[str, Usage],
             tolerance: float) -> tuple[list[str], bool]:
    width = max(len(n) for n in before)
    lines = [f"{'daemon':<{width}}  {'RSS warm':>10}  {'RSS after':>10}  {'change':>7}  "
             f"{'fds':>9}  {'threads':>9}  within {tolerance:.0%}"]
    ok = True
    for name, b in before.items():
        a = after.get(name, Usage(0, 0, 0))
        change = (a.rss - b.rss) / b.rss if b.rss else float("inf")
        within = a.rss > 0 and abs(change) <= tolerance
        ok &= within
        lines.append(f"{name:<{width}}  {mib(b.rss):>10}  {mib(a.rss):>10}  {change:>+7.1%}  "
                     f"{b.fds:>4}>{a.fds:<4}  {b.threads:>4}>{a.threads:<4}  "
                     f"{'yes' if within else 'NO'}")
    return lines, ok


def store_rows(start: storefigures.StoreFigures, end: storefigures.StoreFigures,
               tolerance: float) -> tuple[list[str], bool]:
    grew = (end.compacted_bytes - start.compacted_bytes) / start.compacted_bytes
    keys_same = +start.live_keys == +end.live_keys
    within = grew <= tolerance
    lines = [
        f"{'store':<34}  {'start':>12}  {'end':>12}",
        f"{'revision':<34}  {start.revision:>12}  {end.revision:>12}",
        f"{'compacted up to (control plane)':<34}  {start.compacted_revision:>12}  "
        f"{end.compacted_revision:>12}",
        f"{'rows on record':<34}  {start.rows:>12}  {end.rows:>12}",
        f"{'file + WAL':<34}  {mib(start.file_bytes):>12}  {mib(end.file_bytes):>12}",
        f"{'pages in use':<34}  {mib(start.used_bytes):>12}  {mib(end.used_bytes):>12}",
        f"{'compacted to now + VACUUM (copy)':<34}  {mib(start.compacted_bytes):>12}  "
        f"{mib(end.compacted_bytes):>12}  {grew:+.1%}, within {tolerance:.0%}: "
        f"{'yes' if within else 'NO'}",
        f"{'live keys':<34}  {sum(start.live_keys.values()):>12}  "
        f"{sum(end.live_keys.values()):>12}  same per resource: {'yes' if keys_same else 'NO'}",
    ]
    for res in sorted(set(start.live_keys) | set(end.live_keys)):
        if start.live_keys[res] != end.live_keys[res]:
            lines.append(f"  {res}: {start.live_keys[res]} -> {end.live_keys[res]}")
    return lines, within and keys_same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=500)
    # the 500-cycle run: node 1 (agent + control plane: the watch caches filling) grew
    # 25 MiB over the first 40 cycles and ~0 over the last 100; baselines before that
    # read warm-up as a leak
    ap.add_argument("--warmup", type=int, default=40, help="cycles before the baseline")
    ap.add_argument("--parallel", type=int, default=1,
                    help="cycles at a time, each in its own namespace")
    ap.add_argument("--name", default="soak", help="the lab's name")
    ap.add_argument("--settle", type=float, default=180.0,
                    help="seconds the census after may take to come back")
    ap.add_argument("--rss-tolerance", type=float, default=0.10)
    ap.add_argument("--store-tolerance", type=float, default=0.10)
    ap.add_argument("--max-minutes", type=float, default=0.0,
                    help="stop cycling after this many minutes (0: never) and report the "
                         "cycles done")
    ap.add_argument("--report", type=Path, help="also write the report to this file")
    ap.add_argument("--keep", action="store_true", help="leave the lab up")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (the lab makes network namespaces and runs containers)")
    soak = Soak(args.name)
    soak.lab("down", check=False)
    t0 = time.monotonic()
    up = soak.lab("up", "--nodes", "3", check=False)
    if up.returncode != 0:
        print(up.stdout, up.stderr, file=sys.stderr)
        soak.lab("down", check=False)
        return 1
    up_s = time.monotonic() - t0
    lines: list[str] = []
    witness: PodWitness | None = None
    try:
        api = soak.client()
        witness = PodWitness(soak.client()).start()
        warmup = run_cycles(soak, "soak-warmup", args.warmup, args.parallel)
        if warmup.failure:
            raise SoakError(f"warm-up {warmup.failure}")
        wait_namespaces_gone(api)
        before = settle_census(soak, None, args.settle, witness.snapshot)
        pids = daemons(soak)
        warm = usage(pids)
        store_start = storefigures.measure(store_path(soak))
        t_soak = time.monotonic()

        def progress(run: Cycles) -> None:
            n = run.done
            if n <= 3 or n % 10 == 0 or n == args.cycles:
                cp = usage({k: v for k, v in pids.items() if "control plane" in k})
                print(f"cycle {n}/{args.cycles} at {time.monotonic() - t_soak:.0f} s: "
                      f"{run.times[-1]:.1f} s, mean {sum(run.times) / n:.1f} s, control "
                      f"plane RSS {', '.join(mib(u.rss) for u in cp.values())}",
                      file=sys.stderr, flush=True)

        run = run_cycles(soak, "soak", args.cycles, args.parallel,
                         60 * args.max_minutes, progress)
        done, times, failure = run.done, run.times, run.failure
        if failure:
            print(failure, file=sys.stderr)
        elif done < args.cycles:
            print(f"--max-minutes {args.max_minutes:g} reached after {done} cycles",
                  file=sys.stderr)
        soak_s = time.monotonic() - t_soak
        try:
            wait_namespaces_gone(api)
        except SoakError as exc:  # still the figures: what is left shows in them
            left = f"{exc}: {', '.join(soak_namespaces(api))} left"
            failure = f"{failure}; {left}" if failure else left
        after = settle_census(soak, before, args.settle, witness.snapshot)
        late = usage(pids)
        store_end = storefigures.measure(store_path(soak))

        same = not census.diff(before, after)
        rss, rss_ok = rss_rows(warm, late, args.rss_tolerance)
        store, store_ok = store_rows(store_start, store_end, args.store_tolerance)
        mean = sum(times) / len(times) if times else 0.0
        scope = witness.snapshot()
        rate = done / soak_s * 60 if soak_s else 0.0
        lines += [
            f"soak of lab {args.name} (3 nodes, up in {up_s:.0f} s): {done}/{args.cycles} "
            f"cycles in {soak_s:.0f} s, {args.parallel} at a time ({rate:.1f} a minute;"
            f" a cycle: mean {mean:.1f} s, max {max(times, default=0):.1f} s), "
            f"{args.warmup} warm-up cycles before",
            "each cycle: namespace, pod, Deployment 1 -> 3 -> 1 behind a Service (endpoints "
            "checked), Job of 1; namespace deleted and gone: 5 pods",
            f"cgroups counted: the lab's ({len(scope.pod_uids)} pod UIDs and "
            f"{len(scope.container_ids)} container IDs seen, the nodes' parents)",
            "", census.table(before, after, limit=20), "", *rss, "", *store, "",
            f"census identical: {'yes' if same else 'NO'}; RSS within "
            f"{args.rss_tolerance:.0%}: {'yes' if rss_ok else 'NO'}; store back: "
            f"{'yes' if store_ok else 'NO'}"
            + (f"; stopped early: {failure}" if failure else ""),
        ]
        passed = same and rss_ok and store_ok and not failure
    except SoakError as exc:
        lines.append(f"soak failed before its figures: {exc}")
        passed = False
    finally:
        if witness is not None:
            witness.stop()
        if not args.keep:
            soak.lab("down", check=False)
    report = "\n".join(lines)
    print(report)
    if args.report:
        args.report.write_text(report + "\n")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
