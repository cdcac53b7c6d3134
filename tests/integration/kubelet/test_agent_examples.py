"""The README's main job: one node with no control plane runs the sample static pods of
examples/ (on the embedded runtime that `pykubelet run` starts) and shows them Running
with their IPs, served from /pods; then it removes them and leaves nothing behind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]


def test_run_static_pods_example():
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "run_static_pods.py"), "--timeout", "120"],
        capture_output=True, text=True, timeout=280,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    rows = re.findall(r"^(\S+-demo)\s+1/1\s+Running\s+0\s+(10\.97\.200\.\d+)$", out.stdout, re.M)
    assert sorted(name for name, _ in rows) == ["batch-demo", "web-demo"], out.stdout
    web_ip = dict(rows)["web-demo"]
    assert f"hello from web-demo at {web_ip}" in out.stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "pkdemo0" not in links
    assert not list(Path("/tmp").glob("pykubelet-demo-*"))
