#!/usr/bin/env python3
"""The CPU floor of a pod start on this machine: the CPU seconds of plain ``runc create`` +
``runc start`` (busybox, ``runc spec``'s config) and of one CNI ADD (the reference
``bridge`` + ``host-local`` exec'd, a fresh netns), per pod. Any runc + CNI runtime spends
at least that per pod, so a burst of N pods cannot end before N x floor / cores seconds.

CPU is counted, not wall time: the runc and plugin processes are reaped by us
(RUSAGE_CHILDREN), and ``runc init``'s own share (it becomes the container's process) is
read from that process before it is deleted. Used by cluster_bench.py; alone:

    sudo .venv/bin/python bench/cpu_floor.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pycni import ns  # noqa: E402
from pykubelet.runtime.image_build import build_busybox_image  # noqa: E402
from pykubelet.runtime.images import ImageStore  # noqa: E402

REFERENCE_DIR = "/usr/lib/cni"
BRIDGE = "pckfloor0"
SUBNET = "10.93.251.0/24"


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def plain_bundle(bundle: Path, layer: Path) -> Path:
    """An OCI bundle of ``layer`` (busybox) with ``runc spec``'s own config, running
    ``sleep 1000`` without a terminal: plain runc, the floor any runc runtime stands on."""
    bundle.mkdir()
    shutil.copytree(layer, bundle / "rootfs", symlinks=True)
    subprocess.run(["runc", "spec"], cwd=bundle, check=True)
    spec = json.loads((bundle / "config.json").read_text())
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["sleep", "1000"]
    (bundle / "config.json").write_text(json.dumps(spec))
    return bundle


def runc_create_start(base: Path, rounds: int) -> float:
    """Mean CPU seconds of one runc create + start (runc init's share
    included), over ``rounds`` after one warm-up."""
    archive = base / "busybox.tar"
    build_busybox_image(archive)
    store = ImageStore(base / "images")
    store.import_archive(archive)
    [layer] = store.layer_dirs(store.require("busybox"))
    bundle = plain_bundle(base / "bundle", layer)
    root = str(base / "runc")
    spent: list[float] = []
    for i in range(rounds + 1):
        cid = f"pckfloor-{os.getpid()}-{i}"
        before = children_cpu()
        subprocess.run(["runc", "--root", root, "create", "--bundle", str(bundle), cid],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        subprocess.run(["runc", "--root", root, "start", cid], check=True)
        cpu = children_cpu() - before
        state = json.loads(subprocess.run(["runc", "--root", root, "state", cid], check=True,
                                          capture_output=True, text=True).stdout)
        try:
            t = psutil.Process(state["pid"]).cpu_times()
            cpu += t.user + t.system
        except psutil.Error:
            pass
        subprocess.run(["runc", "--root", root, "delete", "--force", cid], check=True)
        if i:
            spent.append(cpu)
    return sum(spent) / len(spent)


def cni_add(base: Path, rounds: int) -> float:
    """Mean CPU seconds of one exec'd reference bridge ADD (host-local inside) into a
    fresh netns; the DEL and the netns are outside the count."""
    conf = {"cniVersion": "1.0.0", "name": "pckfloor", "type": "bridge", "bridge": BRIDGE,
            "isGateway": True, "ipMasq": True,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET}]],
                     "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(base / "ipam")}}
    spent: list[float] = []
    for i in range(rounds + 1):
        name = f"pckf{os.getpid() % 10000}-{i}"
        path = ns.create_netns(name)
        try:
            env = dict(os.environ, CNI_COMMAND="ADD", CNI_CONTAINERID=name, CNI_NETNS=path,
                       CNI_IFNAME="eth0", CNI_PATH=REFERENCE_DIR)
            before = children_cpu()
            subprocess.run([f"{REFERENCE_DIR}/bridge"], input=json.dumps(conf).encode(),
                           env=env, capture_output=True, check=True)
            cpu = children_cpu() - before
            env["CNI_COMMAND"] = "DEL"
            subprocess.run([f"{REFERENCE_DIR}/bridge"], input=json.dumps(conf).encode(),
                           env=env, capture_output=True, check=False)
        finally:
            ns.delete_netns(name)
        if i:
            spent.append(cpu)
    return sum(spent) / len(spent)


def measure(rounds: int = 10) -> dict[str, float]:
    """CPU seconds per pod: ``runc`` (create + start), ``cni_add`` and their ``total``."""
    base = Path(tempfile.mkdtemp(prefix="pckfloor-", dir="/tmp"))
    try:
        runc = runc_create_start(base, rounds)
        cni = cni_add(base, rounds)
    finally:
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)
    return {"runc": runc, "cni_add": cni, "total": runc + cni}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--pods", type=int, default=100)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    f = measure(args.rounds)
    cores = os.cpu_count() or 1
    print(f"CPU per pod: runc create+start {f['runc'] * 1000:.1f} ms, CNI ADD "
          f"{f['cni_add'] * 1000:.1f} ms; floor for {args.pods} pods on {cores} cores: "
          f"{args.pods * f['total'] / cores:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
