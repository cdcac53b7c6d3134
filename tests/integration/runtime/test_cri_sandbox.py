"""Pod sandboxes through a real gRPC client on the runtime's socket (no containers needed).

Pinned namespaces, CNI through pycni with the reference plugins, hostPorts, filters,
bad requests, CNI failure rollback, and a runtime SIGKILLed and restarted.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb

pytestmark = [pytest.mark.root, pytest.mark.netns]


def _ping(ip: str, subnet: str, netns: str | None = None) -> bool:
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(subnet), "only ping our own pods"
    cmd = ["ping", "-n", "-q", "-c", "1", "-W", "2", ip]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    return subprocess.run(cmd, capture_output=True).returncode == 0


def _rpc_error(fn, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        fn(*args, timeout=30)
    return info.value


def test_version_status_and_socket_mode(cri) -> None:
    v = cri.runtime.Version(pb.VersionRequest(version="v1"))
    assert v.runtime_name == "pykubelet"
    assert v.runtime_api_version == "v1"
    assert stat.S_IMODE(os.stat(cri.sock).st_mode) == 0o600
    st = cri.runtime.Status(pb.StatusRequest(verbose=True))
    conds = {c.type: c for c in st.status.conditions}
    assert conds["NetworkReady"].status, conds["NetworkReady"].message
    assert conds["RuntimeReady"].status, conds["RuntimeReady"].message
    assert json.loads(st.info["config"])["cniConfDir"] == str(cri.conf_dir)
    cfg = cri.runtime.RuntimeConfig(pb.RuntimeConfigRequest())
    assert cfg.linux.cgroup_driver == pb.CGROUPFS
    cri.runtime.UpdateRuntimeConfig(pb.UpdateRuntimeConfigRequest(
        runtime_config=pb.RuntimeConfig(network_config=pb.NetworkConfig(pod_cidr=cri.subnet))))
    err = _rpc_error(cri.runtime.UpdateRuntimeConfig, pb.UpdateRuntimeConfigRequest(
        runtime_config=pb.RuntimeConfig(network_config=pb.NetworkConfig(pod_cidr="10.94.x/24"))))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "pod_cidr" in err.details()


def test_streaming_rpcs_check_their_target(cri) -> None:
    """Exec/Attach/PortForward are served (test_cri_streaming.py); unknown targets are
    NOT_FOUND, as containerd answers."""
    err = _rpc_error(cri.runtime.Exec, pb.ExecRequest(container_id="x", cmd=["sh"],
                                                      stdout=True))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = _rpc_error(cri.runtime.PortForward, pb.PortForwardRequest(pod_sandbox_id="x"))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_sandbox_lifecycle_pins_namespaces_and_networks(cri) -> None:
    dns = pb.DNSConfig(servers=["10.94.0.10"], searches=["default.svc.cluster.local"],
                       options=["ndots:5"])
    pod_id, _ = cri.run_pod("web", dns_config=dns, hostname="web-host")
    st = cri.pod_status(pod_id, verbose=True)
    assert st.status.state == pb.SANDBOX_READY
    assert st.status.metadata.name == "web"
    assert st.status.created_at > 0
    ip = st.status.network.ip
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(cri.subnet)
    assert _ping(ip, cri.subnet), "host cannot ping the pod"
    info = json.loads(st.info["info"])
    netns_path = info["netNamespacePath"]
    assert netns_path.startswith(f"/run/netns/{cri.netns_prefix}")
    name = os.path.basename(netns_path)
    assert name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    # the namespaces are held by bind mounts, with no process at all
    assert info["pid"] == 0
    out = subprocess.run(["nsenter", f"--uts={info['utsNamespacePath']}", "hostname"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "web-host"
    assert os.stat(info["ipcNamespacePath"]).st_ino != os.stat("/proc/self/ns/ipc").st_ino
    addrs = subprocess.run(["ip", "netns", "exec", name, "ip", "-o", "-4", "addr"],
                           capture_output=True, text=True, check=True).stdout
    assert "127.0.0.1/8" in addrs, "loopback was not set up"
    assert f"{ip}/24" in addrs
    resolv = Path(info["resolvPath"]).read_text()
    assert "nameserver 10.94.0.10" in resolv
    assert "search default.svc.cluster.local" in resolv
    assert "options ndots:5" in resolv
    assert f"{ip}\tweb-host" in Path(info["hostsPath"]).read_text()
    assert cri.ipam_files() == [ip]

    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id))
    st = cri.pod_status(pod_id)
    assert st.status.state == pb.SANDBOX_NOTREADY
    assert cri.ipam_files() == []
    assert cri.netns_pins() == []
    # stop is idempotent
    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id))

    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))
    assert cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items == []
    assert not (cri.root / "sandboxes" / pod_id).exists()
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}
    # remove is idempotent too
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))


def test_two_sandboxes_reach_each_other(cri) -> None:
    a, _ = cri.run_pod("a")
    b, _ = cri.run_pod("b")
    ip_a = cri.pod_status(a).status.network.ip
    ip_b = cri.pod_status(b).status.network.ip
    assert ip_a != ip_b
    ns_a = os.path.basename(json.loads(cri.pod_status(a, verbose=True).info["info"])
                            ["netNamespacePath"])
    ns_b = os.path.basename(json.loads(cri.pod_status(b, verbose=True).info["info"])
                            ["netNamespacePath"])
    assert _ping(ip_b, cri.subnet, netns=ns_a)
    assert _ping(ip_a, cri.subnet, netns=ns_b)
    for pod in (a, b):
        cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod))
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}


def test_host_port_is_mapped_and_unmapped(cri) -> None:
    port = 30000 + cri.index
    pod_id, _ = cri.run_pod("hp", port_mappings=[
        pb.PortMapping(protocol=pb.TCP, container_port=8080, host_port=port)])
    st = cri.pod_status(pod_id, verbose=True)
    info = json.loads(st.info["info"])
    assert info["portMappingsApplied"]
    ns = os.path.basename(info["netNamespacePath"])
    assert any(f"--dports {port}" in ln for ln in cri.iptables_lines())
    server = subprocess.Popen(
        ["ip", "netns", "exec", ns, "python3", "-c",
         "import socket; s=socket.socket();"
         "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1);"
         "s.bind(('0.0.0.0', 8080)); s.listen(1); print('up', flush=True);"
         "c,_=s.accept(); c.sendall(b'from-pod'); c.close()"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "up"
        # through the host port on the bridge's (host-local) address: DNAT to the pod
        with socket.create_connection((cri.gateway, port), timeout=5) as conn:
            assert conn.recv(100) == b"from-pod"
    finally:
        server.kill()
        server.wait()
        server.stdout.close()
    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id))
    assert cri.iptables_lines() == []
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))


def test_list_filters(cri) -> None:
    a, _ = cri.run_pod("fa", labels={"tier": "front", "io.kubernetes.pod.name": "fa"})
    b, _ = cri.run_pod("fb", labels={"tier": "back", "io.kubernetes.pod.name": "fb"})
    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=b))

    def ids(**f) -> set[str]:
        req = pb.ListPodSandboxRequest(filter=pb.PodSandboxFilter(**f))
        return {p.id for p in cri.runtime.ListPodSandbox(req).items}

    assert ids() == {a, b}
    assert ids(id=a) == {a}
    assert ids(id=b[:13]) == {b}
    assert ids(state=pb.PodSandboxStateValue(state=pb.SANDBOX_READY)) == {a}
    assert ids(state=pb.PodSandboxStateValue(state=pb.SANDBOX_NOTREADY)) == {b}
    assert ids(label_selector={"tier": "back"}) == {b}
    assert ids(label_selector={"tier": "back"},
               state=pb.PodSandboxStateValue(state=pb.SANDBOX_READY)) == set()
    # truncated ids work for status, as crictl sends them
    assert cri.pod_status(a[:12]).status.id == a


def test_bad_requests_get_clear_errors_and_change_nothing(cri) -> None:
    before = (cri.netns_pins(), sorted(os.listdir(cri.root / "sandboxes")))
    cfg = cri.pod_config("bad")
    cfg.ClearField("metadata")
    err = _rpc_error(cri.runtime.RunPodSandbox, pb.RunPodSandboxRequest(config=cfg))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "config.metadata" in err.details()

    cfg = cri.pod_config("bad")
    cfg.metadata.uid = ""
    err = _rpc_error(cri.runtime.RunPodSandbox, pb.RunPodSandboxRequest(config=cfg))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "config.metadata.uid" in err.details()

    cfg = cri.pod_config("bad", dns_config=pb.DNSConfig(servers=["not-an-ip"]))
    err = _rpc_error(cri.runtime.RunPodSandbox, pb.RunPodSandboxRequest(config=cfg))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "dns_config.servers[0]" in err.details()

    err = _rpc_error(cri.runtime.RunPodSandbox, pb.RunPodSandboxRequest(
        config=cri.pod_config("bad"), runtime_handler="kata"))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "runtime_handler" in err.details()

    cfg = cri.pod_config("bad", hostname="not_a_hostname!")
    err = _rpc_error(cri.runtime.RunPodSandbox, pb.RunPodSandboxRequest(config=cfg))
    assert "config.hostname" in err.details()

    err = _rpc_error(cri.runtime.PodSandboxStatus,
                     pb.PodSandboxStatusRequest(pod_sandbox_id="0" * 64))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert "not found" in err.details()
    err = _rpc_error(cri.runtime.StopPodSandbox, pb.StopPodSandboxRequest(pod_sandbox_id="0" * 64))
    assert err.code() == grpc.StatusCode.NOT_FOUND

    assert (cri.netns_pins(), sorted(os.listdir(cri.root / "sandboxes"))) == before
    assert cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items == []

    # the same pod twice: the second is refused, the first is untouched
    pod_id, cfg = cri.run_pod("dup")
    err = _rpc_error(cri.runtime.RunPodSandbox, pb.RunPodSandboxRequest(config=cfg))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS
    assert pod_id[:12] in err.details()
    assert [p.id for p in cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items] == [pod_id]
    assert cri.pod_status(pod_id).status.state == pb.SANDBOX_READY


def test_cni_failure_rolls_back_everything(cri_factory) -> None:
    rt = cri_factory(conf=False)
    # no network configured: NetworkReady false, RunPodSandbox refused
    st = rt.runtime.Status(pb.StatusRequest())
    conds = {c.type: c for c in st.status.conditions}
    assert not conds["NetworkReady"].status
    assert conds["NetworkReady"].reason == "NetworkPluginNotReady"
    err = _rpc_error(rt.runtime.RunPodSandbox, pb.RunPodSandboxRequest(config=rt.pod_config("n")))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "network not ready" in err.details()
    # a plugin that fails ADD: everything made so far is undone
    rt.write_conf(plugin_types=("bridge", "host-local", "rtcri-no-such-plugin"))
    err = _rpc_error(rt.runtime.RunPodSandbox, pb.RunPodSandboxRequest(config=rt.pod_config("f")))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert "rtcri-no-such-plugin" in err.details()
    assert rt.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items == []
    assert os.listdir(rt.root / "sandboxes") == []
    assert rt.leftovers() == {k: [] for k in rt.leftovers()}
    # fixing the conf dir is picked up without a restart
    rt.write_conf()
    pod_id, _ = rt.run_pod("f")
    assert rt.pod_status(pod_id).status.state == pb.SANDBOX_READY


@pytest.mark.parametrize("plugin_types", [
    # the network's first plugin is not on the bin path (pycni-bridge, /usr/lib/cni only):
    # loopback's ADD worked, the pod network's failed before doing anything
    ("pycni-bridge", "pycni-host-local", "portmap"),
    # the bridge and its IPAM worked, the next plugin is missing: they are undone
    ("bridge", "host-local", "rtcri-no-such-plugin"),
])
def test_failed_sandboxes_leave_nothing_in_the_cni_cache(cri_factory, plugin_types) -> None:
    """Every failed RunPodSandbox (kubelet retries one every 2 s) leaves nothing: no
    cached result (loopback's included), no IP reserved, no veth, pin or sandbox dir."""
    rt = cri_factory(conf=False)
    rt.write_conf(plugin_types=plugin_types)
    for _ in range(4):
        err = _rpc_error(rt.runtime.RunPodSandbox,
                         pb.RunPodSandboxRequest(config=rt.pod_config("leak")))
        assert err.code() == grpc.StatusCode.UNAVAILABLE
        assert rt.cni_cache_files() == []
    assert rt.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items == []
    assert os.listdir(rt.root / "sandboxes") == []
    assert rt.leftovers() == {k: [] for k in rt.leftovers()}


def test_runtime_killed_and_restarted_keeps_sandboxes(cri) -> None:
    pod_id, _ = cri.run_pod("survivor")
    stopped_id, _ = cri.run_pod("stopped")
    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=stopped_id))
    ip = cri.pod_status(pod_id).status.network.ip
    cri.kill()  # SIGKILL: no chance to clean up or save anything
    assert _ping(ip, cri.subnet), "the pod's network must outlive the runtime"
    cri.start()
    items = {p.id: p.state for p in cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items}
    assert items == {pod_id: pb.SANDBOX_READY, stopped_id: pb.SANDBOX_NOTREADY}
    assert cri.pod_status(pod_id).status.network.ip == ip
    # the name stays reserved across the restart
    err = _rpc_error(cri.runtime.RunPodSandbox,
                     pb.RunPodSandboxRequest(config=cri.pod_config("survivor")))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS
    for p in (pod_id, stopped_id):
        cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=p))
        cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=p))
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}


