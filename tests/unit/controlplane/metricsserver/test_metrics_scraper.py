"""The scrape loop: idle until the API is asked, then every resolution; only Ready nodes;
a node that fails to answer keeps no points."""

from __future__ import annotations

import asyncio
from typing import Any

from pykubelet.controlplane.metricsserver.scraper import Scraper


def _node(name: str, ready: str = "True") -> dict[str, Any]:
    return {"metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}


class Nodes:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.t = 1_700_000_000_000

    async def __call__(self, node: str) -> str:
        self.calls.append(node)
        if node == "broken":
            raise OSError("connection refused")
        self.t += 1000
        return (f"node_cpu_usage_seconds_total {self.t / 1e6} {self.t}\n"
                f"node_memory_working_set_bytes 1 {self.t}\n")


def test_idle_until_asked_then_every_resolution() -> None:
    fetch = Nodes()
    scraper = Scraper(lambda: [_node("a")], fetch, resolution=0.02, pair_gap=0.0)

    async def main() -> None:
        loop = asyncio.create_task(scraper.run())
        await asyncio.sleep(0.15)
        assert fetch.calls == []  # nobody asked: nothing scraped
        await scraper.ensure_fresh()
        assert fetch.calls == ["a", "a"]  # the first answer needs two points
        assert scraper.storage.node_usage("a") is not None
        await asyncio.sleep(0.15)
        assert len(fetch.calls) >= 5  # in use: scraped every resolution
        loop.cancel()

    asyncio.run(main())


def test_only_ready_nodes_and_failures_forgotten() -> None:
    fetch = Nodes()
    nodes = [_node("a"), _node("down", "Unknown"), _node("broken")]
    scraper = Scraper(lambda: nodes, fetch, resolution=60, pair_gap=0.0)
    asyncio.run(scraper.ensure_fresh())
    assert "down" not in fetch.calls
    assert scraper.storage.node_usage("a") is not None
    assert scraper.storage.node_usage("broken") is None
    before = len(fetch.calls)
    asyncio.run(scraper.ensure_fresh())  # fresh within the resolution
    assert len(fetch.calls) == before
