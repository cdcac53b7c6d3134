"""Periodic (wait.Until): runs again after a failure, and stops at once when told."""

from __future__ import annotations

import threading
import time

from pykubelet.kubelet.periodic import Periodic


def test_runs_every_period_through_failures_and_stops() -> None:
    calls: list[float] = []
    third = threading.Event()

    def fn() -> None:
        calls.append(time.monotonic())
        if len(calls) >= 3:
            third.set()
        if len(calls) % 2:
            raise RuntimeError("a failing pass")

    loop = Periodic("test-loop", fn, 0.01, immediately=True, expected=(RuntimeError,))
    loop.start()
    assert third.wait(5)
    t0 = time.monotonic()
    loop.stop()
    assert time.monotonic() - t0 < 1
    assert loop.stopping
    n = len(calls)
    time.sleep(0.05)
    assert len(calls) == n


def test_waits_first_unless_told_to_run_immediately() -> None:
    ran = threading.Event()
    loop = Periodic("test-wait", ran.set, 60.0)
    loop.start()
    assert not ran.wait(0.1)
    loop.stop()
    assert not ran.is_set()