def test_host_network_sandbox_uses_node_namespaces(cri) -> None:
    cfg = cri.pod_config("hostnet")
    cfg.linux.security_context.namespace_options.network = pb.NODE
    cfg.linux.security_context.namespace_options.ipc = pb.NODE
    resp = cri.runtime.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg))
    st = cri.pod_status(resp.pod_sandbox_id, verbose=True)
    assert st.status.state == pb.SANDBOX_READY
    assert st.status.network.ip == ""
    assert st.status.linux.namespaces.options.network == pb.NODE
    info = json.loads(st.info["info"])
    assert info["netNamespacePath"] == ""
    assert cri.netns_pins() == []
    assert cri.ipam_files() == []
    assert Path(info["hostnamePath"]).read_text().strip() == os.uname().nodename
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=resp.pod_sandbox_id))


def test_many_sandboxes_in_parallel(cri) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> str:
        return cri.run_pod(f"par{i}")[0]

    t0 = time.monotonic()
    with ThreadPoolExecutor(6) as ex:
        ids = list(ex.map(one, range(6)))
    assert time.monotonic() - t0 < 120
    ips = {cri.pod_status(i).status.network.ip for i in ids}
    assert len(ips) == 6
    with ThreadPoolExecutor(6) as ex:
        list(ex.map(lambda i: cri.runtime.RemovePodSandbox(
            pb.RemovePodSandboxRequest(pod_sandbox_id=i), timeout=60), ids))
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}


