"""PodSandboxConfig and ContainerConfig generation (kuberuntime's generate* functions)."""

from __future__ import annotations

import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.kubelet.kuberuntime.container_config import (
    ContainerConfigError,
    expand,
    generate_container_config,
    make_environment,
    qos_class,
)
from pykubelet.kubelet.kuberuntime.labels import parse_container_labels
from pykubelet.kubelet.kuberuntime.sandbox_config import (
    generate_pod_sandbox_config,
    pod_cgroup_parent,
    pod_hostname_and_domain,
)


def make_pod(**spec):
    containers = spec.pop("containers", [{"name": "app", "image": "busybox:1"}])
    obj = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "ns1", "uid": "u-1",
                     "labels": {"app": "web"}, "annotations": {"a": "b"}},
        "spec": {"containers": containers, **spec},
    }
    pod = decode_pod(obj)
    set_defaults_pod(pod)
    return pod


@pytest.mark.parametrize(
    ("text", "env", "want"),
    [
        ("$(A)-$(B)", {"A": "1", "B": "2"}, "1-2"),
        ("$(MISSING)", {}, "$(MISSING)"),
        ("$$(A)", {"A": "1"}, "$(A)"),
        ("a$", {}, "a$"),
        ("$(A", {"A": "1"}, "$(A"),
        ("cost $5", {}, "cost $5"),
    ],
)
def test_expand(text, env, want):
    assert expand(text, env) == want


def test_sandbox_config():
    pod = make_pod(hostname="h1", subdomain="sub", terminationGracePeriodSeconds=3,
                   containers=[{"name": "app", "image": "busybox:1",
                                "ports": [{"containerPort": 80, "hostPort": 8080}]}])
    cfg = generate_pod_sandbox_config(pod, 2, "node-a", "/var/log/pods")
    assert cfg.metadata.name == "web"
    assert cfg.metadata.namespace == "ns1"
    assert cfg.metadata.uid == "u-1"
    assert cfg.metadata.attempt == 2
    assert cfg.hostname == "h1"
    assert cfg.log_directory == "/var/log/pods/ns1_web_u-1"
    assert cfg.labels["io.kubernetes.pod.name"] == "web"
    assert cfg.labels["io.kubernetes.pod.uid"] == "u-1"
    assert cfg.labels["app"] == "web"
    assert cfg.annotations["a"] == "b"
    assert cfg.port_mappings[0].host_port == 8080
    ns = cfg.linux.security_context.namespace_options
    assert (ns.network, ns.pid, ns.ipc) == (pb.POD, pb.CONTAINER, pb.POD)
    assert cfg.linux.cgroup_parent == "/kubepods/besteffort/podu-1"
    assert pod_hostname_and_domain(pod) == ("h1", "sub.ns1.svc.cluster.local")


def test_sandbox_host_network_and_shared_pid():
    pod = make_pod(hostNetwork=True, shareProcessNamespace=True)
    cfg = generate_pod_sandbox_config(pod, 0, "n", "/l")
    ns = cfg.linux.security_context.namespace_options
    assert ns.network == pb.NODE
    assert ns.pid == pb.POD
    assert cfg.hostname == ""  # the node's


def test_sandbox_dns_from_the_kubelet_configurer(tmp_path):
    """The sandbox's DNSConfig comes from the kubelet's clusterDNS/clusterDomain, so a
    ClusterFirst pod's resolv.conf names the cluster DNS server (before: the node's)."""
    from pykubelet.kubelet.network.dns import Configurer

    host = tmp_path / "resolv.conf"
    host.write_text("nameserver 192.0.2.1\nsearch lab\n")
    dns = Configurer(["10.96.0.10"], "k.example", str(host))
    cfg = generate_pod_sandbox_config(make_pod(subdomain="sub"), 0, "n", "/l", dns)
    assert list(cfg.dns_config.servers) == ["10.96.0.10"]
    assert list(cfg.dns_config.searches) == ["ns1.svc.k.example", "svc.k.example", "k.example",
                                             "lab"]
    assert list(cfg.dns_config.options) == ["ndots:5"]
    assert pod_hostname_and_domain(make_pod(subdomain="sub"), "k.example") == (
        "web", "sub.ns1.svc.k.example")


def test_container_config_env_resources_mounts():
    pod = make_pod(
        containers=[{
            "name": "app", "image": "busybox:1", "command": ["echo", "$(GREETING)"],
            "args": ["$(NS)"],
            "env": [
                {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "GREETING", "value": "hi-$(NS)"},
                {"name": "MEM", "valueFrom": {"resourceFieldRef": {
                    "resource": "limits.memory", "divisor": "1Mi"}}},
            ],
            "resources": {"requests": {"cpu": "250m", "memory": "32Mi"},
                          "limits": {"cpu": "500m", "memory": "64Mi"}},
            "volumeMounts": [{"name": "v", "mountPath": "/data", "readOnly": True}],
        }],
        volumes=[{"name": "v", "emptyDir": {}}],
    )
    c = pod.spec.containers[0]
    cfg = generate_container_config(
        pod, c, restart_count=3, spec_hash="abc", container_type="regular",
        image="busybox:1", pod_ip="10.1.2.3", volume_paths={"v": "/host/v"},
        etc_hosts="/host/etc-hosts", memory_capacity=4 << 30,
    )
    assert cfg.metadata.name == "app"
    assert cfg.metadata.attempt == 3
    assert cfg.log_path == "app/3.log"
    assert list(cfg.command) == ["echo", "hi-ns1"]
    assert list(cfg.args) == ["ns1"]
    env = {kv.key: kv.value for kv in cfg.envs}
    assert env == {"NS": "ns1", "IP": "10.1.2.3", "GREETING": "hi-ns1", "MEM": "64"}
    res = cfg.linux.resources
    assert res.cpu_shares == 256
    assert res.cpu_quota == 50_000
    assert res.cpu_period == 100_000
    assert res.memory_limit_in_bytes == 64 << 20
    assert 2 <= res.oom_score_adj <= 999  # Burstable
    mounts = {m.container_path: m for m in cfg.mounts}
    assert mounts["/data"].host_path == "/host/v"
    assert mounts["/data"].readonly
    assert mounts["/etc/hosts"].host_path == "/host/etc-hosts"
    info = parse_container_labels(cfg.labels, cfg.annotations)
    assert info.container_name == "app"
    assert info.pod_uid == "u-1"
    assert info.restart_count == 3
    assert info.spec_hash == "abc"
    assert "/proc/kcore" in cfg.linux.security_context.masked_paths


