"""The API server's HTTP and TLS serving, against an in-process control plane on
loopback: a scrape never stalls other requests, connections that send nothing are reaped
as Go's http.Server reaps them, and TLS and headers show what kube-apiserver's show
(issue 24 items 11, 18 and 22)."""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from pykubelet.controlplane.server import ControlPlane, Options


@asynccontextmanager
async def control_plane(root: Path, **options: Any) -> AsyncIterator[ControlPlane]:
    cp = ControlPlane(Options(root=root, listen="127.0.0.1:0", scheduler=False,
                              controllers=False, **options))
    await cp.start()
    try:
        yield cp
    finally:
        await cp.stop()


def test_a_slow_scrape_does_not_hold_up_other_requests(tmp_path: Path) -> None:
    async def main() -> None:
        async with control_plane(tmp_path) as cp:
            assert cp.api is not None
            assert cp.tokens is not None
            real = cp.api.metrics
            assert real is not None

            started = threading.Event()

            def slow() -> bytes:
                started.set()
                time.sleep(1.5)  # a big registry's generation, as the probe saw (8.7 s)
                return real()

            cp.api.metrics = slow
            took: list[float] = []

            def other_client() -> None:
                """Another client, on its own thread (the test's loop is the server's)."""
                ctx = ssl._create_unverified_context()
                started.wait(10)
                t0 = time.monotonic()
                with urllib.request.urlopen(f"{cp.local_url}/healthz", context=ctx,
                                            timeout=10) as r:
                    assert r.status == 200
                took.append(time.monotonic() - t0)

            other = threading.Thread(target=other_client)
            other.start()
            headers = {"Authorization": f"Bearer {cp.tokens.admin}"}
            try:
                async with aiohttp.ClientSession(headers=headers) as s, s.get(
                        f"{cp.local_url}/metrics", ssl=False) as r:
                    await r.read()
                    assert r.status == 200
            finally:
                started.set()
                await asyncio.to_thread(other.join, 15)
            assert took, "the other client got no answer"
            assert took[0] < 0.5, took

    asyncio.run(main())
