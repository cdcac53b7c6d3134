"""One daemon per state directory: the lock file holds the owner's pid, a second owner is
refused naming the first, and a killed owner leaves no stale lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pykubelet import state_lock

HOLD = """
import sys, time
from pathlib import Path
from pykubelet import state_lock
state_lock.acquire(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(60)
"""


def hold(path: Path) -> subprocess.Popen[str]:
    """Another process holding ``path``'s lock (as a second daemon would see the first)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def test_lock_holds_our_pid_and_is_free_after_release(tmp_path: Path) -> None:
    path = tmp_path / "state" / "kubelet.lock"
    assert state_lock.holder(path) is None
    lock = state_lock.acquire(path)
    assert path.read_text() == f"{os.getpid()}\n"
    assert state_lock.holder(path) == os.getpid()
    lock.release()
    assert state_lock.holder(path) is None
    again = state_lock.acquire(path)  # free again, for us or anyone
    again.release()


def test_a_second_owner_is_refused_naming_the_first(tmp_path: Path) -> None:
    path = tmp_path / "runtime.lock"
    owner = hold(path)
    try:
        with pytest.raises(state_lock.StateLocked) as err:
            state_lock.acquire(path)
        assert err.value.pid == owner.pid
        assert str(err.value).startswith(f"{path} is held by pid {owner.pid} (")
        assert state_lock.holder(path) == owner.pid
        assert path.read_text() == f"{owner.pid}\n"  # the refusal changed nothing
    finally:
        stop(owner)


def test_a_killed_owner_leaves_no_stale_lock(tmp_path: Path) -> None:
    """SIGKILL (a crash) releases the flock: the next daemon starts (and may adopt what
    the dead one left), though the dead one's pid is still in the file."""
    path = tmp_path / "kubelet.lock"
    owner = hold(path)
    owner.send_signal(signal.SIGKILL)
    stop(owner)
    assert path.read_text() == f"{owner.pid}\n"
    deadline = time.monotonic() + 5
    while state_lock.holder(path) is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert state_lock.holder(path) is None
    lock = state_lock.acquire(path)
    assert path.read_text() == f"{os.getpid()}\n"
    lock.release()


def test_describe_names_the_command() -> None:
    """A process's own command line (a child of known arguments: pytest's own differs
    under xdist's workers)."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        end = time.monotonic() + 10  # until the child has exec'd sleep
        while state_lock.describe(child.pid) != "sleep 30" and time.monotonic() < end:
            time.sleep(0.01)
        assert state_lock.describe(child.pid) == "sleep 30"
    finally:
        child.kill()
        child.wait()
    assert state_lock.describe(2**22 + 1) == "?"