def test_shared_pid_namespace_has_an_init_that_survives_restarts(cri) -> None:
    cfg = cri.pod_config("sharedpid")
    cfg.linux.security_context.namespace_options.pid = pb.POD
    pod_id = cri.runtime.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg)).pod_sandbox_id
    info = json.loads(cri.pod_status(pod_id, verbose=True).info["info"])
    holder = info["pid"]
    assert holder > 0
    assert os.readlink(f"/proc/{holder}/exe").endswith("catatonit")
    assert info["pidNamespacePath"] == f"/proc/{holder}/ns/pid"
    # a process joining the pod's PID namespace is PID 2 there: catatonit is its init
    out = subprocess.run(["nsenter", f"--pid={info['pidNamespacePath']}", "--", "sh", "-c",
                          "echo $$"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "2"
    cri.kill()
    cri.start()
    assert cri.pod_status(pod_id).status.state == pb.SANDBOX_READY
    cri.runtime.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id))
    assert not os.path.exists(f"/proc/{holder}")
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}


def test_sandbox_sysctls_apply_inside_the_pod_only(cri) -> None:
    cfg = cri.pod_config("sysctl")
    cfg.linux.sysctls["net.ipv4.ip_unprivileged_port_start"] = "79"
    cfg.linux.sysctls["kernel/shmmni"] = "1234"
    pod_id = cri.runtime.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg)).pod_sandbox_id
    info = json.loads(cri.pod_status(pod_id, verbose=True).info["info"])
    inside = subprocess.run(
        ["nsenter", f"--net={info['netNamespacePath']}", f"--ipc={info['ipcNamespacePath']}",
         "sh", "-c", "cat /proc/sys/net/ipv4/ip_unprivileged_port_start /proc/sys/kernel/shmmni"],
        capture_output=True, text=True, check=True).stdout.split()
    assert inside == ["79", "1234"]
    assert Path("/proc/sys/kernel/shmmni").read_text().strip() != "1234"
    # a value the kernel refuses fails the request and leaves nothing
    bad = cri.pod_config("badsysctl")
    bad.linux.sysctls["net.ipv4.no_such_knob"] = "1"
    err = _rpc_error(cri.runtime.RunPodSandbox, pb.RunPodSandboxRequest(config=bad))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "net.ipv4.no_such_knob" in err.details()
    assert [p.id for p in cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items] == [pod_id]
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}


