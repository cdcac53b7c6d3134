"""Containers and images through a real gRPC client on a `pykubelet runtime` subprocess.

Uses runtime-cri's ``cri`` fixture (conftest.py): a runtime on a temp root and socket with
the busybox image imported. The restart test SIGKILLs that process while containers run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime import logs
from pykubelet.runtime.image_build import build_busybox_image

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]


def _error(fn, req) -> grpc.RpcError:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        fn(req, timeout=60)
    return info.value


def _log(pod_cfg: pb.PodSandboxConfig, name: str, attempt: int = 0) -> list[str]:
    path = Path(pod_cfg.log_directory) / name / f"{attempt}.log"
    return logs.read_messages(path, "stdout") if path.exists() else []


def _wait(pred, timeout: float = 20):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)
    return value


def test_container_lifecycle_over_cri(cri) -> None:  # type: ignore[no-untyped-def]
    rt = cri.runtime
    pod_id, pod_cfg = cri.run_pod("rtc-life")
    cid = cri.start_container(pod_id, pod_cfg, "app", ["sh", "-c", "echo hi; sleep 1000"])
    st = cri.container_status(cid)
    assert st.state == pb.CONTAINER_RUNNING
    assert st.metadata.name == "app"
    assert st.image.image == "docker.io/library/busybox:latest"
    assert st.image_ref.startswith("docker.io/library/busybox@sha256:")
    assert st.image_id.startswith("sha256:")
    assert (st.user.linux.uid, st.user.linux.gid) == (0, 0)
    assert st.log_path == str(Path(pod_cfg.log_directory) / "app" / "0.log")
    _wait(lambda: _log(pod_cfg, "app") == ["hi"])

    resp = rt.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=["sh", "-c", "echo ok; exit 3"],
                                          timeout=10), timeout=30)
    assert (resp.stdout, resp.exit_code) == (b"ok\n", 3)

    listed = rt.ListContainers(pb.ListContainersRequest(filter=pb.ContainerFilter(
        pod_sandbox_id=pod_id, state=pb.ContainerStateValue(state=pb.CONTAINER_RUNNING),
        label_selector={"io.kubernetes.container.name": "app"})), timeout=30).containers
    assert [c.id for c in listed] == [cid]
    assert rt.ListContainers(pb.ListContainersRequest(filter=pb.ContainerFilter(
        state=pb.ContainerStateValue(state=pb.CONTAINER_EXITED))), timeout=30).containers == []

    stats = rt.ContainerStats(pb.ContainerStatsRequest(container_id=cid), timeout=30).stats
    assert stats.attributes.id == cid
    assert stats.memory.working_set_bytes.value > 0
    assert stats.cpu.usage_core_nano_seconds.value > 0
    all_stats = rt.ListContainerStats(pb.ListContainerStatsRequest(), timeout=30).stats
    assert cid in [s.attributes.id for s in all_stats]

    pod = cri.pod_status(pod_id)
    assert [c.id for c in pod.containers_statuses] == [cid]

    verbose = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid, verbose=True),
                                 timeout=30)
    assert '"seccomp"' in verbose.info["info"]  # RuntimeDefault reached the OCI spec

    rt.UpdateContainerResources(pb.UpdateContainerResourcesRequest(
        container_id=cid, linux=pb.LinuxContainerResources(
            cpu_shares=512, memory_limit_in_bytes=96 << 20)), timeout=30)
    st = cri.container_status(cid)
    assert st.resources.linux.memory_limit_in_bytes == 96 << 20
    assert st.resources.linux.cpu_shares == 512

    rt.ReopenContainerLog(pb.ReopenContainerLogRequest(container_id=cid), timeout=30)
    rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=0), timeout=30)
    st = cri.container_status(cid)
    assert (st.state, st.exit_code, st.reason) == (pb.CONTAINER_EXITED, 137, "Error")
    err = _error(rt.ReopenContainerLog, pb.ReopenContainerLogRequest(container_id=cid))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)
    rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)  # idempotent
    err = _error(rt.ContainerStatus, pb.ContainerStatusRequest(container_id=cid))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_runtime_killed_and_restarted_keeps_containers(cri) -> None:  # type: ignore[no-untyped-def]
    pod_id, pod_cfg = cri.run_pod("rtc-restart")
    ticker = cri.start_container(pod_id, pod_cfg, "ticker", [
        "sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"])
    later = cri.start_container(pod_id, pod_cfg, "later", ["sh", "-c", "sleep 2; exit 7"])
    done = cri.start_container(pod_id, pod_cfg, "done", ["true"])
    assert cri.wait_exited(done).exit_code == 0
    _wait(lambda: len(_log(pod_cfg, "ticker")) >= 3)

    cri.kill()  # SIGKILL: no chance to clean up or record anything
    down_at = len(_log(pod_cfg, "ticker"))
    time.sleep(3)  # "later" exits while the runtime is down
    assert len(_log(pod_cfg, "ticker")) > down_at  # conmon keeps writing the log
    cri.start()

    by_id = {c.id: c for c in cri.runtime.ListContainers(
        pb.ListContainersRequest(), timeout=30).containers}
    assert by_id[ticker].state == pb.CONTAINER_RUNNING
    assert by_id[later].state == pb.CONTAINER_EXITED
    assert by_id[done].state == pb.CONTAINER_EXITED
    st = cri.container_status(later)
    assert (st.exit_code, st.reason) == (7, "Error")
    assert st.finished_at > st.started_at > 0
    st = cri.container_status(done)
    assert (st.exit_code, st.reason) == (0, "Completed")

    # the running one is fully usable after the restart, and its later exit is recorded
    resp = cri.runtime.ExecSync(pb.ExecSyncRequest(container_id=ticker, cmd=["echo", "alive"],
                                                   timeout=10), timeout=30)
    assert resp.stdout == b"alive\n"
    ticks = [int(m.split()[1]) for m in _log(pod_cfg, "ticker")]
    assert ticks == list(range(len(ticks)))  # one continuous log, nothing lost
    cri.runtime.StopContainer(pb.StopContainerRequest(container_id=ticker, timeout=0),
                              timeout=30)
    st = cri.container_status(ticker)
    assert (st.state, st.exit_code) == (pb.CONTAINER_EXITED, 137)
    for cid in (ticker, later, done):
        cri.runtime.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)
    assert cri.runc_containers() == []
    assert [m for m in cri.mounts() if "/containers/" in m] == [
        str(cri.root / "containers" / ".shm" / pod_id)]  # the pod's /dev/shm, until ...
    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    assert [m for m in cri.mounts() if "/containers/" in m] == []  # ... the pod is removed


def test_bad_container_requests_over_cri(cri) -> None:  # type: ignore[no-untyped-def]
    rt = cri.runtime
    pod_id, pod_cfg = cri.run_pod("rtc-bad")
    cfg = cri.container_config("x", ["true"])
    cfg.image.image = "docker.io/library/nosuch:1"
    err = _error(rt.CreateContainer, pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cfg, sandbox_config=pod_cfg))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert "nosuch" in err.details()

    cfg = cri.container_config("x", ["true"])
    cfg.ClearField("metadata")
    err = _error(rt.CreateContainer, pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cfg, sandbox_config=pod_cfg))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "metadata.name" in err.details()

    err = _error(rt.CreateContainer, pb.CreateContainerRequest(
        pod_sandbox_id="f" * 64, config=cri.container_config("x", ["true"])))
    assert err.code() == grpc.StatusCode.NOT_FOUND

    gone_id, gone_cfg = cri.run_pod("rtc-gone")
    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=gone_id), timeout=60)
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=gone_id), timeout=60)
    err = _error(rt.CreateContainer, pb.CreateContainerRequest(
        pod_sandbox_id=gone_id, config=cri.container_config("x", ["true"]),
        sandbox_config=gone_cfg))
    assert err.code() == grpc.StatusCode.NOT_FOUND

    err = _error(rt.StartContainer, pb.StartContainerRequest(container_id="0" * 64))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = _error(rt.ExecSync, pb.ExecSyncRequest(container_id="", cmd=["true"]))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert rt.ListContainers(pb.ListContainersRequest(), timeout=30).containers == []
    assert cri.runc_containers() == []


def test_image_service_over_cri(cri) -> None:  # type: ignore[no-untyped-def]
    img = cri.images
    images = img.ListImages(pb.ListImagesRequest(), timeout=30).images
    assert [i.repo_tags for i in images] == [["docker.io/library/busybox:latest"]]
    image_id = images[0].id
    st = img.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image="busybox")), timeout=30)
    assert st.image.id == image_id
    assert st.image.size > 0
    absent = img.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image="nosuch")),
                             timeout=30)
    assert not absent.HasField("image")
    pulled = img.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=image_id)),
                           timeout=30)
    assert pulled.image_ref == image_id  # an ID names no registry: the store answers
    # a tag goes to its registry (tests/integration/runtime/test_registry_pull.py); none
    # listens here, so the pull fails and says where it went
    err = _error(img.PullImage, pb.PullImageRequest(image=pb.ImageSpec(
        image="localhost:1/nosuch:1")))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert "localhost:1" in err.details()
    err = _error(img.ImageStatus, pb.ImageStatusRequest(image=pb.ImageSpec(image="")))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    fs = img.ImageFsInfo(pb.ImageFsInfoRequest(), timeout=30).image_filesystems
    assert fs[0].used_bytes.value > 0
    img.RemoveImage(pb.RemoveImageRequest(image=pb.ImageSpec(image=image_id)), timeout=30)
    img.RemoveImage(pb.RemoveImageRequest(image=pb.ImageSpec(image=image_id)), timeout=30)
    assert img.ListImages(pb.ListImagesRequest(), timeout=30).images == []
    # the CLI works on the same root while the runtime runs, and the runtime sees it at once
    archive = cri.base / "cli.tar"
    build_busybox_image(archive, name="localhost/cli:1")
    subprocess.run([sys.executable, "-m", "pykubelet.cli.main", "image", "--root",
                    str(cri.root), "import", str(archive)], check=True, timeout=120)
    images = img.ListImages(pb.ListImagesRequest(), timeout=30).images
    assert [list(i.repo_tags) for i in images] == [["localhost/cli:1"]]


def _ns_config(cri, name: str, command: list[str], pid: int, network: int):  # type: ignore[no-untyped-def]
    cc = cri.container_config(name, command)
    cc.linux.security_context.namespace_options.pid = pid
    cc.linux.security_context.namespace_options.network = network
    return cc


def test_shared_pid_namespace_and_host_network(cri) -> None:  # type: ignore[no-untyped-def]
    rt = cri.runtime
    ns = pb.NamespaceOption(network=pb.NODE, pid=pb.POD, ipc=pb.POD)
    pod_cfg = cri.pod_config("rtc-share")
    pod_cfg.linux.security_context.namespace_options.CopyFrom(ns)
    pod_id = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_cfg), timeout=60).pod_sandbox_id
    ids = []
    for name, cmd in (("a", ["sleep", "1000"]),
                      ("b", ["sh", "-c", "readlink /proc/self/ns/net; readlink /proc/self/ns/pid; "
                                         "sleep 1000"])):
        cid = rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=pod_id, config=_ns_config(cri, name, cmd, pb.POD, pb.NODE),
            sandbox_config=pod_cfg), timeout=60).container_id
        rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
        ids.append(cid)
    out = _wait(lambda: len(m := _log(pod_cfg, "b")) >= 2 and m)
    assert out[0] == os.readlink("/proc/self/ns/net")  # the node's network namespace
    assert out[1] != os.readlink("/proc/self/ns/pid")  # a pod pid namespace, not the node's
    # b sees a's sleep: one pid namespace for the pod
    resp = rt.ExecSync(pb.ExecSyncRequest(container_id=ids[1], cmd=["ps", "-o", "args"],
                                          timeout=10), timeout=30)
    assert b"sleep 1000" in resp.stdout.replace(b"sh -c", b"")
    a_pid_ns = rt.ExecSync(pb.ExecSyncRequest(container_id=ids[0], cmd=[
        "readlink", "/proc/self/ns/pid"], timeout=10), timeout=30).stdout.decode().strip()
    assert a_pid_ns == out[1]
    for cid in ids:
        rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=0), timeout=30)
        assert cri.container_status(cid).state == pb.CONTAINER_EXITED
