"""ADD then DEL of a fresh namespace through three bridge plugins, side by side.

(a) our ``pycni-bridge`` exec'd as a binary (the launcher ``pycni install`` writes),
(b) our bridge in-process from the runtime side (pycni.libcni, in_process=True),
(c) the reference ``bridge`` binary from /usr/lib/cni (with its ``host-local``).

Same config for all (isGateway, ipMasq, host-local), a fresh netns per round
(created and deleted outside the timed part). Prints median and range (ms) and
the ratio to the reference. Run as root:

    .venv/bin/python bench/cni_bench.py [--rounds 20]
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
from collections.abc import Callable

from pycni import ns
from pycni.conf import conflist_from_bytes
from pycni.install import install
from pycni.libcni import CNIConfig, RuntimeConf

REFERENCE_DIR = "/usr/lib/cni"
BRIDGE = "pckbench0"
SUBNET = "10.93.250.0/24"
NET = "pckbench"


def plugin_conf(bridge_type: str, ipam_type: str, data_dir: str) -> dict[str, object]:
    return {
        "cniVersion": "1.0.0", "name": NET, "type": bridge_type, "bridge": BRIDGE,
        "isGateway": True, "ipMasq": True,
        "ipam": {"type": ipam_type, "ranges": [[{"subnet": SUBNET}]],
                 "routes": [{"dst": "0.0.0.0/0"}], "dataDir": data_dir},
    }


def exec_plugin(path: str, command: str, conf: dict[str, object], cid: str, netns: str,
                cni_path: str) -> bytes:
    env = dict(os.environ, CNI_COMMAND=command, CNI_CONTAINERID=cid, CNI_NETNS=netns,
               CNI_IFNAME="eth0", CNI_PATH=cni_path)
    proc = subprocess.run([path], input=json.dumps(conf).encode(), env=env,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{path} {command} failed: {proc.stdout!r} {proc.stderr!r}")
    return proc.stdout


class Variant:
    def __init__(self, name: str, add: Callable[[str, str], object],
                 delete: Callable[[str, str], object]) -> None:
        self.name, self.add, self.delete = name, add, delete
        self.t_add: list[float] = []
        self.t_del: list[float] = []
        self.t_both: list[float] = []


def exec_variant(name: str, bin_dir: str, bridge: str, ipam: str, data_dir: str) -> Variant:
    def add(cid: str, netns: str) -> object:
        return exec_plugin(os.path.join(bin_dir, bridge), "ADD",
                           plugin_conf(bridge, ipam, data_dir), cid, netns, bin_dir)

    def delete(cid: str, netns: str) -> object:
        # the runtime passes the ADD result as prevResult on DEL (spec >= 0.4.0)
        conf = plugin_conf(bridge, ipam, data_dir)
        conf["prevResult"] = json.loads(last[cid])
        return exec_plugin(os.path.join(bin_dir, bridge), "DEL", conf, cid, netns, bin_dir)

    last: dict[str, bytes] = {}

    def add_keep(cid: str, netns: str) -> object:
        last[cid] = add(cid, netns)  # type: ignore[assignment]
        return last[cid]

    return Variant(name, add_keep, delete)


def inprocess_variant(bin_dir: str, data_dir: str, cache_dir: str) -> Variant:
    conf = plugin_conf("pycni-bridge", "pycni-host-local", data_dir)
    netlist = conflist_from_bytes(json.dumps({"cniVersion": "1.0.0", "name": NET,
                                              "plugins": [conf]}).encode())
    cni = CNIConfig([bin_dir], cache_dir=cache_dir, in_process=True)
    return Variant("(b) pycni in-process (libcni)",
                   lambda cid, netns: cni.add_network_list(netlist, RuntimeConf(cid, netns)),
                   lambda cid, netns: cni.del_network_list(netlist, RuntimeConf(cid, netns)))


def run_round(v: Variant, i: int) -> None:
    name = f"pckb{os.getpid() % 10000}-{i}"
    path = ns.create_netns(name)
    cid = f"bench-{i}"
    try:
        t0 = time.perf_counter()
        v.add(cid, path)
        t1 = time.perf_counter()
        v.delete(cid, path)
        t2 = time.perf_counter()
    finally:
        ns.delete_netns(name)
    v.t_add.append((t1 - t0) * 1000)
    v.t_del.append((t2 - t1) * 1000)
    v.t_both.append((t2 - t0) * 1000)


def fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):7.1f} [{min(xs):6.1f}-{max(xs):6.1f}]"


def startup_breakdown(bin_dir: str, runs: int = 10) -> list[tuple[str, float]]:
    """What an exec'd plugin pays before its first netlink message: the interpreter
    (``-I -S`` as the launcher runs it), then importing the plugin and what it uses."""
    launcher = os.path.join(bin_dir, "pycni-bridge")
    with open(launcher) as f:
        interpreter = f.readline()[2:].split()
        body = f.read()
    imports = body.replace("main()", "import pycni.invoke, pycni.plugins.host_local, "
                                     "pycni.masq.restore")

    def median_ms(cmd: list[str]) -> float:
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            times.append((time.perf_counter() - t) * 1000)
        return statistics.median(times)

    bare = median_ms([*interpreter, "-c", "pass"])
    loaded = median_ms([*interpreter, "-c", imports])
    return [("interpreter start (-I -S)", bare),
            ("imports of bridge+host-local+masq", loaded - bare)]


def cleanup() -> None:
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    opts = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="pck-bench-")
    try:
        bin_dir = os.path.join(tmp, "bin")
        os.makedirs(bin_dir)
        install(bin_dir)
        variants = [
            exec_variant("(a) pycni-bridge exec'd", bin_dir, "pycni-bridge", "pycni-host-local",
                         os.path.join(tmp, "a")),
            inprocess_variant(bin_dir, os.path.join(tmp, "b"), os.path.join(tmp, "cache")),
            exec_variant("(c) reference bridge", REFERENCE_DIR, "bridge", "host-local",
                         os.path.join(tmp, "c")),
        ]
        for v in variants:  # warm up caches (page cache, the in-process imports, the bridge)
            for i in range(opts.warmup):
                run_round(v, 1000 + i)
            v.t_add.clear()
            v.t_del.clear()
            v.t_both.clear()
        for i in range(opts.rounds):  # interleaved, so drift hits every variant alike
            for v in variants:
                run_round(v, i)
        ref = statistics.median(variants[-1].t_both)
        print(f"CNI ADD+DEL of a fresh netns, {opts.rounds} rounds, ms: median [min-max]")
        print(f"{'variant':34} {'ADD':>22} {'DEL':>22} {'ADD+DEL':>22} {'ratio':>6}")
        for v in variants:
            ratio = statistics.median(v.t_both) / ref
            print(f"{v.name:34} {fmt(v.t_add):>22} {fmt(v.t_del):>22} {fmt(v.t_both):>22}"
                  f" {ratio:5.2f}x")
        print("\nexec'd pycni-bridge, per call before any work (median of 10):")
        for what, ms in startup_breakdown(bin_dir):
            print(f"  {what:40} {ms:6.1f} ms")
    finally:
        cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
