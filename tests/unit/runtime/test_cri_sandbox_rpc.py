"""Pure parts of the sandbox side: request translation, validation, filters, pod files."""

from __future__ import annotations

import json

import grpc
import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime.cri.instrument import grpc_code
from pykubelet.runtime.cri.sandbox_rpc import matches, spec_from_config, status_message
from pykubelet.runtime.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unavailable,
)
from pykubelet.runtime.podnet import NetworkAttachment, PortMapping
from pykubelet.runtime.sandbox import (
    NOTREADY,
    READY,
    DNSSettings,
    SandboxInfo,
    hosts_text,
    resolv_conf_text,
    validate_spec,
)


def _config(**kw) -> pb.PodSandboxConfig:
    cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name="web", uid="u1", namespace="default", attempt=2),
        hostname="web-0", log_directory="/var/log/pods/default_web_u1",
        labels={"app": "web"}, annotations={"note": "x"},
        linux=pb.LinuxPodSandboxConfig(
            cgroup_parent="/kubepods/besteffort/podu1",
            security_context=pb.LinuxSandboxSecurityContext(
                namespace_options=pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER,
                                                     ipc=pb.POD),
                seccomp=pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault),
                run_as_user=pb.Int64Value(value=1000), supplemental_groups=[5]),
            sysctls={"net.ipv4.ip_unprivileged_port_start": "0"}),
    )
    for k, v in kw.items():
        getattr(cfg, k).extend(v) if isinstance(v, list) else setattr(cfg, k, v)
    return cfg


def test_spec_from_config_translates_every_field() -> None:
    cfg = _config(port_mappings=[
        pb.PortMapping(protocol=pb.UDP, container_port=53, host_port=5353, host_ip="127.0.0.1"),
        pb.PortMapping(protocol=pb.TCP, container_port=80, host_port=0),  # no host port
    ])
    cfg.dns_config.CopyFrom(pb.DNSConfig(servers=["10.0.0.10"], searches=["svc"],
                                         options=["ndots:5"]))
    spec = spec_from_config(cfg, "runc")
    assert (spec.name, spec.namespace, spec.uid, spec.attempt) == ("web", "default", "u1", 2)
    assert spec.port_mappings == [PortMapping(53, 5353, "udp", "127.0.0.1")]
    assert spec.dns == DNSSettings(["10.0.0.10"], ["svc"], ["ndots:5"])
    assert (spec.network_mode, spec.ipc_mode, spec.pid_mode) == ("POD", "POD", "CONTAINER")
    assert spec.security["seccomp"] == {"profile_type": "RuntimeDefault", "localhost_ref": ""}
    assert spec.security["apparmor"] is None
    assert spec.security["run_as_user"] == 1000
    assert spec.security["supplemental_groups"] == [5]
    assert spec.sysctls == {"net.ipv4.ip_unprivileged_port_start": "0"}
    assert spec.cgroup_parent == "/kubepods/besteffort/podu1"
    assert spec.runtime_handler == "runc"
    validate_spec(spec)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda c: c.ClearField("metadata"), "config.metadata"),
        (lambda c: setattr(c.metadata, "name", ""), "config.metadata.name"),
        (lambda c: setattr(c.metadata, "namespace", ""), "config.metadata.namespace"),
        (lambda c: setattr(c, "hostname", "Bad_Host"), "config.hostname"),
        (lambda c: setattr(c, "log_directory", "relative/dir"), "config.log_directory"),
        (lambda c: c.dns_config.servers.append("nope"), "config.dns_config.servers[0]"),
        (lambda c: c.port_mappings.add(container_port=0, host_port=80),
         "config.port_mappings[0].container_port"),
        (lambda c: c.port_mappings.add(container_port=80, host_port=70000),
         "config.port_mappings[0].host_port"),
        (lambda c: c.port_mappings.add(container_port=80, host_port=8080, host_ip="x"),
         "config.port_mappings[0].host_ip"),
        (lambda c: setattr(c.linux.security_context.namespace_options, "pid", pb.TARGET),
         "namespace_options.pid"),
        (lambda c: setattr(c.linux.security_context.namespace_options, "network", pb.TARGET),
         "namespace_options.network"),
        (lambda c: (c.linux.security_context.ClearField("run_as_user"),
                    c.linux.security_context.run_as_group.CopyFrom(pb.Int64Value(value=1))),
         "run_as_group"),
    ],
)
def test_bad_configs_name_the_field(mutate, field: str) -> None:
    cfg = _config()
    mutate(cfg)
    with pytest.raises(InvalidArgument) as info:
        validate_spec(spec_from_config(cfg))
    assert field in info.value.msg


