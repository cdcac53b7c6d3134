#!/usr/bin/env python3
"""The main job: a 3-node cluster on this host, pods spread over it by the scheduler.

    .venv/bin/python examples/run_lab.py [--keep] [--nodes 3]

1. ``pykubelet lab up --nodes 3``: three network-namespace nodes on a lab bridge, each a
   full node (its own pykubelet, embedded runtime, pod CIDR), node1 also the control
   plane; the kubeconfig context ``pykube-lab`` is made current.
2. ``pykubectl apply -f examples/lab/``: three web pods that refuse to share a node
   (anti-affinity), a pod pinned to node2 (nodeSelector), a pod that fits nowhere, and a
   Deployment of three replicas (its ReplicaSet makes the pods).
3. Shows ``pykubectl get pods -o wide`` with the pods Running on all three nodes and the
   Deployment available (``pykubectl get deployments,replicasets``), fetches
   a page from a web pod on another node (``pykubectl exec``), and asks the scheduler why the
   big pod is Pending (``pykubectl why``).
4. ``pykubelet lab down`` (``--keep`` leaves the lab up: stop it later with
   ``pykubelet lab down``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BIN = REPO / ".venv" / "bin"
PYKUBELET, PYKUBECTL = str(BIN / "pykubelet"), str(BIN / "pykubectl")


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    print(f"$ {' '.join(Path(args[0]).name if i == 0 else a for i, a in enumerate(args))}",
          flush=True)
    res = subprocess.run(list(args), text=True, capture_output=True)
    if res.stdout:
        print(res.stdout.rstrip())
    if res.returncode != 0:
        print(res.stderr.rstrip(), file=sys.stderr)
        if check:
            raise SystemExit(res.returncode)
    return res


def pods() -> dict[str, dict[str, object]]:
    out = subprocess.run([PYKUBECTL, "get", "pods", "-o", "json"], text=True,
                         capture_output=True, check=True).stdout
    return {p["metadata"]["name"]: p for p in json.loads(out)["items"]}


def deployment_available(name: str, replicas: int) -> bool:
    """The Deployment controller's own view: every replica updated and available."""
    res = subprocess.run([PYKUBECTL, "get", "deployment", name, "-o", "json"], text=True,
                         capture_output=True)
    if res.returncode != 0:
        return False
    st = json.loads(res.stdout).get("status") or {}
    return st.get("updatedReplicas") == replicas and st.get("availableReplicas") == replicas


def running(p: dict[str, object]) -> bool:
    st = p.get("status") or {}
    cs = st.get("containerStatuses") or []  # type: ignore[union-attr]
    return st.get("phase") == "Running" and bool(cs) and all(  # type: ignore[union-attr]
        c.get("ready") for c in cs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="leave the lab running")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=180.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (the lab makes network namespaces and runs containers)")
    t0 = time.monotonic()
    run(PYKUBELET, "lab", "up", "--nodes", str(args.nodes))
    print(f"lab up in {time.monotonic() - t0:.1f} s")
    ok = False
    try:
        run(PYKUBECTL, "get", "nodes", "-o", "wide")
        run(PYKUBECTL, "apply", "-f", str(HERE / "lab"))
        want = ["web-0", "web-1", "web-2", "pinned"]
        end = time.monotonic() + args.timeout
        while time.monotonic() < end:
            current = pods()
            if (all(n in current and running(current[n]) for n in want)
                    and deployment_available("hello", 3)):
                ok = True
                break
            time.sleep(1)
        run(PYKUBECTL, "get", "pods", "-o", "wide")
        run(PYKUBECTL, "get", "deployments,replicasets", "-o", "wide")
        if not ok:
            print(f"not every pod was Running within {args.timeout:.0f} s", file=sys.stderr)
            return 1
        current = pods()
        nodes = {n: current[n]["spec"]["nodeName"] for n in want}  # type: ignore[index]
        print("placement: " + ", ".join(f"{n} on {node}" for n, node in nodes.items()))
        # a request from a pod on one node to a pod on another
        target = next(n for n in ("web-1", "web-2") if nodes[n] != nodes["web-0"])
        ip = current[target]["status"]["podIP"]  # type: ignore[index]
        run(PYKUBECTL, "exec", "web-0", "--", "wget", "-qO-", f"http://{ip}:8080/")
        run(PYKUBECTL, "why", "too-big")
    finally:
        if args.keep:
            print("left running: see `pykubectl get pods -o wide`; stop it with "
                  "`pykubelet lab down`")
        else:
            run(PYKUBELET, "lab", "down", check=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
