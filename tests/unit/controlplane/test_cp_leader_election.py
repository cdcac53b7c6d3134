"""Leader election's rule (client-go's tryAcquireOrRenew), as a pure function."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pykubelet.controlplane.controllers.leaderelection import Observed, decide
from pykubelet.controlplane.election import LeaderElection

CFG = LeaderElection(lease_duration=15, renew_deadline=10, retry_period=2)
T = "2026-01-01T00:00:00.000000Z"


def test_no_lease_is_taken() -> None:
    got = decide(None, None, "a", 100.0, CFG, T)
    assert got == {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": T,
                   "renewTime": T, "leaseTransitions": 0}


def test_the_holder_renews_keeping_its_acquire_time() -> None:
    spec = {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": "t0",
            "renewTime": "t0", "leaseTransitions": 3}
    got = decide(spec, Observed(spec, 0.0), "a", 500.0, CFG, T)
    assert got is not None
    assert (got["acquireTime"], got["renewTime"], got["leaseTransitions"]) == ("t0", T, 3)


def test_a_held_lease_is_taken_only_after_it_stood_still_for_its_duration() -> None:
    spec = {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": "t0",
            "renewTime": "t0", "leaseTransitions": 1}
    seen = Observed(spec, 100.0)  # by our own clock: the record was last seen changing then
    assert decide(spec, seen, "b", 114.9, CFG, T) is None
    got = decide(spec, seen, "b", 115.0, CFG, T)
    assert got is not None
    assert (got["holderIdentity"], got["acquireTime"], got["leaseTransitions"]) == ("b", T, 2)
    # never having seen it change, we cannot know how old it is: wait a full duration
    assert decide(spec, None, "b", 1e9, CFG, T) is None


def test_a_released_lease_is_taken_at_once() -> None:
    spec = {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 4}
    got = decide(spec, Observed(spec, 100.0), "b", 100.0, CFG, T)
    assert got is not None
    assert (got["holderIdentity"], got["leaseTransitions"]) == ("b", 4)


class _CP:
    """Just what an elector uses of a control plane: the registry (a real one, over
    SQLite in memory) and ``guard``."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry

    async def guard(self, controller: Any) -> None:
        await controller(self)


def test_one_leader_at_a_time_and_a_dead_leaders_lease_is_taken_after_its_duration() -> None:
    from pykubelet.controlplane.controllers.leaderelection import LeaderElector
    from pykubelet.controlplane.registry.leases import LeaseStrategy
    from pykubelet.controlplane.registry.resources import LEASES
    from pykubelet.controlplane.registry.store import Registry
    from pykubelet.controlplane.storage.cacher import Cacher
    from pykubelet.controlplane.storage.sqlite import SQLiteStorage

    cfg = LeaderElection(lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)

    async def main() -> None:
        store = SQLiteStorage(":memory:")
        await store.start()
        cacher = Cacher(store)
        registry = Registry(store, cacher)
        registry.add(LeaseStrategy())
        await cacher.start()
        running: set[str] = set()
        overlaps = 0

        def controller(name: str) -> Any:
            async def run(_: Any) -> None:
                running.add(name)
                try:
                    await asyncio.Event().wait()
                finally:
                    running.discard(name)
            return run

        cp = _CP(registry)
        a = LeaderElector(cp, "kube-scheduler", cfg, "a")  # type: ignore[arg-type]
        b = LeaderElector(cp, "kube-scheduler", cfg, "b")  # type: ignore[arg-type]
        ta = asyncio.create_task(a.run([controller("a")]))
        await asyncio.sleep(0.05)
        tb = asyncio.create_task(b.run([controller("b")]))
        tasks = [ta, tb]
        try:
            for _ in range(20):
                await asyncio.sleep(0.05)
                overlaps += len(running) > 1
            assert running == {"a"}
            # a dies without releasing: b waits out the lease, then leads
            a.release = _no_release  # type: ignore[method-assign]
            ta.cancel()
            died = time.monotonic()
            while running != {"b"}:
                overlaps += len(running) > 1
                await asyncio.sleep(0.02)
                assert time.monotonic() - died < 20  # (a hang guard)
            took = time.monotonic() - died
            assert took >= cfg.lease_duration * 0.9  # not before the lease ran out
            assert overlaps == 0
            # a clean stop releases the lease (no holder), and the waiting candidate takes it
            tb.cancel()
            await asyncio.gather(tb, return_exceptions=True)
            lease = registry.store(LEASES).lookup("kube-system", "kube-scheduler")
            assert lease is not None
            assert lease.obj()["spec"]["holderIdentity"] == ""
            c = LeaderElector(cp, "kube-scheduler", cfg, "c")  # type: ignore[arg-type]
            assert await c.try_acquire_or_renew()  # at once: nobody holds it
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await cacher.stop()
            await store.close()

    asyncio.run(main())


async def _no_release() -> None:
    """(a process killed by SIGKILL releases nothing)"""
