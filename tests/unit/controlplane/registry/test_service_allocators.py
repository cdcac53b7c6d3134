"""The ClusterIP and node port allocators (issue 20, item 2): the ranges' bands and
messages, exhaustion, durability across a store reopen, two allocators over one store
never handing out one address twice, and the repair pass."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import orjson
import pytest

from pykubelet.controlplane.registry.allocations import (
    IP_PREFIX,
    LEAK_GRACE_S,
    NODE_PORT_PREFIX,
    Allocator,
    Owner,
)
from pykubelet.controlplane.registry.allocators import (
    AllocatedError,
    FullError,
    IPRange,
    NotInRangeError,
    PortRange,
)
from pykubelet.controlplane.storage.sqlite import SQLiteStorage

OWNER = Owner("default", "web", "u1")


def test_ip_range_bands_and_messages() -> None:
    r = IPRange("10.96.0.0/12")
    assert r.first() == "10.96.0.1"
    assert r.size == (1 << 20) - 2
    assert r.offset == 256
    assert r.index("10.96.0.10") == 9
    assert r.index("10.96.0.0") is None  # the network address
    assert r.index("10.111.255.255") is None  # the broadcast address
    assert r.index("10.111.255.254") == r.size - 1
    with pytest.raises(NotInRangeError) as exc:
        r.check("10.0.0.5")
    assert str(exc.value) == ("the provided IP (10.0.0.5) is not in the valid range. The "
                              "range of valid IPs is 10.96.0.0/12")
    rng = random.Random(1)
    for _ in range(50):  # dynamic picks avoid the static band
        idx = r.index(r.pick(set(), rng))
        assert idx is not None
        assert idx >= 256
    assert IPRange("10.0.0.0/24").offset == 16
    assert IPRange("10.0.0.0/28").offset == 0


def test_small_range_falls_back_to_the_lower_band_then_is_full() -> None:
    r = IPRange("10.0.0.0/26")  # 62 addresses, 16 in the static band
    rng = random.Random(2)
    taken: set[str] = set()
    for _ in range(r.size):
        taken.add(r.pick(taken, rng))
    assert len(taken) == 62
    with pytest.raises(FullError):
        r.pick(taken, rng)


def test_port_range() -> None:
    r = PortRange.parse("30000-32767")
    assert (r.base, r.size, str(r), r.offset) == (30000, 2768, "30000-32767", 86)
    with pytest.raises(NotInRangeError) as exc:
        r.check(80)
    assert str(exc.value) == ("provided port is not in the valid range. The range of valid "
                              "ports is 30000-32767")
    assert PortRange.parse("30000+9") == PortRange(30000, 10)
    for bad in ("x", "0-10", "30000-70000", "500-400"):
        with pytest.raises(ValueError, match="invalid port range"):
            PortRange.parse(bad)


def _allocator(storage: SQLiteStorage, cidr: str = "10.96.0.0/12") -> Allocator:
    return Allocator(storage, IPRange(cidr), PortRange.parse("30000-30009"),
                     rng=random.Random(3))


def test_allocations_survive_a_store_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.db"

    async def first() -> tuple[str, int]:
        storage = SQLiteStorage(path)
        await storage.start()
        try:
            a = _allocator(storage)
            await a.allocate_ip(OWNER, "10.96.0.1")
            return await a.allocate_next_ip(OWNER), await a.allocate_next_port(OWNER)
        finally:
            await storage.close()

    async def second(ip: str, port: int) -> None:
        storage = SQLiteStorage(path)
        await storage.start()
        try:
            a = _allocator(storage)
            for taken in ("10.96.0.1", ip):
                with pytest.raises(AllocatedError, match="provided IP is already allocated"):
                    await a.allocate_ip(OWNER, taken)
            with pytest.raises(AllocatedError, match="provided port is already allocated"):
                await a.allocate_port(OWNER, port)
            assert await a.allocated_ips() == {"10.96.0.1", ip}
            await a.release_ip(ip)
            await a.allocate_ip(OWNER, ip)  # free again once released
        finally:
            await storage.close()

    ip, port = asyncio.run(first())
    asyncio.run(second(ip, port))


def test_two_allocators_never_share_and_exhaust() -> None:
    async def main() -> None:
        storage = SQLiteStorage(":memory:", durable=False)
        await storage.start()
        try:
            # two API servers over one store, each with its own RNG seeded alike: they
            # pick the same candidates and must still never share one
            a, b = _allocator(storage, "10.0.0.0/28"), _allocator(storage, "10.0.0.0/28")
            got = await asyncio.gather(*(x.allocate_next_ip(OWNER)
                                         for _ in range(7) for x in (a, b)))
            assert len(got) == len(set(got)) == 14
            with pytest.raises(FullError):
                await a.allocate_next_ip(OWNER)
            ports = [await a.allocate_next_port(OWNER) for _ in range(10)]
            assert sorted(ports) == list(range(30000, 30010))
            with pytest.raises(FullError):
                await b.allocate_next_port(OWNER)
        finally:
            await storage.close()

    asyncio.run(main())


def test_repair_records_missing_and_releases_leaked() -> None:
    async def main() -> None:
        storage = SQLiteStorage(":memory:", durable=False)
        await storage.start()
        try:
            now = [1000.0]
            a = _allocator(storage)
            a.clock = lambda: now[0]
            svc = {"kind": "Service", "apiVersion": "v1",
                   "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
                   "spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"],
                            "ports": [{"port": 80, "nodePort": 30005}]}}
            await storage.create("/registry/services/specs/default/web", orjson.dumps(svc))
            await a.allocate_ip(Owner("default", "gone", "u2"), "10.96.0.50")  # leaked
            await a.allocate_port(Owner("default", "gone", "u2"), 30006)
            # a young leak may be a create in flight: kept
            assert await a.repair() == (2, 0)
            assert await a.allocated_ips() == {"10.96.0.9", "10.96.0.50"}
            now[0] += LEAK_GRACE_S + 1
            assert await a.repair() == (0, 2)
            assert await a.allocated_ips() == {"10.96.0.9"}
            assert await a.allocated_ports() == {30005}
            kv = await storage.get(IP_PREFIX + "10.96.0.9")
            assert kv is not None
            assert orjson.loads(kv.value)["name"] == "web"
            assert await storage.get(NODE_PORT_PREFIX + "30006") is None
        finally:
            await storage.close()

    asyncio.run(main())


def test_dry_runs_check_without_recording_and_releases_forget() -> None:
    """A dry run's allocate says what a real one would (AllocatedError when taken) and
    records nothing; a release of what is not recorded is no error."""
    async def main() -> None:
        storage = SQLiteStorage(":memory:", durable=False)
        await storage.start()
        try:
            a = _allocator(storage, "10.0.0.0/28")
            await a.allocate_ip(OWNER, "10.0.0.5")
            await a.allocate_port(OWNER, 30005)
            for taken in (a.allocate_ip(OWNER, "10.0.0.5", dry_run=True),
                          a.allocate_ip(OWNER, "10.0.0.5"),
                          a.allocate_port(OWNER, 30005, dry_run=True),
                          a.allocate_port(OWNER, 30005)):
                with pytest.raises(AllocatedError):
                    await taken
            await a.allocate_ip(OWNER, "10.0.0.6", dry_run=True)
            await a.allocate_port(OWNER, 30006, dry_run=True)
            ip = await a.allocate_next_ip(OWNER, dry_run=True)
            port = await a.allocate_next_port(OWNER, dry_run=True)
            assert ip != "10.0.0.5"
            assert port != 30005
            assert await a.allocated_ips() == {"10.0.0.5"}
            assert await a.allocated_ports() == {30005}
            await a.release_ip("10.0.0.5")
            await a.release_ip("10.0.0.5")
            await a.release_port(30005)
            await a.release_port(30005)
            assert await a.allocated_ips() == set()
            assert await a.allocated_ports() == set()
        finally:
            await storage.close()

    asyncio.run(main())
