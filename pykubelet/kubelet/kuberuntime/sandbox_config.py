"""PodSandboxConfig from a Pod, as kuberuntime_sandbox.go's generatePodSandboxConfig.

Metadata (name, namespace, uid, attempt), hostname (spec.hostname or the pod name; not
set for hostNetwork pods, which keep the node's), the log directory
``<podLogsDir>/<ns>_<name>_<uid>``, DNS, host ports, kubelet's labels, and the Linux
part: namespaces (hostNetwork/hostPID/hostIPC, shareProcessNamespace), sysctls, the
security context, and the pod's resources (sum of container limits).
"""

from __future__ import annotations

import os
from pathlib import Path

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.qos import qos_class
from pykubelet.api.types import Container, Pod
from pykubelet.kubelet.kuberuntime.labels import new_pod_annotations, new_pod_labels
from pykubelet.kubelet.kuberuntime.seccomp import seccomp_profile
from pykubelet.kubelet.network.dns import Configurer

CLUSTER_DOMAIN = "cluster.local"
HOSTNAME_MAX = 63


def pod_log_dir(pod_logs_dir: str, pod: Pod) -> str:
    """kubelet's BuildPodLogsDirectory: <root>/<namespace>_<name>_<uid>."""
    return str(Path(pod_logs_dir) / f"{pod.namespace}_{pod.name}_{pod.uid}")


def pod_hostname_and_domain(pod: Pod, cluster_domain: str = CLUSTER_DOMAIN) -> tuple[str, str]:
    """GeneratePodHostNameAndDomain: spec.hostname or the pod name (truncated to 63),
    and <subdomain>.<namespace>.svc.<cluster domain> when a subdomain is set."""
    hostname = pod.spec.hostname or pod.name
    hostname = hostname[:HOSTNAME_MAX].rstrip("-.")
    domain = ""
    if pod.spec.subdomain:
        domain = f"{pod.spec.subdomain}.{pod.namespace}.svc.{cluster_domain}"
    return hostname, domain


def namespace_options(pod: Pod) -> pb.NamespaceOption:
    """kubelet's namespacesForPod."""
    opt = pb.NamespaceOption(
        network=pb.NODE if pod.spec.host_network else pb.POD,
        ipc=pb.NODE if pod.spec.host_ipc else pb.POD,
        pid=pb.CONTAINER,
    )
    if pod.spec.host_pid:
        opt.pid = pb.NODE
    elif pod.spec.share_process_namespace:
        opt.pid = pb.POD
    return opt


def _port_mappings(pod: Pod) -> list[pb.PortMapping]:
    out = []
    protos = {"TCP": pb.TCP, "UDP": pb.UDP, "SCTP": pb.SCTP}
    for c in pod.spec.containers:
        for p in c.ports:
            if not p.host_port:
                continue
            out.append(
                pb.PortMapping(
                    protocol=protos.get(p.protocol or "TCP", pb.TCP),
                    container_port=p.container_port,
                    host_port=p.host_port,
                    host_ip=p.host_ip,
                )
            )
    return out


def _limit_bytes(c: Container) -> int:
    q = c.resources.limits.get("memory")
    return q.value() if q is not None else 0


def _limit_milli(c: Container) -> int:
    q = c.resources.limits.get("cpu")
    return q.milli_value() if q is not None else 0


CGROUP_ROOT = Path("/sys/fs/cgroup")


def pod_cgroup_parent(pod: Pod) -> str:
    """kubelet's pod cgroup (cgroupfs driver, cgroupsPerQOS): /kubepods[/<qos>]/pod<uid>."""
    qos = qos_class(pod)
    if qos == "Guaranteed":
        return f"/kubepods/pod{pod.uid}"
    return f"/kubepods/{qos.lower()}/pod{pod.uid}"


def remove_pod_cgroups(uid: str) -> None:
    """Remove the pod's (empty) cgroup directories in every hierarchy, as kubelet's pod
    container manager does once the pod's containers are gone."""
    if not CGROUP_ROOT.is_dir():
        return
    for hier in CGROUP_ROOT.iterdir():
        for rel in (f"kubepods/pod{uid}", f"kubepods/burstable/pod{uid}",
                    f"kubepods/besteffort/pod{uid}"):
            d = hier / rel
            if not d.is_dir():
                continue
            for sub in sorted((p for p in d.rglob("*") if p.is_dir()),
                              key=lambda p: len(str(p)), reverse=True):
                try:
                    sub.rmdir()
                except OSError:
                    pass
            try:
                d.rmdir()
            except OSError:
                pass


def pod_resources(pod: Pod) -> pb.LinuxContainerResources | None:
    """The pod's limits when every container has them (kubelet's pod-level resources)."""
    if not pod.spec.containers:
        return None
    mem = [_limit_bytes(c) for c in pod.spec.containers]
    cpu = [_limit_milli(c) for c in pod.spec.containers]
    res = pb.LinuxContainerResources()
    if all(mem):
        res.memory_limit_in_bytes = sum(mem)
    if all(cpu):
        res.cpu_period = 100_000
        res.cpu_quota = sum(cpu) * 100_000 // 1000
    return res if (all(mem) or all(cpu)) else None


def generate_pod_sandbox_config(
    pod: Pod, attempt: int, node_name: str, pod_logs_dir: str, dns: Configurer | None = None,
    seccomp_profile_root: str = "",
) -> pb.PodSandboxConfig:
    """The PodSandboxConfig kubelet would send for ``pod`` at sandbox ``attempt``; its DNS
    from ``dns`` (the kubelet's configurer; default: no cluster DNS, the node's
    resolv.conf). Raises OSError when the node's resolv.conf cannot be read, and
    SeccompProfileError for a Localhost seccomp profile without its file."""
    cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(
            name=pod.name, namespace=pod.namespace, uid=pod.uid, attempt=attempt
        ),
        log_directory=pod_log_dir(pod_logs_dir, pod),
        labels=new_pod_labels(pod),
        annotations=new_pod_annotations(pod, node_name),
    )
    if not pod.spec.host_network:
        hostname, _domain = pod_hostname_and_domain(pod)
        cfg.hostname = hostname
    cfg.dns_config.CopyFrom((dns or Configurer()).get_pod_dns(pod))
    cfg.port_mappings.extend(_port_mappings(pod))

    linux = cfg.linux
    linux.cgroup_parent = pod_cgroup_parent(pod)
    sc = linux.security_context
    sc.namespace_options.CopyFrom(namespace_options(pod))
    psc = pod.spec.security_context
    sc.seccomp.CopyFrom(seccomp_profile(psc, None, seccomp_profile_root))
    if psc is not None:
        if psc.run_as_user is not None:
            sc.run_as_user.value = psc.run_as_user
        if psc.run_as_group is not None:
            sc.run_as_group.value = psc.run_as_group
        sc.supplemental_groups.extend(psc.supplemental_groups)
        if psc.fs_group is not None:
            sc.supplemental_groups.append(psc.fs_group)
        for s in psc.sysctls:
            linux.sysctls[s.name] = s.value
    sc.privileged = any(
        c.security_context is not None and bool(c.security_context.privileged)
        for c in pod.all_containers()
    )
    res = pod_resources(pod)
    if res is not None:
        linux.resources.CopyFrom(res)
    return cfg


def ensure_log_dir(cfg: pb.PodSandboxConfig) -> None:
    """kubelet creates the pod's log directory before RunPodSandbox."""
    os.makedirs(cfg.log_directory, mode=0o755, exist_ok=True)
