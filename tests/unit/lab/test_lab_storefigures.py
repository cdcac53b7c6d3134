"""The soak's store figures: live keys per resource, rows, and the size a compaction to
the current revision comes back to (issue 29 item 2)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pykubelet.controlplane.storage.sqlite import SQLiteStorage
from pykubelet.lab import storefigures


def test_resource_of_keys() -> None:
    assert storefigures.resource_of("/registry/pods/default/a") == "pods"
    assert storefigures.resource_of("/registry/services/specs/default/web") == "services/specs"
    assert storefigures.resource_of("/registry/example.com/widgets/ns/w") == "example.com/widgets"
    assert storefigures.resource_of("/registry/minions/node1") == "minions"
    assert storefigures.resource_of("other") == "other"


async def _churn(path: Path, rounds: int, keep: int) -> None:
    """``keep`` configmaps that stay, then ``rounds`` of a pod created, updated, deleted."""
    store = SQLiteStorage(path, durable=False)
    await store.start()
    try:
        for i in range(keep):
            await store.create(f"/registry/configmaps/default/c{i}", b"x" * 100)
        for i in range(rounds):
            kv = await store.create(f"/registry/pods/soak/p{i}", b"p" * 2000)
            kv = await store.update(kv.key, b"q" * 2000, kv.mod_revision)
            await store.delete(kv.key)
    finally:
        await store.close()


def test_churn_comes_back_after_compaction_and_a_leftover_is_named(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    asyncio.run(_churn(db, 0, 5))
    start = storefigures.measure(db)
    assert start.live_keys == {"configmaps": 5}
    assert start.rows == 5
    asyncio.run(_churn(db, 300, 0))
    end = storefigures.measure(db)
    assert end.rows == 5 + 900  # nothing compacted the live file
    assert end.revision == 905
    assert end.compacted_revision == 0
    assert end.file_bytes > 900 * 2000  # the churn's values are all on record
    assert end.live_keys == start.live_keys
    # compacted to now, the copy holds the five configmaps again, as at the start
    assert end.compacted_bytes <= start.compacted_bytes * 1.1
    assert storefigures.measure(db).rows == 905  # the live file was only read


def test_a_leftover_object_shows_in_keys_and_size(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    asyncio.run(_churn(db, 0, 1))
    start = storefigures.measure(db)

    async def leave() -> None:
        store = SQLiteStorage(db, durable=False)
        await store.start()
        try:
            for i in range(50):
                await store.create(f"/registry/pods/soak/left{i}", b"z" * 4000)
        finally:
            await store.close()

    asyncio.run(leave())
    end = storefigures.measure(db)
    assert end.live_keys - start.live_keys == {"pods": 50}
    assert end.compacted_bytes > start.compacted_bytes * 1.5
