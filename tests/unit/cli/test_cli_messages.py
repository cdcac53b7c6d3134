"""Messages that tell the truth: nothing about a control plane nobody configured, and
help that describes what this build has."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from pykubelet.cli.main import SUBCOMMANDS
from pykubelet.cli.run_cmd import _start_control_plane
from pykubelet.config import KubeletConfig, single_node_default

BIN = Path(sys.executable).parent


def test_nothing_about_a_cluster_nobody_configured(caplog: pytest.LogCaptureFixture) -> None:
    """A config without `controlPlane:` or `server:` runs the node alone: no cluster side
    starts and nothing is said about one (the default without a config file, by contrast,
    is a control plane and this node, as DESIGN.md says, and starts both)."""
    with caplog.at_level(logging.DEBUG, logger="pykubelet.run"):
        assert _start_control_plane(KubeletConfig(), object()) is None  # type: ignore[arg-type]
    assert caplog.records == []
    assert single_node_default().controlPlane is not None


def test_help_describes_what_exists() -> None:
    out = subprocess.run([str(BIN / "pykubelet"), "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert ("the node agent (kubelet), its CRI runtime and image store, and the control "
            "plane") in " ".join(out.split())
    listed = out.split("Commands:")[1].split()
    assert {name for name in listed if name in SUBCOMMANDS} == set(SUBCOMMANDS)
    run = subprocess.run([str(BIN / "pykubelet"), "run", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert ("without one, a single-node default: the control plane and this node, on the "
            "embedded runtime") in " ".join(run.split())
