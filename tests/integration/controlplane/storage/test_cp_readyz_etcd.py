"""/readyz and reads on etcd, as kube-apiserver's ``[+]etcd`` check and consistent reads
behave: a control plane on one member of a three-member etcd turns unready when its member
loses quorum and ready again when it is back; a read after another API server's write waits
for the watch cache, and a consistent read repairs a watch gone silent. Here, not in
tests/unit, because each starts etcd processes (Debian's etcd-server, loopback ports under
the test's temporary directory, removed afterwards) (issue 25)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from pykubelet.controlplane import server
from pykubelet.controlplane.server import ControlPlane, Options
from pykubelet.controlplane.storage.cacher import Progress
from pykubelet.controlplane.storage.etcd import EtcdConfig, EtcdStorage
from pykubelet.controlplane.storage.etcdserver import EtcdServer, free_port

pytestmark = pytest.mark.slow


async def readyz(cp: ControlPlane, query: str = "") -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(
            f"{cp.local_url}/readyz{query}", ssl=False) as resp:
        return resp.status, await resp.text()


def test_readyz_fails_when_the_etcd_member_loses_quorum(tmp_path: Path) -> None:
    """A control plane on one member of a three-member etcd (its node's own): once the two
    others are gone the member has no quorum, its linearizable reads stall, and /readyz
    says 500 within the check's timeout; with one member back it is ready again."""
    members = [EtcdServer(tmp_path / f"m{i}", name=f"m{i}", client_port=free_port(),
                          peer_port=free_port()) for i in range(3)]
    cluster = ",".join(f"{m.name}={m.peer_url}" for m in members)
    for m in members:
        m.initial_cluster = cluster
        m.start(wait=False)

    async def main() -> None:
        for m in members:
            m.wait_serving()
        cp = ControlPlane(Options(root=tmp_path / "cp", listen="127.0.0.1:0",
                                  etcd=EtcdConfig([members[0].client_url]), scheduler=False,
                                  controllers=False))
        await cp.start()
        try:
            assert await readyz(cp) == (200, "ok")
            for m in members[1:]:
                await asyncio.to_thread(m.kill)
            t0 = asyncio.get_running_loop().time()
            code, text = await readyz(cp)
            took = asyncio.get_running_loop().time() - t0
            assert code == 500
            assert "[-]etcd failed: reason withheld" in text.splitlines()
            assert took < server.STORE_CHECK_TIMEOUT_S + 2
            await asyncio.to_thread(members[1].start)
            for _ in range(100):
                if (await readyz(cp))[0] == 200:
                    break
                await asyncio.sleep(0.2)
            assert await readyz(cp) == (200, "ok")
        finally:
            await cp.stop()

    try:
        asyncio.run(asyncio.wait_for(main(), 90))
    finally:
        for m in members:
            m.remove()


DIRECT = "/registry/configmaps/default/direct"


def with_another_writer(tmp_path: Path,
                        body: Callable[[ControlPlane, EtcdStorage], Awaitable[None]]) -> None:
    """A control plane on a one-member etcd, and another store client on the same etcd
    (another API server's writes), for ``body``; everything stopped afterwards."""
    member = EtcdServer(tmp_path / "m0")
    member.start()

    async def main() -> None:
        cp = ControlPlane(Options(root=tmp_path / "cp", listen="127.0.0.1:0",
                                  etcd=EtcdConfig([member.client_url]), scheduler=False,
                                  controllers=False))
        await cp.start()
        other = EtcdStorage(EtcdConfig([member.client_url]))
        await other.start()
        try:
            await body(cp, other)
        finally:
            await other.close()
            await cp.stop()

    try:
        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        member.remove()


async def write_elsewhere(other: EtcdStorage) -> None:
    """ConfigMap default/direct, written straight into etcd as another API server would."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "direct", "namespace": "default", "uid": "u-1",
                        "creationTimestamp": "2026-12-01T00:00:00Z"},
           "data": {"written": "elsewhere"}}
    await other.create(DIRECT, json.dumps(obj, separators=(",", ":")).encode())


def test_a_read_without_resource_version_waits_for_the_cache_to_catch_up(
        tmp_path: Path) -> None:
    """On etcd another API server may have written what this one's watch cache has not
    seen yet: a get or list without resourceVersion waits until the cache holds the store's
    current revision (a linearizable read gives it), as kube-apiserver's consistent reads
    from the cache do; resourceVersion=0 still answers from the cache at once."""

    async def body(cp: ControlPlane, other: EtcdStorage) -> None:
        held: list[list[object] | Progress] = []
        apply = cp.cacher._apply_batch

        def hold(batch: list[object] | Progress) -> None:
            held.append(batch)

        cp.cacher._apply_batch = hold  # type: ignore[method-assign,assignment]
        try:
            assert cp.tokens is not None
            headers = {"Authorization": f"Bearer {cp.tokens.admin}"}
            url = f"{cp.local_url}/api/v1/namespaces/default/configmaps/direct"
            await write_elsewhere(other)
            async with aiohttp.ClientSession(headers=headers) as s:
                async def get(query: str = "") -> tuple[int, dict[str, object]]:
                    async with s.get(url + query, ssl=False) as resp:
                        return resp.status, await resp.json()

                assert (await get("?resourceVersion=0"))[0] == 404  # the cache, as it is
                fresh = asyncio.create_task(get())
                await asyncio.sleep(0.5)
                assert not fresh.done()  # waiting for the cache, not answering 404
                cp.cacher._apply_batch = apply  # type: ignore[method-assign]
                for batch in held:
                    apply(batch)  # type: ignore[arg-type]
                code, got = await asyncio.wait_for(fresh, 10)
                assert code == 200
                assert got["data"] == {"written": "elsewhere"}
        finally:
            cp.cacher._apply_batch = apply  # type: ignore[method-assign]

    with_another_writer(tmp_path, body)


def test_a_consistent_read_repairs_a_watch_gone_silent(tmp_path: Path) -> None:
    """A store watch that stops delivering without failing (a stream its member no longer
    feeds) leaves the cache behind etcd: the consistent read that cannot catch up opens the
    watch again after the cache's revision, and answers what was written meanwhile."""

    async def body(cp: ControlPlane, other: EtcdStorage) -> None:
        watch = cp.storage.watch
        opened: list[int] = []

        async def silent(from_revision: int, **kw: bool) -> AsyncIterator[object]:
            opened.append(from_revision)
            await asyncio.Event().wait()  # open, and never a word
            yield []

        cp.storage.watch = silent  # type: ignore[method-assign,assignment]
        cp.cacher.rewatch("the test")  # the cache's watch is now the silent one
        await asyncio.sleep(0.1)
        cp.cacher._rewatched = -10.0
        cp.storage.watch = watch  # type: ignore[method-assign]
        assert cp.tokens is not None
        await write_elsewhere(other)
        await asyncio.sleep(0.3)
        assert opened
        assert cp.cacher.rev < other.current_revision()  # behind, silently
        headers = {"Authorization": f"Bearer {cp.tokens.admin}"}
        url = f"{cp.local_url}/api/v1/namespaces/default/configmaps/direct"
        async with aiohttp.ClientSession(headers=headers) as s, s.get(
                url, ssl=False) as resp:
            assert resp.status == 200, await resp.text()
            assert (await resp.json())["data"] == {"written": "elsewhere"}
        assert cp.cacher.rev >= other.current_revision()

    with_another_writer(tmp_path, body)
