"""The store's current revision for consistent reads, one store read for every request
waiting at the same time.

A get or list without resourceVersion must see every write acknowledged before it arrived
(on etcd, by any API server), so it waits until the watch cache holds a revision read from
the store after the request came in. Requests that arrive together share one such read, as
kube-apiserver shares its progress requests between waiting lists: a request joins the next
read that has not started yet, never one already in flight (that one may have been answered
before the request's own writes' acknowledgements), so each gets a revision read after it
arrived, and a burst of reads costs the store one round trip at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class RevisionReader:
    """``await current()``: a revision at least as new as the store's when it was called."""

    def __init__(self, read: Callable[[], Awaitable[int]]) -> None:
        self._read = read
        self._next: asyncio.Future[int] | None = None  # the read not started yet
        self._runner: asyncio.Task[None] | None = None

    async def current(self) -> int:
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
            # nobody may be left to look at a failure: mark it seen
            self._next.add_done_callback(lambda f: f.cancelled() or f.exception())
            if self._runner is None or self._runner.done():
                self._runner = asyncio.create_task(self._run(), name="revision-reader")
        # a waiter that gives up (its request timed out) leaves the shared read alone
        return await asyncio.shield(self._next)

    async def _run(self) -> None:
        """Reads one after the other while requests wait for the next one."""
        while self._next is not None:
            fut, self._next = self._next, None
            try:
                rev = await self._read()
            except Exception as exc:  # every waiter of this read gets the failure
                if not fut.done():
                    fut.set_exception(exc)
            else:
                if not fut.done():
                    fut.set_result(rev)
