"""Sysctls under /proc/sys, read and written as the calling thread's netns sees them."""

from __future__ import annotations


def _path(name: str) -> str:
    return "/proc/sys/" + name.replace(".", "/") if "/" not in name else "/proc/sys/" + name


def get(name: str) -> str:
    with open(_path(name)) as f:
        return f.read().strip()


def set_(name: str, value: str) -> None:
    """Write only when different: a write can cost more than a read (forwarding resets)."""
    try:
        if get(name) == value:
            return
    except OSError:
        pass
    with open(_path(name), "w") as f:
        f.write(value)


def enable_ip_forward(version: int) -> None:
    """Turn on forwarding for the IP version (as the reference's ip.EnableIP4Forward/6)."""
    if version == 4:
        set_("net/ipv4/ip_forward", "1")
    else:
        set_("net/ipv6/conf/all/forwarding", "1")
