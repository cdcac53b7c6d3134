"""Whole pods through a gRPC client on the runtime's socket: sandbox + containers together.

Complements runtime-containers' test_containers_cri.py (one container's lifecycle, restart
with running containers, bad container requests, ImageService): here the pod is the unit.
Containers see the sandbox's namespaces and files, pods talk to each other and through a
hostPort, exit codes and OOMKilled reach ContainerStatus over CRI, StopPodSandbox stops the
containers, and RemovePodSandbox (also after a runtime restart) leaves nothing behind.
The peer's own CRI client (the one its containerd benchmark uses) drives our socket too.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb

pytestmark = [pytest.mark.root, pytest.mark.netns, pytest.mark.runc]

REPO = Path(__file__).resolve().parents[4]
PEER = next((p for p in (REPO.parent / "shared" / "peers" / "containerd",
                         Path("/work/shared/peers/containerd")) if (p / "cri_client.py").exists()),
            Path("/work/shared/peers/containerd"))
HTTPD = ["sh", "-c", "mkdir -p /www && echo \"$MSG\" > /www/index.html && "
         "exec httpd -f -p 8080 -h /www"]


def _exec(cri, cid: str, *cmd: str) -> tuple[int, str]:
    r = cri.runtime.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=list(cmd), timeout=20),
                             timeout=60)
    return r.exit_code, r.stdout.decode()


def _wait(pred, timeout: float = 20):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (value := pred()):
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)
    return value


def _httpd(cri, pod_id: str, pod_cfg: pb.PodSandboxConfig, msg: str) -> str:
    cc = cri.container_config("web", HTTPD)
    cc.envs.add(key="MSG", value=msg)
    cid = cri.runtime.CreateContainer(pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cc, sandbox_config=pod_cfg), timeout=60).container_id
    cri.runtime.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
    return cid


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.read().decode()


def _try_get(url: str) -> str:
    """"" while the server is not up yet."""
    try:
        return _get(url)
    except OSError:
        return ""


def _clean(cri) -> None:  # type: ignore[no-untyped-def]
    left = cri.leftovers()
    assert left == {k: [] for k in left}


def test_full_pod_lifecycle(cri) -> None:
    dns = pb.DNSConfig(servers=["10.94.0.53"], searches=["ns1.svc.cluster.local"],
                       options=["ndots:5"])
    pod_id, pod_cfg = cri.run_pod("full", hostname="full-0", dns_config=dns)
    ip = cri.pod_status(pod_id).status.network.ip
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(cri.subnet)
    web = _httpd(cri, pod_id, pod_cfg, "hello-from-web")
    side = cri.start_container(pod_id, pod_cfg, "side", ["sh", "-c", "echo side-up; sleep 1000"])

    # the containers live in the sandbox's namespaces and see its files
    assert _exec(cri, side, "hostname") == (0, "full-0\n")
    code, addrs = _exec(cri, side, "ip", "-4", "-o", "addr", "show", "eth0")
    assert code == 0
    assert f"{ip}/24" in addrs
    _, resolv = _exec(cri, side, "cat", "/etc/resolv.conf")
    assert "nameserver 10.94.0.53" in resolv
    assert "search ns1.svc.cluster.local" in resolv
    _, hosts = _exec(cri, side, "cat", "/etc/hosts")
    assert f"{ip}\tfull-0" in hosts
    # one network namespace: the side container reaches the web one on localhost
    assert _wait(lambda: _exec(cri, side, "wget", "-qO-", "http://127.0.0.1:8080/")[1]) \
        == "hello-from-web\n"
    # and the host reaches the pod on its IP
    subprocess.run(["ping", "-n", "-q", "-c", "1", "-W", "2", ip], check=True,
                   capture_output=True)
    assert _wait(lambda: _try_get(f"http://{ip}:8080/")) == "hello-from-web\n"
    log = Path(pod_cfg.log_directory) / "side" / "0.log"
    assert _wait(lambda: log.exists() and " stdout F side-up" in log.read_text())

    st = cri.pod_status(pod_id)
    assert {c.id: c.state for c in st.containers_statuses} == {
        web: pb.CONTAINER_RUNNING, side: pb.CONTAINER_RUNNING}

    # StopPodSandbox stops every container and releases the network
    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    assert cri.pod_status(pod_id).status.state == pb.SANDBOX_NOTREADY
    for cid in (web, side):
        assert cri.container_status(cid).state == pb.CONTAINER_EXITED
    assert cri.ipam_files() == []
    assert cri.veths() == []
    # a stopped sandbox takes no new containers
    with pytest.raises(grpc.RpcError) as info:
        cri.start_container(pod_id, pod_cfg, "late", ["true"])
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "not ready" in info.value.details()

    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    assert cri.runtime.ListContainers(pb.ListContainersRequest(), timeout=30).containers == []
    assert cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30).items == []
    _clean(cri)


def test_remove_running_pod_leaves_nothing(cri) -> None:
    """RemovePodSandbox without any Stop first: containers killed, every trace gone."""
    pod_id, pod_cfg = cri.run_pod("busy", port_mappings=[
        pb.PortMapping(protocol=pb.TCP, container_port=8080, host_port=31000 + cri.index)])
    _httpd(cri, pod_id, pod_cfg, "x")
    cri.start_container(pod_id, pod_cfg, "sleeper", ["sleep", "1000"])
    assert len(cri.runc_containers()) == 2
    assert [m for m in cri.mounts() if m.endswith("/rootfs")], "overlay rootfs not mounted"
    assert cri.cgroups(), "containers not under the pod's cgroup parent"
    assert cri.iptables_lines()
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    assert cri.runtime.ListContainers(pb.ListContainersRequest(), timeout=30).containers == []
    _clean(cri)
    assert os.listdir(cri.root / "sandboxes") == []
    assert [d for d in os.listdir(cri.root / "containers") if not d.startswith(".")] == []


def test_pods_reach_each_other_and_a_host_port(cri) -> None:
    server_id, server_cfg = cri.run_pod("server", port_mappings=[
        pb.PortMapping(protocol=pb.TCP, container_port=8080, host_port=32000 + cri.index)])
    client_id, client_cfg = cri.run_pod("client")
    _httpd(cri, server_id, server_cfg, "served")
    client = cri.start_container(client_id, client_cfg, "c", ["sleep", "1000"])
    server_ip = cri.pod_status(server_id).status.network.ip
    # pod to pod across the bridge
    assert _wait(lambda: _exec(cri, client, "wget", "-qO-", f"http://{server_ip}:8080/")[1]) \
        == "served\n"
    # host -> hostPort on the bridge's address -> DNAT to the server pod
    assert _wait(lambda: _try_get(f"http://{cri.gateway}:{32000 + cri.index}/")) == "served\n"
    for pod in (server_id, client_id):
        cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod), timeout=60)
    assert cri.iptables_lines() == []
    with pytest.raises(OSError):
        socket.create_connection((cri.gateway, 32000 + cri.index), timeout=2).close()
    for pod in (server_id, client_id):
        cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod), timeout=60)
    _clean(cri)


def test_exit_codes_and_oom_over_cri(cri) -> None:
    pod_id, pod_cfg = cri.run_pod("exits")
    ok = cri.start_container(pod_id, pod_cfg, "ok", ["true"])
    fail = cri.start_container(pod_id, pod_cfg, "fail", ["sh", "-c", "exit 1"])
    killed = cri.start_container(pod_id, pod_cfg, "killed", ["sleep", "1000"])
    oom = cri.start_container(pod_id, pod_cfg, "oom", ["sh", "-c", "tail /dev/zero"],
                              memory_limit=8 << 20)
    assert (lambda s: (s.exit_code, s.reason))(cri.wait_exited(ok)) == (0, "Completed")
    assert (lambda s: (s.exit_code, s.reason))(cri.wait_exited(fail)) == (1, "Error")
    # SIGKILL from outside the runtime (not StopContainer): the monitor still records it
    info = json.loads(cri.runtime.ContainerStatus(pb.ContainerStatusRequest(
        container_id=killed, verbose=True), timeout=30).info["info"])
    os.kill(info["pid"], signal.SIGKILL)
    st = cri.wait_exited(killed)
    assert (st.state, st.exit_code, st.reason) == (pb.CONTAINER_EXITED, 137, "Error")
    st = cri.wait_exited(oom, timeout=60)
    assert (st.state, st.exit_code, st.reason) == (pb.CONTAINER_EXITED, 137, "OOMKilled")
    for s in (cri.container_status(c) for c in (ok, fail, killed, oom)):
        assert s.finished_at >= s.started_at > 0
    exited = cri.runtime.ListContainers(pb.ListContainersRequest(filter=pb.ContainerFilter(
        pod_sandbox_id=pod_id, state=pb.ContainerStateValue(state=pb.CONTAINER_EXITED))),
        timeout=30).containers
    assert {c.id for c in exited} == {ok, fail, killed, oom}
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    _clean(cri)


def test_shared_pid_namespace_between_containers(cri) -> None:
    cfg = cri.pod_config("sharepid")
    cfg.linux.security_context.namespace_options.pid = pb.POD
    pod_id = cri.runtime.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg),
                                       timeout=60).pod_sandbox_id
    a = cri.start_container(pod_id, cfg, "a", ["sleep", "1001"])
    cc = cri.container_config("b", ["sleep", "1002"])
    cc.linux.security_context.namespace_options.pid = pb.POD
    b = cri.runtime.CreateContainer(pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cc, sandbox_config=cfg), timeout=60).container_id
    cri.runtime.StartContainer(pb.StartContainerRequest(container_id=b), timeout=60)
    # container a was created with pid=CONTAINER; b shares the pod's namespace
    _, procs = _exec(cri, b, "ps", "-o", "pid,args")
    assert "catatonit" in procs
    assert "sleep 1002" in procs
    _, procs_a = _exec(cri, a, "ps", "-o", "pid,args")
    assert "sleep 1002" not in procs_a
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    _clean(cri)


def test_remove_after_runtime_restart_leaves_nothing(cri) -> None:
    pod_id, pod_cfg = cri.run_pod("phoenix", port_mappings=[
        pb.PortMapping(protocol=pb.TCP, container_port=8080, host_port=33000 + cri.index)])
    web = _httpd(cri, pod_id, pod_cfg, "still-here")
    ip = cri.pod_status(pod_id).status.network.ip
    assert _wait(lambda: _try_get(f"http://{ip}:8080/")) == "still-here\n"
    cri.kill()
    assert _get(f"http://{ip}:8080/") == "still-here\n", "pods must outlive the runtime"
    cri.start()
    st = cri.pod_status(pod_id)
    assert st.status.state == pb.SANDBOX_READY
    assert [c.id for c in st.containers_statuses] == [web]
    assert _get(f"http://{cri.gateway}:{33000 + cri.index}/") == "still-here\n"
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    _clean(cri)


@pytest.mark.skipif(not (PEER / "cri_client.py").exists(), reason="containerd peer not present")
def test_peer_cri_client_drives_our_socket(cri, tmp_path: Path) -> None:
    """The peer's client (the one bench.py uses) runs its whole lifecycle against us."""
    client_dir = tmp_path / "peer-client"
    client_dir.mkdir()
    for name in ("cri_client.py", "cri.proto"):
        shutil.copy(PEER / name, client_dir / name)
        os.chmod(client_dir / name, 0o644)
    out = subprocess.run(
        [sys.executable, str(client_dir / "cri_client.py"), "--endpoint", f"unix://{cri.sock}",
         "lifecycle", "--json", "--image", "docker.io/library/busybox:latest",
         "--log-root", str(tmp_path / "peer-logs"), "--expect-subnet", cri.subnet],
        capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout)
    assert res["container_state"] == "CONTAINER_RUNNING"
    assert res["pod_ip_in_subnet"]
    assert res["ping_ok"]
    assert res["log_ok"]
    assert res["exec_stdout"] == "ok"
    assert res["runtime"].startswith("pykubelet ")
    _clean(cri)


