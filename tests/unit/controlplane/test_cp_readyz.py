"""/readyz checks the store, as kube-apiserver's ``[+]etcd`` check does: a control plane
on SQLite (in-process, loopback) is ready while its store answers, and unready when the
store is gone or does not answer within the timeout, which is what the agents' load
balancer goes by."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from pykubelet.controlplane import server
from pykubelet.controlplane.server import ControlPlane, Options


async def readyz(cp: ControlPlane, query: str = "") -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(
            f"{cp.local_url}/readyz{query}", ssl=False) as resp:
        return resp.status, await resp.text()


def test_readyz_follows_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "STORE_CHECK_TIMEOUT_S", 0.3)

    async def main() -> None:
        cp = ControlPlane(Options(root=tmp_path, listen="127.0.0.1:0", scheduler=False,
                                  controllers=False))
        await cp.start()
        try:
            assert await readyz(cp) == (200, "ok")
            code, text = await readyz(cp, "?verbose")
            assert code == 200
            assert text.splitlines() == ["[+]ping ok", "[+]etcd ok", "[+]informer-sync ok",
                                         "readyz check passed"]
            real_get = cp.storage.get

            async def hangs(key: str) -> None:
                await asyncio.sleep(60)

            cp.storage.get = hangs  # type: ignore[method-assign,assignment]
            t0 = asyncio.get_running_loop().time()
            code, text = await readyz(cp)
            assert asyncio.get_running_loop().time() - t0 < 5
            assert code == 500
            assert "[-]etcd failed: reason withheld" in text.splitlines()
            assert text.splitlines()[-1] == "readyz check failed"
            cp.storage.get = real_get  # type: ignore[method-assign]
            assert (await readyz(cp))[0] == 200
            await cp.storage.close()  # the store is gone
            code, text = await readyz(cp)
            assert code == 500
            assert "[-]etcd failed: reason withheld" in text
        finally:
            await cp.stop()

    asyncio.run(main())


def test_readyz_fails_when_the_etcd_member_loses_quorum(tmp_path: Path) -> None:
    """A control plane on one member of a three-member etcd (its node's own): once the two
    others are gone the member has no quorum, its linearizable reads stall, and /readyz
    says 500 within the check's timeout; with one member back it is ready again."""
    from pykubelet.controlplane.storage.etcd import EtcdConfig
    from pykubelet.controlplane.storage.etcdserver import EtcdServer, free_port

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
