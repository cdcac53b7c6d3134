"""The store seam's contract, run against every backend (as storage/testing does upstream):
SQLite on a file and in memory, and etcd (Debian's etcd-server, one member on loopback
ports under the test's temporary directory, removed afterwards)."""

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
    Progress,
    RequestTooLargeError,
    Storage,
)
from pykubelet.controlplane.storage.etcd import EtcdConfig, EtcdStorage
from pykubelet.controlplane.storage.etcdserver import EtcdServer
from pykubelet.controlplane.storage.sqlite import SQLiteStorage

BACKENDS = ["sqlite-file", "sqlite-memory", "etcd"]


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


@pytest.mark.parametrize("backend", ["sqlite-file", "etcd"])
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


def run_etcd(tmp_path: Path, body: Callable[[EtcdStorage], Awaitable[None]],
             **config: object) -> None:
    etcd = EtcdServer(tmp_path / "etcd", progress_notify_interval="500ms")
    etcd.start()

    async def main() -> None:
        store = EtcdStorage(EtcdConfig([etcd.client_url], **config))  # type: ignore[arg-type]
        await store.start()
        try:
            await body(store)
        finally:
            await store.close()

    try:
        asyncio.run(main())
    finally:
        etcd.remove()


def test_etcd_watch_from_a_compacted_revision_is_refused(tmp_path: Path) -> None:
    async def body(s: EtcdStorage) -> None:
        a = await s.create("/k/a", b"1")
        for i in range(3):
            a = await s.update("/k/a", str(i).encode(), a.mod_revision)
        await s.compact(a.mod_revision)
        with pytest.raises(CompactedError) as exc:
            async for _ in s.watch(a.mod_revision - 2):
                pass
        assert exc.value.compacted >= a.mod_revision - 1
        # a watch at the compaction's edge still follows
        got = []
        async for batch in s.watch(a.mod_revision + 1):
            got.extend(batch)
            break
        # (the compaction wrote compact_rev_key, which is outside the watched range)
        assert got == []

    run_etcd(tmp_path, body)


def test_etcd_progress_notifications_arrive_as_progress(tmp_path: Path) -> None:
    async def body(s: EtcdStorage) -> None:
        kv = await s.create("/k/a", b"1")
        async for batch in s.watch(kv.mod_revision + 1):  # (etcd notifies every 500ms here)
            assert isinstance(batch, Progress)
            assert batch.revision == kv.mod_revision
            return

    run_etcd(tmp_path, lambda s: asyncio.wait_for(body(s), 10))


def test_etcd_keys_under_a_ttl_prefix_expire_through_a_lease(tmp_path: Path) -> None:
    async def body(s: EtcdStorage) -> None:
        ev = await s.create("/registry/events/default/e1", b"{}")
        pod = await s.create("/registry/pods/default/p1", b"{}")
        deleted: list[str] = []
        async for batch in s.watch(pod.mod_revision + 1):
            deleted.extend(e.kv.key for e in batch if e.deleted)
            if deleted:
                break
        assert deleted == [ev.key]
        assert await s.get(ev.key) is None
        assert await s.get(pod.key) is not None

    run_etcd(tmp_path, lambda s: asyncio.wait_for(body(s), 20),
             key_ttls={"/registry/events/": 1}, lease_reuse_s=0)


def test_etcd_history_ends_at_a_write_outside_the_store(tmp_path: Path) -> None:
    async def body(s: EtcdStorage) -> None:
        a = await s.create("/k/a", b"1")
        await s.compact(a.mod_revision)  # writes compact_rev_key: the newest revision
        events = await s.history(a.mod_revision + 1)
        assert events == []
        b = await s.create("/k/b", b"2")
        assert [e.kv.key for e in await s.history(a.mod_revision + 1)] == [b.key]

    run_etcd(tmp_path, lambda s: asyncio.wait_for(body(s), 10))


def test_etcd_watch_goes_on_when_calls_moved_away_and_its_channel_was_closed(
        tmp_path: Path) -> None:
    """Calls that fail on several members in a row (a cut-off control node) move the store
    from channel to channel, and the oldest retired one is closed, perhaps with the cache's
    watch on it: the watch resumes on the channel in use, nothing missed or repeated.
    (Both endpoints name the one member here, so every move reaches it again.)"""
    etcd = EtcdServer(tmp_path / "etcd")
    etcd.start()

    async def main() -> None:
        s = EtcdStorage(EtcdConfig([etcd.client_url, etcd.client_url]))
        await s.start()
        seen: list[str] = []
        first = await s.create("/k/000", b"x")

        async def follow() -> None:
            async for batch in s.watch(first.mod_revision):
                seen.extend(e.kv.key for e in batch)
                if len(seen) >= 3:
                    return

        try:
            watcher = asyncio.create_task(follow())
            second = await s.create("/k/001", b"x")
            while len(seen) < 2:
                await asyncio.sleep(0.05)
            for _ in range(6):  # as failing calls do: each move retires the channel in use
                await s._next_endpoint(s._current)
            third = await s.create("/k/002", b"x")
            await asyncio.wait_for(watcher, 10)
            assert seen == [first.key, second.key, third.key]
        finally:
            await s.close()

    try:
        asyncio.run(asyncio.wait_for(main(), 30))
    finally:
        etcd.remove()


