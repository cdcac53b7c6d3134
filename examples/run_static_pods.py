#!/usr/bin/env python3
"""One node, no control plane: run the sample static pods and show them Running.

    .venv/bin/python examples/run_static_pods.py [--keep] [--timeout 120]
    .venv/bin/python examples/run_static_pods.py --stop DIR

Starts `pykubelet run` with a config made from examples/node-config.yaml (everything under
a new directory /tmp/pykubelet-demo-*; the embedded `pykubelet runtime` on its
runDir/cri.sock), examples/static-pods/ as its static pod directory, the offline busybox
image in its store, and examples/cni/10-pkdemo.conflist as its pods' network (pycni's
bridge and host-local, with ipMasq, then the reference portmap). Each run picks its own
bridge, subnet (10.97.N.0/24) and HTTP port, so runs never share one. It polls the
agent's /pods endpoint until every pod is Running and ready, prints them with their IPs,
fetches the web pod's page, then removes the pods, stops the node and deletes the bridge
and the directory. With --keep it leaves the node running and prints how to stop it:
--stop DIR does the same cleanup later (or after a crash of the agent or the runtime).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import ipaddress
import json
import os
import shutil
import signal
import socket
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
CONFLIST = HERE / "cni" / "10-pkdemo.conflist"
DEMO_PREFIX = "pykubelet-demo-"
FACTS = "demo.json"  # what this run picked: bridge, network, subnet, port

sys.path.insert(0, str(REPO))
from pykubelet import state_lock  # noqa: E402 (after the path is set)


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


# ----------------------------------------------------------------------------- picking


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _subnets_in_use() -> set[str]:
    """10.97.N.0/24 subnets other demo runs picked, or the host routes."""
    used: set[str] = set()
    for facts in Path(tempfile.gettempdir()).glob(f"{DEMO_PREFIX}*/{FACTS}"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            used.add(json.loads(facts.read_text())["subnet"])
    demo = ipaddress.ip_network("10.97.0.0/16")
    routes = subprocess.run(["ip", "-4", "-o", "route", "show", "table", "all"],
                            capture_output=True, text=True).stdout
    for line in routes.splitlines():
        words = line.split()
        dest = words[1] if words and words[0] in ("local", "broadcast", "unicast") else words[0]
        with contextlib.suppress(ValueError, IndexError):
            net = ipaddress.ip_network(dest, strict=False)
            if net.overlaps(demo):
                used.add(str(ipaddress.ip_network(f"{net.network_address}/24", strict=False)))
    return used


def pick(base: Path) -> dict[str, Any]:
    """This run's bridge, network name, subnet and port, written to base/demo.json while
    no other run of this script picks (they read each other's demo.json)."""
    suffix = base.name[len(DEMO_PREFIX):]
    with open(__file__) as me:
        fcntl.flock(me, fcntl.LOCK_EX)  # this file: a lock that leaves nothing behind
        used = _subnets_in_use()
        subnet = next((s for n in [*range(200, 255), *range(1, 200)]
                       if (s := f"10.97.{n}.0/24") not in used), None)
        if subnet is None:
            sys.exit("no free 10.97.N.0/24 subnet for this run: stop the others (--stop DIR)")
        facts = {"bridge": f"pkd{suffix}"[:15], "network": f"pkdemo-{suffix}",
                 "subnet": subnet, "port": _free_port()}
        (base / FACTS).write_text(json.dumps(facts))
    return facts


def conflist(base: Path, facts: dict[str, Any]) -> dict[str, Any]:
    """examples/cni/10-pkdemo.conflist with this run's bridge, subnet and IPAM dir."""
    net = json.loads(CONFLIST.read_text())
    net["name"] = facts["network"]
    bridge = net["plugins"][0]
    bridge["bridge"] = facts["bridge"]
    bridge["ipam"]["ranges"] = [[{"subnet": facts["subnet"]}]]
    bridge["ipam"]["dataDir"] = str(base / "ipam")
    return net


# ----------------------------------------------------------------------------- stopping


def _released(lock: Path, timeout: float) -> bool:
    """Whether the daemon holding ``lock`` exited within ``timeout`` (its lock went with it,
    even while it waits, a zombie, for a parent to reap it)."""
    end = time.monotonic() + timeout
    while state_lock.holder(lock) is not None:
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


def _exited(pid: int, timeout: float) -> bool:
    """Whether ``pid`` is gone (or a zombie) within ``timeout``: a daemon releases its
    lock before its interpreter has finished exiting."""
    end = time.monotonic() + timeout
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.05)


def _terminate(lock: Path, what: str) -> None:
    """SIGTERM the daemon holding ``lock``, SIGKILL after 30 s; back once it has exited."""
    pid = state_lock.holder(lock)
    if not pid:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        if not (_released(lock, 30) and _exited(pid, 10)):
            print(f"{what} pid {pid} did not stop in 30 s: killing it", file=sys.stderr)
            os.kill(pid, signal.SIGKILL)
            _exited(pid, 5)


