"""The read-only RPCs answer from memory (cached messages, conmons watched by pidfd) and
must still follow every change: create, start, an exit nobody asked for, a resource update,
stop, remove, a dead monitor, and a SIGKILLed runtime that restarts.

Each read is asked several times in a row so that the later answers come from the caches,
and unfiltered lists (the cached whole responses) are checked against filtered ones (built
afresh every time).
"""

from __future__ import annotations

import json
import os
import signal

import container_manager_fixtures
import grpc
import pytest
from container_manager_fixtures import wait_for

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime.container_request import ContainerConfigSpec, ContainerMetadata
from pykubelet.runtime.container_store import EXITED, RUNNING

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]

env = container_manager_fixtures.env
busybox_archive = container_manager_fixtures.busybox_archive


def _all_containers(cri, twice: bool = True) -> dict[str, pb.Container]:  # type: ignore[no-untyped-def]
    """Unfiltered ListContainers; ``twice``: asked again (nothing changes meanwhile), the
    second answer, from the caches, must equal the first."""
    first = cri.runtime.ListContainers(pb.ListContainersRequest(), timeout=30).containers
    if twice:
        again = cri.runtime.ListContainers(pb.ListContainersRequest(
            filter=pb.ContainerFilter()), timeout=30).containers
        assert list(again) == list(first)
    return {c.id: c for c in first}


def _in_pod(cri, pod_id: str) -> dict[str, pb.Container]:  # type: ignore[no-untyped-def]
    listed = cri.runtime.ListContainers(pb.ListContainersRequest(
        filter=pb.ContainerFilter(pod_sandbox_id=pod_id)), timeout=30).containers
    return {c.id: c for c in listed}


def _pods(cri) -> dict[str, pb.PodSandbox]:  # type: ignore[no-untyped-def]
    first = cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30).items
    again = cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest(
        filter=pb.PodSandboxFilter()), timeout=30).items
    assert list(again) == list(first)
    return {p.id: p for p in first}


def _status(cri, cid: str) -> pb.ContainerStatus:  # type: ignore[no-untyped-def]
    first, again = cri.container_status(cid), cri.container_status(cid)
    assert again == first
    return first


def _state_of(cri, cid: str) -> int:  # type: ignore[no-untyped-def]
    containers = _all_containers(cri)
    st = _status(cri, cid)
    assert containers[cid].state == st.state
    return st.state


def test_reads_follow_every_change(cri) -> None:  # type: ignore[no-untyped-def]
    rt = cri.runtime
    pod_id, pod_cfg = cri.run_pod("rtrd-life")
    assert _pods(cri)[pod_id].state == pb.SANDBOX_READY
    assert cri.pod_status(pod_id).status.state == pb.SANDBOX_READY

    cc = cri.container_config("app", ["sleep", "1000"])
    cid = rt.CreateContainer(pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cc, sandbox_config=pod_cfg), timeout=60).container_id
    assert _state_of(cri, cid) == pb.CONTAINER_CREATED
    rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
    assert _state_of(cri, cid) == pb.CONTAINER_RUNNING
    assert _all_containers(cri) == _in_pod(cri, pod_id)
    assert [c.state for c in cri.pod_status(pod_id).containers_statuses] == [
        pb.CONTAINER_RUNNING]

    rt.UpdateContainerResources(pb.UpdateContainerResourcesRequest(
        container_id=cid, linux=pb.LinuxContainerResources(cpu_period=100000, cpu_shares=512)),
        timeout=30)
    assert _status(cri, cid).resources.linux.cpu_shares == 512

    # an exit nobody asked for: the cached RUNNING answer must give way at once
    verbose = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid, verbose=True),
                                 timeout=30)
    os.kill(json.loads(verbose.info["info"])["pid"], signal.SIGKILL)
    wait_for(lambda: _all_containers(cri, False)[cid].state == pb.CONTAINER_EXITED, 20)
    st = _status(cri, cid)
    assert (st.state, st.exit_code, st.reason) == (pb.CONTAINER_EXITED, 137, "Error")
    assert st.finished_at >= st.started_at > st.created_at > 0
    assert [(c.id, c.state) for c in cri.pod_status(pod_id).containers_statuses] == [
        (cid, pb.CONTAINER_EXITED)]

    second = cri.start_container(pod_id, pod_cfg, "second", ["sleep", "1000"])
    assert _all_containers(cri) == _in_pod(cri, pod_id)
    assert _state_of(cri, second) == pb.CONTAINER_RUNNING

    rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    assert _pods(cri)[pod_id].state == pb.SANDBOX_NOTREADY
    status = cri.pod_status(pod_id)
    assert status.status.state == pb.SANDBOX_NOTREADY
    assert {c.id: c.state for c in status.containers_statuses} == {
        cid: pb.CONTAINER_EXITED, second: pb.CONTAINER_EXITED}
    assert _state_of(cri, second) == pb.CONTAINER_EXITED

    rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=60)
    assert cid not in _all_containers(cri)
    with pytest.raises(grpc.RpcError) as info:
        cri.container_status(cid)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    assert _all_containers(cri) == {}
    assert pod_id not in _pods(cri)