@pytest.mark.parametrize(
    ("key", "network", "ipc", "problem"),
    [("kernel.hostname", pb.POD, pb.POD, "not a namespaced sysctl"),
     ("vm.swappiness", pb.POD, pb.POD, "not a namespaced sysctl"),
     ("net.ipv4.ip_forward", pb.NODE, pb.POD, "node's network"),
     ("kernel.shmmax", pb.POD, pb.NODE, "node's IPC"),
     ("fs.mqueue.msg_max", pb.POD, pb.NODE, "node's IPC")],
)
def test_sysctls_must_be_namespaced_and_owned(key, network, ipc, problem) -> None:
    cfg = _config()
    cfg.linux.sysctls.clear()
    cfg.linux.sysctls[key] = "1"
    cfg.linux.security_context.namespace_options.network = network
    cfg.linux.security_context.namespace_options.ipc = ipc
    with pytest.raises(InvalidArgument) as info:
        validate_spec(spec_from_config(cfg))
    assert f"config.linux.sysctls[{key!r}]" in info.value.msg
    assert problem in info.value.msg


def test_slash_separated_sysctls_are_accepted() -> None:
    cfg = _config()
    cfg.linux.sysctls["net/ipv4/ip_local_port_range"] = "1024 65000"
    cfg.linux.sysctls["kernel/shmmni"] = "8192"
    validate_spec(spec_from_config(cfg))


def test_unknown_runtime_handler() -> None:
    with pytest.raises(InvalidArgument, match="runtime_handler"):
        validate_spec(spec_from_config(_config(), "kata"))


def test_resolv_conf_from_dns_config_or_host(tmp_path) -> None:
    text = resolv_conf_text(DNSSettings(["10.0.0.10", "10.0.0.11"], ["a.svc", "svc"],
                                        ["ndots:5"]))
    assert text == ("search a.svc svc\nnameserver 10.0.0.10\nnameserver 10.0.0.11\n"
                    "options ndots:5\n")
    host = tmp_path / "resolv.conf"
    host.write_text("nameserver 192.0.2.1\n")
    assert resolv_conf_text(None, str(host)) == "nameserver 192.0.2.1\n"
    assert resolv_conf_text(DNSSettings(), str(host)) == "nameserver 192.0.2.1\n"


def test_hosts_file_names_the_pod() -> None:
    text = hosts_text("web-0", ["10.94.1.5"])
    assert text.startswith("# Kubernetes-managed hosts file")
    assert "127.0.0.1\tlocalhost\n" in text
    assert text.endswith("10.94.1.5\tweb-0\n")


def _info(**kw) -> SandboxInfo:
    base = dict(
        id="ab" * 32, name="web", namespace="default", uid="u1", attempt=0,
        netns_path="/run/netns/x", ipc_ns_path="/r/ipc", uts_ns_path="/r/uts", hostname="web",
        hosts_path="/r/hosts", resolv_path="/r/resolv.conf", hostname_path="/r/hostname",
        log_directory="/l", cgroup_parent="", labels={"app": "web", "tier": "front"},
        annotations={}, state=READY, ip="10.94.1.5", pid_ns_mode="CONTAINER", security={},
        created_at=5, additional_ips=["fd00::5"],
        port_mappings=[PortMapping(80, 8080)], dns=DNSSettings(["10.0.0.10"]),
        network=NetworkAttachment(network={"name": "n"}, ips=["10.94.1.5"]),
    )
    base.update(kw)
    return SandboxInfo(**base)


