"""pycni demo: two namespaces on a bridge, pinging each other through our plugins.

    sudo .venv/bin/python -m pycni.demo [--exec]

What a CRI runtime does for each pod sandbox, step by step and printed: install
the plugin executables, write a conflist, create two network namespaces, run
loopback and then the default network (bridge + host-local + masquerade) for
each through pycni's libcni, ping across the bridge, then DEL everything and
check nothing is left. ``--exec`` execs the plugin binaries instead of calling
them in-process. Exit status 0 only if every ping and every cleanup check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from pycni import ns
from pycni.conf import load_conf_dir, loopback_network
from pycni.install import install
from pycni.libcni import CNIConfig, RuntimeConf
from pycni.masq import chain_name
from pycni.spec import Result

BRIDGE = "pycnidemo0"
NETWORK = "pycni-demo"
SUBNET = "10.92.254.0/24"
GATEWAY = "10.92.254.1"
PODS = ("pycni-demo-a", "pycni-demo-b")


def say(msg: str) -> None:
    print(msg, flush=True)


def ping(netns: str, dst: str) -> bool:
    proc = subprocess.run(["ip", "netns", "exec", netns, "ping", "-c", "1", "-W", "2", dst],
                          capture_output=True, text=True, check=False)
    ok = proc.returncode == 0
    rtt = next((ln.split("time=")[1] for ln in proc.stdout.splitlines() if "time=" in ln), "")
    say(f"  ping {netns} -> {dst}: {'ok ' + rtt if ok else 'FAILED'}")
    return ok


def nat_lines(cids: list[str]) -> list[str]:
    chains = [chain_name(NETWORK, c) for c in cids]
    out = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True,
                         check=False).stdout
    return [ln for ln in out.splitlines() if any(c in ln for c in chains)]


def conflist(bridge_type: str, ipam_type: str, data_dir: str) -> dict[str, object]:
    return {
        "cniVersion": "1.0.0", "name": NETWORK,
        "plugins": [{
            "type": bridge_type, "bridge": BRIDGE, "isGateway": True, "ipMasq": True,
            "ipam": {"type": ipam_type, "ranges": [[{"subnet": SUBNET}]],
                     "routes": [{"dst": "0.0.0.0/0"}], "dataDir": data_dir},
        }],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pycni.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--exec", action="store_true", dest="exec_",
                    help="exec the plugin binaries instead of calling them in-process")
    opts = ap.parse_args(argv)
    if os.geteuid() != 0:
        say("pycni demo: needs root (network namespaces, a bridge, iptables)")
        return 2
    tmp = tempfile.mkdtemp(prefix="pycni-demo-")
    bin_dir, conf_dir = os.path.join(tmp, "bin"), os.path.join(tmp, "net.d")
    data_dir, cache_dir = os.path.join(tmp, "networks"), os.path.join(tmp, "cache")
    ok = True
    created: list[str] = []
    cids = [f"pycni-demo-{p[-1]}" for p in PODS]
    cni = CNIConfig([bin_dir], cache_dir=cache_dir, in_process=not opts.exec_)
    try:
        say(f"1. install the plugin executables into {bin_dir}")
        for path in install(bin_dir):
            say(f"   {path}")
        os.makedirs(conf_dir)
        with open(os.path.join(conf_dir, "10-pycni-demo.conflist"), "w") as f:
            json.dump(conflist("pycni-bridge", "pycni-host-local", data_dir), f, indent=2)
        net, warnings = load_conf_dir(conf_dir)
        lo = loopback_network("pycni-loopback")
        say(f"2. conf dir {conf_dir}: network {net.name!r}, plugins "
            f"{[p['type'] for p in net.plugins]}, bridge {BRIDGE}, subnet {SUBNET}"
            + (f" (warnings: {warnings})" if warnings else ""))
        mode = "exec'd binaries" if opts.exec_ else "in-process"
        results: list[Result] = []
        for pod, cid in zip(PODS, cids, strict=True):
            ns.delete_netns(pod)  # a leftover from an interrupted run
            path = ns.create_netns(pod)
            created.append(pod)
            say(f"3. netns {path} (container {cid}): ADD loopback, then {net.name} ({mode})")
            t0 = time.perf_counter()
            cni.add_network_list(lo, RuntimeConf(cid, path, "lo"))
            res = cni.add_network_list(net, RuntimeConf(cid, path, "eth0"))
            ms = (time.perf_counter() - t0) * 1000
            results.append(res)
            say(f"   eth0 {res.ips[0].address} gateway {res.ips[0].gateway}, host end "
                f"{res.interfaces[1].name} on {res.interfaces[0].name} ({ms:.0f} ms)")
        say("4. masquerade rules, as `iptables -t nat -S` shows them:")
        for line in nat_lines(cids):
            say(f"   {line}")
        say("5. ping across the bridge and to the gateway")
        ip_a, ip_b = (str(r.ips[0].address.ip) for r in results)
        ok &= ping(PODS[0], ip_b)
        ok &= ping(PODS[1], ip_a)
        ok &= ping(PODS[0], GATEWAY)
        ok &= ping(PODS[0], "127.0.0.1")
        say("6. CHECK both, then DEL both")
        for pod, cid in zip(PODS, cids, strict=True):
            path = os.path.join(ns.NETNS_RUN_DIR, pod)
            cni.check_network_list(net, RuntimeConf(cid, path, "eth0"))
            cni.del_network_list(net, RuntimeConf(cid, path, "eth0"))
            cni.del_network_list(lo, RuntimeConf(cid, path, "lo"))
            say(f"   {cid}: checked and deleted")
    except Exception as exc:
        say(f"   FAILED: {type(exc).__name__}: {exc}")
        ok = False
    finally:
        say("7. clean up: namespaces, bridge, and verify nothing is left")
        for pod in created:
            ns.delete_netns(pod)
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)
        left_rules = nat_lines(cids)
        net_dir = os.path.join(data_dir, NETWORK)
        left_ips = [f for f in (os.listdir(net_dir) if os.path.isdir(net_dir) else [])
                    if f[0].isdigit()]
        say(f"   masquerade rules left: {len(left_rules)}, addresses still allocated: "
            f"{len(left_ips)}")
        ok &= not left_rules and not left_ips
        shutil.rmtree(tmp, ignore_errors=True)
    say("pycni demo: " + ("all good" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
