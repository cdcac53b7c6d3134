"""Failpoints read their spec from the environment once, at import: each case runs a
fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

CODE = """
import threading, time
from pykubelet.kubelet.util import failpoints
print(failpoints.number("sync-loop-health-threshold", 60.0))
passes = []
def loop():
    while True:
        failpoints.wedge("wedge-sync-loop")
        passes.append(1)
        time.sleep(0.01)
t = threading.Thread(target=loop, daemon=True)
t.start()
time.sleep(0.3)
print(len(passes), t.is_alive())
"""


def run(spec: str) -> list[str]:
    env = {**os.environ, "PYKUBELET_FAILPOINTS": spec}
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return out.split("\n")


def test_wedge_blocks_the_loop_after_one_good_pass_by_default() -> None:
    assert run("wedge-sync-loop,sync-loop-health-threshold=2")[:2] == ["2.0", "1 True"]


def test_wedge_can_wait_for_more_passes() -> None:
    assert run("wedge-sync-loop=4")[:2] == ["60.0", "3 True"]


def test_unarmed_points_do_nothing() -> None:
    lines = run("after-kill-pod")
    assert lines[0] == "60.0"
    assert int(lines[1].split()[0]) > 5  # the loop kept going
