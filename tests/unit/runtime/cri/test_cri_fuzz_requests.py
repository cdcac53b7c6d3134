"""Fuzzed CRI requests (issue 29 item 3): random ContainerConfigs through the servicer's
conversion (config_from_pb) and the OCI spec built from them (build_spec, resolve_user), and
random PodSandboxConfigs through spec_from_config, answer or raise a CRIError (the
servicer's INVALID_ARGUMENT and friends) naming the field, never another exception, which
the instrument layer would answer as an internal error."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from fuzz_strategies import FUZZ, check_message
from hypothesis import example, given
from hypothesis import strategies as st

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime.cri.container_rpc import config_from_pb
from pykubelet.runtime.cri.sandbox_rpc import spec_from_config
from pykubelet.runtime.errors import CRIError
from pykubelet.runtime.images import ImageConfig
from pykubelet.runtime.oci_spec import build_spec, resolve_user

TEXT = st.one_of(st.text(max_size=12), st.sampled_from(
    ["", "/", "/tmp", "rel/path", "/nonexistent/x", "a=b", "NET_ADMIN", "CAP_SYS_ADMIN",
     "ALL", "all", "SYS_RESOURCE", "nobody", "0", "65534", "root:root", "x:y:z"]))
I64 = st.one_of(st.integers(-(2 ** 63), 2 ** 63 - 1), st.sampled_from([-1, 0, 1, 1024]))
ENUM = st.integers(0, 9)  # proto3 enums carry unknown values


@st.composite
def container_configs(draw: st.DrawFn) -> pb.ContainerConfig:
    c = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=draw(TEXT), attempt=draw(st.integers(0, 5))),
        image=pb.ImageSpec(image=draw(TEXT)), command=draw(st.lists(TEXT, max_size=3)),
        args=draw(st.lists(TEXT, max_size=3)), working_dir=draw(TEXT),
        envs=[pb.KeyValue(key=k, value=v) for k, v in draw(st.lists(st.tuples(TEXT, TEXT),
                                                                     max_size=3))],
        mounts=[pb.Mount(container_path=draw(TEXT), host_path=draw(TEXT),
                         readonly=draw(st.booleans()), propagation=draw(ENUM))
                for _ in range(draw(st.integers(0, 2)))],
        log_path=draw(TEXT), tty=draw(st.booleans()))
    r = c.linux.resources
    r.cpu_period, r.cpu_quota, r.cpu_shares = draw(I64), draw(I64), draw(I64)
    r.memory_limit_in_bytes, r.oom_score_adj = draw(I64), draw(I64)
    r.cpuset_cpus = draw(TEXT)
    sc = c.linux.security_context
    sc.capabilities.add_capabilities.extend(draw(st.lists(TEXT, max_size=3)))
    sc.capabilities.drop_capabilities.extend(draw(st.lists(TEXT, max_size=3)))
    sc.privileged = draw(st.booleans())
    ns = sc.namespace_options
    ns.network, ns.pid, ns.ipc = draw(ENUM), draw(ENUM), draw(ENUM)
    if draw(st.booleans()):
        sc.run_as_user.value = draw(I64)
    if draw(st.booleans()):
        sc.run_as_group.value = draw(I64)
    sc.run_as_username = draw(TEXT)
    sc.supplemental_groups.extend(draw(st.lists(I64, max_size=2)))
    sc.readonly_rootfs, sc.no_new_privs = draw(st.booleans()), draw(st.booleans())
    if draw(st.booleans()):
        sc.seccomp.profile_type = draw(ENUM)
        sc.seccomp.localhost_ref = draw(TEXT)
    else:
        sc.seccomp_profile_path = draw(TEXT)
    sc.masked_paths.extend(draw(st.lists(TEXT, max_size=2)))
    return c


@dataclass
class Sandbox:
    id: str = "sb1"
    name: str = "pod"
    namespace: str = "default"
    uid: str = "u1"
    hostname: str = "pod"
    netns_path: str = "/run/netns/x"
    ipc_ns_path: str = ""
    uts_ns_path: str = ""
    hosts_path: str = ""
    resolv_path: str = ""
    hostname_path: str = ""
    log_directory: str = "/var/log/pods/x"
    cgroup_parent: str = "/kubepods"


@pytest.fixture(scope="module")
def rootfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rootfs")
    (root / "etc").mkdir()
    (root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n"
                                         "nobody:x:65534:65534::/:/bin/false\nbad:x\n")
    (root / "etc" / "group").write_text("root:x:0:\nusers:x:100:nobody\nbad\n")
    return root


@FUZZ
@given(config=container_configs(), image_user=TEXT,
       entrypoint=st.lists(TEXT, max_size=2))
def test_container_requests_build_a_spec_or_are_cri_errors(
        rootfs: Path, config: pb.ContainerConfig, image_user: str,
        entrypoint: list[str]) -> None:
    error: CRIError | None = None
    try:
        spec = config_from_pb(config)
        image = ImageConfig(entrypoint=entrypoint, user=image_user)
        user = resolve_user(rootfs, image.user, spec.security)
        build_spec(spec, image, Sandbox(), user, "/kubepods/x", pid_ns_path="/proc/1/ns/pid")
    except CRIError as exc:
        error = exc
    if error is not None:
        check_message(error)


SANDBOX = st.builds(
    pb.PodSandboxConfig,
    metadata=st.builds(pb.PodSandboxMetadata, name=TEXT, uid=TEXT, namespace=TEXT),
    hostname=TEXT,
    port_mappings=st.lists(st.builds(pb.PortMapping, protocol=ENUM,
                                     container_port=st.integers(-5, 70000),
                                     host_port=st.integers(-5, 70000), host_ip=TEXT),
                           max_size=2),
    linux=st.builds(pb.LinuxPodSandboxConfig, cgroup_parent=TEXT, security_context=st.builds(
        pb.LinuxSandboxSecurityContext,
        namespace_options=st.builds(pb.NamespaceOption, network=ENUM, pid=ENUM, ipc=ENUM),
        seccomp=st.builds(pb.SecurityProfile, profile_type=ENUM, localhost_ref=TEXT),
        apparmor=st.builds(pb.SecurityProfile, profile_type=ENUM, localhost_ref=TEXT),
        privileged=st.booleans())))


@FUZZ
@given(SANDBOX)
@example(pb.PodSandboxConfig(  # an unknown namespace mode was Enum.Name's ValueError
    metadata=pb.PodSandboxMetadata(name="a", uid="u", namespace="n"),
    linux=pb.LinuxPodSandboxConfig(security_context=pb.LinuxSandboxSecurityContext(
        namespace_options=pb.NamespaceOption(network=7)))))
@example(pb.PodSandboxConfig.FromString(  # atheris' find: a seccomp profile_type of 18
    bytes.fromhex("0a090a01701201751a016e1201702a05905011103f420612044a020812")))
def test_sandbox_requests_convert_or_are_cri_errors(config: pb.PodSandboxConfig) -> None:
    error: CRIError | None = None
    try:
        spec_from_config(config)
    except CRIError as exc:
        error = exc
    if error is not None:
        check_message(error)