def _remove_pods(base: Path, agent_pid: int | None) -> None:
    """The agent removes the pods whose manifests went; without an agent (it crashed),
    they are removed over CRI here. Either way the runtime runs CNI DEL for each."""
    from pykubelet.kubelet.cri.cri_client import CRICallError, CRIClient

    manifests = base / "manifests"
    if manifests.is_dir():
        for f in manifests.iterdir():
            f.unlink()
    sock = base / "run" / "cri.sock"
    if state_lock.holder(base / "root" / state_lock.RUNTIME_LOCK) is None:
        return  # no runtime: nothing runs (namespaces are unpinned below)
    end = time.monotonic() + 60
    with CRIClient(f"unix://{sock}", timeout=30) as cri:
        while time.monotonic() < end:
            try:
                sandboxes = cri.list_pod_sandbox()
                if not sandboxes:
                    return
                if agent_pid is None:
                    for s in sandboxes:
                        cri.stop_pod_sandbox(s.id)
                        cri.remove_pod_sandbox(s.id)
            except CRICallError as exc:
                print(f"removing pods: {exc}", file=sys.stderr)
                return
            time.sleep(0.5)


def stop(base: Path) -> int:
    """Remove the pods, stop the agent and its runtime, delete the bridge and ``base``."""
    facts_file = base / FACTS
    if not facts_file.is_file():
        print(f"{base}: not a directory this example made (no {FACTS})", file=sys.stderr)
        return 1
    facts = json.loads(facts_file.read_text())
    agent_lock = base / "root" / state_lock.KUBELET_LOCK
    _remove_pods(base, state_lock.holder(agent_lock))
    _terminate(agent_lock, "agent")  # it stops the runtime it started
    _terminate(base / "root" / state_lock.RUNTIME_LOCK, "runtime")
    subprocess.run(["ip", "link", "del", facts["bridge"]], capture_output=True)
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        mounts = [ln.split()[4] for ln in f if ln.split()[4].startswith(f"{base}/")]
    for m in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", m], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)
    print(f"stopped: pods removed, node stopped, bridge {facts['bridge']} and {base} deleted")
    return 0


# ----------------------------------------------------------------------------- running


def run(args: argparse.Namespace) -> int:
    base = Path(tempfile.mkdtemp(prefix=DEMO_PREFIX, dir="/tmp"))
    facts = pick(base)
    conf_dir, manifests = base / "net.d", base / "manifests"
    conf_dir.mkdir()
    shutil.copytree(HERE / "static-pods", manifests)
    (conf_dir / CONFLIST.name).write_text(json.dumps(conflist(base, facts), indent=2))
    cfg = yaml.safe_load((HERE / "node-config.yaml").read_text())
    cfg.update(rootDir=str(base / "root"), runDir=str(base / "run"),
               staticPodPath=str(manifests), cniConfDir=str(conf_dir),
               podLogsDir=str(base / "logs"), healthzPort=facts["port"], nodeName="demo")
    (base / "config.yaml").write_text(yaml.safe_dump(cfg))

    from pykubelet.runtime.image_build import build_busybox_image, busybox_version

    # tagged with its release (what the manifests name: IfNotPresent, never pulled) and latest
    build_busybox_image(base / "busybox.tar", name=f"localhost/busybox:{busybox_version()}")
    for tag in ([], ["--name", "localhost/busybox:latest"]):
        subprocess.run([str(PYKUBELET), "image", "--root", str(base / "root"), "import", *tag,
                        str(base / "busybox.tar")], check=True, stdout=subprocess.DEVNULL)

    port = facts["port"]
    print(f"starting: pykubelet run --config {base / 'config.yaml'} "
          f"(bridge {facts['bridge']}, subnet {facts['subnet']}, port {port})")
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
            pods = get_pods(port)
            if len(pods) == 2 and all(ready(p) for p in pods):
                ok = True
                break
            time.sleep(0.5)
        print(f"after {time.monotonic() - t0:.1f} s, http://127.0.0.1:{port}/pods says:")
        show(pods)
        web = next((p for p in pods if p["metadata"]["name"].startswith("web-")), None)
        if ok and web is not None:
            url = f"http://{web['status']['podIP']}:8080/index.html"
            with urllib.request.urlopen(url, timeout=5) as r:
                print(f"GET {url}: {r.read().decode().strip()}")
        if not ok:
            print((base / "agent.log").read_text()[-3000:], file=sys.stderr)
        if args.keep:
            print(f"left running: agent pid {agent.pid}, its log {base / 'agent.log'}, "
                  f"state in {base}")
            print(f"stop it with: {sys.executable} {Path(__file__)} --stop {base}")
            return 0 if ok else 1
    finally:
        if not args.keep:
            stop(base)
            agent.wait(10)
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="leave the node and its pods running")
    ap.add_argument("--stop", metavar="DIR", type=Path,
                    help="stop what a --keep run left in DIR and delete it")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    if args.stop is not None:
        return stop(args.stop.resolve())
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
