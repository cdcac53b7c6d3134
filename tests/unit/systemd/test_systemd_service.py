"""The health-gated watchdog and the status line, driven through a real notify socket."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubelet.systemd.notify import Notifier
from pykubelet.systemd.service import SystemdService
from pykubelet.systemd.watchdog import HealthWatchdog


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(path)
        s.settimeout(0.2)
        yield s, path


def _drain(s: socket.socket, seconds: float) -> list[str]:
    got: list[str] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            got += s.recv(4096).decode().split("\n")
        except TimeoutError:
            pass
    return got


def test_pings_only_while_healthy_and_says_why_once(
        notify: tuple[socket.socket, str], caplog: pytest.LogCaptureFixture) -> None:
    s, path = notify
    health = {"ok": True, "n": 0}

    def check() -> tuple[bool, str]:
        health["n"] += 1
        return bool(health["ok"]), f"sync loop is wedged (check {health['n']})"

    wd = HealthWatchdog(Notifier({"NOTIFY_SOCKET": path}), 1.0, check)
    assert wd.tick()
    assert _drain(s, 0.1) == ["WATCHDOG=1"]
    health["ok"] = False  # type: ignore[assignment]
    with caplog.at_level(logging.INFO):
        assert not wd.tick()
        assert not wd.tick()
    assert _drain(s, 0.1) == []  # no ping while unhealthy
    assert wd.failing == "sync loop is wedged (check 3)"  # the latest reason
    assert [r.getMessage() for r in caplog.records if "watchdog" in r.getMessage()] == [
        "not notifying the systemd watchdog: sync loop is wedged (check 2)"]  # once
    health["ok"] = True  # type: ignore[assignment]
    assert wd.tick()
    assert wd.failing == ""
    assert wd.pings == 2


def test_a_check_that_raises_is_a_failing_check(tmp_path: Path) -> None:
    def boom() -> tuple[bool, str]:
        raise RuntimeError("lock poisoned")

    wd = HealthWatchdog(Notifier({}), 1.0, boom)
    assert not wd.tick()
    assert "lock poisoned" in wd.failing


def test_service_ready_then_watchdog_and_status_then_stopping(
        notify: tuple[socket.socket, str]) -> None:
    s, path = notify
    health = {"ok": True}
    svc = SystemdService({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
    svc.starting("starting the embedded runtime")
    assert _drain(s, 0.1) == ["STATUS=starting the embedded runtime"]
    svc.ready(lambda: (health["ok"], "sync loop is not running"), lambda: "Running: 3 pods")
    healthy = _drain(s, 0.5)
    assert healthy[:2] == ["READY=1", "STATUS=Running: 3 pods"]
    assert healthy.count("WATCHDOG=1") >= 2  # every 0.2 s
    health["ok"] = False
    time.sleep(0.25)
    unhealthy = _drain(s, 0.6)
    # a tick that read the health just before it turned may still land in the buffer
    # (seen under load); once the service has said Unhealthy it pets the watchdog no more
    assert "STATUS=Unhealthy: sync loop is not running" in unhealthy
    first = unhealthy.index("STATUS=Unhealthy: sync loop is not running")
    assert "WATCHDOG=1" not in unhealthy[first:]
    svc.stopping()
    assert _drain(s, 0.3)[-2:] == ["STOPPING=1", "STATUS=stopping"]


def test_service_outside_systemd_starts_no_thread() -> None:
    svc = SystemdService({})
    svc.ready(lambda: (True, ""), lambda: "x")
    assert svc._thread is None
    svc.stopping()
