"""Fixtures: one control plane process per module, the real kubectl on PATH.

The API tests run on both stores: ``cp`` is parametrised over SQLite and etcd (as the
agent tests are over two runtimes); a module that only concerns one store narrows it
with ``CP_BACKENDS = ("sqlite",)``."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cp_process import BACKENDS, ControlPlaneProcess, control_plane


def pytest_report_header() -> str:
    if shutil.which("kubectl") is None:
        return "kubectl: not on PATH"
    out = subprocess.run(["kubectl", "version", "--client"], capture_output=True, text=True)
    return "kubectl: " + " ".join(out.stdout.split())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name in ("cp", "small_cache_cp"):
        if name in metafunc.fixturenames:
            backends = getattr(metafunc.module, "CP_BACKENDS", BACKENDS)
            metafunc.parametrize(name, backends, indirect=True, scope="module")


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
       ) -> Iterator[ControlPlaneProcess]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl must be on PATH: the control plane is tested with the real one")
    root = tmp_path_factory.mktemp("cp") / "root"
    with control_plane(root, request.param, ["--node-monitor-grace-period", "4"]) as proc:
        yield proc


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
