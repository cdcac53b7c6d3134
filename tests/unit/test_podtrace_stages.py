"""Every stage of a pod's way to Running is traced by the component that takes it
(issue 23 item 1): the API server's create and binding, the agent's watch, sandbox,
container create and start, and its status patch, in that order, on one clock.

A real control plane (with its scheduler) on loopback and the real agent over the
in-memory runtime; the trace goes to a file of the test's own.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest
from unit_agent_harness import new_kubelet
from unit_agent_harness import wait_for as _wait_for

from pykubelet import podtrace
from pykubelet.client.bootstrap import join
from pykubelet.client.rest import PODS, RESTClient
from pykubelet.controlplane.controllers.scheduler import run_scheduler
from pykubelet.controlplane.server import ControlPlaneThread, Options
from pykubelet.kubelet.cluster.node import APINode, state_dir
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService

NODE = "n1"
IMAGE = "busybox:1.36"
wait_for = functools.partial(_wait_for, timeout=20.0)


@pytest.fixture
def trace(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "trace.jsonl"
    podtrace.configure(str(path))
    try:
        yield path
    finally:
        podtrace.configure(None)


def test_a_pods_stages_are_traced_in_order(tmp_path: Path, trace: Path) -> None:
    cpt = ControlPlaneThread(Options(root=tmp_path / "cp", listen="127.0.0.1:0",
                                     controllers=False))
    cpt.cp.controllers = [run_scheduler]  # the scheduler alone, no leader election
    cpt.start()
    runtime = FakeRuntimeService()
    runtime.add_image(IMAGE)
    kubelet = node = None
    try:
        cp = cpt.cp
        assert cp.tokens is not None
        kubelet = new_kubelet(tmp_path, runtime, node=NODE, node_ips=["127.0.0.1"])
        kubelet.start()
        creds = join(cp.local_url, cp.tokens.join, cp.ca_hash, NODE, [],
                     state_dir(kubelet.config.rootDir))
        node = APINode(kubelet, creds, address="127.0.0.1", kubelet_version="v0",
                       server_port=0)
        node.start()
        admin = RESTClient.from_kubeconfig(cp.kubeconfig_path)
        wait_for(lambda: node is not None and node.reporter.registered.is_set(),
                 what="registration")
        made = admin.create(PODS, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"automountServiceAccountToken": False,
                     "containers": [{"name": "c", "image": IMAGE}]}}, "default")
        uid = made["metadata"]["uid"]
        wait_for(lambda: "status_running" in podtrace.read(trace).get(uid, {}),
                 what="the Running status patched")
        stages = podtrace.read(trace)[uid]
        expected = [s for s in podtrace.STAGES if s != "watch_running"]
        assert sorted(stages, key=stages.__getitem__) == expected
        got = admin.get(PODS, "web", "default")
        assert got["spec"]["nodeName"] == NODE
        assert got["status"]["phase"] == "Running"
    finally:
        if node is not None:
            node.stop()
        if kubelet is not None:
            kubelet.stop()
        cpt.stop()
