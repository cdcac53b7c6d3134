"""The store seam's contract, run against every backend (as storage/testing does upstream):
here SQLite on a file and in memory; tests/integration/controlplane/storage/test_cp_storage_etcd.py
runs every case that takes a ``backend`` on etcd too (Debian's etcd-server, one member on
loopback ports under the test's temporary directory, removed afterwards), with etcd's own."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from pykubelet.controlplane.storage import (
    CompactedError,
    ConflictError,
    KeyExistsError,
    NotFoundError,
    RequestTooLargeError,
    Storage,
)
from pykubelet.controlplane.storage.etcd import EtcdConfig, EtcdStorage
from pykubelet.controlplane.storage.etcdserver import EtcdServer
from pykubelet.controlplane.storage.sqlite import SQLiteStorage

BACKENDS = ["sqlite-file", "sqlite-memory"]  # and "etcd" in the integration suite


def make(backend: str, tmp_path: Path, etcd: EtcdServer | None) -> Storage:
    if backend == "sqlite-file":
        return SQLiteStorage(tmp_path / "store.db")
    if backend == "etcd":
        assert etcd is not None
        return EtcdStorage(EtcdConfig([etcd.client_url]), page_size=2)  # lists span pages
    return SQLiteStorage(":memory:")


def run(backend: str, tmp_path: Path, body: Callable[[Storage], Awaitable[None]]) -> None:
    etcd = None
    if backend == "etcd":
        etcd = EtcdServer(tmp_path / "etcd")
        etcd.start()

    async def main() -> None:
        store = make(backend, tmp_path, etcd)
        await store.start()
        try:
            await body(store)
        finally:
            await store.close()

    try:
        asyncio.run(main())
    finally:
        if etcd is not None:
            etcd.remove()


@pytest.mark.parametrize("backend", BACKENDS)
def test_create_get_update_delete_revisions(backend: str, tmp_path: Path) -> None:
    async def body(s: Storage) -> None:
        r = s.current_revision()  # 0 on SQLite, 1 on a new etcd
        a = await s.create("/registry/pods/default/a", b"1")
        assert (a.create_revision, a.mod_revision) == (r + 1, r + 1)
        with pytest.raises(KeyExistsError):
            await s.create("/registry/pods/default/a", b"x")
        b = await s.update(a.key, b"2", a.mod_revision)
        assert (b.create_revision, b.mod_revision, b.value) == (r + 1, r + 2, b"2")
        with pytest.raises(ConflictError) as exc:
            await s.update(a.key, b"3", a.mod_revision)
        assert exc.value.actual == r + 2
        got = await s.get(a.key)
        assert got is not None
        assert got.value == b"2"
        gone = await s.delete(a.key, r + 2)
        assert gone.mod_revision == r + 3
        assert gone.value == b"2"
        assert await s.get(a.key) is None
        with pytest.raises(NotFoundError):
            await s.delete(a.key)
        assert s.current_revision() == r + 3

    run(backend, tmp_path, body)


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_is_sorted_by_key_and_scoped_by_prefix(backend: str, tmp_path: Path) -> None:
    async def body(s: Storage) -> None:
        r = s.current_revision()
        for key in ("/registry/pods/b/x", "/registry/pods/a/y", "/registry/minions/n1",
                    "/registry/pods/c/z"):
            await s.create(key, key.encode())
        items, rev = await s.list_prefix("/registry/pods/")
        assert [kv.key for kv in items] == [
            "/registry/pods/a/y", "/registry/pods/b/x", "/registry/pods/c/z"]
        assert rev == r + 4

    run(backend, tmp_path, body)


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_writers_share_commits_and_conflicts_are_exact(
    backend: str, tmp_path: Path
) -> None:
    async def body(s: Storage) -> None:
        r = s.current_revision()
        kvs = await asyncio.gather(*(s.create(f"/k/{i}", b"v") for i in range(200)))
        assert sorted(kv.mod_revision for kv in kvs) == list(range(r + 1, r + 201))
        # 20 racing updates of one key at the same revision: exactly one wins
        base = await s.create("/hot", b"0")
        results = await asyncio.gather(
            *(s.update("/hot", str(i).encode(), base.mod_revision) for i in range(20)),
            return_exceptions=True,
        )
        assert sum(1 for r in results if not isinstance(r, Exception)) == 1
        assert all(isinstance(r, ConflictError) for r in results if isinstance(r, Exception))

    run(backend, tmp_path, body)


@pytest.mark.parametrize("backend", BACKENDS)
def test_watch_replays_from_a_revision_then_follows(backend: str, tmp_path: Path) -> None:
    async def body(s: Storage) -> None:
        r = s.current_revision()
        a = await s.create("/k/a", b"1")
        await s.update("/k/a", b"2", a.mod_revision)
        await s.create("/k/b", b"3")
        seen: list[tuple[int, str, bool, bool]] = []

        async def consume() -> None:
            async for batch in s.watch(r + 2):
                for e in batch:
                    seen.append((e.kv.mod_revision - r, e.kv.key, e.created, e.deleted))
                if seen and seen[-1][0] >= 5:
                    return

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.05)
        await s.delete("/k/b")
        await s.create("/k/c", b"5")
        await asyncio.wait_for(task, 5)
        assert seen == [
            (2, "/k/a", False, False),
            (3, "/k/b", True, False),
            (4, "/k/b", False, True),
            (5, "/k/c", True, False),
        ]

    run(backend, tmp_path, body)


@pytest.mark.parametrize("backend", BACKENDS)
def test_history_carries_previous_values(backend: str, tmp_path: Path) -> None:
    async def body(s: Storage) -> None:
        a = await s.create("/k/a", b"one")
        await s.update("/k/a", b"two", a.mod_revision)
        await s.delete("/k/a")
        events = await s.history(a.mod_revision)
        assert [(e.kv.value, e.prev.value if e.prev else None) for e in events] == [
            (b"one", None),
            (b"two", b"one"),
            (b"two", b"two"),
        ]
        assert events[2].deleted

    run(backend, tmp_path, body)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compaction_keeps_live_keys_and_refuses_old_revisions(
    backend: str, tmp_path: Path
) -> None:
    async def body(s: Storage) -> None:
        r = s.current_revision()
        a = await s.create("/k/a", b"1")
        a = await s.update("/k/a", b"2", a.mod_revision)
        await s.create("/k/gone", b"x")
        await s.delete("/k/gone")
        await s.compact(r + 4)
        assert s.compacted_revision() == r + 4
        with pytest.raises(CompactedError):
            await s.history(r + 3)
        items, _ = await s.list_prefix("/k/")
        assert [(kv.key, kv.value) for kv in items] == [("/k/a", b"2")]
        b = await s.create("/k/b", b"y")
        assert b.mod_revision > r + 4  # (etcd also records the compaction under a key)

    run(backend, tmp_path, body)


def test_writes_after_a_compaction_and_checkpoint_succeed(tmp_path: Path) -> None:
    """The checkpoint after a compaction (as the compactor runs it) leaves no statement open:
    the next write batch's COMMIT used to fail ("cannot commit transaction - SQL statements
    in progress"), a 500 for every write in it."""
    async def main() -> None:
        s = SQLiteStorage(tmp_path / "s.db")
        await s.start()
        try:
            a = await s.create("/k/a", b"1")
            a = await s.update("/k/a", b"2", a.mod_revision)
            await s.compact(a.mod_revision)
            # writes queued behind the checkpoint commit while its answer is on its way
            done = await asyncio.gather(s.checkpoint(),
                                        *(s.create(f"/k/{i}", b"x") for i in range(50)))
            assert [kv.value for kv in done[1:]] == [b"x"] * 50
            await s.checkpoint()
            await s.update("/k/a", b"5", a.mod_revision)
        finally:
            await s.close()

    asyncio.run(main())


