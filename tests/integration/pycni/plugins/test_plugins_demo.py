"""The README's main job until the lab exists: ``python -m pycni.demo`` end to end."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.root, pytest.mark.netns]


@pytest.mark.parametrize("flags", [[], ["--exec"]], ids=["in-process", "exec"])
def test_demo_pings_and_cleans_up(flags: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "pycni.demo", *flags], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.count(": ok ") == 4
    assert "masquerade rules left: 0, addresses still allocated: 0" in out
    assert out.rstrip().endswith("pycni demo: all good")
    links = subprocess.run(["ip", "link", "show", "pycnidemo0"], capture_output=True,
                           check=False)
    assert links.returncode != 0  # the bridge is gone
