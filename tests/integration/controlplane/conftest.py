"""Fixtures: one control plane process per module, the real kubectl on PATH."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cp_process import ControlPlaneProcess


def pytest_report_header() -> str:
    if shutil.which("kubectl") is None:
        return "kubectl: not on PATH"
    out = subprocess.run(["kubectl", "version", "--client"], capture_output=True, text=True)
    return "kubectl: " + " ".join(out.stdout.split())


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlaneProcess]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl must be on PATH: the control plane is tested with the real one")
    root = tmp_path_factory.mktemp("cp") / "root"
    proc = ControlPlaneProcess(root, extra_args=["--node-monitor-grace-period", "4"])
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def ns(cp: ControlPlaneProcess, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, named after it."""
    name = "t-" + re.sub(r"[^a-z0-9-]", "-", request.node.name.lower().replace("_", "-"))[
        :40].strip("-")
    cp.kubectl("create", "namespace", name)
    yield name
    cp.kubectl("delete", "namespace", name, "--wait=false", check=False)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]
