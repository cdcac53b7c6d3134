"""ContainerConfig from a pod's container, as kuberuntime_container.go's
generateContainerConfig: metadata (name, attempt = restart count), image, command and args
with $(VAR) expansion, env (values, $(VAR) references, fieldRef and resourceFieldRef),
mounts from volumeMounts (plus kubelet's /etc/hosts), the log path
``<container>/<restartCount>.log``, kubelet's labels and annotations, and the Linux part:
resources (cpu shares/quota, memory limit, QoS oom_score_adj) and the security context.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.qos import container_oom_score_adj
from pykubelet.api.qos import qos_class as qos_class
from pykubelet.api.types import Container, Pod
from pykubelet.kubelet.cluster.object_refs import ObjectRefs, RefError
from pykubelet.kubelet.kuberuntime.envvars import service_env_var_map
from pykubelet.kubelet.kuberuntime.labels import new_container_annotations, new_container_labels
from pykubelet.kubelet.kuberuntime.sandbox_config import namespace_options
from pykubelet.kubelet.kuberuntime.seccomp import SeccompProfileError, seccomp_profile
from pykubelet.oom import own_oom_score_adj

log = logging.getLogger(__name__)

CPU_PERIOD = 100_000
MIN_SHARES = 2
MAX_SHARES = 262_144
MIN_QUOTA = 1000

DEFAULT_MASKED_PATHS = [
    "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
    "/sys/firmware", "/sys/devices/virtual/powercap",
]
DEFAULT_READONLY_PATHS = [
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
]


_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class ContainerConfigError(Exception):
    """The container cannot be configured (kubelet's CreateContainerConfigError)."""


def expand(text: str, mapping: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: $(NAME) -> value when defined, $$ -> $."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2 : end]
                    out.append(mapping[name] if name in mapping else text[i : end + 1])
                    i = end + 1
                    continue
        out.append(ch)
        i += 1
    return "".join(out)


def _field_ref(pod: Pod, path: str, pod_ip: str, host_ip: str, where: str) -> str:
    simple = {
        "metadata.name": pod.metadata.name,
        "metadata.namespace": pod.metadata.namespace,
        "metadata.uid": pod.metadata.uid,
        "spec.nodeName": pod.spec.node_name,
        "spec.serviceAccountName": pod.spec.service_account_name,
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": host_ip,
        "status.hostIPs": host_ip,
    }
    if path in simple:
        return simple[path]
    for prefix, source in (
        ("metadata.labels", pod.metadata.labels),
        ("metadata.annotations", pod.metadata.annotations),
    ):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return source.get(path[len(prefix) + 2 : -2], "")
    raise ContainerConfigError(f"{where}.valueFrom.fieldRef.fieldPath: unsupported {path!r}")


def _resource_ref(pod: Pod, container: Container, ref: object, where: str) -> str:
    resource = getattr(ref, "resource", "")
    cname = getattr(ref, "container_name", "") or container.name
    target = next((c for c in pod.all_containers() if c.name == cname), None)
    if target is None:
        raise ContainerConfigError(f"{where}.valueFrom.resourceFieldRef: no container {cname!r}")
    kind, _, res = resource.partition(".")
    table = target.resources.limits if kind == "limits" else target.resources.requests
    if kind not in ("limits", "requests") or res not in ("cpu", "memory", "ephemeral-storage"):
        raise ContainerConfigError(
            f"{where}.valueFrom.resourceFieldRef.resource: unsupported {resource!r}"
        )
    q = table.get(res)
    divisor = getattr(ref, "divisor", None)
    div = divisor.exact if divisor is not None and not divisor.is_zero() else 1
    if q is None:
        return "0"
    return str(math.ceil(q.exact / div))


def _ref_data(refs: ObjectRefs | None, kind: str, namespace: str, name: str,
              optional: bool | None, where: str) -> dict[str, bytes] | None:
    """The ConfigMap's or Secret's data; None when it is missing and optional."""
    if refs is None:
        raise ContainerConfigError(f"{where}: {kind}s need a control plane (this node has none)")
    try:
        data = refs.configmap(namespace, name) if kind == "configmap" else refs.secret(
            namespace, name)
    except RefError as exc:
        raise ContainerConfigError(str(exc)) from None
    if data is None and not optional:
        raise ContainerConfigError(f'{kind} "{name}" not found')
    return data


def make_environment(
    pod: Pod, container: Container, pod_ip: str, host_ip: str = "",
    refs: ObjectRefs | None = None,
) -> list[tuple[str, str]]:
    """kubelet's makeEnvironmentVariables: ``envFrom`` first, then ``env`` in order, each
    may refer to the ones before (and to the service variables), then the service
    variables the container does not set itself."""
    env: dict[str, str] = {}
    order: list[str] = []
    service_env = _service_env(pod, refs)
    for i, ef in enumerate(container.env_from):
        from_ref = ef.config_map_ref or ef.secret_ref
        if from_ref is None:
            continue
        kind = "configmap" if ef.config_map_ref is not None else "secret"
        data = _ref_data(refs, kind, pod.namespace, from_ref.name, from_ref.optional,
                         f"envFrom[{i}]")
        for key, raw in sorted((data or {}).items()):
            name = ef.prefix + key
            if not _ENV_NAME.match(name):
                continue  # upstream skips (and reports) keys that are no env names
            if name not in env:
                order.append(name)
            env[name] = raw.decode(errors="replace")
    for i, var in enumerate(container.env):
        where = f"env[{i}]({var.name})"
        src = var.value_from
        if src is None:
            value = expand(var.value, {**service_env, **env})
        elif src.field_ref is not None:
            value = _field_ref(pod, src.field_ref.field_path, pod_ip, host_ip, where)
        elif src.resource_field_ref is not None:
            value = _resource_ref(pod, container, src.resource_field_ref, where)
        else:
            ref = src.config_map_key_ref or src.secret_key_ref
            assert ref is not None
            kind = "configmap" if src.config_map_key_ref is not None else "secret"
            data = _ref_data(refs, kind, pod.namespace, ref.name, ref.optional, where)
            if data is None:
                continue
            if ref.key not in data:
                if ref.optional:
                    continue
                label = "ConfigMap" if kind == "configmap" else "Secret"
                raise ContainerConfigError(
                    f"couldn't find key {ref.key} in {label} {pod.namespace}/{ref.name}")
            value = data[ref.key].decode(errors="replace")
        if var.name not in env:
            order.append(var.name)
        env[var.name] = value
    return [(k, env[k]) for k in order] + [
        (k, v) for k, v in sorted(service_env.items()) if k not in env]


def _service_env(pod: Pod, refs: ObjectRefs | None) -> dict[str, str]:
    """getServiceEnvVarMap over the services the control plane has (none without one, as
    a kubelet without a service lister). Services never read (the control plane away
    since the agent started): the container starts without them, logged; upstream
    refuses such a pod (not a static one) until its informer has synced, which here
    would keep every container down through a control-plane outage."""
    if refs is None:
        return {}
    try:
        services = refs.services(pod.namespace)
    except RefError as exc:
        log.warning("pod %s/%s: no service environment variables: %s", pod.namespace,
                    pod.name, exc)
        return {}
    links = pod.spec.enable_service_links is not False
    return service_env_var_map(services, pod.namespace, links)


def oom_score_adj(pod: Pod, container: Container, memory_capacity: int) -> int:
    """kubelet's GetContainerOOMScoreAdjust, never below this daemon's own value."""
    return max(container_oom_score_adj(pod, container, memory_capacity), own_oom_score_adj())


def linux_resources(
    pod: Pod, container: Container, memory_capacity: int
) -> pb.LinuxContainerResources:
    res = pb.LinuxContainerResources()
    cpu_req = container.resources.requests.get("cpu") or container.resources.limits.get("cpu")
    cpu_lim = container.resources.limits.get("cpu")
    mem_lim = container.resources.limits.get("memory")
    shares = MIN_SHARES
    if cpu_req is not None:
        shares = min(MAX_SHARES, max(MIN_SHARES, cpu_req.milli_value() * 1024 // 1000))
    res.cpu_shares = shares
    if cpu_lim is not None and not cpu_lim.is_zero():
        res.cpu_period = CPU_PERIOD
        res.cpu_quota = max(MIN_QUOTA, cpu_lim.milli_value() * CPU_PERIOD // 1000)
    if mem_lim is not None:
        res.memory_limit_in_bytes = mem_lim.value()
    res.oom_score_adj = oom_score_adj(pod, container, memory_capacity)
    return res


def _security_context(pod: Pod, container: Container, target_id: str = "",
                      seccomp_profile_root: str = "") -> pb.LinuxContainerSecurityContext:
    sc = pb.LinuxContainerSecurityContext()
    sc.namespace_options.CopyFrom(namespace_options(pod))
    if target_id and sc.namespace_options.pid == pb.CONTAINER:
        # an ephemeral container's targetContainerName: that container's PID namespace
        # (a pod sharing one, or the host's, keeps it)
        sc.namespace_options.pid = pb.TARGET
        sc.namespace_options.target_id = target_id
    psc = pod.spec.security_context
    csc = container.security_context
    try:
        sc.seccomp.CopyFrom(seccomp_profile(psc, csc, seccomp_profile_root))
    except SeccompProfileError as exc:
        raise ContainerConfigError(str(exc)) from exc
    run_as_user = csc.run_as_user if csc and csc.run_as_user is not None else None
    run_as_group = csc.run_as_group if csc and csc.run_as_group is not None else None
    if psc is not None:
        run_as_user = psc.run_as_user if run_as_user is None else run_as_user
        run_as_group = psc.run_as_group if run_as_group is None else run_as_group
        sc.supplemental_groups.extend(psc.supplemental_groups)
        if psc.fs_group is not None:
            sc.supplemental_groups.append(psc.fs_group)
    if run_as_user is not None:
        sc.run_as_user.value = run_as_user
    if run_as_group is not None:
        sc.run_as_group.value = run_as_group
    privileged = bool(csc and csc.privileged)
    sc.privileged = privileged
    if csc is not None:
        if csc.capabilities is not None:
            sc.capabilities.add_capabilities.extend(csc.capabilities.add)
            sc.capabilities.drop_capabilities.extend(csc.capabilities.drop)
        sc.readonly_rootfs = bool(csc.read_only_root_filesystem)
        if csc.allow_privilege_escalation is not None and not csc.allow_privilege_escalation:
            sc.no_new_privs = True
    if not privileged:
        sc.masked_paths.extend(DEFAULT_MASKED_PATHS)
        sc.readonly_paths.extend(DEFAULT_READONLY_PATHS)
    return sc


def read_only_volumes(pod: Pod) -> set[str]:
    return {v.name for v in pod.spec.volumes if v.config_map is not None or v.secret is not None}


def make_mounts(
    pod: Pod,
    container: Container,
    volume_paths: Mapping[str, str],
    etc_hosts: str | None,
    termination_log: str | None = None,
) -> list[pb.Mount]:
    mounts: list[pb.Mount] = []
    props = {
        None: pb.PROPAGATION_PRIVATE,
        "None": pb.PROPAGATION_PRIVATE,
        "HostToContainer": pb.PROPAGATION_HOST_TO_CONTAINER,
        "Bidirectional": pb.PROPAGATION_BIDIRECTIONAL,
    }
    for i, vm in enumerate(container.volume_mounts):
        where = f"volumeMounts[{i}]({vm.name})"
        if vm.name not in volume_paths:
            raise ContainerConfigError(f"{where}: no volume named {vm.name!r} in the pod")
        host = volume_paths[vm.name]
        if vm.sub_path:
            if vm.sub_path.startswith("/") or ".." in Path(vm.sub_path).parts:
                raise ContainerConfigError(f"{where}.subPath: must be a relative path inside")
            sub = Path(host) / vm.sub_path
            if sub.is_symlink() or sub.is_file():
                sub = sub.resolve()  # a configMap/secret key: the file as it is now
            else:
                sub.mkdir(parents=True, exist_ok=True)
            host = str(sub)
        if vm.mount_propagation not in props:
            raise ContainerConfigError(
                f"{where}.mountPropagation: unsupported {vm.mount_propagation!r}"
            )
        mounts.append(
            pb.Mount(
                container_path=vm.mount_path,
                host_path=host,
                # configMap and secret volumes are always mounted read-only (since 1.10)
                readonly=vm.read_only or vm.name in read_only_volumes(pod),
                propagation=props[vm.mount_propagation],
            )
        )
    if etc_hosts and not any(m.container_path == "/etc/hosts" for m in mounts):
        mounts.append(pb.Mount(container_path="/etc/hosts", host_path=etc_hosts))
    if termination_log and container.termination_message_path:
        mounts.append(pb.Mount(container_path=container.termination_message_path,
                               host_path=termination_log))
    return mounts


def generate_container_config(
    pod: Pod,
    container: Container,
    *,
    restart_count: int,
    spec_hash: str,
    container_type: str,
    image: str,
    pod_ip: str,
    volume_paths: Mapping[str, str],
    etc_hosts: str | None,
    memory_capacity: int,
    host_ip: str = "",
    termination_log: str | None = None,
    refs: ObjectRefs | None = None,
    target_id: str = "",
    seccomp_profile_root: str = "",
) -> pb.ContainerConfig:
    """The ContainerConfig kubelet sends for ``container`` at ``restart_count``;
    ``target_id``: the CRI id of the container an ephemeral one targets;
    ``seccomp_profile_root``: where Localhost seccomp profiles live."""
    env = make_environment(pod, container, pod_ip, host_ip, refs)
    env_map = dict(env)
    cfg = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=container.name, attempt=restart_count),
        image=pb.ImageSpec(image=image),
        command=[expand(c, env_map) for c in container.command],
        args=[expand(a, env_map) for a in container.args],
        working_dir=container.working_dir,
        envs=[pb.KeyValue(key=k, value=v) for k, v in env],
        mounts=make_mounts(pod, container, volume_paths, etc_hosts, termination_log),
        labels=new_container_labels(pod, container),
        annotations=new_container_annotations(
            pod, container, restart_count, spec_hash, container_type
        ),
        log_path=f"{container.name}/{restart_count}.log",
        stdin=container.stdin,
        stdin_once=container.stdin_once,
        tty=container.tty,
    )
    cfg.linux.resources.CopyFrom(linux_resources(pod, container, memory_capacity))
    cfg.linux.security_context.CopyFrom(
        _security_context(pod, container, target_id, seccomp_profile_root))
    return cfg
