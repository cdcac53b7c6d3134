"""Where Services' ClusterIPs and node ports are kept: one store key per allocated value,
as kube-apiserver 1.27+ keeps one IPAddress object per ClusterIP
(``/registry/ipaddresses/<ip>``; node ports under ``/registry/services/nodeports/<port>``).

Why one key per value: a create of a key that exists fails in both backends (SQLite's
unique row, etcd's create-revision transaction), so two API servers over one etcd never
hand out the same address, and nothing needs a lock or a bitmap read-modify-write. The
value names the Service holding it (namespace, name, uid) and when it was taken.

Order of writes (upstream's allocate-then-create with a revert, since the store has no
multi-key transaction here): the keys are created first, then the Service; a failed
Service write deletes the keys it took. A crash between the two leaves a key no Service
names: :func:`repair` (upstream's repair controllers, run at start and then periodically)
releases such a key once it is older than a grace period, and re-creates the key of a
stored Service whose key is missing.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import orjson

from pykubelet.controlplane.registry.allocators import (
    IP_ALLOCATED,
    PORT_ALLOCATED,
    AllocatedError,
    IPRange,
    PortRange,
)
from pykubelet.controlplane.storage import KeyExistsError, NotFoundError, Storage

log = logging.getLogger(__name__)

IP_PREFIX = "/registry/ipaddresses/"
NODE_PORT_PREFIX = "/registry/services/nodeports/"
SERVICES_PREFIX = "/registry/services/specs/"
# a key no stored Service names is released by repair once this old (an allocation whose
# Service write is still in flight is younger)
LEAK_GRACE_S = 60.0
MAX_ATTEMPTS = 32
_V = TypeVar("_V", str, int)  # an address or a port


@dataclass(frozen=True)
class Owner:
    namespace: str
    name: str
    uid: str


def _record(owner: Owner, now: float) -> bytes:
    return orjson.dumps({"namespace": owner.namespace, "name": owner.name, "uid": owner.uid,
                         "allocatedAt": now})


def _parse(value: bytes) -> dict[str, object]:
    try:
        found = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


@dataclass
class Allocator:
    """The ClusterIP and node port allocations over a store."""

    storage: Storage
    ip_range: IPRange
    port_range: PortRange
    rng: random.Random = field(default_factory=random.Random)
    clock: Callable[[], float] = time.time

    def _now(self) -> float:
        return self.clock()

    # -- one key per taken address or port
    async def _take(self, key: str, owner: Owner, dry_run: bool, taken: str) -> None:
        """Record ``key`` for ``owner`` (AllocatedError(``taken``) when it is already
        recorded; a dry run only checks)."""
        if dry_run:
            if await self.storage.get(key) is not None:
                raise AllocatedError(taken)
            return
        try:
            await self.storage.create(key, _record(owner, self._now()))
        except KeyExistsError:
            raise AllocatedError(taken) from None

    async def _take_next(self, prefix: str, owner: Owner, dry_run: bool,
                         pick: Callable[[], Awaitable[_V]], taken: str) -> _V:
        """Record the value ``pick`` chooses among the free ones; one another API server
        took meanwhile is picked again, MAX_ATTEMPTS times (then AllocatedError)."""
        for _ in range(MAX_ATTEMPTS):
            value = await pick()
            if dry_run:
                return value
            try:
                await self.storage.create(f"{prefix}{value}", _record(owner, self._now()))
            except KeyExistsError:  # another API server took it meanwhile
                continue
            return value
        raise AllocatedError(taken)

    async def _release(self, key: str) -> None:
        try:
            await self.storage.delete(key)
        except NotFoundError:
            pass

    # -- ClusterIPs
    async def allocate_ip(self, owner: Owner, ip: str, dry_run: bool = False) -> None:
        """Take ``ip`` (NotInRangeError, AllocatedError)."""
        self.ip_range.check(ip)
        await self._take(IP_PREFIX + ip, owner, dry_run, IP_ALLOCATED)

    async def allocate_next_ip(self, owner: Owner, dry_run: bool = False) -> str:
        """A free address, upper band first (FullError when none is left)."""
        async def pick() -> str:
            return self.ip_range.pick(await self.allocated_ips(), self.rng)

        return await self._take_next(IP_PREFIX, owner, dry_run, pick, IP_ALLOCATED)

    async def release_ip(self, ip: str) -> None:
        await self._release(IP_PREFIX + ip)

    async def allocated_ips(self) -> set[str]:
        items, _ = await self.storage.list_prefix(IP_PREFIX)
        return {kv.key[len(IP_PREFIX):] for kv in items}

    # -- node ports
    async def allocate_port(self, owner: Owner, port: int, dry_run: bool = False) -> None:
        self.port_range.check(port)
        await self._take(f"{NODE_PORT_PREFIX}{port}", owner, dry_run, PORT_ALLOCATED)

    async def allocate_next_port(self, owner: Owner, dry_run: bool = False) -> int:
        async def pick() -> int:
            return self.port_range.pick(await self.allocated_ports(), self.rng)

        return await self._take_next(NODE_PORT_PREFIX, owner, dry_run, pick, PORT_ALLOCATED)

    async def release_port(self, port: int) -> None:
        await self._release(f"{NODE_PORT_PREFIX}{port}")

    async def allocated_ports(self) -> set[int]:
        items, _ = await self.storage.list_prefix(NODE_PORT_PREFIX)
        out = set()
        for kv in items:
            tail = kv.key[len(NODE_PORT_PREFIX):]
            if tail.isdigit():
                out.add(int(tail))
        return out

    async def release_all(self, ips: Iterable[str], ports: Iterable[int]) -> None:
        for ip in ips:
            await self.release_ip(ip)
        for port in ports:
            await self.release_port(port)

    # -- repair
    async def repair(self) -> tuple[int, int]:
        """Make the keys say what the stored Services hold (repair.go of ipallocator and
        portallocator): a Service's missing key is created, a key no Service names and
        older than LEAK_GRACE_S is released. Returns (created, released)."""
        services, _ = await self.storage.list_prefix(SERVICES_PREFIX)
        want_ips: dict[str, Owner] = {}
        want_ports: dict[int, Owner] = {}
        for kv in services:
            svc = _parse(kv.value)
            meta, spec = svc.get("metadata"), svc.get("spec")
            if not isinstance(meta, dict) or not isinstance(spec, dict):
                continue
            owner = Owner(str(meta.get("namespace", "")), str(meta.get("name", "")),
                          str(meta.get("uid", "")))
            for ip in spec.get("clusterIPs") or []:
                if isinstance(ip, str) and self.ip_range.index(ip) is not None:
                    want_ips[ip] = owner
            for port in spec.get("ports") or []:
                node_port = port.get("nodePort") if isinstance(port, dict) else None
                if isinstance(node_port, int) and node_port:
                    want_ports[node_port] = owner
        created = released = 0
        now = self._now()
        for prefix, wanted in ((IP_PREFIX, want_ips),
                               (NODE_PORT_PREFIX, {str(k): v for k, v in want_ports.items()})):
            items, _ = await self.storage.list_prefix(prefix)
            have = {kv.key[len(prefix):]: kv for kv in items}
            for value, owner in wanted.items():
                if value not in have:
                    try:
                        await self.storage.create(prefix + value, _record(owner, now))
                        created += 1
                        log.warning("repair: %s of service %s/%s was not recorded; recorded",
                                    value, owner.namespace, owner.name)
                    except KeyExistsError:
                        pass
            for value, kv in have.items():
                if value in wanted:
                    continue
                rec = _parse(kv.value)
                at = rec.get("allocatedAt")
                if isinstance(at, int | float) and now - at < LEAK_GRACE_S:
                    continue  # a create in flight, perhaps
                try:
                    await self.storage.delete(kv.key, kv.mod_revision)
                    released += 1
                    log.warning("repair: released %s, held by no service", value)
                except Exception as exc:  # changed meanwhile: the next pass decides
                    log.debug("repair: %s left for the next pass: %s", value, exc)
        return created, released
