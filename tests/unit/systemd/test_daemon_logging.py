"""-v levels, and the journal's priorities when stderr is the journal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pykubelet import daemon_logging

CODE = """
import logging
from pykubelet import daemon_logging
daemon_logging.setup({v})
logging.getLogger("pykubelet.kubelet").info("pod started pod=default/web")
logging.getLogger("pykubelet.kubelet").debug("sync detail")
logging.getLogger("aiohttp.access").info("GET /healthz")
logging.getLogger("pykubelet.run").warning("node lost")
"""


def run(v: int, journal: Path | None = None) -> str:
    env = dict(os.environ)
    env.pop("JOURNAL_STREAM", None)
    if journal is None:
        res = subprocess.run([sys.executable, "-c", CODE.format(v=v)], env=env,
                             capture_output=True, text=True, check=True)
        return res.stderr
    with journal.open("w") as err:
        st = os.fstat(err.fileno())
        env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
        subprocess.run([sys.executable, "-c", CODE.format(v=v)], env=env, stderr=err,
                       check=True)
    return journal.read_text()


@pytest.mark.parametrize(("v", "shown"), [
    (0, ["pod started", "node lost"]),
    (1, ["pod started", "sync detail", "node lost"]),
    (2, ["pod started", "sync detail", "GET /healthz", "node lost"]),
])
def test_verbosity_levels(v: int, shown: list[str]) -> None:
    out = run(v)
    got = [m for m in ("pod started", "sync detail", "GET /healthz", "node lost") if m in out]
    assert got == shown
    assert " INFO pykubelet.kubelet: pod started pod=default/web" in out


def test_under_journald_lines_carry_their_priority(tmp_path: Path) -> None:
    out = run(1, tmp_path / "journal").splitlines()
    assert out == ["<6>pykubelet.kubelet: pod started pod=default/web",
                   "<7>pykubelet.kubelet: sync detail",
                   "<4>pykubelet.run: node lost"]


def test_runtime_level_follows_the_agents() -> None:
    assert [daemon_logging.runtime_log_level(v) for v in (0, 1, 2, 5)] == [
        "warning", "info", "debug", "debug"]
