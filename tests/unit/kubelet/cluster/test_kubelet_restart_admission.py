"""An agent restart never rejects a pod it was running (kubernetes/kubernetes#92067's race).

After a restart the API's pod list may arrive before the agent has read its own Node; a
pod whose nodeSelector names a label added in the API (``kubectl label node``) was then
judged against the labels in the config, rejected, its container stopped and the pod set
Failed/NodeAffinity. As kubelet does, the API pod source now waits until the Node has been
read, and pods the runtime was running when the agent started are admitted as they are.

The agent here is the real ``Kubelet`` + ``APINode`` over an in-memory runtime (which
survives the agent, as a real one does) and an in-process control plane on loopback; the
Node read is delayed by a seeded random time at every start.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from unit_agent_harness import new_kubelet
from unit_agent_harness import wait_for as _wait_for

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import Pod
from pykubelet.client.bootstrap import join
from pykubelet.client.rest import NODES, PODS, RESTClient
from pykubelet.controlplane.server import ControlPlaneThread, Options
from pykubelet.kubelet.agent import Kubelet
from pykubelet.kubelet.cluster import node_status
from pykubelet.kubelet.cluster.node import APINode, state_dir
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService

SEED = 27
RESTARTS = 12
NODE = "n1"
IMAGE = "busybox:1.36"
wait_for = functools.partial(_wait_for, timeout=15.0)  # restarts against a real API server


@pytest.fixture
def control_plane(tmp_path: Path) -> Iterator[ControlPlaneThread]:
    cpt = ControlPlaneThread(Options(root=tmp_path / "cp", listen="127.0.0.1:0",
                                     scheduler=False, controllers=False))
    cpt.start()
    try:
        yield cpt
    finally:
        cpt.stop()


class Agent:
    """One run of the agent: a Kubelet and its cluster side, as ``pykubelet run`` wires
    them, on the given runtime."""

    def __init__(self, cpt: ControlPlaneThread, runtime: FakeRuntimeService,
                 root: Path) -> None:
        cp = cpt.cp
        assert cp.tokens is not None
        self.kubelet = new_kubelet(root, runtime, node=NODE, node_ips=["127.0.0.1"])
        self.kubelet.start()
        creds = join(cp.local_url, cp.tokens.join, cp.ca_hash, NODE, [],
                     state_dir(self.kubelet.config.rootDir))
        self.node = APINode(self.kubelet, creds, address="127.0.0.1", kubelet_version="v0",
                            server_port=0)
        self.node.start()

    def stop(self) -> None:
        self.node.stop()
        self.kubelet.stop()


def running(runtime: FakeRuntimeService, name: str) -> list[str]:
    return [c.id for c in runtime.containers_named(name) if c.state == pb.CONTAINER_RUNNING]


def test_restarts_with_the_node_read_late_never_reject_a_running_pod(
        tmp_path: Path, control_plane: ControlPlaneThread,
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(SEED)
    delay = [0.0]
    real_register = node_status.NodeStatusReporter.register

    def late_register(self: node_status.NodeStatusReporter) -> None:
        time.sleep(delay[0])  # the Node read (registration) answers late
        real_register(self)

    monkeypatch.setattr(node_status.NodeStatusReporter, "register", late_register)
    admin = RESTClient.from_kubeconfig(control_plane.cp.kubeconfig_path)
    runtime = FakeRuntimeService()
    runtime.add_image(IMAGE)

    def create(name: str) -> str:
        made = admin.create(PODS, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": NODE, "nodeSelector": {"team": "a"},
                     # no token volume: it would need kube-root-ca.crt (no controllers here)
                     # and a tmpfs mount
                     "automountServiceAccountToken": False,
                     "containers": [{"name": name, "image": IMAGE}]}}, "default")
        return str(made["metadata"]["uid"])

    def phase(name: str) -> str:
        return str((admin.get(PODS, name, "default").get("status") or {}).get("phase"))

    agent = Agent(control_plane, runtime, tmp_path)
    try:
        wait_for(lambda: agent.node.reporter.registered.is_set(), what="registration")
        # kubectl label node n1 team=a; then a pod that selects it
        admin.patch(NODES, NODE, {"metadata": {"labels": {"team": "a"}}})
        pods = {"web": create("web")}
        wait_for(lambda: phase("web") == "Running", what="the pod Running")
        containers = {"web": running(runtime, "web")}
        assert len(containers["web"]) == 1

        for i in range(RESTARTS):
            agent.stop()
            # a pod bound while the agent is away: admission judges it after the restart
            name = f"new-{i}"
            pods[name] = create(name)
            delay[0] = rng.choice([0.0, rng.uniform(0.05, 0.6)])
            agent = Agent(control_plane, runtime, tmp_path)
            k = agent.kubelet

            def handed(k: Kubelet = k) -> bool:
                seen = {p.uid for p in k.pod_manager.all_pods()}
                return all(uid in seen for uid in pods.values())

            wait_for(handed, what=f"restart {i}: the pods handed to the agent")
            late = f"(Node read {delay[0]:.2f}s late)"
            for n, uid in pods.items():
                assert k.pod_manager.has_pod(uid), f"restart {i} {late}: {n} was rejected"
            wait_for(lambda name=name: phase(name) == "Running",  # type: ignore[misc]
                     what=f"restart {i}: {name} Running")
            containers[name] = running(runtime, name)
            time.sleep(0.1)  # a rejection would stop the container and write Failed
            for n in pods:
                assert running(runtime, n) == containers[n], f"restart {i}: {n} changed"
                assert phase(n) == "Running", f"restart {i}: {n} is {phase(n)}"
        assert runtime.count("StopContainer") == 0
    finally:
        agent.stop()
        admin.close()


def test_a_pod_the_runtime_runs_at_start_is_admitted_whatever_the_labels_say(
        tmp_path: Path) -> None:
    """The label the pod selects is gone when the agent starts again (the Node's labels not
    read yet, or changed meanwhile): the pod it was running stays; a new one is judged."""
    from kubelet_builders import make_pod

    runtime = FakeRuntimeService()
    runtime.add_image(IMAGE)

    def kubelet(labels: dict[str, str]) -> Kubelet:
        k = new_kubelet(tmp_path, runtime, node=NODE, node_ips=["127.0.0.1"],
                        node_labels=labels)
        k.start()
        return k

    def selecting(uid: str, name: str) -> Pod:
        p = make_pod((name,), nodeSelector={"team": "a"})
        p.metadata.uid, p.metadata.name = uid, name
        return p

    k = kubelet({"team": "a"})
    try:
        k.handle_pod_additions([selecting("u1", "web")])
        first = wait_for(lambda: running(runtime, "web"), what="web running")
    finally:
        k.stop()
    k = kubelet({})  # the agent starts again without the label
    try:
        k.handle_pod_additions([selecting("u1", "web"), selecting("u2", "late")])
        assert k.pod_manager.has_pod("u1")
        assert not k.pod_manager.has_pod("u2")  # a pod it never ran is judged as ever
        status = k.status_manager.get_pod_status("u2")
        assert status is not None
        assert status.reason == "NodeAffinity"
        time.sleep(0.2)
        assert running(runtime, "web") == first
        assert runtime.count("StopContainer") == 0
    finally:
        k.stop()
