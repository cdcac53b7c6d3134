"""Object size limits as kube-apiserver over etcd has them, and a watch cache aged by time
(issue 24: a node wrote 100 Node statuses of 2.7 MB, +270 MB of memory, 1.2 GB after a
restart). A request body over 3 MiB is 413 ``Request entity too large: limit is
3145728``; an object over etcd's 1.5 MiB request limit is refused by the store with
etcd's ``etcdserver: request is too large``, which kube-apiserver answers as a 500
without a reason."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import aiohttp
import orjson
import pytest

from pykubelet.controlplane.server import ControlPlane, Options
from pykubelet.controlplane.storage import Event, KeyValue
from pykubelet.controlplane.storage.cacher import (
    EVENT_FRESH_S,
    RING_LOWER_BOUND,
    Attrs,
    ResourceCache,
    TooOldError,
)


def node(name: str, size: int) -> dict[str, object]:
    """A Node whose status lists images for about ``size`` bytes (what the probe sent)."""
    images = [{"names": [f"registry.example/image-{i:08d}:" + "v" * 60], "sizeBytes": 1}
              for i in range(size // 110)]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"images": images}}


def body(obj: object) -> dict[str, object]:
    """Request arguments for a JSON body (a stream: aiohttp warns about big bytes)."""
    return {"data": io.BytesIO(orjson.dumps(obj)),
            "headers": {"Content-Type": "application/json"}}


def test_objects_over_etcds_limit_and_bodies_over_3_mib_are_refused(tmp_path: Path) -> None:
    async def main() -> None:
        cp = ControlPlane(Options(root=tmp_path, listen="127.0.0.1:0", scheduler=False,
                                  controllers=False))
        await cp.start()
        assert cp.tokens is not None
        url = f"{cp.local_url}/api/v1/nodes"
        try:
            async with aiohttp.ClientSession(
                    headers={"Authorization": f"Bearer {cp.tokens.admin}"}) as s:
                async with s.post(url, **body(node("big", 2 * 1024 * 1024)),
                                  ssl=False) as r:
                    status = await r.json()
                    assert r.status == 500
                    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Failure",
                                    "message": "etcdserver: request is too large",
                                    "code": 500}
                async with s.get(f"{url}/big", ssl=False) as r:
                    assert r.status == 404
                async with s.post(url, **body(node("ok", 1024 * 1024)), ssl=False) as r:
                    assert r.status == 201
                    ok = await r.json()
                ok["status"] = node("ok", 2 * 1024 * 1024)["status"]  # grows past it
                async with s.put(f"{url}/ok/status", **body(ok), ssl=False) as r:
                    assert r.status == 500
                    assert (await r.json())["message"] == "etcdserver: request is too large"
                async with s.post(url, **body(node("huge", 3 * 1024 * 1024)),
                                  ssl=False) as r:
                    status = await r.json()
                    assert r.status == 413
                    assert status["reason"] == "RequestEntityTooLarge"
                    assert status["message"] == "Request entity too large: limit is 3145728"
        finally:
            await cp.stop()

    asyncio.run(main())


def test_the_watch_cache_history_is_aged_by_time_as_well_as_count() -> None:
    now = [1000.0]
    cache = ResourceCache("/registry/configmaps/", lambda o: Attrs("d", "n", {}, {}),
                          ring_size=10_000, clock=lambda: now[0])

    def write(rev: int) -> None:
        value = b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c%d"}}' % rev
        cache.apply(Event(KeyValue(f"/registry/configmaps/d/c{rev}", value, rev, rev), None))

    for rev in range(1, 301):
        write(rev)
    assert len(cache.ring) == 300  # all fresh: kept
    now[0] += EVENT_FRESH_S + 1
    write(301)  # the old ones go, down to the lower bound
    assert len(cache.ring) == RING_LOWER_BOUND
    assert cache.ring[-1].rev == 301
    with pytest.raises(TooOldError):
        cache.events_since(100)
    assert [e.rev for e in cache.events_since(cache.floor)][:1] == [cache.floor + 1]
