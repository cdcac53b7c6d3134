"""The store seam's contract on etcd (Debian's etcd-server, one member on loopback ports
under the test's temporary directory, removed afterwards): every case of the unit suite
that takes a ``backend`` (tests/unit/controlplane/storage/test_cp_storage.py, on SQLite
there) runs here on etcd, then etcd's own cases: compaction, progress notifications,
leases, writes from outside the store, moved calls and closed channels, a member killed,
TLS. They are here, not in tests/unit, because each starts an etcd process (issue 25)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType

import module_by_path
import pytest

from pykubelet.controlplane.storage import CompactedError, Progress
from pykubelet.controlplane.storage.etcd import EtcdConfig, EtcdStorage
from pykubelet.controlplane.storage.etcdserver import EtcdServer

pytestmark = pytest.mark.slow


def _unit_suite() -> ModuleType:
    """The unit suite, loaded under its own name (its cases are not collected twice)."""
    tests = Path(__file__).resolve().parents[3]
    path = tests / "unit" / "controlplane" / "storage" / "test_cp_storage.py"
    return module_by_path.load("storage_contract", path)


SUITE = _unit_suite()
CONTRACT = sorted(name for name, fn in vars(SUITE).items()
                  if name.startswith("test_") and "backend" in inspect.signature(fn).parameters)


def test_the_contract_has_cases() -> None:
    assert len(CONTRACT) >= 7


@pytest.mark.parametrize("case", CONTRACT)
def test_the_store_contract_on_etcd(case: str, tmp_path: Path) -> None:
    getattr(SUITE, case)("etcd", tmp_path)


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
