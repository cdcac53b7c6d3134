"""``kubectl logs -p`` of a container in CrashLoopBackOff: the previous instance is the one
the pod's status names in ``lastState.terminated.containerID`` (kubelet's
validateContainerLogStatus), which container GC keeps (MaxPerPodContainer=1 dead instance
besides the running one); while it backs off, plain ``logs`` shows that instance too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubelet_builders import make_pod
from unit_agent_harness import new_kubelet, offline_api_node, wait_for

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.kubelet.agent import Kubelet
from pykubelet.kubelet.cluster.node import APINode
from pykubelet.kubelet.pod_workers import UpdateType
from pykubelet.kubelet.server.node_server import LogError
from pykubelet.kubelet.testing.fake_runtime_service import FakeContainer, FakeRuntimeService

BACKOFF_S = 2.0


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[Kubelet, APINode, FakeRuntimeService]]:
    runtime = FakeRuntimeService()
    runtime.add_image("busybox:1.36")
    k = new_kubelet(tmp_path, runtime)
    k.backoff.initial = k.backoff.maximum = BACKOFF_S
    api = offline_api_node(k, tmp_path / "pki")
    k.start()  # the APINode is never started: its log lookup is all this test uses
    try:
        yield k, api, runtime
    finally:
        k.stop()
        api.server.loop.close()  # never started


def instances(runtime: FakeRuntimeService) -> list[FakeContainer]:
    return runtime.containers_named("app")


def test_previous_logs_in_crash_loop_back_off(
        node: tuple[Kubelet, APINode, FakeRuntimeService]) -> None:
    k, api, runtime = node
    pod = make_pod(("app",))
    k.handle_pod_additions([pod])

    def crash(n: int) -> FakeContainer:
        c = wait_for(lambda: len(instances(runtime)) == n
                     and instances(runtime)[-1].state == pb.CONTAINER_RUNNING
                     and instances(runtime)[-1], what=f"instance {n} running")
        runtime.exit_container(c.id, 1)
        k.workers.update_pod(pod, UpdateType.SYNC)
        return c

    first = crash(1)
    second = crash(2)  # now backing off: nothing runs, the newest dead is the previous

    def backing_off() -> bool:
        status = k.status_manager.get_pod_status(pod.uid)
        cs = status.container_statuses[0] if status and status.container_statuses else None
        return bool(cs and cs.state.waiting and cs.state.waiting.reason == "CrashLoopBackOff")

    wait_for(backing_off, timeout=BACKOFF_S, what="CrashLoopBackOff")
    assert [c.id for c in instances(runtime)] == [first.id, second.id]
    # the node's view of the containers follows the runtime's events: it names the
    # second (newest dead) instance as the previous once it has seen that exit
    wait_for(lambda: api._log_target("default", "web", "app", previous=True).path
             == second.log_path, what="the second instance is the previous")
    assert api._log_target("default", "web", "app", previous=False).path == second.log_path

    def restarted() -> FakeContainer | None:
        last = instances(runtime)[-1]
        return last if last.state == pb.CONTAINER_RUNNING else None

    third = wait_for(restarted, timeout=BACKOFF_S + 5, what="instance 3 running")
    wait_for(lambda: [c.id for c in instances(runtime)] == [second.id, third.id],
             what="the oldest dead instance collected")
    # running again (once the node's view has seen it start): the previous is still the
    # second instance, the current the third
    wait_for(lambda: api._log_target("default", "web", "app", previous=False).path
             == third.log_path, what="the third instance is the current")
    assert api._log_target("default", "web", "app", previous=True).path == second.log_path


def test_no_previous_instance_yet(node: tuple[Kubelet, APINode, FakeRuntimeService]) -> None:
    k, api, runtime = node
    pod = make_pod(("app",))
    k.handle_pod_additions([pod])
    wait_for(lambda: instances(runtime) and instances(runtime)[0].state == pb.CONTAINER_RUNNING,
             what="running")
    wait_for(lambda: k.status_manager.get_pod_status(pod.uid) is not None, what="a status")
    with pytest.raises(LogError, match='previous terminated container "app" in pod "web" '
                                       'not found'):
        api._log_target("default", "web", "app", previous=True)
