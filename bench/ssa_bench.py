#!/usr/bin/env python3
"""Server-side apply benchmark (issue 28): a real ``pykubelet control-plane`` process
(SQLite, HTTPS) and the real kubectl on PATH.

1. ``kubectl apply`` of a 50-object manifest (25 ConfigMaps, 25 Deployments) into a fresh
   namespace, then again with every object changed: client-side apply against
   ``--server-side``, in the same run, alternating; wall time and the bytes kubectl sent
   (counted by a TCP relay between kubectl and the server; discovery is cached first).
2. What keeping managedFields costs a create: pod creates from 50 keep-alive clients
   against this tree and against the tree before managedFields (a ``git archive`` of the
   commit before the field manager was added, run from its own directory): p50/p99 and
   creates/s, the two servers alternating. Figures only: nothing here passes or fails.

    .venv/bin/python bench/ssa_bench.py [--quick] [--baseline-rev REV]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_bench import Server, pct, pod, run_workers

REPO = Path(__file__).resolve().parents[1]
N_OBJECTS = 50


def manifest(version: str) -> str:
    docs: list[dict[str, Any]] = []
    for i in range(N_OBJECTS // 2):
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": f"cm-{i}", "labels": {"app": "ssa", "v": version}},
                     "data": {"key": f"value-{version}-{i}", "other": "x" * 200}})
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": f"web-{i}", "labels": {"app": "ssa", "v": version}},
                     "spec": {"replicas": 0,
                              "selector": {"matchLabels": {"app": f"web-{i}"}},
                              "template": {
                                  "metadata": {"labels": {"app": f"web-{i}"}},
                                  "spec": {"containers": [{
                                      "name": "c", "image": f"nginx:{version}",
                                      "args": ["-g", "daemon off;"],
                                      "ports": [{"containerPort": 80}],
                                      "env": [{"name": "V", "value": version}],
                                      "resources": {"requests": {"cpu": "10m"}}}]}}}})
    return yaml.safe_dump_all(docs)


class Relay:
    """A TCP relay counting the bytes the client sends (TLS passes through)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.sent = 0
        self.server: asyncio.AbstractServer | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter,
                    count: bool) -> None:
        try:
            while data := await r.read(65536):
                if count:
                    self.sent += len(data)
                w.write(data)
                await w.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                w.close()

    async def _serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        ur, uw = await asyncio.open_connection("127.0.0.1", self.target_port)
        await asyncio.gather(self._pipe(r, uw, True), self._pipe(ur, w, False))

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()


async def kubectl(kubeconfig: Path, cache: Path, *args: str, stdin: str = "") -> float:
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), KUBECACHEDIR=str(cache))
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        "kubectl", *args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env)
    _out, err = await proc.communicate(stdin.encode())
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {err.decode()[-2000:]}")
    return time.perf_counter() - t0


