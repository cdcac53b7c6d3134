#!/usr/bin/env python3
"""Streaming benchmark: exec round trip and port-forward throughput through the runtime's
streaming server, over WebSocket and SPDY.

    sudo .venv/bin/python bench/streaming_bench.py [-n 30] [--mib 64]

Starts ``pykubelet runtime`` on a temp root, imports the offline busybox, runs a
host-network pod (no CNI needed) whose container serves a ``--mib`` MiB file with busybox
httpd on a free loopback port, then measures

- exec round trip: Exec RPC -> connect to the URL -> ``true`` runs -> exit status read
  (what ``kubectl exec POD -- true`` costs on the node, without the API server hop), per
  transport, median and p90 over N; ExecSync of ``true`` for reference;
- port-forward throughput: the file fetched through PortForward (one connection), MB/s per
  transport, and the same fetch straight over loopback for reference.
Everything it made is removed at the end. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pykubelet._proto.runtime.v1 import api_pb2 as pb  # noqa: E402
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc  # noqa: E402
from pykubelet.runtime.image_build import build_busybox_image  # noqa: E402
from pykubelet.streaming import protocols as p  # noqa: E402
from pykubelet.streaming.client import PortForwardClient, run_remote_command  # noqa: E402

PYKUBELET = REPO / ".venv" / "bin" / "pykubelet"
IMAGE = "docker.io/library/busybox:latest"
CGROUP_PARENT = "/pykbench-stream"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def fetch(read, write, mib: int) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    await write(b"GET /big HTTP/1.0\r\n\r\n")
    got = 0
    while chunk := await read():
        got += len(chunk)
    dt = time.perf_counter() - t0
    if got < mib << 20:
        raise RuntimeError(f"short read: {got} bytes")
    return got / dt / 1e6


async def measure(rt: pb_grpc.RuntimeServiceStub, cid: str, pod_id: str, port: int,
                  n: int, mib: int) -> dict:
    out: dict = {"exec_ms": {}, "portforward_MBps": {}}
    for transport in ("websocket", "spdy"):
        times = []
        for i in range(n + 2):
            t0 = time.perf_counter()
            url = rt.Exec(pb.ExecRequest(container_id=cid, cmd=["true"], stdout=True,
                                         stderr=True), timeout=10).url
            r = await run_remote_command(url, p.StreamOptions(), transport=transport)
            dt = time.perf_counter() - t0
            assert r.exit_code == 0
            if i >= 2:
                times.append(dt * 1000)
        times.sort()
        out["exec_ms"][transport] = {"median": round(statistics.median(times), 1),
                                     "p90": round(times[int(len(times) * 0.9) - 1], 1)}
    sync = []
    for _ in range(n):
        t0 = time.perf_counter()
        rt.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=["true"], timeout=10), timeout=20)
        sync.append((time.perf_counter() - t0) * 1000)
    out["exec_ms"]["ExecSync (reference)"] = {"median": round(statistics.median(sync), 1)}
    for transport in ("websocket", "spdy"):
        rates = []
        for _ in range(3):
            url = rt.PortForward(pb.PortForwardRequest(pod_sandbox_id=pod_id, port=[port]),
                                 timeout=10).url
            pf = await PortForwardClient.connect(url, transport=transport)
            conn = await pf.dial(port)
            rates.append(await fetch(conn.read, conn.write, mib))
            await conn.close()
            await pf.close()
        out["portforward_MBps"][transport] = round(statistics.median(rates), 1)
    rates = []
    for _ in range(3):
        r, w = await asyncio.open_connection("127.0.0.1", port)

        async def write(data: bytes, w=w) -> None:  # type: ignore[no-untyped-def]
            w.write(data)
            await w.drain()

        rates.append(await fetch(lambda r=r: r.read(1 << 16), write, mib))
        w.close()
    out["portforward_MBps"]["direct loopback (reference)"] = round(statistics.median(rates), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--mib", type=int, default=64)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("streaming_bench: run as root")
    tmp = Path(tempfile.mkdtemp(prefix="streambench-"))
    (tmp / "net.d").mkdir()
    archive = tmp / "busybox.tar"
    build_busybox_image(archive, name=IMAGE)
    subprocess.run([str(PYKUBELET), "image", "import", str(archive), "--root",
                    str(tmp / "root")], check=True, capture_output=True)
    sock = tmp / "cri.sock"
    log = open(tmp / "runtime.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen([str(PYKUBELET), "runtime", "--root", str(tmp / "root"),
                             "--listen", f"unix://{sock}", "--cni-conf-dir", str(tmp / "net.d"),
                             "--netns-prefix", "strb-", "--log-level", "warning"],
                            stdout=log, stderr=log, start_new_session=True)
    channel = grpc.insecure_channel(f"unix://{sock}")
    rt = pb_grpc.RuntimeServiceStub(channel)
    port = free_port()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                rt.Version(pb.VersionRequest(), timeout=1)
                break
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        logs = tmp / "logs"
        logs.mkdir()
        ns = pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD)
        cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="streambench", uid="sb-1", namespace="default"),
            log_directory=str(logs),
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=CGROUP_PARENT,
                security_context=pb.LinuxSandboxSecurityContext(namespace_options=ns)))
        pod_id = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg), timeout=60).pod_sandbox_id
        script = (f"mkdir -p /tmp/w && dd if=/dev/zero of=/tmp/w/big bs=1M count={args.mib} "
                  f"2>/dev/null && exec httpd -f -p 127.0.0.1:{port} -h /tmp/w")
        cc = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name="srv"), image=pb.ImageSpec(image=IMAGE),
            command=["sh", "-c", script], log_path="srv/0.log",
            linux=pb.LinuxContainerConfig(security_context=pb.LinuxContainerSecurityContext(
                namespace_options=ns)))
        cid = rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=pod_id, config=cc, sandbox_config=cfg), timeout=60).container_id
        rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        result = asyncio.run(measure(rt, cid, pod_id, port, args.n, args.mib))
        result["n"] = args.n
        result["file_mib"] = args.mib
        print(json.dumps(result, indent=1))
    finally:
        try:
            for c in rt.ListContainers(pb.ListContainersRequest(), timeout=10).containers:
                rt.StopContainer(pb.StopContainerRequest(container_id=c.id, timeout=0),
                                 timeout=30)
                rt.RemoveContainer(pb.RemoveContainerRequest(container_id=c.id), timeout=30)
            for s in rt.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=10).items:
                rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=s.id), timeout=30)
                rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=s.id), timeout=30)
        finally:
            channel.close()
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
            log.close()
            for hier in Path("/sys/fs/cgroup").iterdir():
                d = hier / CGROUP_PARENT.lstrip("/")
                if d.is_dir():
                    for sub in sorted(d.rglob("*"), key=lambda x: -len(str(x))):
                        if sub.is_dir():
                            sub.rmdir()
                    d.rmdir()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
