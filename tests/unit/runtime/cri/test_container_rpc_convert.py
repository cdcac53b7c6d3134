"""CRI protobuf -> domain conversions of container_rpc, and the CRI log format."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime import logs
from pykubelet.runtime.cri.container_rpc import config_from_pb, seccomp_from_pb
from pykubelet.runtime.errors import InvalidArgument


def _config(**kw: object) -> pb.ContainerConfig:
    c = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="app", attempt=2),
                           image=pb.ImageSpec(image="busybox"))
    for k, v in kw.items():
        field = getattr(c, k)
        if hasattr(field, "CopyFrom"):
            field.CopyFrom(v)
        elif isinstance(v, list):
            field.extend(v)
        else:
            setattr(c, k, v)
    return c


def test_full_config_converts() -> None:
    sc = pb.LinuxContainerSecurityContext(
        capabilities=pb.Capability(add_capabilities=["NET_ADMIN"], drop_capabilities=["KILL"]),
        namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.POD, ipc=pb.POD),
        run_as_user=pb.Int64Value(value=0), run_as_group=pb.Int64Value(value=7),
        readonly_rootfs=True, supplemental_groups=[3], no_new_privs=True,
        masked_paths=["/proc/x"], seccomp=pb.SecurityProfile(
            profile_type=pb.SecurityProfile.Localhost, localhost_ref="/p.json"))
    c = _config(command=["sh"], args=["-c", "x"], working_dir="/w",
                envs=[pb.KeyValue(key="A", value="1")],
                mounts=[pb.Mount(container_path="/d", host_path="/h", readonly=True,
                                 propagation=pb.PROPAGATION_BIDIRECTIONAL)],
                log_path="app/2.log",
                linux=pb.LinuxContainerConfig(
                    resources=pb.LinuxContainerResources(cpu_shares=2,
                                                         memory_limit_in_bytes=1 << 20),
                    security_context=sc))
    c.labels["l"] = "v"
    spec = config_from_pb(c)
    assert spec.metadata.name == "app"
    assert spec.metadata.attempt == 2
    assert spec.command == ("sh",)
    assert spec.args == ("-c", "x")
    assert spec.envs == (("A", "1"),)
    assert spec.mounts[0].propagation == "rshared"
    assert spec.mounts[0].readonly
    assert spec.labels == {"l": "v"}
    assert spec.resources.cpu_shares == 2
    sec = spec.security
    assert sec.run_as_user == 0  # set to 0 explicitly, not "from the image"
    assert sec.run_as_group == 7
    assert sec.network_mode == "NODE"
    assert sec.pid_mode == "POD"
    assert sec.masked_paths == ("/proc/x",)
    assert sec.readonly_paths is None
    assert (sec.seccomp.profile_type, sec.seccomp.localhost_ref) == ("Localhost", "/p.json")


def test_pid_target_carries_the_target_id() -> None:
    cfg = _config()
    cfg.linux.security_context.namespace_options.CopyFrom(
        pb.NamespaceOption(pid=pb.TARGET, target_id="c0ffee"))
    sec = config_from_pb(cfg).security
    assert (sec.pid_mode, sec.target_id) == ("TARGET", "c0ffee")


def test_unset_fields_mean_image_defaults() -> None:
    spec = config_from_pb(_config())
    assert spec.security.run_as_user is None
    assert spec.security.seccomp.profile_type == "Unconfined"
    assert spec.security.pid_mode == "CONTAINER"


@pytest.mark.parametrize(
    ("path", "want"),
    [("", "Unconfined"), ("unconfined", "Unconfined"), ("runtime/default", "RuntimeDefault"),
     ("docker/default", "RuntimeDefault"), ("localhost//x.json", "Localhost")],
)
def test_deprecated_seccomp_path(path: str, want: str) -> None:
    sc = pb.LinuxContainerSecurityContext(seccomp_profile_path=path)
    assert seccomp_from_pb(sc).profile_type == want


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda c: c.ClearField("metadata"), "config.metadata.name"),
        (lambda c: c.image.ClearField("image"), "config.image.image"),
        (lambda c: c.devices.add(container_path="/dev/x", host_path="/dev/x"), "config.devices"),
    ],
)
def test_bad_configs_name_the_field(mutate, field: str) -> None:  # type: ignore[no-untyped-def]
    c = _config()
    mutate(c)
    with pytest.raises(InvalidArgument, match=field.replace(".", r"\.")):
        config_from_pb(c)


def test_log_format_roundtrip(tmp_path: Path) -> None:
    p = tmp_path / "0.log"
    p.write_bytes(b"2026-01-01T00:00:00.000000001Z stdout P hel\n"
                  b"2026-01-01T00:00:00.000000002Z stderr F err\n"
                  b"2026-01-01T00:00:00.000000003Z stdout F lo\n"
                  b"2026-01-01T00:00:00.000000004Z stdout F \n")
    assert logs.read_messages(p) == ["err", "hello", ""]
    assert logs.read_messages(p, "stdout") == ["hello", ""]
    with pytest.raises(ValueError, match="not a CRI log line"):
        logs.parse_line(b"garbage")
    assert logs.resolve_log_path("/var/log/pods/x", "c/0.log") == "/var/log/pods/x/c/0.log"
    assert logs.resolve_log_path("/d", "") == ""
    with pytest.raises(InvalidArgument, match="escapes"):
        logs.resolve_log_path("/d", "../x.log")
    with pytest.raises(InvalidArgument, match="no log_directory"):
        logs.resolve_log_path("", "c/0.log")
