#!/usr/bin/env python3
"""pykubectl against kubectl, end to end, on the same control plane.

Starts a real ``pykubelet control-plane`` (HTTPS on loopback), creates pods, then runs each
command many times, alternating the two clients so both see the same machine load, and
prints medians and p90s of wall time and the median CPU time (user + system, which
other load on the machine disturbs less), the ratio pykubectl/kubectl, and where
pykubectl's time goes: the interpreter alone, the interpreter plus the get path's imports
(its start-up), and the rest (kubeconfig, TLS, the request, printing). Both clients keep
their discovery caches warm and Python its bytecode caches, as a user's would (the bench
unsets PYTHONDONTWRITEBYTECODE). Figures only: nothing here passes or fails.

    .venv/bin/python bench/pykubectl_bench.py [--runs 30] [--pods 20,200]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
PYKUBECTL = str(VENV_BIN / "pykubectl")
KUBECTL = shutil.which("kubectl") or "kubectl"

POD = """apiVersion: v1
kind: Pod
metadata: {{name: bench-{i}, labels: {{app: bench}}}}
spec:
  containers:
  - {{name: c, image: busybox, command: [sleep, "3600"], resources: {{requests: {{cpu: 10m}}}}}}
"""


def start_server(root: Path) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(root.parent / "cp.log", "wb")  # noqa: SIM115 - kept for the child
    proc = subprocess.Popen([sys.executable, "-m", "pykubelet.cli.main", "control-plane",
                             "--root", str(root), "--listen", f"127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    kc = root / "admin.kubeconfig"
    end = time.monotonic() + 30
    while not kc.exists():
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            raise SystemExit("control plane did not start:\n" +
                             (root.parent / "cp.log").read_text()[-2000:])
        time.sleep(0.05)
    return proc, port


CPU: dict[str, list[float]] = {}


def timed(cmd: list[str], env: dict[str, str], stdin: str | None = None) -> float:
    """Wall seconds of one run; its CPU seconds go to CPU[the command's text]."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True,
                         cwd=tempfile.gettempdir())
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {res.stderr}")
    CPU.setdefault(" ".join(cmd), []).append(r1.ru_utime - r0.ru_utime + r1.ru_stime
                                             - r0.ru_stime)
    return dt


def stats(xs: list[float]) -> tuple[float, float]:
    s = sorted(xs)
    return statistics.median(s), s[min(len(s) - 1, int(0.9 * len(s)))]


def row(label: str, xs: list[float], cmd: list[str]) -> tuple[float, float]:
    """Prints wall median/p90 and CPU median; returns (wall median, CPU median)."""
    med, p90 = stats(xs)
    cpu = statistics.median(CPU.get(" ".join(cmd), [0.0]))
    print(f"  {label:<46} wall median {med * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms"
          f"   cpu {cpu * 1000:6.1f} ms")
    return med, cpu


def compare(title: str, args: list[str], env: dict[str, str], runs: int) -> float:
    print(f"{title}: `{' '.join(args)}`")
    py: list[float] = []
    go: list[float] = []
    for cmd in ([PYKUBECTL, *args], [KUBECTL, *args]):  # warm caches (discovery, page cache)
        timed(cmd, env)
    for _ in range(runs):
        py.append(timed([PYKUBECTL, *args], env))
        go.append(timed([KUBECTL, *args], env))
    p, pc = row("pykubectl", py, [PYKUBECTL, *args])
    k, kc = row("kubectl", go, [KUBECTL, *args])
    print(f"  {'ratio pykubectl/kubectl':<46} wall {p / k:.2f}   cpu {pc / kc:.2f}")
    return pc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--pods", default="20,200", help="pod counts to list, comma-separated")
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pykubectl-bench-"))
    root = tmp / "root"
    proc, _port = start_server(root)
    env = dict(os.environ, KUBECONFIG=str(root / "admin.kubeconfig"),
               KUBECACHEDIR=str(tmp / "cache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        print(f"pykubectl bench: {opts.runs} runs each, {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.2f}; kubectl "
              + subprocess.run([KUBECTL, "version", "--client"], capture_output=True,
                               text=True).stdout.splitlines()[0].split(": ")[-1])
        print()
        print("where pykubectl's start-up goes (no server involved):")
        bare = [sys.executable, "-c", "pass"]
        imp = [sys.executable, "-c", "import pykubelet.cli.kubectl.main, "
               "pykubelet.cli.kubectl.get, pykubelet.client.kubeconfig"]
        kv = [KUBECTL, "version", "--client"]
        timed(imp, env)  # writes the bytecode caches
        base = [timed(bare, env) for _ in range(opts.runs)]
        imports = [timed(imp, env) for _ in range(opts.runs)]
        _, interp = row("python interpreter (python -c pass)", base, bare)
        _, startup = row("+ imports of `get`'s path (its start-up)", imports, imp)
        row("`kubectl version --client` (kubectl's start-up)",
            [timed(kv, env) for _ in range(opts.runs)], kv)
        print()
        made = 0
        for count in [int(c) for c in opts.pods.split(",") if c]:
            docs = "---\n".join(POD.format(i=i) for i in range(made, count))
            if docs:
                timed([KUBECTL, "create", "-f", "-"], env, stdin=docs)
            made = max(made, count)
            full = compare(f"{count} pods", ["get", "pods"], env, opts.runs)
            print(f"  {'pykubectl start-up share of its run (cpu)':<46} {startup / full:.0%} "
                  f"(interpreter alone {interp / full:.0%})")
            compare(f"{count} pods", ["get", "pods", "-o", "json"], env, opts.runs)
            print()
        compare("one pod by name", ["get", "pod", "bench-0"], env, opts.runs)
        compare("an error", ["get", "pod", "nope", "--ignore-not-found"], env, opts.runs)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
