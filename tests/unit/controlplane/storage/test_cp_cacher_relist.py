"""The watch cache when the store's watch fails: it follows again from its last revision,
and after falling behind a compaction it lists again and applies the difference (what a
reflector's relist does), so the API never serves a cache that stopped moving."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from pykubelet.controlplane.registry.store import encode
from pykubelet.controlplane.storage import CompactedError, Event, KeyValue, StorageError
from pykubelet.controlplane.storage.cacher import (
    ADDED,
    DELETED,
    MODIFIED,
    Attrs,
    CachedEvent,
    Cacher,
)
from pykubelet.controlplane.storage.sqlite import SQLiteStorage

PREFIX = "/registry/configmaps/"


class LossyStore(SQLiteStorage):
    """SQLite whose watch, while ``losing``, drops what it sees and then reports that it
    fell behind a compaction (as an etcd watch resumed after a long partition would)."""

    losing = False

    async def watch(self, from_revision: int) -> AsyncIterator[list[Event]]:
        async for batch in super().watch(from_revision):
            if self.losing:
                self.losing = False
                raise CompactedError(from_revision, batch[-1].kv.mod_revision)
            yield batch


class UnreachableOnce(LossyStore):
    """...and whose first list afterwards fails, as one to an etcd member still cut off."""

    failing_lists = 0

    async def list_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        if self.failing_lists:
            self.failing_lists -= 1
            raise StorageError("etcd unreachable: deadline exceeded")
        return await super().list_prefix(prefix)


def attrs(obj: dict[str, Any]) -> Attrs:
    meta = obj["metadata"]
    return Attrs(meta.get("namespace", ""), meta["name"], meta.get("labels") or {}, {})


def cm(name: str, value: str) -> bytes:
    return encode({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": "ns"}, "data": {"v": value}})


def test_a_watch_behind_the_compaction_lists_again_and_applies_the_difference() -> None:
    async def main() -> None:
        store = LossyStore(":memory:")
        await store.start()
        cacher = Cacher(store)
        cache = cacher.register(PREFIX, attrs)
        seen: list[tuple[str, str, int]] = []

        def listener(_: object, ev: CachedEvent) -> None:
            seen.append((ev.type, ev.entry.key.rsplit("/", 1)[1], ev.rev))

        cacher.listeners.append(listener)
        try:
            keep = await store.create(PREFIX + "ns/keep", cm("keep", "1"))
            gone = await store.create(PREFIX + "ns/gone", cm("gone", "1"))
            await cacher.start()
            store.losing = True
            changed = await store.update(keep.key, cm("keep", "2"), keep.mod_revision)
            await store.delete(gone.key)
            new = await store.create(PREFIX + "ns/new", cm("new", "1"))
            await cacher.wait_for(new.mod_revision, timeout=5)
            assert sorted(cache.entries) == [PREFIX + "ns/keep", PREFIX + "ns/new"]
            # the entries keep their own revisions: they are the objects' resourceVersions
            assert cache.entries[keep.key].rev == changed.mod_revision
            assert cache.entries[new.key].rev == new.mod_revision
            assert (MODIFIED, "keep", changed.mod_revision) in seen
            assert (ADDED, "new", new.mod_revision) in seen
            assert any(t == DELETED and n == "gone" for t, n, _ in seen)
            # and it follows on afterwards
            later = await store.create(PREFIX + "ns/later", cm("later", "1"))
            await cacher.wait_for(later.mod_revision, timeout=5)
            assert later.key in cache.entries
        finally:
            await cacher.stop()
            await store.close()

    asyncio.run(main())


def test_a_relist_that_fails_is_tried_again_and_the_cache_still_follows() -> None:
    async def main() -> None:
        store = UnreachableOnce(":memory:")
        await store.start()
        cacher = Cacher(store)
        cache = cacher.register(PREFIX, attrs)
        try:
            await cacher.start()
            store.losing = True
            store.failing_lists = 2
            first = await store.create(PREFIX + "ns/a", cm("a", "1"))
            second = await store.create(PREFIX + "ns/b", cm("b", "1"))
            await cacher.wait_for(second.mod_revision, timeout=10)
            assert store.failing_lists == 0
            assert sorted(cache.entries) == [first.key, second.key]
        finally:
            await cacher.stop()
            await store.close()

    asyncio.run(main())
