"""The ``pycni`` command's defaults and messages (no root: nothing reaches a namespace).

Plugins are found along /opt/cni/bin:/usr/lib/cni by default (ours, then Debian's
reference plugins), every error is said once, and ``conf -o json`` shows the whole
selected network list.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from pycni import cli

PYCNI = str(Path(sys.executable).parent / "pycni")


def test_bin_dirs_default_to_ours_then_the_reference_plugins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CNI_PATH", raising=False)
    assert cli._bin_dirs(()) == ["/opt/cni/bin", "/usr/lib/cni"]
    monkeypatch.setenv("CNI_PATH", "/a:/b")
    assert cli._bin_dirs(()) == ["/a", "/b"]
    assert cli._bin_dirs(("/c:/d", "/e")) == ["/c", "/d", "/e"]


def _conf_dir(tmp_path: Path) -> Path:
    d = tmp_path / "net.d"
    d.mkdir()
    (d / "10-pcc.conflist").write_text(json.dumps({
        "cniVersion": "1.0.0", "name": "pccli", "plugins": [
            {"type": "pycni-bridge", "bridge": "pccli0",
             "ipam": {"type": "pycni-host-local", "ranges": [[{"subnet": "10.91.9.0/24"}]]}},
            {"type": "portmap", "capabilities": {"portMappings": True}}]}))
    return d


def test_conf_json_shows_the_whole_list(tmp_path: Path) -> None:
    d = _conf_dir(tmp_path)
    whole = subprocess.run([PYCNI, "conf", "--conf-dir", str(d), "-o", "json"],
                           capture_output=True, text=True, check=True)
    assert json.loads(whole.stdout) == json.loads((d / "10-pcc.conflist").read_text())
    summary = subprocess.run([PYCNI, "conf", "--conf-dir", str(d)], capture_output=True,
                             text=True, check=True)
    assert json.loads(summary.stdout)["plugins"] == [{"type": "pycni-bridge"}, {"type": "portmap"}]


def _add_argv(tmp_path: Path) -> list[str]:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return [PYCNI, "add", "--netns", "/run/netns/pcc-never-made", "--conf-dir",
            str(_conf_dir(tmp_path)), "--bin-dir", str(empty), "--cache-dir",
            str(tmp_path / "cache"), "pcc-cli-once"]


def test_an_error_is_said_once_on_a_terminal(tmp_path: Path) -> None:
    """A person at a terminal reads one line: no JSON echo of it, and no "rollback ...
    failed" line for a plugin that never ran."""
    argv = _add_argv(tmp_path)
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen(argv, stdout=secondary, stderr=secondary, stdin=subprocess.DEVNULL)
        os.close(secondary)
        chunks = []
        while True:
            try:
                data = os.read(primary, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(60) == 1
    finally:
        os.close(primary)
    lines = b"".join(chunks).decode().strip().splitlines()
    assert lines == [f'Error: plugin type="loopback" failed (add): failed to find plugin '
                     f'"loopback" in path [\'{tmp_path / "empty-bin"}\']']


def test_a_program_reading_stdout_gets_the_cni_error_json(tmp_path: Path) -> None:
    out = subprocess.run(_add_argv(tmp_path), capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert json.loads(out.stdout)["code"] == 50
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith("Error: plugin type=")
