"""Round-robin address allocation over a range set (the reference's ``allocator.go``).

Starts after the last reserved address of this range set, skips gateways, wraps
around once; the caller holds the store's lock for the whole allocation.
"""

from __future__ import annotations

import ipaddress

from pycni.errors import CNIError
from pycni.ipam.hostlocal.config import Range, RangeSet, rangeset_contains, rangeset_str
from pycni.spec import IPAddress, IPConfig, IPInterface, IPNetwork

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:  # the Protocol class costs import time; only type checkers need it
    from collections.abc import Iterator

    from pycni.ipam.hostlocal.store import Store


class AllocationError(CNIError):
    """Exhausted ranges, a taken requested address, a duplicate allocation."""

    code = 999


def ip_interface_of(ip: IPAddress, subnet: IPNetwork) -> IPInterface:
    return ipaddress.ip_interface((ip, subnet.prefixlen))


class IPAllocator:
    def __init__(self, rangeset: RangeSet, store: Store, rangeset_index: int) -> None:
        self.rangeset = rangeset
        self.store = store
        self.range_id = str(rangeset_index)

    def _range_for(self, ip: IPAddress) -> Range:
        for r in self.rangeset:
            if r.contains(ip):
                return r
        raise AllocationError(f"{ip} not in range set {rangeset_str(self.rangeset)}")

    def get(self, id_: str, ifname: str, requested: IPAddress | None = None) -> IPConfig:
        """Reserve an address (``requested`` if given); the store must be locked."""
        if requested is not None:
            r = self._range_for(requested)
            if requested == r.gateway:
                raise AllocationError(f"requested ip {requested} is subnet's gateway")
            if not self.store.reserve(id_, ifname, requested, self.range_id):
                raise AllocationError(f"requested IP address {requested} is not available in "
                                      f"range set {rangeset_str(self.rangeset)}")
            return IPConfig(address=ip_interface_of(requested, r.subnet), gateway=r.gateway)
        for held in self.store.get_by_id(id_, ifname):
            if rangeset_contains(self.rangeset, held):
                raise AllocationError(
                    f"{held} has been allocated to {id_}, duplicate allocation is not allowed")
        for ip, r in self._candidates():
            if self.store.reserve(id_, ifname, ip, self.range_id):
                return IPConfig(address=ip_interface_of(ip, r.subnet), gateway=r.gateway)
        raise AllocationError(
            f"no IP addresses available in range set: {rangeset_str(self.rangeset)}")

    def _candidates(self) -> Iterator[tuple[IPAddress, Range]]:
        """Every allocatable address once, starting after the last reserved one."""
        rs = self.rangeset
        last = self.store.last_reserved_ip(self.range_id)
        idx, cur = 0, None
        if last is not None and rangeset_contains(rs, last):
            idx = next(i for i, r in enumerate(rs) if r.contains(last))
            cur = last
        start: IPAddress | None = None
        while True:
            r = rs[idx]
            if cur is None:
                cur = r.range_start
            elif cur == r.range_end:
                idx = (idx + 1) % len(rs)
                r = rs[idx]
                cur = r.range_start
            else:
                cur = cur + 1
            if start is None:
                start = cur
            elif cur == start:
                return
            if cur != r.gateway:
                yield cur, r
