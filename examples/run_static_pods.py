#!/usr/bin/env python3
"""One node, no control plane: run the sample static pods and show them Running.

    .venv/bin/python examples/run_static_pods.py [--keep] [--timeout 120]

Starts `pykubelet run` with a config made from examples/node-config.yaml (everything under
a temp directory; the embedded `pykubelet runtime` on its runDir/cri.sock; a CNI bridge
`pkdemo0` on 10.97.200.0/24 through pycni's bridge and host-local, with ipMasq), with
examples/static-pods/ as its static pod directory and the offline busybox image in its
store. It polls the agent's /pods endpoint until every pod is Running and ready, prints
them with their IPs, fetches the web pod's page, then removes the pods and stops (unless --keep).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYKUBELET = REPO / ".venv" / "bin" / "pykubelet"
BRIDGE = "pkdemo0"
SUBNET = "10.97.200.0/24"
PORT = 10348


def get_pods(port: int) -> list[dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/pods", timeout=2) as r:
            return list(json.load(r)["items"])
    except OSError:
        return []


def ready(p: dict[str, Any]) -> bool:
    st = p["status"]
    cs = st.get("containerStatuses", [])
    return st.get("phase") == "Running" and bool(cs) and all(c["ready"] for c in cs)


def show(pods: list[dict[str, Any]]) -> None:
    print(f"{'NAME':<24} {'READY':<6} {'STATUS':<10} {'RESTARTS':<9} IP")
    for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
        cs = p["status"].get("containerStatuses", [])
        n_ready = sum(1 for c in cs if c["ready"])
        restarts = sum(c["restartCount"] for c in cs)
        print(f"{p['metadata']['name']:<24} {n_ready}/{len(cs):<4} "
              f"{p['status'].get('phase', ''):<10} {restarts:<9} {p['status'].get('podIP', '')}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="leave the node and its pods running")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")

    base = Path(tempfile.mkdtemp(prefix="pykubelet-demo-", dir="/tmp"))
    conf_dir, manifests = base / "net.d", base / "manifests"
    conf_dir.mkdir()
    shutil.copytree(HERE / "static-pods", manifests)
    (conf_dir / "10-pkdemo.conflist").write_text(json.dumps({
        "cniVersion": "1.0.0", "name": "pkdemo",
        "plugins": [
            # pycni's own plugins (installed in /opt/cni/bin by scripts/install.sh; the
            # runtime runs them in-process), then the reference portmap for hostPorts
            {"type": "pycni-bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": True,
             "ipam": {"type": "pycni-host-local", "dataDir": str(base / "ipam"),
                      "ranges": [[{"subnet": SUBNET}]]}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }))
    cfg = yaml.safe_load((HERE / "node-config.yaml").read_text())
    cfg.update(rootDir=str(base / "root"), runDir=str(base / "run"),
               staticPodPath=str(manifests), cniConfDir=str(conf_dir),
               podLogsDir=str(base / "logs"), healthzPort=PORT, nodeName="demo",
               cniBinDir="/opt/cni/bin:/usr/lib/cni")
    (base / "config.yaml").write_text(yaml.safe_dump(cfg))

    sys.path.insert(0, str(REPO))
    from pykubelet.runtime.image_build import build_busybox_image

    build_busybox_image(base / "busybox.tar", name="localhost/busybox:latest")
    subprocess.run([str(PYKUBELET), "image", "--root", str(base / "root"), "import",
                    str(base / "busybox.tar")], check=True, stdout=subprocess.DEVNULL)

    print(f"starting: pykubelet run --config {base / 'config.yaml'}")
    log = open(base / "agent.log", "ab")  # noqa: SIM115 (the child owns it)
    agent = subprocess.Popen([str(PYKUBELET), "run", "--config", str(base / "config.yaml")],
                             stdout=log, stderr=log, start_new_session=True)
    ok = False
    try:
        t0 = time.monotonic()
        pods: list[dict[str, Any]] = []
        while time.monotonic() - t0 < args.timeout:
            if agent.poll() is not None:
                print((base / "agent.log").read_text()[-3000:], file=sys.stderr)
                return 1
            pods = get_pods(PORT)
            if len(pods) == 2 and all(ready(p) for p in pods):
                ok = True
                break
            time.sleep(0.5)
        print(f"after {time.monotonic() - t0:.1f} s, http://127.0.0.1:{PORT}/pods says:")
        show(pods)
        web = next((p for p in pods if p["metadata"]["name"].startswith("web-")), None)
        if ok and web is not None:
            url = f"http://{web['status']['podIP']}:8080/index.html"
            with urllib.request.urlopen(url, timeout=5) as r:
                print(f"GET {url}: {r.read().decode().strip()}")
        if args.keep:
            print(f"left running: agent pid {agent.pid}, state in {base}")
            return 0 if ok else 1
    finally:
        if not args.keep:
            for f in manifests.iterdir():
                f.unlink()
            from pykubelet.kubelet.cri_client import CRICallError, CRIClient

            end = time.monotonic() + 60
            with CRIClient(f"unix://{base / 'run' / 'cri.sock'}", timeout=10) as cri:
                while time.monotonic() < end:  # the agent removes the pods' sandboxes
                    try:
                        if not cri.list_pod_sandbox():
                            break
                    except CRICallError:
                        break
                    time.sleep(0.5)
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(30)
            except subprocess.TimeoutExpired:
                agent.kill()
            subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
            with contextlib.suppress(OSError):
                with open("/proc/self/mountinfo") as f:
                    mounts = [ln.split()[4] for ln in f if ln.split()[4].startswith(str(base))]
                for m in sorted(mounts, key=len, reverse=True):
                    subprocess.run(["umount", "-l", m], capture_output=True)
            shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
