"""The agent is its embedded runtime's supervisor (issue 29 item 1, the runtime SIGKILLed
at a pod's start): a runtime that exits is started again, as containerd's unit restarts
containerd under a kubelet, and said in a warning; a live one, or an external endpoint
(no child), is left alone; a restart that fails is retried at the next check rather than
ending the agent."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import click
import pytest

from pykubelet.cli.run_cmd import _AdoptedRuntime, supervise_runtime
from pykubelet.config import KubeletConfig


def test_an_exited_runtime_is_started_again(caplog: pytest.LogCaptureFixture) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(9)"])
    dead.wait()
    started = []

    def start(cfg: KubeletConfig) -> subprocess.Popen[bytes]:
        started.append(cfg)
        return subprocess.Popen([sys.executable, "-c", "pass"])

    cfg = KubeletConfig()
    with caplog.at_level(logging.WARNING, logger="pykubelet.run"):
        new = supervise_runtime(cfg, dead, start)
    assert started == [cfg]
    assert new is not dead
    assert f"embedded runtime pid {dead.pid} exited (9): starting it again" in caplog.text
    assert isinstance(new, subprocess.Popen)
    new.wait()


def test_a_live_or_absent_runtime_is_left_alone() -> None:
    def start(cfg: KubeletConfig) -> subprocess.Popen[bytes]:
        raise AssertionError("started")

    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert supervise_runtime(KubeletConfig(), live, start) is live
        adopted = _AdoptedRuntime(os.getpid())  # a pid that lives
        assert supervise_runtime(KubeletConfig(), adopted, start) is adopted
        assert supervise_runtime(KubeletConfig(), None, start) is None
    finally:
        live.kill()
        live.wait()


def test_an_adopted_runtime_that_is_gone_is_started_again() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    adopted = _AdoptedRuntime(gone.pid)
    assert adopted.poll() is not None
    fresh = subprocess.Popen([sys.executable, "-c", "pass"])
    assert supervise_runtime(KubeletConfig(), adopted, lambda cfg: fresh) is fresh
    fresh.wait()


def test_a_failed_restart_is_tried_again_later(caplog: pytest.LogCaptureFixture) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()

    def start(cfg: KubeletConfig) -> subprocess.Popen[bytes]:
        raise click.ClickException("embedded runtime did not listen")

    with caplog.at_level(logging.WARNING, logger="pykubelet.run"):
        assert supervise_runtime(KubeletConfig(), dead, start) is dead
    assert "embedded runtime did not listen" in caplog.text
