"""Waiting on an in-process control plane's controllers: poll a check until it holds,
optionally nudging the system each round (e.g. a fake clock)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(check: Callable[[], Any], timeout: float = 15.0,
             tick: Callable[[], Any] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        if tick is not None:
            tick()
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)
