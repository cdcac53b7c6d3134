"""Consistent reads share the store's revision reads: callers waiting together share one
read, a caller never joins a read that started before it came, failures reach exactly the
callers of that read, and a caller giving up leaves the shared read alone."""

from __future__ import annotations

import asyncio

import pytest

from pykubelet.controlplane.freshness import RevisionReader


class Store:
    """A store whose revision reads are held until released, and counted."""

    def __init__(self) -> None:
        self.revision = 10
        self.reads = 0
        self.gate = asyncio.Event()
        self.fail: Exception | None = None

    async def read(self) -> int:
        self.reads += 1
        seen = self.revision  # what the store had when the read started
        await self.gate.wait()
        self.gate.clear()
        if self.fail is not None:
            raise self.fail
        return seen


def test_callers_waiting_together_share_one_read() -> None:
    async def main() -> None:
        store = Store()
        reader = RevisionReader(store.read)
        waiters = [asyncio.create_task(reader.current()) for _ in range(20)]
        await asyncio.sleep(0.01)
        store.gate.set()
        assert await asyncio.gather(*waiters) == [10] * 20
        assert store.reads == 1

    asyncio.run(main())


def test_a_caller_never_joins_a_read_already_in_flight() -> None:
    async def main() -> None:
        store = Store()
        reader = RevisionReader(store.read)
        first = asyncio.create_task(reader.current())
        await asyncio.sleep(0.01)  # the first read has started...
        store.revision = 11  # ...then a write is acknowledged, then a reader comes
        late = [asyncio.create_task(reader.current()) for _ in range(5)]
        await asyncio.sleep(0.01)
        store.gate.set()
        assert await first == 10
        await asyncio.sleep(0.01)
        store.gate.set()
        assert await asyncio.gather(*late) == [11] * 5  # the next read, shared by all five
        assert store.reads == 2

    asyncio.run(main())


def test_a_failed_read_fails_its_callers_and_the_next_call_reads_again() -> None:
    async def main() -> None:
        store = Store()
        reader = RevisionReader(store.read)
        store.fail = RuntimeError("no quorum")
        waiters = [asyncio.create_task(reader.current()) for _ in range(3)]
        await asyncio.sleep(0.01)
        store.gate.set()
        for w in waiters:
            with pytest.raises(RuntimeError, match="no quorum"):
                await w
        store.fail = None
        again = asyncio.create_task(reader.current())
        await asyncio.sleep(0.01)
        store.gate.set()
        assert await again == 10
        assert store.reads == 2

    asyncio.run(main())


def test_a_caller_that_gives_up_leaves_the_shared_read_alone() -> None:
    async def main() -> None:
        store = Store()
        reader = RevisionReader(store.read)
        impatient = asyncio.create_task(asyncio.wait_for(reader.current(), 0.01))
        patient = asyncio.create_task(reader.current())
        with pytest.raises(TimeoutError):
            await impatient
        store.gate.set()
        assert await patient == 10
        assert store.reads == 1

    asyncio.run(main())
