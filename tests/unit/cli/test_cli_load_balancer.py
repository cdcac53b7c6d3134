"""`pykubelet load-balancer` as a process: one-line errors for bad input, and a clean stop
on SIGTERM (the load balancer itself is tested in tests/unit/client)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

PYKUBELET = str(Path(sys.executable).parent / "pykubelet")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYKUBELET, "load-balancer", *args], capture_output=True, text=True,
                          timeout=30)


@pytest.mark.parametrize(("args", "message"), [
    (["--server", "http://10.0.0.1:6443"],
     "Invalid value for --server: 'http://10.0.0.1:6443': expected https://HOST:PORT"),
    (["--server", "https://10.0.0.1:6443", "--server", "https://10.0.0.2"],
     "Invalid value for --server: 'https://10.0.0.2': expected https://HOST:PORT"),
    (["--server", "https://10.0.0.1:6443", "--listen", "6444"],
     "Invalid value for --listen: '6444': expected ADDR:PORT"),
    ([], "Missing option '--server'"),
])
def test_bad_input_is_one_line(args: list[str], message: str) -> None:
    res = run(*args)
    assert res.returncode == 2
    assert f"Error: {message}" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_busy_port_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = run("--server", "https://127.0.0.1:1", "--listen", f"127.0.0.1:{port}")
    assert res.returncode == 1
    assert res.stderr.strip() == (f"Error: --listen 127.0.0.1:{port}: cannot listen: "
                                  "Address already in use")


def test_serves_until_sigterm_and_stops_cleanly(tmp_path: Path) -> None:
    port, dead = free_port(), free_port()
    state = tmp_path / "lb.json"
    proc = subprocess.Popen([PYKUBELET, "load-balancer", "--listen", f"127.0.0.1:{port}",
                             "--server", f"https://127.0.0.1:{dead}", "--state-file",
                             str(state), "--health-interval", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 20
        while not (state.exists() and json.loads(state.read_text())["currentServer"] == ""):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < end, "no state file saying the server is down"
            time.sleep(0.05)
        assert json.loads(state.read_text()) == {
            "serverURL": f"https://127.0.0.1:{dead}",
            "serverAddresses": [f"https://127.0.0.1:{dead}"], "currentServer": "",
            "healthy": {f"https://127.0.0.1:{dead}": False}}
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # it listens
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert "Traceback" not in err
    assert f"load balancer on https://127.0.0.1:{port}" in err
    assert "switched from=https://127.0.0.1:" in err
