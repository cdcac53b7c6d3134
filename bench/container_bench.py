#!/usr/bin/env python3
"""Container path benchmark: ContainerManager create/start/stop/remove vs plain runc.

    sudo .venv/bin/python bench/container_bench.py [-n 20] [--seccomp RuntimeDefault]

Measures, in one run on one machine (median [min-max] ms after one warm-up):

- ``runc create`` + ``runc start`` of the same busybox rootfs and a minimal config
  (runc's own ``runc spec``): the floor any runc-based runtime stands on;
- our create (overlay mount, OCI spec, conmon + ``runc create``) and start
  (``runc start``), stop (SIGKILL, exit recorded) and remove (runc delete, unmount);
- ExecSync of ``true``.

Prints JSON. Everything lives under a temp dir with its own runc root and cgroup parent
``/rtcbench-<pid>``; it is all removed at the end. Never pass/fail on time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from cpu_floor import plain_bundle  # noqa: E402

from pykubelet.runtime import cgroups, rootfs  # noqa: E402
from pykubelet.runtime.container_request import (  # noqa: E402
    ContainerConfigSpec,
    ContainerMetadata,
    Resources,
    SeccompProfile,
    SecurityContext,
)
from pykubelet.runtime.containers import ContainerManager  # noqa: E402
from pykubelet.runtime.image_build import build_busybox_image  # noqa: E402
from pykubelet.runtime.images import ImageStore  # noqa: E402


@dataclass
class Sandbox:
    id: str = "rtcbench"
    name: str = "bench"
    namespace: str = "default"
    uid: str = "bench-uid"
    hostname: str = "bench"
    netns_path: str = ""
    ipc_ns_path: str = ""
    uts_ns_path: str = ""
    hosts_path: str = ""
    resolv_path: str = ""
    hostname_path: str = ""
    log_directory: str = ""
    cgroup_parent: str = ""
    network_mode: str = "POD"
    ipc_mode: str = "POD"


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2), "n": len(values)}


def ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def bench_runc(base: Path, layer: Path, n: int) -> dict[str, dict[str, float]]:
    bundle = plain_bundle(base / "plain-bundle", layer)
    root = base / "plain-runc"
    create, start = [], []
    for i in range(n + 1):
        cid = f"rtcbench-plain-{i}"
        t0 = time.perf_counter()
        subprocess.run(["runc", "--root", str(root), "create", "--bundle", str(bundle), cid],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        t_create = ms(t0)
        t0 = time.perf_counter()
        subprocess.run(["runc", "--root", str(root), "start", cid], check=True)
        t_start = ms(t0)
        subprocess.run(["runc", "--root", str(root), "delete", "--force", cid], check=True)
        if i:
            create.append(t_create)
            start.append(t_start)
    return {"runc_create": summary(create), "runc_start": summary(start),
            "runc_create_start": summary([a + b for a, b in zip(create, start, strict=True)])}


def bench_manager(base: Path, archive: Path, n: int, seccomp: str) -> dict[str, dict]:
    store = ImageStore(base / "root" / "images")
    store.import_archive(archive)
    parent = f"/rtcbench-{os.getpid()}"
    sb = Sandbox(log_directory=str(base / "logs"))
    m = ContainerManager(base / "root" / "containers", store, lambda _id: sb,
                         runc_root=base / "root" / "runc", socket_dir=base / "s",
                         default_cgroup_parent=parent)
    spans: dict[str, list[float]] = {k: [] for k in (
        "create", "start", "create_start", "exec_sync", "stop", "remove")}
    try:
        for i in range(n + 1):
            cfg = ContainerConfigSpec(
                metadata=ContainerMetadata(f"c{i}"), image="busybox",
                command=("sleep", "1000"), log_path=f"c{i}/0.log",
                resources=Resources(cpu_period=100000, cpu_shares=2, oom_score_adj=1000),
                security=SecurityContext(seccomp=SeccompProfile(seccomp)))
            t0 = time.perf_counter()
            cid = m.create(sb, cfg)
            t_create = ms(t0)
            t0 = time.perf_counter()
            m.start(cid)
            t_start = ms(t0)
            t0 = time.perf_counter()
            m.exec_sync(cid, ["true"], 10)
            t_exec = ms(t0)
            t0 = time.perf_counter()
            m.stop(cid, 0)
            t_stop = ms(t0)
            t0 = time.perf_counter()
            m.remove(cid)
            t_remove = ms(t0)
            if i:
                for key, value in (("create", t_create), ("start", t_start),
                                   ("create_start", t_create + t_start),
                                   ("exec_sync", t_exec), ("stop", t_stop),
                                   ("remove", t_remove)):
                    spans[key].append(value)
    finally:
        for c in m.list():
            m.remove(c.id)
        m.remove_all_in_sandbox(sb.id)
        cgroups.remove_empty(parent)
    return {k: summary(v) for k, v in spans.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--seccomp", default="RuntimeDefault",
                    choices=["RuntimeDefault", "Unconfined"])
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="rtcbench-", dir="/tmp"))
    try:
        archive = base / "busybox.tar"
        build_busybox_image(archive)
        out = {"meta": {"n": args.n, "seccomp": args.seccomp, "cpus": os.cpu_count(),
                        "loadavg_start": os.getloadavg()}}
        out["ours_ms"] = bench_manager(base, archive, args.n, args.seccomp)
        store = ImageStore(base / "root" / "images")
        [layer] = store.layer_dirs(store.require("busybox"))
        out["plain_runc_ms"] = bench_runc(base, layer, args.n)
        out["meta"]["loadavg_end"] = os.getloadavg()
        ours = out["ours_ms"]["create_start"]["median"]
        floor = out["plain_runc_ms"]["runc_create_start"]["median"]
        out["create_start_over_plain_runc"] = round(ours / floor, 2)
        print(json.dumps(out, indent=1))
    finally:
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split()[4] for line in f if str(base) in line]
        for mnt in sorted(mounts, key=len, reverse=True):
            rootfs.unmount(Path(mnt))
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
