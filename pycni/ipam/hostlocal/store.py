"""The allocator's storage seam (the reference's ``backend.Store``) and an in-memory store."""

from __future__ import annotations

import threading
from typing import Protocol

from pycni.spec import IPAddress


class Store(Protocol):
    def lock(self) -> None: ...
    def unlock(self) -> None: ...
    def reserve(self, id_: str, ifname: str, ip: IPAddress, range_id: str) -> bool:
        """Claim ``ip`` for the container; False if someone holds it."""
        ...
    def last_reserved_ip(self, range_id: str) -> IPAddress | None: ...
    def release_by_id(self, id_: str, ifname: str) -> None: ...
    def get_by_id(self, id_: str, ifname: str) -> list[IPAddress]: ...
    def find_by_id(self, id_: str, ifname: str) -> bool: ...


class MemoryStore:
    """A Store in a dict: for unit tests of the allocator."""

    def __init__(self) -> None:
        self.held: dict[IPAddress, str] = {}
        self.last: dict[str, IPAddress] = {}
        self._lock = threading.Lock()

    def lock(self) -> None:
        self._lock.acquire()

    def unlock(self) -> None:
        self._lock.release()

    def reserve(self, id_: str, ifname: str, ip: IPAddress, range_id: str) -> bool:
        if ip in self.held:
            return False
        self.held[ip] = f"{id_.strip()}\r\n{ifname}"
        self.last[range_id] = ip
        return True

    def last_reserved_ip(self, range_id: str) -> IPAddress | None:
        return self.last.get(range_id)

    def _matches(self, id_: str, ifname: str) -> list[IPAddress]:
        key, old = f"{id_.strip()}\r\n{ifname}", id_.strip()
        exact = [ip for ip, v in self.held.items() if v == key]
        return exact or [ip for ip, v in self.held.items() if v == old]

    def release_by_id(self, id_: str, ifname: str) -> None:
        for ip in self._matches(id_, ifname):
            del self.held[ip]

    def get_by_id(self, id_: str, ifname: str) -> list[IPAddress]:
        return self._matches(id_, ifname)

    def find_by_id(self, id_: str, ifname: str) -> bool:
        return bool(self._matches(id_, ifname))