def test_reads_after_a_sigkilled_runtime_restarts(cri) -> None:  # type: ignore[no-untyped-def]
    pod_id, pod_cfg = cri.run_pod("rtrd-restart")
    victim = cri.start_container(pod_id, pod_cfg, "victim", ["sleep", "1000"])
    later = cri.start_container(pod_id, pod_cfg, "later", ["sh", "-c", "sleep 6; exit 3"])
    assert _state_of(cri, victim) == _state_of(cri, later) == pb.CONTAINER_RUNNING
    info = cri.runtime.ContainerStatus(pb.ContainerStatusRequest(container_id=victim,
                                                                 verbose=True), timeout=30)
    cri.kill()  # SIGKILL: its in-memory state is gone
    os.kill(json.loads(info.info["info"])["pid"], signal.SIGKILL)  # exits while it is down
    cri.start()
    assert _state_of(cri, later) == pb.CONTAINER_RUNNING
    st = _status(cri, victim)
    assert (st.state, st.exit_code) == (pb.CONTAINER_EXITED, 137)
    # watched again after the restart: its own exit shows up in the cached reads
    wait_for(lambda: _all_containers(cri, False)[later].state == pb.CONTAINER_EXITED, 20)
    st = _status(cri, later)
    assert (st.exit_code, st.reason) == (3, "Error")
    assert _pods(cri)[pod_id].state == pb.SANDBOX_READY
    assert cri.pod_status(pod_id).status.state == pb.SANDBOX_READY


def _cfg(name: str, *command: str) -> ContainerConfigSpec:
    return ContainerConfigSpec(metadata=ContainerMetadata(name), image="busybox",
                               command=tuple(command), log_path=f"{name}/0.log")


def _is_conmon(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"conmon" in f.read()
    except OSError:
        return False


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_dead_monitor_sends_reads_back_to_disk(env) -> None:  # type: ignore[no-untyped-def]
    m = env.manager
    sb = env.sandbox()
    before = _fds()
    cid = m.create(sb, _cfg("orphan", "sleep", "1000"))
    m.start(cid)
    st = m.status(cid)
    assert st.state == RUNNING
    assert m.status(cid) is st
    conmon = int((env.root / "containers" / cid / "conmon.pid").read_text())
    os.kill(conmon, signal.SIGKILL)
    wait_for(lambda: not _is_conmon(conmon))
    if os.path.exists(f"/proc/{st.pid}"):  # the container outlived its monitor
        assert m.status(cid).state == RUNNING
        os.kill(st.pid, signal.SIGKILL)
    done = wait_for(lambda: (s := m.status(cid)).state == EXITED and s)
    assert (done.exit_code, done.reason) == (255, "Unknown")
    assert m.list()[0] == done
    m.remove(cid)
    assert _fds() == before  # no pidfd left behind


def test_watches_cost_no_fd_once_exited_or_removed(env) -> None:  # type: ignore[no-untyped-def]
    m = env.manager
    sb = env.sandbox()
    before = _fds()
    short = m.create(sb, _cfg("short", "true"))
    long = m.create(sb, _cfg("long", "sleep", "1000"))
    m.start(short)
    m.start(long)
    wait_for(lambda: m.status(short).state == EXITED)
    assert [s.state for s in m.list()] == [EXITED, RUNNING]
    assert _fds() == before + 1  # only the running container's monitor is held
    m.remove(long)
    m.remove(short)
    assert m.list() == []
    assert _fds() == before
