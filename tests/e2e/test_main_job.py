"""README's main job, as a user runs it: ``examples/run_lab.py`` brings up a 3-node lab,
applies ``examples/lab/``, shows the pods Running on all three nodes and the Deployment's
three replicas available, a request from a pod
on one node to a pod on another, why the big pod is Pending, then takes the lab down."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_run_lab_example(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), KUBECACHEDIR=str(tmp_path / "cache"))
    try:
        res = subprocess.run([sys.executable, str(REPO / "examples" / "run_lab.py")],
                             capture_output=True, text=True, env=env, timeout=280)
    finally:  # whatever happened, nothing of the lab stays
        subprocess.run([str(REPO / ".venv" / "bin" / "pykubelet"), "lab", "down"], env=env,
                       capture_output=True, timeout=120)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = res.stdout
    placement = next(line for line in out.splitlines() if line.startswith("placement: "))
    nodes = {part.split(" on ")[1] for part in placement[len("placement: "):].split(", ")}
    assert nodes == {"node1", "node2", "node3"}, placement
    assert "pinned on node2" in placement
    assert "hello from web-" in out  # the page a web pod on another node served
    assert "Insufficient cpu" in out  # why too-big is Pending
    # the Deployment's table row: READY 3/3, UP-TO-DATE 3, AVAILABLE 3
    assert re.search(r"deployment\.apps/hello\s+3/3\s+3\s+3\s", out), out
    left = yaml.safe_load(kubeconfig.read_text()) if kubeconfig.exists() else None
    assert not (left or {}).get("contexts")  # lab down took its context away
