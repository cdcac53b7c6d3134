"""--version on every command: the three CLIs, each pykubelet subcommand, and the CNI
plugins (which, as upstream's, print their about string with the version)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
VERSION = version("pykube-node")


@pytest.mark.parametrize(("command", "name"), [
    (["pykubelet"], "pykubelet"),
    (["pykubelet", "run"], "pykubelet run"),
    (["pykubelet", "runtime"], "pykubelet runtime"),
    (["pykubelet", "image"], "pykubelet image"),
    (["pykubelet", "control-plane"], "pykubelet control-plane"),
    (["pykubelet", "lab"], "pykubelet lab"),
    (["pykubectl"], "pykubectl"),
    (["pycni"], "pycni"),
    (["pysched"], "pysched"),
])
def test_cli_version(command: list[str], name: str) -> None:
    out = subprocess.run([str(BIN / command[0]), *command[1:], "--version"],
                         capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, f"{name}, version {VERSION}\n", "")


@pytest.mark.parametrize("plugin", ["pycni-bridge", "pycni-host-local", "pycni-loopback"])
def test_plugin_version(plugin: str) -> None:
    out = subprocess.run([str(BIN / plugin), "--version"], capture_output=True, text=True,
                         env={}, timeout=60)
    assert out.returncode == 0
    assert out.stderr.splitlines()[0].endswith(f", version {VERSION}")
