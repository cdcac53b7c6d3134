"""The bounded-frequency runner: requests coalesce, a burst of two runs at once, later ones
wait for the bucket, a failure is retried, and max_interval runs it unasked."""

from __future__ import annotations

import threading
import time

from pykubelet.proxy.runner import BoundedFrequencyRunner


def wait_for(cond, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def test_runs_are_rate_limited_with_a_burst_of_two() -> None:
    times: list[float] = []
    r = BoundedFrequencyRunner("t", lambda: times.append(time.monotonic()) or True,
                               min_interval=0.3, max_interval=60)
    r.start()
    try:
        for i in range(3):
            r.run()
            assert wait_for(lambda i=i: len(times) > i)
        # two at once (the burst), the third only after a token came back
        assert times[1] - times[0] < 0.2
        assert times[2] - times[1] >= 0.2
        for _ in range(20):  # a storm of requests while waiting: one more run
            r.run()
        assert wait_for(lambda: len(times) == 4)
        time.sleep(0.5)
        assert len(times) == 4
    finally:
        r.stop()


def test_a_failed_run_is_retried_and_max_interval_runs_unasked() -> None:
    calls: list[bool] = []
    results = iter([False, True])
    done = threading.Event()

    def fn() -> bool:
        ok = next(results, True)
        calls.append(ok)
        if len(calls) >= 3:
            done.set()
        return ok

    r = BoundedFrequencyRunner("t", fn, min_interval=0.01, max_interval=0.4, retry=0.05)
    r.start()
    try:
        r.run()
        assert done.wait(5)  # fail, retry (ok), then unasked after max_interval
        assert calls[:2] == [False, True]
    finally:
        r.stop()