def test_restart_finishes_half_made_sandboxes_and_orphans(cri) -> None:
    """A crash in the middle of RunPodSandbox (simulated on the checkpoint) leaks nothing,
    and a pin another runtime made with the same prefix is left alone."""
    pod_id, _ = cri.run_pod("halfmade")
    ip = cri.pod_status(pod_id).status.network.ip
    cri.kill()
    from pykubelet.runtime.sandbox import decode_checkpoint, encode_checkpoint

    ckpt = cri.root / "sandboxes" / pod_id / "sandbox.json"
    info = decode_checkpoint(ckpt.read_bytes())
    info.state = "CREATING"  # as if killed between CNI ADD and the READY checkpoint
    ckpt.write_bytes(encode_checkpoint(info))
    foreign_pin = f"{cri.netns_prefix}another-runtime"
    subprocess.run(["ip", "netns", "add", foreign_pin], check=True)
    try:
        (cri.root / "sandboxes" / ("e" * 64)).mkdir()  # killed right after mkdir
        cri.start()
        st = cri.pod_status(pod_id)
        assert st.status.state == pb.SANDBOX_NOTREADY
        assert cri.ipam_files() == [], f"{ip} still reserved"
        assert cri.netns_pins() == [foreign_pin]
        assert os.listdir(cri.root / "sandboxes") == [pod_id]
    finally:
        subprocess.run(["ip", "netns", "delete", foreign_pin], check=True)
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}


