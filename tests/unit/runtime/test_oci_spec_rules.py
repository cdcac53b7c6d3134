"""The OCI spec rules, without root: args, env, user, caps, mounts, namespaces, seccomp."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from pykubelet.runtime import oci_spec, seccomp
from pykubelet.runtime.container_request import (
    ContainerConfigSpec,
    ContainerMetadata,
    MountSpec,
    Resources,
    SeccompProfile,
    SecurityContext,
)
from pykubelet.runtime.errors import InvalidArgument
from pykubelet.runtime.images import ImageConfig


@dataclass
class SB:
    id: str = "sb"
    name: str = "pod"
    namespace: str = "ns"
    uid: str = "u"
    hostname: str = "pod-host"
    netns_path: str = ""
    ipc_ns_path: str = ""
    uts_ns_path: str = ""
    hosts_path: str = ""
    resolv_path: str = ""
    hostname_path: str = ""
    log_directory: str = ""
    cgroup_parent: str = ""


def cfg(**kw: object) -> ContainerConfigSpec:
    return ContainerConfigSpec(metadata=ContainerMetadata("c"), image="img", **kw)  # type: ignore[arg-type]


IMAGE = ImageConfig(entrypoint=["/ep"], cmd=["cmd1", "cmd2"], env=["PATH=/bin", "A=image"],
                    working_dir="/work", user="")


@pytest.mark.parametrize(
    ("command", "args", "want"),
    [
        ((), (), ["/ep", "cmd1", "cmd2"]),
        ((), ("a",), ["/ep", "a"]),
        (("/c",), (), ["/c"]),
        (("/c",), ("a", "b"), ["/c", "a", "b"]),
    ],
)
def test_args_rules(command: tuple[str, ...], args: tuple[str, ...], want: list[str]) -> None:
    assert oci_spec.process_args(cfg(command=command, args=args), IMAGE) == want


def test_no_command_at_all_is_an_error() -> None:
    with pytest.raises(InvalidArgument, match="no command specified"):
        oci_spec.process_args(cfg(), ImageConfig())


def test_env_order_and_override() -> None:
    env = oci_spec.process_env(cfg(envs=(("A", "req"), ("B", "x=y"))), IMAGE, "h")
    assert env == ["HOSTNAME=h", "PATH=/bin", "A=req", "B=x=y"]
    env = oci_spec.process_env(cfg(), ImageConfig(), "")
    assert env[0].startswith("PATH=/usr/local/sbin")
    with pytest.raises(InvalidArgument, match=r"envs\[0\]\.key"):
        oci_spec.process_env(cfg(envs=(("", "v"),)), IMAGE, "h")


def test_resolve_user(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n")
    (tmp_path / "etc" / "group").write_text("root:x:0:\napp:x:1000:\nextra:x:2000:app\n")
    none = SecurityContext()
    assert oci_spec.resolve_user(tmp_path, "", none) == oci_spec.ResolvedUser(0, 0, (), "/root")
    assert oci_spec.resolve_user(tmp_path, "app", none) == oci_spec.ResolvedUser(
        1000, 1000, (2000,), "/home/app")
    assert oci_spec.resolve_user(tmp_path, "app:root", none).gid == 0
    assert oci_spec.resolve_user(tmp_path, "4242", none) == oci_spec.ResolvedUser(4242, 0)
    assert oci_spec.resolve_user(tmp_path, "4242:77", none).gid == 77
    sec = SecurityContext(run_as_user=1000, run_as_group=5, supplemental_groups=(9,))
    assert oci_spec.resolve_user(tmp_path, "root", sec) == oci_spec.ResolvedUser(
        1000, 5, (2000, 9), "/home/app")
    with pytest.raises(InvalidArgument, match="'ghost' is not in"):
        oci_spec.resolve_user(tmp_path, "ghost", none)
    with pytest.raises(InvalidArgument, match="group 'ghosts'"):
        oci_spec.resolve_user(tmp_path, "app:ghosts", none)


def test_capabilities() -> None:
    assert oci_spec.capabilities(SecurityContext()) == list(oci_spec.DEFAULT_CAPABILITIES)
    caps = oci_spec.capabilities(SecurityContext(add_capabilities=("NET_ADMIN",),
                                                 drop_capabilities=("CAP_KILL", "net_raw")))
    assert "CAP_NET_ADMIN" in caps
    assert "CAP_KILL" not in caps
    assert "CAP_NET_RAW" not in caps
    assert oci_spec.capabilities(SecurityContext(drop_capabilities=("ALL",))) == []
    assert oci_spec.capabilities(SecurityContext(drop_capabilities=("ALL",),
                                                 add_capabilities=("CHOWN",))) == ["CAP_CHOWN"]
    assert oci_spec.capabilities(SecurityContext(add_capabilities=("ALL",))) == list(
        oci_spec.ALL_CAPABILITIES)
    assert oci_spec.capabilities(SecurityContext(privileged=True)) == list(
        oci_spec.ALL_CAPABILITIES)
    some = ["CAP_CHOWN", "CAP_KILL", "CAP_SYS_ADMIN"]
    assert oci_spec.capabilities(SecurityContext(privileged=True), some) == some
    assert oci_spec.capabilities(SecurityContext(add_capabilities=("ALL",)), some) == some
    assert oci_spec.capabilities(SecurityContext(), some) == ["CAP_CHOWN", "CAP_KILL"]
    with pytest.raises(InvalidArgument, match="CAP_SYS_RESOURCE is not available"):
        oci_spec.capabilities(SecurityContext(add_capabilities=("SYS_RESOURCE",)), some)


def test_host_capabilities_follow_kernel_bit_order() -> None:
    assert oci_spec.ALL_CAPABILITIES.index("CAP_SYS_ADMIN") == 21
    assert oci_spec.ALL_CAPABILITIES.index("CAP_SYS_RESOURCE") == 24
    assert oci_spec.ALL_CAPABILITIES.index("CAP_CHECKPOINT_RESTORE") == 40
    assert "CAP_CHOWN" in oci_spec.host_capabilities()


def test_build_spec_defaults_harden() -> None:
    spec = oci_spec.build_spec(cfg(command=("/c",)), IMAGE, SB(), oci_spec.ResolvedUser(0, 0),
                               "/pk/c1", min_oom_score_adj=0)
    p = spec["process"]
    assert p["cwd"] == "/work"
    assert p["capabilities"]["bounding"] == list(oci_spec.DEFAULT_CAPABILITIES)
    lx = spec["linux"]
    assert lx["cgroupsPath"] == "/pk/c1"
    assert "/proc/kcore" in lx["maskedPaths"]
    assert "/proc/sys" in lx["readonlyPaths"]
    assert "seccomp" not in lx  # Unconfined unless asked
    assert spec["hostname"] == "pod-host"
    assert {n["type"] for n in lx["namespaces"]} == {"mount", "network", "ipc", "uts", "pid"}
    assert lx["resources"]["devices"] == [{"allow": False, "access": "rwm"}]
    dests = [m["destination"] for m in spec["mounts"]]
    assert dests.index("/dev") < dests.index("/dev/shm")


def test_no_new_privileges_exactly_as_the_request_says() -> None:
    """containerd sets noNewPrivileges from no_new_privs alone: setuid programs work in pods
    that allow privilege escalation (Kubernetes' default), privileged or not."""
    for asked in (False, True):
        spec = oci_spec.build_spec(cfg(command=("/c",),
                                       security=SecurityContext(no_new_privs=asked)),
                                   IMAGE, SB(), oci_spec.ResolvedUser(0, 0), "/pk/c1")
        assert spec["process"]["noNewPrivileges"] is asked


def test_build_spec_privileged_lifts_hardening() -> None:
    sec = SecurityContext(privileged=True, seccomp=SeccompProfile("RuntimeDefault"))
    spec = oci_spec.build_spec(cfg(command=("/c",), security=sec), IMAGE, SB(),
                               oci_spec.ResolvedUser(0, 0), "/pk/c1")
    assert spec["process"]["noNewPrivileges"] is False
    assert "maskedPaths" not in spec["linux"]
    assert "seccomp" not in spec["linux"]
    assert spec["linux"]["resources"]["devices"] == [{"allow": True, "access": "rwm"}]


def test_build_spec_joins_sandbox_namespaces_and_mounts_pod_files(tmp_path: Path) -> None:
    sb = SB(netns_path="/run/netns/x", ipc_ns_path="/run/ipc/x", uts_ns_path="/run/uts/x",
            hosts_path="/h/hosts", resolv_path="/h/resolv", hostname_path="/h/hostname")
    spec = oci_spec.build_spec(
        cfg(command=("/c",), mounts=(MountSpec("/data", str(tmp_path), True),
                                     MountSpec("/etc/hosts", str(tmp_path)))),
        IMAGE, sb, oci_spec.ResolvedUser(0, 0), "/pk/c1")
    ns = {n["type"]: n.get("path") for n in spec["linux"]["namespaces"]}
    assert ns["network"] == "/run/netns/x"
    assert ns["ipc"] == "/run/ipc/x"
    assert ns["uts"] == "/run/uts/x"
    assert ns["pid"] is None
    assert "hostname" not in spec  # the joined UTS namespace has it already
    mounts = {m["destination"]: m for m in spec["mounts"]}
    assert mounts["/etc/resolv.conf"]["source"] == "/h/resolv"
    assert mounts["/etc/hostname"]["source"] == "/h/hostname"
    assert mounts["/etc/hosts"]["source"] == str(tmp_path)  # the request's mount wins
    assert "ro" in mounts["/data"]["options"]


def test_host_network_has_no_network_namespace() -> None:
    """Nor its own UTS namespace: containerd leaves both to the host for hostNetwork
    (WithoutNamespace(UTSNamespace)), so the pod sees and shares the node's hostname."""
    sec = SecurityContext(network_mode="NODE", ipc_mode="NODE", pid_mode="NODE")
    ns = oci_spec.namespaces(sec, SB())
    assert [n["type"] for n in ns] == ["mount"]
    spec = oci_spec.build_spec(cfg(command=("/c",), security=sec), IMAGE,
                               SB(hostname="node-1"), oci_spec.ResolvedUser(0, 0), "/pk/c")
    assert "hostname" not in spec  # runc would set the host's


def test_resources_and_oom_score_adj() -> None:
    res = Resources(cpu_period=100000, cpu_quota=50000, cpu_shares=512,
                    memory_limit_in_bytes=64 << 20, oom_score_adj=-500, cpuset_cpus="0")
    spec = oci_spec.build_spec(cfg(command=("/c",), resources=res), IMAGE, SB(),
                               oci_spec.ResolvedUser(0, 0), "/pk/c", min_oom_score_adj=0)
    r = spec["linux"]["resources"]
    assert r["cpu"] == {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0"}
    assert r["memory"] == {"limit": 64 << 20, "swap": 64 << 20}
    assert spec["process"]["oomScoreAdj"] == 0  # never below our own
    r = oci_spec.resources_section(cfg(resources=Resources(memory_limit_in_bytes=1 << 20)),
                                   has_memsw=False)
    assert r["memory"] == {"limit": 1 << 20}
    with pytest.raises(InvalidArgument, match="cpu_shares"):
        oci_spec.resources_section(cfg(resources=Resources(cpu_shares=-1)))


def test_seccomp_default_profile() -> None:
    prof = seccomp.default_profile(oci_spec.DEFAULT_CAPABILITIES)
    assert prof["defaultAction"] == "SCMP_ACT_ERRNO"
    allowed = set(prof["syscalls"][0]["names"])
    assert {"read", "write", "execve", "openat", "clone3"} - allowed == {"clone3"}
    assert "mount" not in allowed
    assert "chroot" in allowed  # CAP_SYS_CHROOT is a default capability
    assert "reboot" not in allowed
    assert "io_uring_setup" not in allowed
    rules = {r["names"][0]: r for r in prof["syscalls"][1:]}
    assert rules["clone3"]["errnoRet"] == seccomp.ENOSYS
    assert rules["clone"]["args"][0]["op"] == "SCMP_CMP_MASKED_EQ"
    admin = seccomp.default_profile([*oci_spec.DEFAULT_CAPABILITIES, "CAP_SYS_ADMIN"])
    assert "mount" in admin["syscalls"][0]["names"]
    assert all(r["names"] != ["clone3"] for r in admin["syscalls"])


def test_seccomp_localhost_docker_shape(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({
        "defaultAction": "SCMP_ACT_ERRNO",
        "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
        "syscalls": [
            {"names": ["read"], "action": "SCMP_ACT_ALLOW"},
            {"names": ["mount"], "action": "SCMP_ACT_ALLOW",
             "includes": {"caps": ["CAP_SYS_ADMIN"]}},
            {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
             "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
        ],
    }))
    prof = seccomp.load_localhost_profile(str(path), ["CAP_CHOWN"])
    assert [r["names"] for r in prof["syscalls"]] == [["read"], ["clone"]]
    prof = seccomp.load_localhost_profile(str(path), ["CAP_SYS_ADMIN"])
    assert [r["names"] for r in prof["syscalls"]] == [["read"], ["mount"]]
    with pytest.raises(InvalidArgument, match="absolute path"):
        seccomp.load_localhost_profile("relative.json", [])
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InvalidArgument, match="not valid JSON"):
        seccomp.load_localhost_profile(str(tmp_path / "bad.json"), [])
    (tmp_path / "nodefault.json").write_text("{}")
    with pytest.raises(InvalidArgument, match="no defaultAction"):
        seccomp.load_localhost_profile(str(tmp_path / "nodefault.json"), [])


@pytest.mark.parametrize(("cgroup_v2", "privileged", "own_ns"),
                         [(True, False, True), (True, True, False), (False, False, False)])
def test_cgroup_filesystem_read_only_in_its_own_namespace_on_cgroup_v2(
        cgroup_v2: bool, privileged: bool, own_ns: bool) -> None:
    """containerd: /sys/fs/cgroup mounted read-only, and on a cgroup v2 host a container
    that is not privileged gets its own cgroup namespace, so the mount shows its cgroup
    (as the root) and nothing of the host's (cgroup v1 hosts and privileged: the host's)."""
    spec = oci_spec.build_spec(cfg(command=("/c",),
                                   security=SecurityContext(privileged=privileged)),
                               IMAGE, SB(), oci_spec.ResolvedUser(0, 0), "/pk/c1",
                               cgroup_v2=cgroup_v2)
    cg = [m for m in spec["mounts"] if m["destination"] == "/sys/fs/cgroup"]
    assert cg == [{"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                   "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]}]
    dests = [m["destination"] for m in spec["mounts"]]
    assert dests.index("/sys") < dests.index("/sys/fs/cgroup")
    kinds = [n["type"] for n in spec["linux"]["namespaces"]]
    assert ("cgroup" in kinds) is own_ns
def test_pid_target_joins_the_target_containers_namespace() -> None:
    """CRI pid=TARGET (kubectl debug --target): the target's PID namespace, by path."""
    sec = SecurityContext(pid_mode="TARGET", target_id="abc")
    ns = {n["type"]: n.get("path") for n in oci_spec.namespaces(sec, SB(), "/proc/42/ns/pid")}
    assert ns["pid"] == "/proc/42/ns/pid"
    with pytest.raises(InvalidArgument):
        oci_spec.namespaces(sec, SB())  # never a fresh namespace in its place
