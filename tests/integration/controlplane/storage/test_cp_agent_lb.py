"""An agent over two API servers (two control planes active-active over one etcd) through
its own load balancer: SIGKILL the control plane it uses, and it carries on through the
other: its state file names the survivor, its Lease keeps being renewed, and a pod bound
to it through the survivor runs; restarted, it keeps its credentials though its balancer's
port changed (marker root: real runc, a bridge, etcd on loopback)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for
from node_process import IMAGE, NodeProcess

from pykubelet.controlplane.storage.etcdserver import EtcdServer

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

LEASE = ["--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
         "--leader-elect-retry-period", "500ms"]


@pytest.fixture
def ha_node(tmp_path: Path) -> Iterator[tuple[list[ControlPlaneProcess], NodeProcess]]:
    from pykubelet.runtime.image_build import build_busybox_image

    etcd = EtcdServer(tmp_path / "etcd")
    cps = [ControlPlaneProcess(tmp_path / f"cp{i}", extra_args=LEASE) for i in range(2)]
    base = Path(tempfile.mkdtemp(prefix="kcl-", dir="/tmp"))
    node = None
    try:
        etcd.start()
        for cp in cps:
            cp.etcd_url = etcd.client_url
            cp.start()
        archive = tmp_path / "busybox.tar"
        build_busybox_image(archive, name=IMAGE)
        node = NodeProcess(base, "kcl-node1", 3, cps[0],
                           extra_config={"apiServers": [cps[0].url, cps[1].url]})
        node.prepare(archive)
        node.start()
        yield cps, node
    finally:
        if node is not None:
            alive = [cp for cp in cps if cp.proc is not None and cp.proc.poll() is None]
            if alive:
                node.cp = alive[0]  # cleanup deletes its pods through a live API server
            node.cleanup()
        shutil.rmtree(base, ignore_errors=True)
        for cp in cps:
            cp.stop()
        etcd.remove()


def get(cp: ControlPlaneProcess, *args: str) -> dict[str, Any]:
    out = cp.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def ready(cp: ControlPlaneProcess, node: str) -> bool:
    conditions = get(cp, "node", node).get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def renew_time(cp: ControlPlaneProcess, node: str) -> str:
    return str(get(cp, "lease", node, "-n", "kube-node-lease").get("spec", {}).get(
        "renewTime") or "")


def test_the_agent_fails_over_to_the_other_api_server(
        ha_node: tuple[list[ControlPlaneProcess], NodeProcess]) -> None:
    (a, b), node = ha_node
    state = node.base / "root" / "agent-load-balancer.json"
    wait_for(lambda: ready(b, node.name), timeout=60, what="node Ready")
    lb = json.loads(state.read_text())
    assert lb["serverAddresses"] == [a.url, b.url]
    assert lb["serverURL"] == a.url
    assert lb["currentServer"] == a.url  # the preferred one, while it is healthy
    # the credentials are kept for the configured server, not the balancer's own port
    assert (node.base / "root" / "pki" / "server").read_text().strip() == a.url

    a.kill()
    killed = time.monotonic()
    wait_for(lambda: json.loads(state.read_text())["currentServer"] == b.url, timeout=15,
             interval=0.1, what="the balancer on b")
    switched = time.monotonic() - killed
    assert json.loads(state.read_text())["healthy"] == {a.url: False, b.url: True}

    before = renew_time(b, node.name)
    wait_for(lambda: renew_time(b, node.name) not in ("", before), timeout=25,
             interval=0.5, what="the node's Lease renewed through b")
    renewed = time.monotonic() - killed
    b.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kcl-after"},
        "spec": {"nodeName": node.name, "restartPolicy": "Never",
                 "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                 "command": ["sh", "-c", "sleep 3600"]}]}}))
    wait_for(lambda: get(b, "pod", "kcl-after").get("status", {}).get("phase") == "Running",
             timeout=30, interval=0.3, what="the pod Running")
    assert ready(b, node.name)
    running = time.monotonic() - killed

    # a restarted agent (its balancer on another port, a still down) keeps its credentials
    token = node.base / "root" / "pki" / "token"
    joined = (token.read_text(), token.stat().st_mtime_ns)
    node.kill()
    before = renew_time(b, node.name)
    node.start()
    wait_for(lambda: renew_time(b, node.name) != before, timeout=20, interval=0.3,
             what="the Lease renewed by the restarted agent")
    assert (token.read_text(), token.stat().st_mtime_ns) == joined
    assert json.loads(state.read_text())["currentServer"] == b.url
    print(f"failover: kill -> balancer on b {switched:.2f}s, Lease renewed through b "
          f"{renewed:.1f}s, pod Running {running:.1f}s")