def test_pods_on_pycni_plugins_in_process(cri_factory, tmp_path: Path) -> None:
    """The same runtime on our own plugins (pycni-bridge, pycni-host-local), run in-process."""
    bin_dir = tmp_path / "pycni-bin"
    subprocess.run([str(Path(sys.executable).parent / "pycni"), "install", "--bin-dir",
                    str(bin_dir)], check=True, capture_output=True)
    rt = cri_factory(conf=False, extra_args=["--cni-bin-dir", str(bin_dir)])
    rt.write_conf(plugin_types=("pycni-bridge", "pycni-host-local", ""))
    a, _ = rt.run_pod("pya")
    b, _ = rt.run_pod("pyb")
    ip_a = rt.pod_status(a).status.network.ip
    ip_b = rt.pod_status(b).status.network.ip
    assert ipaddress.ip_address(ip_a) in ipaddress.ip_network(rt.subnet)
    assert _ping(ip_a, rt.subnet)
    ns_b = os.path.basename(json.loads(rt.pod_status(b, verbose=True).info["info"])
                            ["netNamespacePath"])
    assert _ping(ip_a, rt.subnet, netns=ns_b)
    assert sorted(rt.ipam_files()) == sorted([ip_a, ip_b])
    for pod in (a, b):
        rt.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod))
    assert rt.leftovers() == {k: [] for k in rt.leftovers()}