async def apply_bench(rounds: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ssa-bench-"))
    srv = Server(tmp / "root")
    relay = Relay(srv.port)
    await relay.start()
    try:
        cfg = yaml.safe_load((tmp / "root" / "admin.kubeconfig").read_text())
        cfg["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"
        kc = tmp / "relay.kubeconfig"
        kc.write_text(yaml.safe_dump(cfg))
        cache = tmp / "kubectl-cache"
        await kubectl(kc, cache, "api-resources")  # discovery cached before measuring
        rows: dict[str, list[tuple[float, int, float, int]]] = {"client-side": [],
                                                                "server-side": []}
        for r in range(rounds):
            for mode, flags in (("client-side", []), ("server-side", ["--server-side"])):
                ns = f"{mode}-{r}"
                await kubectl(kc, cache, "create", "namespace", ns)
                b0 = relay.sent
                t_create = await kubectl(kc, cache, "apply", "-n", ns, *flags, "-f", "-",
                                         stdin=manifest("1"))
                b1 = relay.sent
                t_change = await kubectl(kc, cache, "apply", "-n", ns, *flags, "-f", "-",
                                         stdin=manifest("2"))
                rows[mode].append((t_create, b1 - b0, t_change, relay.sent - b1))
        print(f"\n## kubectl apply of {N_OBJECTS} objects (25 ConfigMaps, 25 Deployments), "
              f"median of {rounds}")
        print("mode          create s  create bytes  change s  change bytes")
        for mode, vals in rows.items():
            med = [statistics.median(v[i] for v in vals) for i in range(4)]
            print(f"{mode:12s}  {med[0]:8.2f}  {med[1]:12.0f}  {med[2]:8.2f}  {med[3]:12.0f}")
    finally:
        await relay.stop()
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def baseline_tree(rev: str, into: Path) -> str:
    """A checkout of ``rev`` (default: the commit before the field manager) in ``into``."""
    if not rev:
        added = subprocess.run(
            ["git", "-C", str(REPO), "log", "--diff-filter=A", "--format=%H", "--",
             "pykubelet/controlplane/registry/fieldmanager/manager.py"],
            capture_output=True, text=True, check=True).stdout.split()
        if not added:
            raise SystemExit("no field manager in this tree's history: pass --baseline-rev")
        rev = added[-1] + "^"
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev],
                             capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    tar_path = into.parent / "baseline.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    return rev


async def creates(srv: Server, total: int, tag: str) -> tuple[list[float], float]:
    """(each create's latency, the wall time) of ``total`` creates after a warm-up."""
    conn = aiohttp.TCPConnector(ssl=srv.ssl, limit=0)
    async with aiohttp.ClientSession(connector=conn, headers=srv.headers) as session:
        url = f"{srv.base}/api/v1/namespaces/default/pods"

        async def create(i: int) -> None:
            async with session.post(url, data=pod(f"{tag}{i:06d}")) as r:
                if r.status != 201:
                    raise RuntimeError(await r.text())
                await r.read()

        await run_workers(50, 100, lambda i: create(total + i))  # warm up
        t0 = time.perf_counter()
        lat = await run_workers(50, total, create)
        return lat, time.perf_counter() - t0


def start(root: Path, tree: Path | None) -> Server:
    old = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = str(tree)
    try:
        return Server(root)
    finally:
        if tree is not None:
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old


async def create_bench(quick: bool, rev: str, rounds: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ssa-create-bench-"))
    try:
        used = baseline_tree(rev, tmp / "baseline")
        total = 600 if quick else 1500
        results: dict[str, list[list[float]]] = {"with managedFields": [],
                                                  "without (baseline)": []}
        for r in range(rounds):
            for name, tree in (("without (baseline)", tmp / "baseline"),
                               ("with managedFields", None)):
                srv = start(tmp / f"root-{r}-{'b' if tree else 'm'}", tree)
                try:
                    async with aiohttp.ClientSession(
                            connector=aiohttp.TCPConnector(ssl=srv.ssl),
                            headers=srv.headers) as s, s.post(
                                f"{srv.base}/api/v1/nodes", data=json.dumps({
                                    "apiVersion": "v1", "kind": "Node",
                                    "metadata": {"name": "bench-node"}})) as resp:
                        assert resp.status == 201, await resp.text()
                    lat, wall = await creates(srv, total, "p")
                    results[name].append([*lat, wall])
                finally:
                    srv.stop()
        print(f"\n## pod creates at 50 clients ({total} per run, {rounds} runs each, "
              f"alternating; baseline {used})")
        print("server               creates/s  p50 ms  p99 ms")
        p99s = {}
        for name, runs in results.items():
            lat = [x for run in runs for x in run[:-1]]
            rate = statistics.median(total / run[-1] for run in runs)
            p99s[name] = statistics.median(pct(run[:-1], .99) for run in runs)
            print(f"{name:19s}  {rate:9.0f}  {pct(lat, .5) * 1000:6.1f}  "
                  f"{p99s[name] * 1000:6.1f}")
        base = p99s["without (baseline)"]
        print(f"p99 with managedFields / without: "
              f"{p99s['with managedFields'] / base if base else 0:.2f}x (median of runs)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests and rounds")
    ap.add_argument("--baseline-rev", default="", help="the tree without managedFields")
    ap.add_argument("--skip-apply", action="store_true")
    ap.add_argument("--skip-create", action="store_true")
    args = ap.parse_args()
    rounds = 2 if args.quick else 3
    print(f"# ssa_bench on {os.cpu_count()} cores")
    if not args.skip_apply:
        asyncio.run(apply_bench(rounds))
    if not args.skip_create:
        asyncio.run(create_bench(args.quick, args.baseline_rev, rounds))


if __name__ == "__main__":
    main()
