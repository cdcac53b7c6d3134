"""The controllers' work queue worker (processNextWorkItem), with the ReplicaSet,
Deployment and DaemonSet controllers' back-off: a sync
that fails is logged with the key and retried after the back-off; one that succeeds is
forgotten; the worker goes on either way."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.replicaset import RETRY_BASE_S, RETRY_MAX_S
from pykubelet.controlplane.controllers.workqueue import WorkQueue


def test_a_failed_sync_is_logged_and_retried_then_forgotten(
        caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []
    log = logging.getLogger("test.workqueue")

    async def main() -> None:
        done = asyncio.Event()

        async def sync(key: str) -> None:
            calls.append(key)
            if len(calls) == 1:
                raise errors.StatusError(409, "Conflict", "the object has been modified")
            done.set()

        q = WorkQueue("thing", sync, base=RETRY_BASE_S, cap=RETRY_MAX_S, logger=log)
        q.add("ns/a")
        worker = asyncio.ensure_future(q.run())
        try:
            await asyncio.wait_for(done.wait(), 5)
            await asyncio.sleep(0)
            assert q._failures == {}
            assert not q._processing
        finally:
            worker.cancel()
            with pytest.raises(asyncio.CancelledError):
                await worker

    with caplog.at_level(logging.WARNING, logger="test.workqueue"):
        asyncio.run(main())
    assert calls == ["ns/a", "ns/a"]
    assert [r.getMessage() for r in caplog.records] == [
        "thing ns/a: sync failed, retrying: the object has been modified"]