def test_sigterm_stops_the_runtime_cleanly_and_pods_stay(cri) -> None:
    pod_id, _ = cri.run_pod("calm")
    ip = cri.pod_status(pod_id).status.network.ip
    proc = cri.proc
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    assert not os.path.exists(cri.sock), "socket left behind after a clean stop"
    assert _ping(ip, cri.subnet)
    cri.kill()  # only closes the client: the process is gone
    cri.start()
    assert cri.pod_status(pod_id).status.state == pb.SANDBOX_READY
    cri.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}


SLOW_PLUGIN = """#!/usr/bin/env python3
# A CNI plugin that takes its time on ADD and passes prevResult through (crash tests).
import json, os, sys, time
conf = json.load(sys.stdin)
cmd = os.environ.get("CNI_COMMAND")
if cmd == "VERSION":
    print(json.dumps({"cniVersion": conf.get("cniVersion", "1.0.0"),
                      "supportedVersions": ["0.4.0", "1.0.0"]}))
elif cmd == "ADD":
    open(os.environ["RTCRI_SLOW_MARK"], "w").close()
    time.sleep(float(conf.get("sleep", 5)))
    print(json.dumps(conf["prevResult"]))
"""


def test_runtime_killed_during_cni_add_leaks_nothing(cri_factory, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL while the chain's second plugin runs: the restart undoes the first one's work."""
    bin_dir = tmp_path / "slow-bin"
    bin_dir.mkdir()
    plugin = bin_dir / "rtcri-slow"
    plugin.write_text(SLOW_PLUGIN)
    plugin.chmod(0o755)
    mark = tmp_path / "slow-started"
    monkeypatch.setenv("RTCRI_SLOW_MARK", str(mark))  # the runtime passes it to plugins
    rt = cri_factory(conf=False, extra_args=["--cni-bin-dir", str(bin_dir)])
    rt.write_conf(plugin_types=("bridge", "host-local", "rtcri-slow"))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as ex:
        fut = ex.submit(rt.run_pod, "crashy")
        deadline = time.monotonic() + 30
        while not mark.exists():
            assert time.monotonic() < deadline, "the slow plugin never ran"
            time.sleep(0.02)
        assert len(rt.ipam_files()) == 1, "bridge + host-local ran first"
        rt.kill()
        with pytest.raises(grpc.RpcError):
            fut.result()
    rt.start()
    pods = rt.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items
    assert [p.state for p in pods] == [pb.SANDBOX_NOTREADY]
    assert rt.ipam_files() == []
    assert rt.veths() == []
    assert rt.netns_pins() == []
    rt.runtime.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pods[0].id))
    assert rt.leftovers() == {k: [] for k in rt.leftovers()}


def test_corrupt_checkpoint_is_collected_with_its_pins(cri) -> None:
    pod_id, _ = cri.run_pod("corrupt")
    cri.kill()
    ckpt = cri.root / "sandboxes" / pod_id / "sandbox.json"
    ckpt.write_text(ckpt.read_text().replace('"SANDBOX_READY"', '"SANDBOX_NOTREADY"'))
    cri.start()  # checksum mismatch: the record is unusable, its namespaces are released
    assert cri.runtime.ListPodSandbox(pb.ListPodSandboxRequest()).items == []
    assert "checksum mismatch" in cri.log()
    assert os.listdir(cri.root / "sandboxes") == []
    # its network too, from libcni's cache of what ADD used
    assert cri.leftovers() == {k: [] for k in cri.leftovers()}
