"""sd_notify over a real AF_UNIX datagram socket, as systemd listens for it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubelet.systemd.notify import Notifier, child_environment, watchdog_interval


class NotifySocket:
    """What systemd binds for a Type=notify unit: a datagram socket at NOTIFY_SOCKET."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(2.0)

    def receive(self) -> list[str]:
        return self.sock.recv(4096).decode().split("\n")

    def nothing_pending(self) -> bool:
        self.sock.settimeout(0.05)
        try:
            self.sock.recv(4096)
        except TimeoutError:
            return True
        finally:
            self.sock.settimeout(2.0)
        return False


@pytest.fixture
def systemd(tmp_path: Path) -> Iterator[tuple[NotifySocket, dict[str, str]]]:
    path = str(tmp_path / "notify")
    s = NotifySocket(path)
    yield s, {"NOTIFY_SOCKET": path}
    s.sock.close()


def test_ready_status_watchdog_stopping_arrive_as_systemd_reads_them(
        systemd: tuple[NotifySocket, dict[str, str]]) -> None:
    sock, env = systemd
    n = Notifier(env)
    assert n.enabled
    assert n.ready("Running: node node1, 2 pods")
    assert sock.receive() == ["READY=1", "STATUS=Running: node node1, 2 pods"]
    assert n.status("line one\nline two")
    assert sock.receive() == ["STATUS=line one line two"]  # a status is one line
    assert n.watchdog()
    assert sock.receive() == ["WATCHDOG=1"]
    assert n.extend_timeout(1.5)
    assert sock.receive() == ["EXTEND_TIMEOUT_USEC=1500000"]
    assert n.stopping()
    assert sock.receive() == ["STOPPING=1"]


def test_abstract_socket_address() -> None:
    name = f"pykube-test-notify-{os.getpid()}"
    s = NotifySocket("\0" + name)
    try:
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert s.receive() == ["READY=1"]
    finally:
        s.sock.close()


def test_outside_systemd_nothing_is_sent_and_nothing_fails(tmp_path: Path) -> None:
    assert not Notifier({}).enabled
    assert Notifier({}).ready() is False
    # systemd gone (socket removed): the daemon carries on
    gone = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    assert gone.enabled
    assert gone.watchdog() is False


def test_watchdog_interval_is_only_ours() -> None:
    assert watchdog_interval({}) == 0
    assert watchdog_interval({"WATCHDOG_USEC": "60000000"}) == 60.0
    assert watchdog_interval({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "42"}, pid=42) == 2.0
    assert watchdog_interval({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "41"}, pid=42) == 0
    assert watchdog_interval({"WATCHDOG_USEC": "soon"}) == 0


def test_children_do_not_inherit_the_service_variables() -> None:
    env = {"NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "1", "WATCHDOG_PID": "2",
           "PATH": "/usr/bin"}
    assert child_environment(env) == {"PATH": "/usr/bin"}
