"""The lab stops its processes as it says: SIGTERM, a wait, then SIGKILL for whatever
still runs (a daemon that ignores SIGTERM is not left behind)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from pykubelet.lab import processes

IGNORES_TERM = ("import signal, time\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "print('ready', flush=True)\n"
                "time.sleep(60)\n")


def test_stop_terms_then_kills(tmp_path: Path) -> None:
    polite = processes.start_detached(["sleep", "60"], tmp_path / "polite.log")
    stubborn = processes.start_detached([sys.executable, "-c", IGNORES_TERM],
                                        tmp_path / "stubborn.log")
    try:
        deadline = time.monotonic() + 10
        while "ready" not in (tmp_path / "stubborn.log").read_text():
            assert time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        started = time.monotonic()
        processes.stop([polite, stubborn], timeout=0.5)
        assert not polite.alive()
        assert not stubborn.alive()
        assert time.monotonic() - started >= 0.5  # the stubborn one outlived SIGTERM's wait
    finally:
        for ref in (polite, stubborn):
            if ref.alive():
                with contextlib.suppress(OSError):
                    os.kill(ref.pid, signal.SIGKILL)
            processes.exited(ref)
        # the module keeps its detached children's Popen objects; these two are reaped
        for proc in [p for p in processes._children if p.pid in (polite.pid, stubborn.pid)]:
            proc.wait(timeout=5)
            processes._children.remove(proc)
