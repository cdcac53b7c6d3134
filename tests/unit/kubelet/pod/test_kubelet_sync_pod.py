"""SyncPod end to end over the shared fake runtime service: what the agent asks the
runtime for, and the status it records, pod by pod, without root.

Each case builds a pod, lets the fake runtime do what a real one would between syncs
(a process exits), syncs, and checks the CRI calls made and the status handed to the
status manager.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubelet_builders import make_pod
from prometheus_client.parser import text_string_to_metric_families

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.decode import decode_pod, encode
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.types import Pod
from pykubelet.config import KubeletConfig
from pykubelet.kubelet.agent import ERROR_REQUEUE_S, Kubelet
from pykubelet.kubelet.cri.runtime_service import CRICallError
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.kuberuntime.labels import CONTAINER_TYPE_ANNOTATION
from pykubelet.kubelet.pod_workers import UpdateType
from pykubelet.kubelet.status.status_manager import VersionedPodStatus
from pykubelet.kubelet.testing.fake_runtime_service import STOP_EXIT_CODE, FakeRuntimeService

IMAGE = "busybox:1.36"


class RecordingCgroups:
    """The pod cgroups seam: remembers what SyncPod asked for instead of writing cgroupfs."""

    def __init__(self) -> None:
        self.ensured: list[str] = []
        self.removed: list[str] = []

    def ensure(self, pod: Pod) -> str:
        self.ensured.append(pod.uid)
        return f"/kubepods/pod{pod.uid}"

    def remove(self, uid: str) -> None:
        self.removed.append(uid)


class RecordingPatcher:
    def __init__(self) -> None:
        self.written: list[VersionedPodStatus] = []
        self.fail = False

    def patch_pod_status(self, status: VersionedPodStatus) -> None:
        if self.fail:
            raise ConnectionError("API server unreachable")
        self.written.append(status)


@dataclasses.dataclass
class Node:
    kubelet: Kubelet
    runtime: FakeRuntimeService
    cgroups: RecordingCgroups
    patcher: RecordingPatcher

    def add(self, pod: Pod) -> Pod:
        self.kubelet.pod_manager.add_pod(pod)
        return pod

    def sync(self, pod: Pod) -> float | None:
        return self.kubelet.sync_pod(pod, UpdateType.SYNC)

    def status(self, pod: Pod):
        status = self.kubelet.status_manager.get_pod_status(pod.uid)
        assert status is not None
        return status

    def running(self, name: str) -> list[str]:
        return [c.id for c in self.runtime.containers_named(name)
                if c.state == pb.CONTAINER_RUNNING]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    runtime = FakeRuntimeService()
    runtime.add_image(IMAGE)
    cgroups = RecordingCgroups()
    patcher = RecordingPatcher()
    config = KubeletConfig(
        nodeName="fake-node", rootDir=str(tmp_path / "root"), runDir=str(tmp_path / "run"),
        staticPodPath="", podLogsDir=str(tmp_path / "logs" / "pods"), healthzPort=0,
    )
    kubelet = Kubelet(config, runtime, pod_cgroups=cgroups, status_patcher=patcher,
                      memory_capacity=1 << 30, node_ips=["192.0.2.10"])
    try:
        yield Node(kubelet, runtime, cgroups, patcher)
    finally:
        kubelet.stop()


def test_a_new_pod_gets_its_sandbox_and_containers_in_one_sync(node: Node) -> None:
    pod = node.add(make_pod(("a", "b")))
    node.sync(pod)
    assert node.runtime.count("RunPodSandbox") == 1
    assert node.runtime.count("CreateContainer") == node.runtime.count("StartContainer") == 2
    assert node.cgroups.ensured == [pod.uid]
    status = node.status(pod)
    assert status.phase == "Running"
    assert [cs.state.running is not None for cs in status.container_statuses] == [True, True]
    assert status.pod_ip.startswith("10.88.")
    # a second sync with nothing changed asks the runtime for nothing new
    node.sync(pod)
    assert node.runtime.count("RunPodSandbox") == 1
    assert node.runtime.count("CreateContainer") == 2


@pytest.mark.parametrize(
    ("restart_policy", "exit_code", "phase", "restarted"),
    [
        ("Always", 0, "Running", True),
        ("OnFailure", 1, "Running", True),
        ("OnFailure", 0, "Succeeded", False),
        ("Never", 0, "Succeeded", False),
        ("Never", 3, "Failed", False),
    ],
)
def test_an_exited_container_by_restart_policy(
    node: Node, restart_policy: str, exit_code: int, phase: str, restarted: bool
) -> None:
    pod = node.add(make_pod(("app",), restart=restart_policy))
    node.sync(pod)
    (first,) = node.running("app")
    node.runtime.exit_container(first, exit_code)
    node.sync(pod)
    status = node.status(pod)
    assert status.phase == phase
    assert bool(node.running("app")) is restarted
    if restarted:
        assert status.container_statuses[0].restart_count == 1
        assert status.container_statuses[0].last_state.terminated.exit_code == exit_code
    else:
        # a terminal pod's sandbox is stopped, and later syncs start nothing
        assert all(s.state == pb.SANDBOX_NOTREADY for s in node.runtime.sandboxes.values())
        node.sync(pod)
        assert node.runtime.count("CreateContainer") == 1
        assert node.status(pod).phase == phase


def test_a_container_that_keeps_failing_backs_off(node: Node) -> None:
    pod = node.add(make_pod(("app",)))
    node.sync(pod)
    node.runtime.exit_container(node.running("app")[0], 1)
    node.sync(pod)  # restarted at once (first failure)
    node.runtime.exit_container(node.running("app")[0], 1)
    requeue = node.sync(pod)
    assert node.runtime.count("StartContainer") == 2
    waiting = node.status(pod).container_statuses[0].state.waiting
    assert waiting is not None
    assert waiting.reason == reasons.CRASH_LOOP_BACK_OFF
    assert requeue is not None
    assert 0 < requeue <= 10.5
    events = [e["reason"] for e in node.kubelet.recorder.list(pod.uid)]
    assert reasons.EVENT_BACK_OFF in events


def test_a_deleted_pod_stops_and_reports_a_terminal_phase(node: Node) -> None:
    pod = node.add(make_pod(("app",)))
    node.sync(pod)
    pod.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    pod.metadata.deletion_grace_period_seconds = 0
    node.sync(pod)
    assert node.runtime.count("StopContainer") == 1
    status = node.status(pod)
    assert status.phase == "Failed"  # stopped with 137 while being deleted
    assert status.container_statuses[0].state.terminated.exit_code == STOP_EXIT_CODE
    assert node.runtime.count("CreateContainer") == 1


def test_a_pod_past_its_active_deadline_is_killed_and_failed(node: Node) -> None:
    pod = node.add(make_pod(("app",), activeDeadlineSeconds=30))
    node.sync(pod)
    # pretend it started an hour ago
    started = dataclasses.replace(node.status(pod), start_time="2020-01-01T00:00:00Z")
    node.kubelet.status_manager.set_pod_status(pod, started)
    assert node.sync(pod) is None
    status = node.status(pod)
    assert (status.phase, status.reason) == ("Failed", reasons.DEADLINE_EXCEEDED)
    assert not node.running("app")
    assert all(s.state == pb.SANDBOX_NOTREADY for s in node.runtime.sandboxes.values())


@pytest.mark.parametrize(
    ("method", "pull_policy", "waiting_reason", "next_sync"),
    [
        # a failed pull backs off (per image and pod) before the next one
        ("PullImage", "Always", reasons.ERR_IMAGE_PULL, reasons.IMAGE_PULL_BACK_OFF),
        ("CreateContainer", "IfNotPresent", reasons.CREATE_CONTAINER_ERROR, "running"),
        ("StartContainer", "IfNotPresent", reasons.RUN_CONTAINER_ERROR, "running"),
    ],
)
def test_a_failed_start_step_becomes_the_waiting_reason(
    node: Node, method: str, pull_policy: str, waiting_reason: str, next_sync: str
) -> None:
    pod = make_pod(("app",))
    pod.spec.containers[0].image_pull_policy = pull_policy
    node.add(pod)
    node.runtime.inject_error(method, "UNKNOWN", "boom")
    assert node.sync(pod) == ERROR_REQUEUE_S
    waiting = node.status(pod).container_statuses[0].state.waiting
    assert waiting is not None
    assert waiting.reason == waiting_reason
    node.sync(pod)
    state = node.status(pod).container_statuses[0].state
    if next_sync == "running":  # started now, and the start failure is forgotten
        assert state.running is not None
        assert state.waiting is None
    else:
        assert state.waiting is not None
        assert state.waiting.reason == next_sync


def test_a_failed_sandbox_starts_nothing_and_is_retried(node: Node) -> None:
    pod = node.add(make_pod(("app",)))
    node.runtime.inject_error("RunPodSandbox", "UNKNOWN", "cni: no IP left")
    assert node.sync(pod) == ERROR_REQUEUE_S
    assert node.runtime.count("CreateContainer") == 0
    events = {e["reason"]: e["message"] for e in node.kubelet.recorder.list(pod.uid)}
    assert "cni: no IP left" in events[reasons.EVENT_FAILED_CREATE_POD_SANDBOX]
    node.sync(pod)
    assert node.running("app")


def test_terminate_removes_everything_and_forgets_the_pod(node: Node) -> None:
    pod = node.add(make_pod(("app",)))
    node.sync(pod)
    node.kubelet.pod_manager.remove_pod(pod.uid)
    node.kubelet.terminate_pod(pod)
    assert node.runtime.sandboxes == {}
    assert node.runtime.containers == {}
    assert node.cgroups.removed == [pod.uid]
    assert node.kubelet.status_manager.get_pod_status(pod.uid) is None
    assert node.kubelet.pod_cache.get(pod.uid) is None


def test_statuses_are_versioned_and_written_through_the_patcher(node: Node) -> None:
    pod = node.add(make_pod(("app",)))
    node.sync(pod)
    sm = node.kubelet.status_manager
    first = sm.get_versioned(pod.uid)
    assert first is not None
    assert first.version >= 1
    node.sync(pod)  # nothing changed: same version
    assert sm.get_versioned(pod.uid) == first
    node.patcher.fail = True
    assert sm.sync_batch() == 0  # not written: offered again
    node.patcher.fail = False
    assert sm.sync_batch() == 1
    assert [(w.uid, w.version) for w in node.patcher.written] == [(pod.uid, first.version)]
    assert sm.sync_batch() == 0  # nothing newer
    node.runtime.exit_container(node.running("app")[0], 1)
    node.sync(pod)
    assert sm.sync_batch() == 1
    assert node.patcher.written[-1].version > first.version
    assert node.patcher.written[-1].status.container_statuses[0].restart_count == 1


def test_runtime_operations_are_measured_by_operation_type(node: Node) -> None:
    pod = node.add(make_pod(("app",)))
    node.runtime.inject_error("RunPodSandbox", "UNAVAILABLE", "down")
    node.sync(pod)
    node.sync(pod)
    counts = node.kubelet.cri.op_counts
    assert counts["RunPodSandbox"] == 2
    assert counts["StartContainer"] == 1
    exposed = {(x.name, tuple(sorted(x.labels.items()))): x.value
               for f in text_string_to_metric_families(node.kubelet.render_metrics().decode())
               for x in f.samples}
    run_sandbox = (("operation_type", "run_podsandbox"),)
    assert exposed[("kubelet_runtime_operations_errors_total", run_sandbox)] == 1
    assert exposed[("kubelet_runtime_operations_total", run_sandbox)] == 2
    assert exposed[("kubelet_runtime_operations_duration_seconds_count", run_sandbox)] == 2
    assert exposed[("kubelet_started_pods_total", ())] == 1  # a sandbox started
    assert exposed[("kubelet_started_pods_errors_total", ())] == 1
    assert exposed[("kubelet_running_pods", ())] == 1
    assert exposed[("kubelet_running_containers", (("container_state", "running"),))] == 1
    assert exposed[("kubelet_pod_worker_duration_seconds_count",
                    (("operation_type", "sync"),))] == 2


def test_a_sandbox_failure_is_the_pods_reason_until_a_sandbox_is_ready(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    """As kubelet's FailedCreatePodSandBox, plus what a node without an API server needs:
    the pod's own status says why it waits (reason and message), a retry of the same
    failure is not another warning, and a ready sandbox clears it."""
    pod = node.add(make_pod(("app",)))
    node.runtime.inject_error("RunPodSandbox", "UNAVAILABLE",
                              'failed to find plugin "pycni-bridge"', times=2)
    with caplog.at_level(logging.INFO, logger="pykubelet.kubelet.agent"):
        node.sync(pod)
        node.sync(pod)
    status = node.status(pod)
    assert status.phase == "Pending"
    assert status.reason == reasons.CREATE_POD_SANDBOX_ERROR
    assert status.message.startswith("Failed to create pod sandbox: ")
    assert 'failed to find plugin "pycni-bridge"' in status.message
    events = [e for e in node.kubelet.recorder.list(pod.uid)
              if e["reason"] == reasons.EVENT_FAILED_CREATE_POD_SANDBOX]
    assert events[0]["message"] == status.message
    warned = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING and "Error syncing pod" in r.getMessage()]
    assert len(warned) == 1, warned
    assert 'pod="default/web"' in warned[0]
    node.sync(pod)
    status = node.status(pod)
    assert status.phase == "Running"
    assert (status.reason, status.message) == ("", "")
    assert node.kubelet.reason_cache.sandbox_failure(pod.uid) is None


def test_pod_events_are_one_log_line_each(node: Node, caplog: pytest.LogCaptureFixture) -> None:
    """kubelet's klog lines at the default level: sandbox created, container started,
    exited, killed, pod removed, each naming the pod (and container)."""
    pod = node.add(make_pod(("app",)))
    with caplog.at_level(logging.INFO):
        node.sync(pod)
        node.runtime.exit_container(node.running("app")[0], 3)
        node.sync(pod)
        node.kubelet.pod_manager.remove_pod(pod.uid)
        node.kubelet.terminate_pod(pod)
    text = "\n".join(r.getMessage() for r in caplog.records)
    for line in ('"Created pod sandbox" pod="default/web"',
                 '"Started container" pod="default/web" containerName="app"',
                 '"Container exited" pod="default/web" containerName="app"',
                 'exitCode=3 reason="Error"',
                 '"Killing container with a grace period" pod="default/web"',
                 '"Removed pod from the runtime" pod="default/web"'):
        assert line in text, text


def test_healthz_says_why_while_the_runtime_does_not_answer(node: Node) -> None:
    """kubelet's PLEG health: a failing relist makes /healthz unhealthy at once."""
    node.kubelet.pleg.relist()
    assert node.kubelet.healthy() == (True, "ok")
    node.runtime.inject_error("ListPodSandbox", "UNAVAILABLE", "connection refused")
    with pytest.raises(CRICallError):
        node.kubelet.pleg.relist()
    ok, why = node.kubelet.healthy()
    assert not ok
    assert why.startswith("PLEG is not healthy: relist failing for ")
    assert why.endswith("ListPodSandbox: UNAVAILABLE: connection refused")
    node.kubelet.pleg.relist()
    assert node.kubelet.healthy() == (True, "ok")


