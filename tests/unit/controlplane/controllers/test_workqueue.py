"""The controllers' one work queue: a key queued once however often it is added, a
failed sync retried after a back-off doubling up to its cap, client-go's workqueue_*
metrics under the queue's name, and log lines naming the key as the owner describes it."""

from __future__ import annotations

import asyncio
import itertools
import logging

import pytest
from prometheus_client import CollectorRegistry

from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.metrics import WorkqueueMetrics


def test_back_off_doubles_to_its_cap_and_metrics_count_adds_depth_retries(
        caplog: pytest.LogCaptureFixture) -> None:
    reg = CollectorRegistry()
    seen: list[tuple[str, float]] = []
    log = logging.getLogger("test.workqueue.metrics")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        async def sync(key: str) -> None:
            seen.append((key, loop.time()))
            if len(seen) < 5:
                raise RuntimeError("not yet")
            done.set()

        q = WorkQueue("q", sync, base=0.05, cap=0.2, logger=log,
                      metrics=WorkqueueMetrics(reg), describe=lambda k: f"<{k}>",
                      expected=(RuntimeError,))
        q._add("a")
        q._add("a")  # queued once
        assert len(q) == 1
        assert reg.get_sample_value("workqueue_adds_total", {"name": "q"}) == 1
        assert reg.get_sample_value("workqueue_depth", {"name": "q"}) == 1
        worker = asyncio.ensure_future(q.run())
        try:
            await asyncio.wait_for(done.wait(), 5)
            await asyncio.sleep(0)
            assert q.failures("a") == 0  # forgotten on success
        finally:
            worker.cancel()
            with pytest.raises(asyncio.CancelledError):
                await worker

    with caplog.at_level(logging.WARNING, logger="test.workqueue.metrics"):
        asyncio.run(main())
    gaps = [b[1] - a[1] for a, b in itertools.pairwise(seen)]
    # room for a loaded machine's late wake-ups, less than the doubling past the cap (0.4)
    for got, want in zip(gaps, [0.05, 0.1, 0.2, 0.2], strict=True):
        assert want <= got < want + 0.15, gaps
    assert reg.get_sample_value("workqueue_retries_total", {"name": "q"}) == 4
    assert reg.get_sample_value("workqueue_depth", {"name": "q"}) == 0
    assert [r.getMessage() for r in caplog.records] == [
        "q <a>: sync failed, retrying: not yet"] * 4
    assert not any(r.exc_info for r in caplog.records)
