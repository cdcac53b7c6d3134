"""The README's main job: one node with no control plane runs the sample static pods of
examples/ (on the embedded runtime that `pykubelet run` starts) and shows them Running
with their IPs, served from /pods; then it removes them and leaves nothing behind.

A run kept with --keep goes on beside a second run (each picks its own directory, bridge,
subnet and port), and `--stop DIR` removes everything the kept one made. Each check looks
only at what its own run made, so other demo directories under /tmp do not matter."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import psutil
import pytest

from pykubelet import state_lock

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "run_static_pods.py"
STARTING = re.compile(r"^starting: pykubelet run --config (\S+)/config\.yaml "
                      r"\(bridge (\S+), subnet (\S+), port (\d+)\)$", re.M)


def run_example(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    out = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True,
                         timeout=280)
    m = STARTING.search(out.stdout)
    assert m is not None, out.stdout + out.stderr
    run = dict(zip(("dir", "bridge", "subnet", "port"), m.groups(), strict=True))
    return out, run


def running(pid: int) -> bool:
    """Alive and not merely exited (a zombie waiting for init to reap it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def links() -> str:
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


def mounts_under(d: str) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return [ln.split()[4] for ln in f if ln.split()[4].startswith(f"{d}/")]


def check_pods_shown(out: subprocess.CompletedProcess[str], subnet: str) -> None:
    assert out.returncode == 0, out.stdout + out.stderr
    prefix = re.escape(subnet.rsplit(".", 1)[0])
    rows = re.findall(rf"^(\S+-demo)\s+1/1\s+Running\s+0\s+({prefix}\.\d+)$", out.stdout, re.M)
    assert sorted(name for name, _ in rows) == ["batch-demo", "web-demo"], out.stdout
    web_ip = dict(rows)["web-demo"]
    assert f"hello from web-demo at {web_ip}" in out.stdout


def test_run_static_pods_example_beside_a_kept_one_then_stop_it():
    # another demo directory, as a --keep run of someone else leaves one: nothing here
    # may look at it, and nothing may touch it
    decoy = Path(tempfile.mkdtemp(prefix="pykubelet-demo-", dir="/tmp"))
    (decoy / "agent.log").write_text("someone else's run\n")
    try:
        _run_beside_a_kept_one()
        assert sorted(p.name for p in decoy.iterdir()) == ["agent.log"]
    finally:
        shutil.rmtree(decoy, ignore_errors=True)


def _run_beside_a_kept_one() -> None:
    kept_out, kept = run_example("--keep", "--timeout", "120")
    try:
        check_pods_shown(kept_out, kept["subnet"])
        assert f"--stop {kept['dir']}" in kept_out.stdout

        out, run = run_example("--timeout", "120")
        check_pods_shown(out, run["subnet"])
        for key in ("dir", "bridge", "subnet", "port"):
            assert run[key] != kept[key], (key, run, kept)
        # the second run cleaned up after itself...
        assert not Path(run["dir"]).exists()
        assert f" {run['bridge']}:" not in links()
        assert mounts_under(run["dir"]) == []
        # ...and left the kept one running
        with urllib.request.urlopen(f"http://127.0.0.1:{kept['port']}/pods", timeout=5) as r:
            assert len(json.load(r)["items"]) == 2
        assert f" {kept['bridge']}:" in links()
    finally:
        agent_pid = state_lock.holder(Path(kept["dir"]) / "root" / state_lock.KUBELET_LOCK)
        stopped = subprocess.run([sys.executable, str(EXAMPLE), "--stop", kept["dir"]],
                                 capture_output=True, text=True, timeout=200)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert agent_pid is not None
    assert not running(agent_pid)
    assert not Path(kept["dir"]).exists()
    assert f" {kept['bridge']}:" not in links()
    assert mounts_under(kept["dir"]) == []
