"""Periodic (wait.Until): runs again after a failure, and stops at once when told."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from pykubelet.kubelet.util.periodic import Periodic


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


def test_a_run_of_expected_failures_is_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A runtime down for an hour is one warning, not one a second: the first failure of a
    run warns, the rest are debug lines (-v), and the first pass that works again says so."""
    outcomes = [RuntimeError("down")] * 3 + [None, RuntimeError("down again"), None]
    loop = Periodic("test-run", lambda: None, 60.0, expected=(RuntimeError,))

    def fn() -> None:
        exc = outcomes.pop(0)
        if exc is not None:
            raise exc

    loop.fn = fn
    with caplog.at_level(logging.DEBUG, logger="pykubelet.kubelet.util.periodic"):
        for _ in range(6):
            loop._run_once()
    seen = [(r.levelname, r.getMessage().split(" after ")[0].split(" (failing")[0])
            for r in caplog.records]
    assert seen == [("WARNING", "test-run: down"), ("DEBUG", "test-run"), ("DEBUG", "test-run"),
                    ("INFO", "test-run works again"), ("WARNING", "test-run: down again"),
                    ("INFO", "test-run works again")]
    assert loop.failing_since == 0.0
