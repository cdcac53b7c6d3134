"""Stopping a stream's helper task: every session runs pumps, feeders and readers beside
its handler, and each handler's ``finally`` must stop them without hanging on one or
letting a helper's error (a reset connection) replace the handler's own outcome."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancelled(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait until it has ended; its cancellation or error is dropped."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
