"""The scrape loop (metrics-server's pkg/scraper and server.go's tick): every Ready node's
``/metrics/resource`` through the API server's kubelet client (``NodeProxy``: the node's
address and port from its status, the apiserver-kubelet-client certificate), all nodes
at once, each with a timeout, into the storage.

Cheap when idle: the loop scrapes only while the metrics API was asked within
``idle_after`` (10 min), so a cluster nobody runs ``kubectl top`` on is never scraped. A
request finding the last scrape older than the resolution scrapes now; when that leaves a
node without two points (the first request after idling), it scrapes once more after
``pair_gap`` so the answer has a CPU rate (over that shorter window) instead of nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pykubelet.controlplane.metricsserver.decode import decode
from pykubelet.controlplane.metricsserver.storage import Storage

log = logging.getLogger(__name__)

DEFAULT_RESOLUTION_S = 15.0  # metrics-server's --metric-resolution
DEFAULT_IDLE_AFTER_S = 600.0
DEFAULT_PAIR_GAP_S = 1.0
SCRAPE_TIMEOUT_S = 10.0

Fetch = Callable[[str], Awaitable[str]]  # node name -> the endpoint's text


def is_ready(node: dict[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


class Scraper:
    """Scrapes on demand and, while in use, every ``resolution`` seconds."""

    def __init__(self, nodes: Callable[[], Iterable[dict[str, Any]]], fetch: Fetch,
                 resolution: float = DEFAULT_RESOLUTION_S,
                 idle_after: float = DEFAULT_IDLE_AFTER_S,
                 pair_gap: float = DEFAULT_PAIR_GAP_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.nodes = nodes
        self.fetch = fetch
        self.resolution = resolution
        self.idle_after = idle_after
        self.pair_gap = pair_gap
        self.clock = clock
        self.storage = Storage()
        self.scrapes = 0  # rounds done (tests and the bench count them)
        self._last_scrape: float | None = None
        self._last_request: float | None = None
        self._lock = asyncio.Lock()

    async def scrape_once(self) -> None:
        """One round over the Ready nodes; a node that fails keeps no points."""
        ready = [n["metadata"]["name"] for n in self.nodes() if is_ready(n)]
        texts = await asyncio.gather(*(self._fetch(name) for name in ready))
        scraped = set()
        for name, text in zip(ready, texts, strict=True):
            if text is not None:
                self.storage.store(name, await asyncio.to_thread(decode, text))
                scraped.add(name)
        self.storage.forget(scraped)
        self.scrapes += 1
        self._last_scrape = self.clock()

    async def _fetch(self, node: str) -> str | None:
        try:
            return await asyncio.wait_for(self.fetch(node), SCRAPE_TIMEOUT_S)
        except Exception as exc:
            log.warning("Failed to scrape node %s: %s", node, exc or type(exc).__name__)
            return None

    def _stale(self) -> bool:
        return self._last_scrape is None or self.clock() - self._last_scrape >= self.resolution

    async def ensure_fresh(self) -> None:
        """Before answering a request: scrape if the last round is older than the
        resolution, and again after ``pair_gap`` if some node lacks a CPU rate."""
        self._last_request = self.clock()
        async with self._lock:
            if not self._stale():
                return
            await self.scrape_once()
            ready = [n["metadata"]["name"] for n in self.nodes() if is_ready(n)]
            if any(self.storage.node_usage(n) is None for n in ready):
                await asyncio.sleep(self.pair_gap)
                await self.scrape_once()

    def active(self) -> bool:
        return (self._last_request is not None
                and self.clock() - self._last_request < self.idle_after)

    async def run(self) -> None:
        """The loop: a round every ``resolution`` seconds while the API is in use."""
        while True:
            await asyncio.sleep(self.resolution)
            if not self.active():
                continue
            async with self._lock:
                if self._stale():
                    try:
                        await self.scrape_once()
                    except Exception:
                        log.exception("metrics scrape failed")
