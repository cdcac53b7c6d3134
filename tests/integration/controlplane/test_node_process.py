"""The NodeProcess fixture cleans up after a node that never became Ready (marker root).

An agent whose control plane cannot be reached runs its static pod's sandbox (netns pin,
CNI ADD on ``kcn<N>``, libcni's cached result) and then exits, its embedded runtime with it:
no runtime is left to ask over CRI. Cleanup must still leave no pin and no cached result.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import psutil
import pytest
from cp_process import ControlPlaneProcess
from node_process import CNI_CACHE_DIR, IMAGE, NodeProcess

from pykubelet.runtime.sandbox import CHECKPOINT, decode_checkpoint

pytestmark = [pytest.mark.root, pytest.mark.runc]

STATIC = f"""
apiVersion: v1
kind: Pod
metadata: {{name: kcn-leak}}
spec:
  containers:
  - name: c
    image: {IMAGE}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "sleep 3600"]
"""


def test_a_node_that_never_became_ready_leaves_no_sandbox_behind(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    from pykubelet.runtime.image_build import build_busybox_image

    work = tmp_path_factory.mktemp("kcn-leak")
    cp = ControlPlaneProcess(work / "cp")
    base = Path(tempfile.mkdtemp(prefix="kcn-leak-", dir="/tmp"))
    node = NodeProcess(base, "kcn-leak", 9, cp, static_pods={"static.yaml": STATIC})
    try:
        cp.start()
        archive = work / "busybox.tar"
        build_busybox_image(archive, name=IMAGE)
        node.prepare(archive)  # joined to a control plane that is then gone
        cp.stop()
        node.start()
        end = time.monotonic() + 60
        while not (checkpoints := list(base.rglob(CHECKPOINT))) and time.monotonic() < end:
            time.sleep(0.2)
        assert len(checkpoints) == 1, node.log_path.read_text()
        sandbox_id = checkpoints[0].parent.name
        pin = ""
        while time.monotonic() < end and not pin:  # the pin is made after the checkpoint
            info = decode_checkpoint(checkpoints[0].read_bytes())
            pin = info.netns_path if Path(info.netns_path).exists() else ""
            time.sleep(0.2)
        results = Path(CNI_CACHE_DIR, "results")
        while time.monotonic() < end and not list(results.glob(f"*-{sandbox_id}-eth0")):
            time.sleep(0.2)
        assert pin
        assert [f.name for f in results.glob(f"*-{sandbox_id}-*")]
        pod_cgroups = list(Path("/sys/fs/cgroup").glob(
            f"*/kubepods/*/pod{decode_checkpoint(checkpoints[0].read_bytes()).uid}"))
        node.cleanup()
        assert not Path(pin).exists()
        assert [f.name for f in results.glob(f"*-{sandbox_id}-*")] == []
        # no container monitor or container outlives the node, nor their cgroups
        assert [p.pid for p in psutil.process_iter(["cmdline"])
                if str(base) in " ".join(p.info["cmdline"] or [])] == []
        assert [d for d in pod_cgroups if d.exists()] == []
        assert not base.exists()
    finally:
        node.cleanup()
        cp.stop()
