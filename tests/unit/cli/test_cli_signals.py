"""The long-running commands (control plane, load balancer, port-forward) stop on SIGTERM
and SIGINT through one event (issue 25: each installed the handlers itself)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from pykubelet.cli.signals import stop_on_signals


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_signal_sets_the_event(sig: signal.Signals) -> None:
    async def main() -> bool:
        stop = stop_on_signals()
        assert not stop.is_set()
        os.kill(os.getpid(), sig)
        await asyncio.wait_for(stop.wait(), 5)
        return stop.is_set()

    assert asyncio.run(main())
    # the loop's close took its handlers away again
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