def with_debugger(pod: Pod, **debugger: object) -> Pod:
    """The pod as the API hands it on after kubectl debug added an ephemeral container."""
    obj = encode(pod)
    obj["spec"]["ephemeralContainers"] = [
        {"name": "debugger", "image": IMAGE, "command": ["ps"], "targetContainerName": "app",
         **debugger}]
    return set_defaults_pod(decode_pod(obj))


def test_an_ephemeral_container_starts_once_in_its_targets_pid_namespace(node: Node) -> None:
    pod = node.add(make_pod(("app",)))
    node.sync(pod)
    (app,) = node.running("app")
    pod = node.add(with_debugger(pod))
    node.sync(pod)
    (dbg,) = node.runtime.containers_named("debugger")
    ns = dbg.config.linux.security_context.namespace_options
    assert (ns.pid, ns.target_id) == (pb.TARGET, app)
    assert ns.network == pb.POD  # the pod's other namespaces, as any container
    assert dbg.config.annotations[CONTAINER_TYPE_ANNOTATION] == "ephemeral"
    status = node.status(pod)
    (ecs,) = status.ephemeral_container_statuses
    assert ecs.name == "debugger"
    assert ecs.state.running is not None
    assert [cs.name for cs in status.container_statuses] == ["app"]
    # it exits: reported terminated, never restarted, the pod unaffected
    node.runtime.exit_container(dbg.id, 3)
    node.sync(pod)
    node.sync(pod)
    assert len(node.runtime.containers_named("debugger")) == 1
    status = node.status(pod)
    assert status.ephemeral_container_statuses[0].state.terminated.exit_code == 3
    assert status.phase == "Running"
    assert node.running("app") == [app]


def test_an_ephemeral_container_without_target_gets_its_own_pid_namespace(node: Node) -> None:
    pod = node.add(make_pod(("app",)))
    node.sync(pod)
    node.sync(node.add(with_debugger(pod, targetContainerName="")))
    (dbg,) = node.runtime.containers_named("debugger")
    ns = dbg.config.linux.security_context.namespace_options
    assert (ns.pid, ns.target_id) == (pb.CONTAINER, "")


def test_an_ephemeral_container_whose_target_is_not_running_waits(node: Node) -> None:
    """getTargetID: the target must run; CreateContainerConfigError until it does."""
    pod = node.add(make_pod(("app",), init=("init",)))
    node.sync(pod)
    (init,) = node.running("init")
    pod = node.add(with_debugger(pod, targetContainerName="init"))
    node.runtime.exit_container(init, 0)  # the target is done before the debugger starts
    node.sync(pod)
    assert node.runtime.containers_named("debugger") == []
    waiting = node.status(pod).ephemeral_container_statuses[0].state.waiting
    assert waiting is not None
    assert (waiting.reason, waiting.message) == (
        "CreateContainerConfigError", "unable to find target container init")