@pytest.mark.parametrize("backend", ["sqlite-file"])
def test_writes_over_etcds_request_limit_are_refused(backend: str, tmp_path: Path) -> None:
    """etcd's --max-request-bytes (1.5 MiB by default), which SQLite applies as well."""
    async def body(s: Storage) -> None:
        a = await s.create("/k/a", b"x" * (1024 * 1024))
        with pytest.raises(RequestTooLargeError, match="etcdserver: request is too large"):
            await s.create("/k/b", b"x" * (1536 * 1024))
        with pytest.raises(RequestTooLargeError):
            await s.update("/k/a", b"x" * (1536 * 1024), a.mod_revision)
        assert await s.get("/k/b") is None

    run(backend, tmp_path, body)


def test_state_and_revision_survive_a_restart(tmp_path: Path) -> None:
    async def main() -> None:
        s = SQLiteStorage(tmp_path / "s.db")
        await s.start()
        a = await s.create("/k/a", b"1")
        await s.update("/k/a", b"2", a.mod_revision)
        await s.create("/k/b", b"3")
        await s.delete("/k/b")
        await s.compact(4)
        await s.close()
        s2 = SQLiteStorage(tmp_path / "s.db")
        await s2.start()
        try:
            assert s2.current_revision() == 4
            assert s2.compacted_revision() == 4
            got = await s2.get("/k/a")
            assert got is not None
            assert (got.value, got.mod_revision) == (b"2", 2)
            c = await s2.create("/k/c", b"4")
            assert c.mod_revision == 5  # revisions never go back, even past a compaction
        finally:
            await s2.close()

    asyncio.run(main())


def test_the_package_exports_the_seam_listed_once_in_interface() -> None:
    """storage/__init__ re-exports interface.py's ``__all__``: every public class of the
    seam, the same objects."""
    import inspect

    from pykubelet.controlplane import storage
    from pykubelet.controlplane.storage import interface

    classes = {n for n, v in vars(interface).items()
               if inspect.isclass(v) and v.__module__ == interface.__name__
               and not n.startswith("_")}
    assert set(interface.__all__) == classes
    assert storage.__all__ == interface.__all__
    assert all(getattr(storage, n) is getattr(interface, n) for n in interface.__all__)