def test_etcd_cluster_member_killed_writes_go_on_and_the_watch_resumes(tmp_path: Path) -> None:
    """Three members; the store talks to the first until it is SIGKILLed, then to the next:
    every acknowledged write is there, the watch carries on from its last revision, and the
    killed member, started again, rejoins and catches up."""
    from pykubelet.controlplane.storage.etcdserver import free_port

    members = [EtcdServer(tmp_path / f"m{i}", name=f"m{i}", client_port=free_port(),
                          peer_port=free_port()) for i in range(3)]
    cluster = ",".join(f"{m.name}={m.peer_url}" for m in members)
    for m in members:
        m.initial_cluster = cluster
        m.start(wait=False)

    async def main() -> None:
        for m in members:
            m.wait_serving()
        s = EtcdStorage(EtcdConfig([m.client_url for m in members]))
        await s.start()
        acked: list[str] = []
        seen: list[str] = []

        async def follow(from_rev: int) -> None:
            async for batch in s.watch(from_rev):
                seen.extend(e.kv.key for e in batch)
                if len(seen) >= 40:
                    return

        try:
            first = await s.create("/k/000", b"x")
            acked.append(first.key)
            watcher = asyncio.create_task(follow(first.mod_revision))
            for i in range(1, 40):
                if i == 15:
                    members[0].kill()
                acked.append((await s.create(f"/k/{i:03d}", b"x")).key)
            await asyncio.wait_for(watcher, 20)
            items, _ = await s.list_prefix("/k/")
            assert [kv.key for kv in items] == acked
            assert seen == acked  # in order, none missed, none repeated
            # the killed member rejoins and catches up (its own, serializable, reads)
            await asyncio.to_thread(members[0].start)
            assert await _member_keys(members[0].client_url, len(acked)) == acked
        finally:
            await s.close()

    try:
        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        for m in members:
            m.remove()


async def _member_keys(url: str, want: int) -> list[str]:
    """The /k/ keys one member holds by itself (a serializable read), once it has ``want``."""
    import grpc.aio

    from pykubelet._proto.etcd.etcdserverpb import rpc_pb2 as pb
    from pykubelet._proto.etcd.etcdserverpb import rpc_pb2_grpc as pb_grpc

    async with grpc.aio.insecure_channel(url.removeprefix("http://")) as channel:
        kv = pb_grpc.KVStub(channel)
        keys: list[str] = []
        for _ in range(200):
            try:
                resp = await kv.Range(pb.RangeRequest(key=b"/k/", range_end=b"/k0",
                                                      serializable=True, keys_only=True),
                                      timeout=2)
                keys = [k.key.decode() for k in resp.kvs]
                if len(keys) >= want:
                    break
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.1)
        return keys


def test_etcd_over_tls_with_a_client_certificate(tmp_path: Path) -> None:
    """etcd serving https and asking for client certificates (--client-cert-auth): the
    store connects with the CA, certificate and key the config names, and not without."""
    from pykubelet.controlplane.pki import PKI
    from pykubelet.controlplane.storage import StorageError

    pki = PKI(tmp_path / "tls")
    server = pki.issue("etcd-server", "etcd", dns=["localhost"], ips=["127.0.0.1"])
    client = pki.issue("etcd-client", "kube-apiserver-etcd-client", server=False, client=True)
    etcd = EtcdServer(tmp_path / "etcd",
                      client_tls=(pki.ca_cert_path, server.cert, server.key))
    etcd.start()

    async def main() -> None:
        s = EtcdStorage(EtcdConfig([etcd.client_url], ca_file=pki.ca_cert_path,
                                   cert_file=client.cert, key_file=client.key))
        await s.start()
        try:
            kv = await s.create("/k/a", b"1")
            got = await s.get("/k/a")
            assert got is not None
            assert got.mod_revision == kv.mod_revision
        finally:
            await s.close()
        anonymous = EtcdStorage(EtcdConfig([etcd.client_url], ca_file=pki.ca_cert_path))
        with pytest.raises(StorageError):
            await asyncio.wait_for(anonymous.start(), 30)
        await anonymous.close()

    try:
        asyncio.run(main())
    finally:
        etcd.remove()