def test_qos_and_cgroup_parent():
    best = make_pod()
    assert qos_class(best) == "BestEffort"
    g = make_pod(containers=[{"name": "a", "image": "b:1", "resources": {
        "limits": {"cpu": "1", "memory": "1Gi"}}}])
    assert qos_class(g) == "Guaranteed"
    assert pod_cgroup_parent(g) == "/kubepods/podu-1"


def test_config_errors_name_the_field():
    pod = make_pod(containers=[{
        "name": "app", "image": "b:1",
        "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.nope"}}}],
    }])
    with pytest.raises(ContainerConfigError, match=r"env\[0\]\(X\).valueFrom.fieldRef"):
        make_environment(pod, pod.spec.containers[0], "")
    pod = make_pod(containers=[{
        "name": "app", "image": "b:1", "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}])
    with pytest.raises(ContainerConfigError, match=r"volumeMounts\[0\]\(nope\)"):
        generate_container_config(
            pod, pod.spec.containers[0], restart_count=0, spec_hash="", container_type="regular",
            image="b:1", pod_ip="", volume_paths={}, etc_hosts=None, memory_capacity=1 << 30)


def test_pod_resource_config():
    from pykubelet.kubelet.cm.pod_container_manager import resource_config_for_pod

    best = resource_config_for_pod(make_pod())
    assert (best.cpu_shares, best.cpu_quota, best.memory_limit) == (2, None, None)
    pod = make_pod(
        containers=[
            {"name": "a", "image": "b:1", "resources": {
                "requests": {"cpu": "100m"}, "limits": {"cpu": "200m", "memory": "64Mi"}}},
            {"name": "b", "image": "b:1", "resources": {
                "requests": {"cpu": "300m"}, "limits": {"cpu": "300m", "memory": "32Mi"}}},
        ],
        initContainers=[{"name": "i", "image": "b:1", "resources": {
            "limits": {"cpu": "2", "memory": "16Mi"}}}],
    )
    cfg = resource_config_for_pod(pod)
    assert cfg.cpu_shares == 2048  # max(sum of app requests 400m, init request 2) = 2 cpus
    assert cfg.cpu_quota == 200_000  # max(500m, 2) cpus
    assert cfg.memory_limit == 96 << 20
    partial = make_pod(containers=[
        {"name": "a", "image": "b:1", "resources": {"limits": {"memory": "64Mi"}}},
        {"name": "b", "image": "b:1"},
    ])
    assert resource_config_for_pod(partial).memory_limit is None


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        ({}, 1000),  # BestEffort
        ({"requests": {"memory": "1Gi"}}, 750),  # Burstable: 1000 - 1000*1Gi/4Gi
        ({"requests": {"memory": "4Gi"}}, 3),  # floored above Guaranteed's -997
        ({"requests": {"cpu": "100m"}}, 999),  # Burstable never equals BestEffort's 1000
    ],
)
def test_oom_score_adj_by_qos(resources, want):
    """GetContainerOOMScoreAdjust, clamped to our own value (no CAP_SYS_RESOURCE here)."""
    from pykubelet.kubelet.kuberuntime.container_config import oom_score_adj
    from pykubelet.oom import own_oom_score_adj

    pod = make_pod(containers=[{"name": "a", "image": "b:1", "resources": resources}])
    got = oom_score_adj(pod, pod.spec.containers[0], memory_capacity=4 << 30)
    assert got == max(want, own_oom_score_adj())


def test_qos_class_zero_quantities_match_status_rules():
    """A zero request/limit counts as unset, as in v1qos.GetPodQOS."""
    pod = make_pod(containers=[{"name": "a", "image": "b:1", "resources": {
        "limits": {"cpu": "0", "memory": "0"}}}])
    assert qos_class(pod) == "BestEffort"


@pytest.mark.parametrize(
    ("security_context", "want"),
    [
        (None, False),  # Kubernetes' default: escalation allowed, setuid programs work
        ({}, False),
        ({"allowPrivilegeEscalation": True}, False),
        ({"allowPrivilegeEscalation": False}, True),  # the only case (AddNoNewPrivileges)
        ({"privileged": True}, False),
    ],
)
def test_no_new_privs_from_allow_privilege_escalation(security_context, want):
    container = {"name": "app", "image": "busybox:1"}
    if security_context is not None:
        container["securityContext"] = security_context
    pod = make_pod(containers=[container])
    cfg = generate_container_config(
        pod, pod.spec.containers[0], restart_count=0, spec_hash="h", container_type="regular",
        image="busybox:1", pod_ip="", volume_paths={}, etc_hosts=None, memory_capacity=1 << 30,
    )
    assert cfg.linux.security_context.no_new_privs is want
