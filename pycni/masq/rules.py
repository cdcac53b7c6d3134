"""The reference's masquerade rules as iptables argument lists (shared by every backend)."""

from __future__ import annotations

from pycni.masq import multicast_net
from pycni.spec import IPInterface


def chain_rules(addr: IPInterface, comment: str) -> list[list[str]]:
    """Rules inside the per-container chain (reference order: ACCEPT, then MASQUERADE)."""
    subnet = str(addr.network)
    return [
        ["-d", subnet, "-m", "comment", "--comment", comment, "-j", "ACCEPT"],
        ["!", "-d", multicast_net(addr.version), "-m", "comment", "--comment", comment,
         "-j", "MASQUERADE"],
    ]


def jump_rule(addr: IPInterface, chain: str, comment: str) -> list[str]:
    """The POSTROUTING rule sending the container's traffic to its chain."""
    host = f"{addr.ip}/{addr.max_prefixlen}"
    return ["-s", host, "-m", "comment", "--comment", comment, "-j", chain]


def quote(arg: str) -> str:
    """Quote one argument for iptables-restore's tokenizer."""
    if arg and all(c.isalnum() or c in "-_./:!" for c in arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def line(op: str, chain: str, args: list[str]) -> str:
    return " ".join([op, chain, *(quote(a) for a in args)])
