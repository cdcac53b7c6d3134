"""Services on a 3-node lab (issue 20's measured items), printed as a table:

(a) endpoint change to traffic moved: a client in node3's namespace connects to a
ClusterIP over backends on node1 and node2 without pause; the node2 pod is deleted, and the
time from the delete to the last answer from it is taken; p50/p99 over the trials
(goal: p99 <= 1 s);
(b) ClusterIP request overhead: sequential one-connection GETs from node3's namespace to the
pod IP directly and to the ClusterIP (DNAT to that one pod), the mean per request and the
ratio (goal <= 1.2x).

The client runs in the node's namespace (what a hostNetwork pod sees; the lab routes the
service range there) so timing is Python's, not kubectl exec's. Run as root:

    .venv/bin/python bench/service_bench.py [--trials 5] [--requests 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from test_lab_services import SERVER, pod, service  # noqa: E402

PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
LAB = "svcbench"
NETNS = f"pykube-{LAB}-node3"

# one GET per connection, in a loop: "<monotonic> <name>" per answer, to stdout
CLIENT = r"""
import socket, sys, time
ip, port, seconds, count = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end and (count == 0 or n < count):
    n += 1
    try:
        with socket.create_connection((ip, port), timeout=1) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        name = data.decode().strip().splitlines()[-1]
    except OSError:
        name = "-"
    print(f"{time.time():.6f} {name}", flush=True)
"""


def kubectl(env: dict[str, str], *args: str, input: str | None = None) -> str:
    return subprocess.run(["kubectl", *args], env=env, input=input, capture_output=True,
                          text=True, check=True, timeout=120).stdout


def client(ip: str, port: int, seconds: float, count: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(["ip", "netns", "exec", NETNS, sys.executable, "-c", CLIENT, ip,
                             str(port), str(seconds), str(count)],
                            stdout=subprocess.PIPE, text=True)


def moved_after_delete(env: dict[str, str], ip: str, trial: int) -> float:
    """Seconds from the delete of the node2 backend to the last answer it gave."""
    name = f"web-b{trial}"
    kubectl(env, "apply", "-f", "-",
            input=yaml.safe_dump(pod(name, "node2", SERVER, app="web")))
    kubectl(env, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=60s")
    proc = client(ip, 80, 60)
    deadline = time.monotonic() + 30  # until node3's proxy sends traffic to it
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.split()[1] == name or time.monotonic() > deadline:
            break
    t0 = time.time()
    kubectl(env, "delete", "pod", name, "--wait=false")
    time.sleep(4)
    proc.terminate()
    out, _ = proc.communicate()
    last = max((float(ts) for ts, who in (ln.split() for ln in out.splitlines())
                if who == name), default=t0)
    return max(0.0, last - t0)


def per_request(ip: str, port: int, count: int) -> float:
    proc = client(ip, port, 120, count)
    out, _ = proc.communicate()
    stamps = [float(ln.split()[0]) for ln in out.splitlines()]
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="svcbench-"))
    env = dict(os.environ, KUBECONFIG=str(tmp / "kubeconfig"), KUBECACHEDIR=str(tmp / "c"))
    subprocess.run([PYKUBELET, "lab", "up", "--nodes", "3", "--name", LAB], env=env,
                   check=True, capture_output=True, timeout=300)
    try:
        objs: list[dict[str, Any]] = [pod("web-a", "node1", SERVER, app="web"),
                                      service("web", "web")]
        kubectl(env, "apply", "-f", "-", input=yaml.safe_dump_all(objs))
        kubectl(env, "wait", "--for=condition=Ready", "pod/web-a", "--timeout=90s")
        ip = kubectl(env, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
        pod_ip = kubectl(env, "get", "pod", "web-a", "-o", "jsonpath={.status.podIP}")
        moved = sorted(moved_after_delete(env, ip, i) for i in range(args.trials))
        direct = per_request(pod_ip, 8080, args.requests)
        via = per_request(ip, 80, args.requests)
        rows = [("endpoint change -> traffic moved p50 (s)", f"{statistics.median(moved):.3f}"),
                ("endpoint change -> traffic moved p99 (s)",
                 f"{moved[min(len(moved) - 1, int(0.99 * len(moved)))]:.3f}"),
                ("trials", str(args.trials)),
                ("pod IP direct, per request (ms)", f"{direct * 1000:.3f}"),
                ("ClusterIP, per request (ms)", f"{via * 1000:.3f}"),
                ("ClusterIP / pod IP", f"{via / direct:.2f}x")]
        width = max(len(r[0]) for r in rows)
        for label, value in rows:
            print(f"{label:<{width}}  {value}")
        print(json.dumps({"moved": moved}))
    finally:
        subprocess.run([PYKUBELET, "lab", "down", "--name", LAB], env=env,
                       capture_output=True, timeout=300, check=False)


if __name__ == "__main__":
    main()
