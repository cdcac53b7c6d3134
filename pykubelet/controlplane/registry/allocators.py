"""The ranges Services take addresses and node ports from, and how a free one is chosen
(kube-apiserver's pkg/registry/core/service/ipallocator and portallocator), apart from
where the allocations are kept (:mod:`.allocations`).

A range is split in two bands: a small lower band kept for addresses users ask for by
value (the ``kubernetes`` Service's first address, kube-dns's ``.10``) and the rest.
Dynamic allocation takes a random free value of the upper band first and falls back to the
lower band only when the upper one is full (calculateRangeOffset: min(max(16, size/16), 256)
addresses, min(max(16, size/32), 128) ports), so a static address is rarely taken already.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable, Container
from dataclasses import dataclass

DEFAULT_SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"
DEFAULT_SERVICE_NODE_PORT_RANGE = "30000-32767"

IP_ALLOCATED = "provided IP is already allocated"
PORT_ALLOCATED = "provided port is already allocated"
RANGE_FULL = "range is full"


class ServiceAllocationError(Exception):
    """A value could not be allocated; the text is upstream's error."""


class AllocatedError(ServiceAllocationError):
    pass


class NotInRangeError(ServiceAllocationError):
    pass


class FullError(ServiceAllocationError):
    def __init__(self) -> None:
        super().__init__(RANGE_FULL)


def _pick(size: int, offset: int, taken: Callable[[int], bool], rng: random.Random) -> int:
    """A random free index of [offset, size), else of [0, offset) (allocateNextStrategy
    with a static band): scan from a random start, wrapping."""
    for lo, hi in ((offset, size), (0, offset)):
        span = hi - lo
        if span <= 0:
            continue
        start = rng.randrange(span)
        for i in range(span):
            idx = lo + (start + i) % span
            if not taken(idx):
                return idx
    raise FullError()


@dataclass(frozen=True)
class IPRange:
    """A service CIDR: every address but the network's and (IPv4) the broadcast one."""

    cidr: str

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(self.cidr, strict=False)

    @property
    def size(self) -> int:
        """How many addresses may be handed out (netutils.RangeSize less two)."""
        n = self.network.num_addresses
        return max(n - 2, 0) if n > 2 else 0

    @property
    def offset(self) -> int:
        """The static band's size (calculateRangeOffset)."""
        n = self.network.num_addresses
        if n <= 16:
            return 0
        return min(max(16, n // 16), 256)

    def index(self, ip: str) -> int | None:
        """The address's index in the range, None when it is outside it."""
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None
        net = self.network
        if addr.version != net.version or addr not in net:
            return None
        i = int(addr) - int(net.network_address) - 1
        return i if 0 <= i < self.size else None

    def address(self, index: int) -> str:
        return str(self.network.network_address + 1 + index)

    def first(self) -> str:
        """The first address (the ``kubernetes`` Service's)."""
        return self.address(0)

    def check(self, ip: str) -> None:
        """NotInRangeError (ErrNotInRange's words) unless ``ip`` is in the range."""
        if self.index(ip) is None:
            raise NotInRangeError(f"the provided IP ({ip}) is not in the valid range. The "
                                  f"range of valid IPs is {self.network}")

    def pick(self, taken: Container[str], rng: random.Random) -> str:
        return self.address(_pick(self.size, self.offset,
                                  lambda i: self.address(i) in taken, rng))


@dataclass(frozen=True)
class PortRange:
    """A node port range, both ends included (``30000-32767``)."""

    base: int
    size: int

    @classmethod
    def parse(cls, text: str) -> PortRange:
        """net.ParsePortRange: ``LOW-HIGH`` or ``LOW+SIZE`` (or one port)."""
        text = text.strip()
        try:
            if "+" in text:
                low, _, extra = text.partition("+")
                base, size = int(low), int(extra) + 1
            elif "-" in text:
                low, _, high = text.partition("-")
                base, size = int(low), int(high) - int(low) + 1
            else:
                base, size = int(text), 1
        except ValueError:
            raise ValueError(f"invalid port range {text!r}") from None
        if not 0 < base <= 65535 or size < 1 or base + size - 1 > 65535:
            raise ValueError(f"invalid port range {text!r}")
        return cls(base, size)

    def __str__(self) -> str:
        return f"{self.base}-{self.base + self.size - 1}"

    @property
    def offset(self) -> int:
        if self.size <= 16:
            return 0
        return min(max(16, self.size // 32), 128)

    def check(self, port: int) -> None:
        if not self.base <= port < self.base + self.size:
            raise NotInRangeError(f"provided port is not in the valid range. The range of "
                                  f"valid ports is {self}")

    def pick(self, taken: Container[int], rng: random.Random) -> int:
        return self.base + _pick(self.size, self.offset,
                                 lambda i: self.base + i in taken, rng)