def test_stop_racing_container_creates_leaves_nothing_running(cri) -> None:
    from concurrent.futures import ThreadPoolExecutor

    pod_id, pod_cfg = cri.run_pod("race")

    def create(i: int) -> str | grpc.StatusCode:
        try:
            return cri.start_container(pod_id, pod_cfg, f"c{i}", ["sleep", "1000"])
        except grpc.RpcError as exc:
            return exc.code()

    with ThreadPoolExecutor(6) as ex:
        futures = [ex.submit(create, i) for i in range(10)]
        time.sleep(0.1)
        cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
        results = [f.result() for f in futures]
    refused = [r for r in results if isinstance(r, grpc.StatusCode)]
    assert set(refused) <= {grpc.StatusCode.FAILED_PRECONDITION}
    states = {c.id: c.state for c in cri.runtime.ListContainers(
        pb.ListContainersRequest(), timeout=30).containers}
    assert pb.CONTAINER_RUNNING not in states.values(), "a container outlived its sandbox"
    assert len(states) + len(refused) == 10
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    _clean(cri)


def test_pod_sandbox_stats(cri) -> None:
    pod_id, pod_cfg = cri.run_pod("stats", labels={"stats": "yes"})
    other_id, _ = cri.run_pod("nostats")
    cid = cri.start_container(pod_id, pod_cfg, "busy", ["sh", "-c",
                                                        "i=0; while [ $i -lt 200000 ]; do "
                                                        "i=$((i+1)); done; sleep 1000"])
    ip = cri.pod_status(pod_id).status.network.ip
    subprocess.run(["ping", "-n", "-q", "-c", "3", "-i", "0.2", "-s", "1000", ip], check=True,
                   capture_output=True)
    st = cri.runtime.PodSandboxStats(pb.PodSandboxStatsRequest(pod_sandbox_id=pod_id),
                                     timeout=30).stats
    assert st.attributes.id == pod_id
    assert st.attributes.metadata.name == "stats"
    assert [c.attributes.id for c in st.linux.containers] == [cid]
    assert st.linux.cpu.usage_core_nano_seconds.value > 0
    assert st.linux.memory.working_set_bytes.value > 0
    eth0 = st.linux.network.default_interface
    assert eth0.name == "eth0"
    assert eth0.rx_bytes.value >= 3 * 1000
    assert eth0.tx_bytes.value >= 3 * 1000  # the echo replies
    listed = cri.runtime.ListPodSandboxStats(pb.ListPodSandboxStatsRequest(
        filter=pb.PodSandboxStatsFilter(label_selector={"stats": "yes"})), timeout=30).stats
    assert [s.attributes.id for s in listed] == [pod_id]
    everything = cri.runtime.ListPodSandboxStats(pb.ListPodSandboxStatsRequest(), timeout=30)
    assert {s.attributes.id for s in everything.stats} == {pod_id, other_id}
    for p in (pod_id, other_id):
        cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=p), timeout=60)
    _clean(cri)


