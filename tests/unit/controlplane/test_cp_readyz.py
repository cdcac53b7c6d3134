"""/readyz checks the store, as kube-apiserver's ``[+]etcd`` check does: a control plane
on SQLite (in-process, loopback) is ready while its store answers, and unready when the
store is gone or does not answer within the timeout, which is what the agents' load
balancer goes by. On etcd (a member that loses quorum, reads after another API server's
writes): tests/integration/controlplane/storage/test_cp_readyz_etcd.py, since those start etcd."""

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