def test_checkpoint_round_trip() -> None:
    info = _info()
    assert SandboxInfo.from_dict(info.to_dict()) == info
    # unknown keys from a newer runtime are ignored, not fatal
    d = info.to_dict() | {"future_field": 1}
    assert SandboxInfo.from_dict(d) == info


def test_checkpoint_file_is_versioned_and_checksummed() -> None:
    from pykubelet.runtime.sandbox import decode_checkpoint, encode_checkpoint

    info = _info()
    data = encode_checkpoint(info)
    assert decode_checkpoint(data) == info
    doc = json.loads(data)
    doc["sandbox"]["ip"] = "10.94.1.99"
    with pytest.raises(ValueError, match="checksum"):
        decode_checkpoint(json.dumps(doc).encode())
    doc["version"] = 99
    with pytest.raises(ValueError, match="version"):
        decode_checkpoint(json.dumps(doc).encode())
    with pytest.raises(ValueError):
        decode_checkpoint(data[: len(data) // 2])  # truncated


def test_filters() -> None:
    info = _info()
    assert matches(info, None)
    assert matches(info, pb.PodSandboxFilter(id=info.id[:6]))
    assert not matches(info, pb.PodSandboxFilter(id="cd"))
    ready = pb.PodSandboxStateValue(state=pb.SANDBOX_READY)
    notready = pb.PodSandboxStateValue(state=pb.SANDBOX_NOTREADY)
    assert matches(info, pb.PodSandboxFilter(state=ready))
    assert not matches(info, pb.PodSandboxFilter(state=notready))
    assert matches(_info(state=NOTREADY), pb.PodSandboxFilter(state=notready))
    assert matches(info, pb.PodSandboxFilter(label_selector={"app": "web", "tier": "front"}))
    assert not matches(info, pb.PodSandboxFilter(label_selector={"app": "web", "tier": "x"}))


def test_status_message() -> None:
    st = status_message(_info())
    assert st.network.ip == "10.94.1.5"
    assert [p.ip for p in st.network.additional_ips] == ["fd00::5"]
    assert st.linux.namespaces.options.pid == pb.CONTAINER
    assert st.state == pb.SANDBOX_READY
    assert st.created_at == 5


@pytest.mark.parametrize(
    ("exc", "code"),
    [(NotFound, grpc.StatusCode.NOT_FOUND), (AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
     (InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
     (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
     (Unavailable, grpc.StatusCode.UNAVAILABLE)],
)
def test_error_codes(exc, code) -> None:
    assert grpc_code(exc("x")) == code


def test_runtime_ready_needs_container_support_and_its_binaries(tmp_path) -> None:
    from types import SimpleNamespace

    from pykubelet.runtime.podnet import PodNetwork
    from pykubelet.runtime.service import RuntimeInfoRPC

    net = PodNetwork(str(tmp_path / "net.d"), [], str(tmp_path / "cache"))

    def ready(containers) -> pb.RuntimeCondition:
        st = RuntimeInfoRPC(net, containers).Status(pb.StatusRequest())
        return {c.type: c for c in st.status.conditions}["RuntimeReady"]

    assert ready(None).reason == "ContainerManagerUnavailable"
    good = SimpleNamespace(runc=SimpleNamespace(binary="/bin/true"), conmon_binary="/bin/true")
    assert ready(good).status
    bad = SimpleNamespace(runc=SimpleNamespace(binary="/nonexistent/runc"),
                          conmon_binary="/bin/true")
    cond = ready(bad)
    assert not cond.status
    assert cond.reason == "RuntimeBinaryMissing"
    assert "/nonexistent/runc" in cond.message
    network = {c.type: c for c in RuntimeInfoRPC(net, good).Status(
        pb.StatusRequest()).status.conditions}["NetworkReady"]
    assert not network.status
    assert "cni config uninitialized" in network.message
