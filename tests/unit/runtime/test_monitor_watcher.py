"""MonitorWatcher: conmons held by pidfds in one epoll set (no root: our own children)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubelet.runtime.monitor import MonitorPaths, MonitorWatcher


def _fake_conmon(cid: str) -> subprocess.Popen[bytes]:
    """A process whose argv looks like conmon's for ``cid`` (argv[0] "conmon", cid listed)."""
    p = subprocess.Popen(["conmon-fake", "-c", "sleep 60; :", cid], executable="/bin/sh")
    deadline = time.monotonic() + 10
    while b"conmon-fake" not in Path(f"/proc/{p.pid}/cmdline").read_bytes():  # exec'd yet?
        assert time.monotonic() < deadline
        time.sleep(0.005)
    return p


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for p in started:
            p.kill()
            p.wait()


def _paths(tmp_path: Path, pid: int) -> MonitorPaths:
    paths = MonitorPaths.under(tmp_path, tmp_path / "bundle")
    paths.conmon_pidfile.write_text(f"{pid}\n")
    return paths


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_watch_until_the_monitor_exits(tmp_path: Path, procs) -> None:  # type: ignore[no-untyped-def]
    cid = "a" * 64
    p = _fake_conmon(cid)
    procs.append(p)
    w = MonitorWatcher()
    before = _open_fds()
    assert w.watch(_paths(tmp_path, p.pid), cid)
    assert w.watch(_paths(tmp_path, p.pid), cid)  # twice: still one pidfd
    assert _open_fds() == before + 1
    w.refresh()
    assert w.running(cid)
    p.kill()
    p.wait()
    w.refresh()
    assert not w.running(cid)
    assert _open_fds() == before  # the pidfd is closed once the exit is seen
    w.close()


def test_refuses_a_pid_that_is_not_this_containers_monitor(tmp_path: Path, procs) -> None:  # type: ignore[no-untyped-def]
    p = _fake_conmon("b" * 64)
    procs.append(p)
    w = MonitorWatcher()
    before = _open_fds()
    assert not w.watch(_paths(tmp_path, p.pid), "c" * 64)  # a reused pid: someone else's
    other = subprocess.Popen(["sleep", "60"])
    procs.append(other)
    assert not w.watch(_paths(tmp_path, other.pid), "b" * 64)  # not a conmon at all
    assert not w.watch(MonitorPaths.under(tmp_path / "none", tmp_path / "b"), "b" * 64)
    assert not w.running("b" * 64)
    assert not w.running("c" * 64)
    assert _open_fds() == before
    w.close()


def test_forget_and_drop_close_every_pidfd(tmp_path: Path, procs) -> None:  # type: ignore[no-untyped-def]
    before = _open_fds()
    w = MonitorWatcher()
    cids = [c * 64 for c in "def"]
    for i, cid in enumerate(cids):
        p = _fake_conmon(cid)
        procs.append(p)
        d = tmp_path / str(i)
        d.mkdir()
        assert w.watch(_paths(d, p.pid), cid)
    w.forget(cids[0])
    assert not w.running(cids[0])
    assert w.running(cids[1])
    w.forget(cids[0])  # twice is fine
    del w  # dropped without close(): its finalizer closes the rest
    assert _open_fds() == before
