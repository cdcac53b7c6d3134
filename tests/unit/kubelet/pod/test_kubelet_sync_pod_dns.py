"""SyncPod hands the runtime the DNS the kubelet's configurer forms (the node config's
clusterDNS, clusterDomain, resolvConf), and an unreadable resolvConf starts no sandbox."""

from __future__ import annotations

from pathlib import Path

from kubelet_builders import make_pod

from pykubelet.config import KubeletConfig
from pykubelet.kubelet.agent import ERROR_REQUEUE_S, Kubelet
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.pod_workers import UpdateType
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService

IMAGE = "busybox:1.36"


def kubelet(tmp_path: Path, resolv: Path) -> tuple[Kubelet, FakeRuntimeService]:
    runtime = FakeRuntimeService()
    runtime.add_image(IMAGE)
    config = KubeletConfig(
        nodeName="fake-node", rootDir=str(tmp_path / "root"), runDir=str(tmp_path / "run"),
        staticPodPath="", podLogsDir=str(tmp_path / "logs"), healthzPort=0,
        clusterDNS=["10.96.0.10"], clusterDomain="cluster.local", resolvConf=str(resolv))
    return Kubelet(config, runtime, memory_capacity=1 << 30, node_ips=["192.0.2.10"]), runtime


def test_sandbox_gets_the_cluster_dns(tmp_path: Path) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\nsearch lab\n")
    k, runtime = kubelet(tmp_path, resolv)
    try:
        pod = make_pod(("app",))
        k.pod_manager.add_pod(pod)
        k.sync_pod(pod, UpdateType.SYNC)
        [sb] = runtime.sandboxes.values()
        dns = sb.config.dns_config
        assert list(dns.servers) == ["10.96.0.10"]
        assert list(dns.searches) == [f"{pod.namespace}.svc.cluster.local", "svc.cluster.local",
                                      "cluster.local", "lab"]
        assert list(dns.options) == ["ndots:5"]
    finally:
        k.stop()


def test_unreadable_resolv_conf_starts_no_sandbox(tmp_path: Path) -> None:
    k, runtime = kubelet(tmp_path, tmp_path / "absent.conf")
    try:
        pod = make_pod(("app",))
        k.pod_manager.add_pod(pod)
        assert k.sync_pod(pod, UpdateType.SYNC) == ERROR_REQUEUE_S
        assert runtime.count("RunPodSandbox") == 0
        status = k.status_manager.get_pod_status(pod.uid)
        assert status is not None
        assert status.phase == "Pending"
        assert status.reason == reasons.CREATE_POD_SANDBOX_ERROR
        assert status.message.startswith(
            f'GeneratePodSandboxConfig for pod "web_default({pod.uid})" failed: ')
        assert "absent.conf" in status.message
    finally:
        k.stop()
