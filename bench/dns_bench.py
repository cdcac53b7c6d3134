#!/usr/bin/env python3
"""Cluster DNS benchmark: our server (``python -m pykubelet.dns.server``) against dnsmasq
(Debian's dnsmasq-base, the same names as static hosts through --addn-hosts) in the same
run, each alone on its own 127.0.0.x address, both answering every query from memory.

Prints, per server: queries/s from one client over UDP (dnsperf -c 1 -T 1, its default
100 queries in flight, when installed; else a Python client keeping 100 in flight), and
latency p50/p99 of queries sent at a steady 1,000 qps (a Python sender and receiver on
one socket). Goal (issue 20): ours >= 0.5x dnsmasq's queries/s, p99 <= 5 ms at 1,000 qps.
Figures only: nothing here passes or fails.

    .venv/bin/python bench/dns_bench.py [--services 1000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

DOMAIN = "cluster.local"


def objects(n: int) -> tuple[list[dict[str, object]], list[str]]:
    """n ClusterIP Services and their names."""
    svcs, names = [], []
    for i in range(n):
        ip = f"10.96.{i // 250}.{i % 250 + 2}"
        svcs.append({"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": f"svc-{i}", "namespace": "default"},
                     "spec": {"clusterIP": ip, "ports": [{"name": "http", "port": 80}]}})
        names.append((f"svc-{i}.default.svc.{DOMAIN}", ip))
    return svcs, names  # type: ignore[return-value]


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_answering(host: str, port: int, name: str, timeout: float = 20) -> None:
    q = query_wire(1, name)
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        while time.monotonic() < deadline:
            s.sendto(q, (host, port))
            try:
                if s.recv(512)[:2] == q[:2]:
                    return
            except TimeoutError:
                pass
    raise RuntimeError(f"{host}:{port} does not answer")


def query_wire(qid: int, name: str) -> bytes:
    labels = b"".join(bytes([len(x)]) + x.encode() for x in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + labels + b"\0\x01\0\x01"


def dnsperf_qps(host: str, port: int, names: list[str], seconds: int) -> float | None:
    if not shutil.which("dnsperf"):
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(f"{n} A\n" for n in names))
    try:
        out = subprocess.run(["dnsperf", "-s", host, "-p", str(port), "-d", f.name, "-c", "1",
                              "-T", "1", "-l", str(seconds)], capture_output=True, text=True,
                             timeout=seconds + 30).stdout
    finally:
        os.unlink(f.name)
    m = re.search(r"Queries per second:\s+([\d.]+)", out)
    lost = re.search(r"Queries lost:\s+(\d+)", out)
    if lost and int(lost.group(1)):
        print(f"  (dnsperf: {lost.group(1)} queries lost against {host}:{port})")
    return float(m.group(1)) if m else None


def python_qps(host: str, port: int, names: list[str], seconds: float,
               window: int = 100) -> float:
    """A closed loop keeping ``window`` queries in flight."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    s.settimeout(1)
    done, qid = 0, 0
    end = time.monotonic() + seconds
    for _ in range(window):
        qid = (qid + 1) & 0xFFFF
        s.send(query_wire(qid, random.choice(names)))
    t0 = time.monotonic()
    while time.monotonic() < end:
        try:
            s.recv(512)
        except TimeoutError:
            pass
        done += 1
        qid = (qid + 1) & 0xFFFF
        s.send(query_wire(qid, names[qid % len(names)]))
    s.close()
    return done / (time.monotonic() - t0)


def paced_latency(host: str, port: int, names: list[str], qps: int,
                  seconds: float) -> tuple[float, float, int]:
    """p50 and p99 in ms of queries sent at ``qps``, and how many got no answer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    s.settimeout(0.5)
    total = int(qps * seconds)
    sent: dict[int, float] = {}
    lat: list[float] = []
    stop = threading.Event()

    def receive() -> None:
        while not stop.is_set() or len(lat) < len(sent):
            try:
                data = s.recv(512)
            except (TimeoutError, OSError):
                if stop.is_set():
                    return
                continue
            t = time.perf_counter()
            qid = struct.unpack("!H", data[:2])[0]
            if qid in sent:
                lat.append(t - sent[qid])

    r = threading.Thread(target=receive)
    r.start()
    t0 = time.perf_counter()
    for i in range(total):
        due = t0 + i / qps
        while (now := time.perf_counter()) < due:
            time.sleep(max(0.0, due - now - 0.0002))
        qid = i & 0xFFFF
        sent[qid] = time.perf_counter()
        s.send(query_wire(qid, names[i % len(names)]))
    stop.set()
    r.join(5)
    s.close()
    lat.sort()
    if not lat:
        return float("nan"), float("nan"), total
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000  # noqa: E731
    return p(0.50), p(0.99), total - len(lat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--services", type=int, default=1000)
    ap.add_argument("--seconds", type=int, default=5)
    args = ap.parse_args()
    svcs, pairs = objects(args.services)
    names = [n for n, _ in pairs]
    work = Path(tempfile.mkdtemp(prefix="dns-bench-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        (work / "objects.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                       "items": svcs}))
        (work / "hosts").write_text("".join(f"{ip} {n}\n" for n, ip in pairs))
        ours = ("127.0.0.2", free_port("127.0.0.2"))
        theirs = ("127.0.0.3", free_port("127.0.0.3"))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "pykubelet.dns.server", "--listen", f"{ours[0]}:{ours[1]}",
             "--objects", str(work / "objects.json"), "--no-upstream"],
            stdout=subprocess.DEVNULL))
        if not shutil.which("dnsmasq"):
            print("dnsmasq not installed (Debian's dnsmasq-base): ours only")
            theirs = None  # type: ignore[assignment]
        else:
            procs.append(subprocess.Popen(
                ["dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts",
                 f"--addn-hosts={work / 'hosts'}", f"--listen-address={theirs[0]}",
                 "--bind-interfaces", f"--port={theirs[1]}", "--user=root",
                 f"--pid-file={work / 'dnsmasq.pid'}", "--cache-size=10000",
                 "--local-ttl=5"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        rows = []
        for label, addr in (("pykubelet.dns", ours), ("dnsmasq", theirs)):
            if addr is None:
                continue
            wait_answering(addr[0], addr[1], names[0])
            qps = dnsperf_qps(addr[0], addr[1], names, args.seconds)
            tool = "dnsperf"
            if qps is None:
                qps, tool = python_qps(addr[0], addr[1], names, args.seconds), "python"
            p50, p99, lost = paced_latency(addr[0], addr[1], names, 1000, args.seconds)
            rows.append((label, qps, tool, p50, p99, lost))
        print(f"\n{args.services} Services, A queries over UDP, one client, "
              f"{args.seconds} s per figure")
        print(f"{'server':<15}{'queries/s':>12}  {'by':<8}{'p50 ms @1k':>11}{'p99 ms @1k':>11}"
              f"{'lost':>6}")
        for label, qps, tool, p50, p99, lost in rows:
            print(f"{label:<15}{qps:>12.0f}  {tool:<8}{p50:>11.3f}{p99:>11.3f}{lost:>6}")
        if len(rows) == 2:
            ratio = rows[0][1] / rows[1][1]
            print(f"\nours / dnsmasq: {ratio:.2f}x (goal >= 0.5x); our p99 at 1,000 qps: "
                  f"{rows[0][4]:.2f} ms (goal <= 5 ms)")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
