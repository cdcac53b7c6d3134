"""A Job on a real node (marker root: real runc, namespaces, a bridge): an Indexed Job of
busybox pods runs to Complete, each pod seeing its JOB_COMPLETION_INDEX, the kubelet's
Succeeded phase counted by the Job controller and the tracking finalizers removed."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for
from node_process import IMAGE, NodeProcess

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

JOB = {
    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "indexed"},
    "spec": {"completions": 2, "parallelism": 2, "completionMode": "Indexed",
             "template": {"spec": {"restartPolicy": "Never", "containers": [{
                 "name": "work", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                 "command": ["sh", "-c", "echo index=$JOB_COMPLETION_INDEX"]}]}}}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlaneProcess,
                                                                       NodeProcess]]:
    from pykubelet.runtime.image_build import build_busybox_image

    work = tmp_path_factory.mktemp("kjn")
    cp = ControlPlaneProcess(work / "cp")
    cp.start()
    archive = work / "busybox.tar"
    build_busybox_image(archive, name=IMAGE)
    base = Path(tempfile.mkdtemp(prefix="kjn-", dir="/tmp"))
    node = NodeProcess(base, "kjn-node1", 7, cp)
    try:
        node.prepare(archive)
        node.start()
        wait_for(lambda: _ready(cp, node.name), timeout=60, what="node Ready")
        yield cp, node
    finally:
        node.cleanup()
        cp.stop()


def _ready(cp: ControlPlaneProcess, name: str) -> bool:
    out = cp.kubectl("get", "node", name, "-o", "json", check=False)
    return out.returncode == 0 and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in json.loads(out.stdout).get("status", {}).get("conditions", []))


def _get(cp: ControlPlaneProcess, *args: str) -> Any:
    return json.loads(cp.kubectl("get", *args, "-o", "json").stdout)


def test_indexed_job_runs_to_complete_on_a_real_node(cluster: Any) -> None:
    cp, _node = cluster
    ns = "kjn-indexed"
    cp.kubectl("create", "namespace", ns)
    try:
        cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(JOB))
        cp.kubectl("wait", "--for=condition=complete", "job/indexed", "-n", ns,
                   "--timeout=120s", timeout=130)
        job = _get(cp, "job", "indexed", "-n", ns)
        assert job["status"]["succeeded"] == 2
        assert job["status"]["completedIndexes"] == "0-1"
        pods = _get(cp, "pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=indexed")["items"]
        logs = {}
        for p in pods:
            assert p["status"]["phase"] == "Succeeded"
            assert "batch.kubernetes.io/job-tracking" not in p["metadata"].get("finalizers", [])
            index = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            assert p["spec"]["hostname"] == f"indexed-{index}"
            logs[index] = cp.kubectl("logs", p["metadata"]["name"], "-n", ns).stdout.strip()
        assert logs == {"0": "index=0", "1": "index=1"}
    finally:
        cp.kubectl("delete", "namespace", ns, "--wait=false", check=False)
