"""The harness of pycni's plugin integration tests: calling a plugin exec'd or
in-process, unique names and subnets (links, chains and namespaces they create start with
``pck``), and leak inspection."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

from pycni import ns
from pycni.ip import link as iplink
from pycni.ip.netlink import RtNetlink
from pycni.masq import chain_name, comment
from pycni.masq.restore import RestoreBackend
from pycni.plugins import load
from pycni.skel import run

REFERENCE_BIN = "/usr/lib/cni"
_counter = itertools.count()


def unique(tag: str) -> str:
    """A short unique name (<= 15 chars) with our prefix, for links and namespaces."""
    return f"pck{tag}{os.getpid() % 1000:03d}{next(_counter):03d}"[:15]


def subnet_octet() -> int:
    """A /24 inside 10.92.0.0/16 unlikely to repeat within or across runs."""
    return (os.getpid() * 7 + next(_counter) * 13) % 250 + 1


@dataclass
class Call:
    status: int
    out: dict[str, Any] | None
    raw: str
    err: str


def cni(plugin: str, command: str, conf: dict[str, Any] | bytes, *, cid: str, netns: str,
        path: list[str], mode: str = "exec", ifname: str = "eth0",
        env_extra: dict[str, str] | None = None, drop: tuple[str, ...] = ()) -> Call:
    """One plugin call: ``mode`` "exec" runs the executable found in ``path``, "inproc"
    runs our plugin module's skel in this process (the same code path libcni takes)."""
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns,
           "CNI_IFNAME": ifname, "CNI_PATH": ":".join(path)}
    env.update(env_extra or {})
    for key in drop:
        env.pop(key, None)
    data = conf if isinstance(conf, bytes) else json.dumps(conf).encode()
    if mode == "inproc":
        p = load(plugin)
        assert p is not None, plugin
        status, raw, err = run(p, env, data)
    else:
        exe = next(os.path.join(d, plugin) for d in path
                   if os.path.exists(os.path.join(d, plugin)))
        full = dict(os.environ)
        for key in drop:
            full.pop(key, None)
        full.update(env)
        proc = subprocess.run([exe], input=data, env=full, capture_output=True, timeout=60,
                              check=False)
        status, raw, err = proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    out = json.loads(raw) if raw.strip() else None
    return Call(status, out, raw, err)


def nat_rules() -> list[str]:
    return subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def chain_rules(network: str, cid: str) -> list[str]:
    """The nat rules that belong to one container's masquerade chain (jump included)."""
    chain = chain_name(network, cid)
    return [r for r in nat_rules() if chain in r]


def drop_chain(network: str, cid: str) -> None:
    RestoreBackend("nft").teardown(None, chain_name(network, cid), comment(network, cid))


def host_link(name: str) -> iplink.Link | None:
    with RtNetlink() as nl:
        return iplink.find_link(nl, name)


def netns_link(netns: str, name: str) -> iplink.Link | None:
    with ns.entered(netns):
        nl = RtNetlink()
    with nl:
        return iplink.find_link(nl, name)


def ip_json(netns: str | None, *args: str) -> Any:
    cmd = ["ip", "-j", *args]
    if netns:
        cmd = ["ip", "-n", os.path.basename(netns), "-j", *args]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def ping(netns: str, dst: str) -> bool:
    proc = subprocess.run(["ip", "netns", "exec", os.path.basename(netns), "ping", "-c", "1",
                           "-W", "2", dst], capture_output=True, check=False)
    return proc.returncode == 0
