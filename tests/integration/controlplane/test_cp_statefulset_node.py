"""A StatefulSet on a real node (marker root: real runc, namespaces, a bridge): the kubelet's
Running and Ready let the controller go on, so web-1 is created only after web-0 is Ready;
each pod's hostname is its stable name; scaling to zero stops web-1 before web-0 is
touched (OrderedReady waits for a terminating pod to be gone)."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for
from node_process import IMAGE, NodeProcess

from pykubelet.api.machinery.timeutil import parse_time

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

STS = {
    "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
    "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                 "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": IMAGE,
                                 "imagePullPolicy": "IfNotPresent",
                                 "command": ["sh", "-c", "hostname; sleep 3600"]}]}}}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlaneProcess,
                                                                       NodeProcess]]:
    from pykubelet.runtime.image_build import build_busybox_image

    work = tmp_path_factory.mktemp("kss")
    cp = ControlPlaneProcess(work / "cp")
    cp.start()
    base = Path(tempfile.mkdtemp(prefix="kss-", dir="/tmp"))
    node = NodeProcess(base, "kss-node1", 7, cp)
    try:
        archive = work / "busybox.tar"
        build_busybox_image(archive, name=IMAGE)
        node.prepare(archive)
        node.start()
        wait_for(lambda: _node_ready(cp, node.name), timeout=60, what="node Ready")
        yield cp, node
    finally:
        node.cleanup()
        cp.stop()


def _node_ready(cp: ControlPlaneProcess, name: str) -> bool:
    out = cp.kubectl("get", "node", name, "-o", "json", check=False)
    return out.returncode == 0 and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in json.loads(out.stdout).get("status", {}).get("conditions", []))


def _pods(cp: ControlPlaneProcess, ns: str) -> dict[str, Any]:
    items = json.loads(cp.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    return {p["metadata"]["name"]: p for p in items}


def _ready_at(pod: Any) -> str | None:
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "Ready" and c["status"] == "True":
            return str(c["lastTransitionTime"])
    return None


def test_stateful_set_starts_in_order_on_a_real_node(cluster: Any) -> None:
    cp, _node = cluster
    ns = "kss-ordered"
    cp.kubectl("create", "namespace", ns)
    try:
        cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(STS))
        cp.kubectl("rollout", "status", "sts/web", "-n", ns, "--timeout=120s", timeout=130)
        pods = _pods(cp, ns)
        assert set(pods) == {"web-0", "web-1"}
        web0_ready = _ready_at(pods["web-0"])
        assert web0_ready is not None
        # web-1 was made after web-0 turned Ready (both times are the API server's)
        assert parse_time(pods["web-1"]["metadata"]["creationTimestamp"]) >= parse_time(
            web0_ready)
        for name in ("web-0", "web-1"):
            wait_for(lambda n=name: cp.kubectl("logs", n, "-n", ns).stdout.strip() == n,
                     timeout=20, what=f"{name}'s hostname in its log")
        cp.kubectl("scale", "sts", "web", "--replicas=0", "-n", ns)
        deadline = time.monotonic() + 60
        seen_web1_terminating = False
        while time.monotonic() < deadline:
            pods = _pods(cp, ns)
            if not pods:
                break
            if "web-1" in pods:
                # while web-1 is still there, web-0 is left alone
                assert not pods.get("web-0", {}).get("metadata", {}).get(
                    "deletionTimestamp"), pods
                seen_web1_terminating |= bool(pods["web-1"]["metadata"].get(
                    "deletionTimestamp"))
            time.sleep(0.2)
        assert not _pods(cp, ns), "scale to 0 did not finish"
        assert seen_web1_terminating
    finally:
        cp.kubectl("delete", "namespace", ns, "--wait=false", check=False)