def test_container_events_stream(cri) -> None:
    import threading

    pod_id, pod_cfg = cri.run_pod("events")
    stream = cri.runtime.GetContainerEvents(pb.GetEventsRequest())
    got: list[pb.ContainerEventResponse] = []
    errors: list[grpc.StatusCode] = []

    def collect() -> None:
        try:
            for ev in stream:
                got.append(ev)
        except grpc.RpcError as exc:
            errors.append(exc.code())

    reader = threading.Thread(target=collect)
    reader.start()
    try:
        time.sleep(1)  # the stream is set up and has its baseline
        cid = cri.start_container(pod_id, pod_cfg, "blip", ["sh", "-c", "sleep 1"])
        assert cri.wait_exited(cid).exit_code == 0
        cri.runtime.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)
        ours = lambda: [e for e in got if e.container_id == cid]  # noqa: E731
        _wait(lambda: len(ours()) >= 4, timeout=20)
        assert [e.container_event_type for e in ours()] == [
            pb.CONTAINER_CREATED_EVENT, pb.CONTAINER_STARTED_EVENT, pb.CONTAINER_STOPPED_EVENT,
            pb.CONTAINER_DELETED_EVENT]
        first = ours()[0]
        assert first.pod_sandbox_status.id == pod_id
        assert first.pod_sandbox_status.state == pb.SANDBOX_READY
        assert cid in [s.id for s in first.containers_statuses]
        assert all(e.created_at > 0 for e in ours())
    finally:
        stream.cancel()
        reader.join(10)
    assert not reader.is_alive()
    assert set(errors) <= {grpc.StatusCode.CANCELLED}
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    _clean(cri)
