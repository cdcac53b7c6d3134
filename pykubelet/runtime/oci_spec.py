"""The OCI runtime ``config.json`` for a container, built from the CRI request and the image.

Pure: every input is passed in (the resolved user, the sandbox's namespace paths, our own
oom_score_adj), so unit tests cover the rules without root. The defaults follow
containerd's CRI plugin (``opts/spec_linux.go``, ``container_create_linux.go``):

- args: a request ``command`` replaces the image Entrypoint and discards its Cmd; request
  ``args`` replace the Cmd (Kubernetes' rules); nothing at all is an error;
- env: HOSTNAME, then the image's Env, then the request's (later keys win);
- a limited capability set, masked and read-only /proc and /sys paths, all lifted for
  privileged containers; ``noNewPrivileges`` exactly as the request's ``no_new_privs`` says
  (kubelet sets it from allowPrivilegeEscalation: false);
- seccomp: RuntimeDefault, Unconfined or a Localhost profile;
- cgroup limits from LinuxContainerResources; memory swap pinned to the limit (no swap);
- oom_score_adj never below the runtime's own (root lacks CAP_SYS_RESOURCE here).
"""

from __future__ import annotations

import os
import resource
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pykubelet.oom import own_oom_score_adj as own_oom_score_adj
from pykubelet.runtime import seccomp
from pykubelet.runtime.container_request import (
    NS_CONTAINER,
    NS_NODE,
    NS_POD,
    NS_TARGET,
    PROPAGATION_BIDIRECTIONAL,
    PROPAGATION_HOST_TO_CONTAINER,
    SECCOMP_LOCALHOST,
    SECCOMP_RUNTIME_DEFAULT,
    SECCOMP_UNCONFINED,
    ContainerConfigSpec,
    SecurityContext,
)
from pykubelet.runtime.errors import InvalidArgument
from pykubelet.runtime.images import ImageConfig

DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

DEFAULT_CAPABILITIES: tuple[str, ...] = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
)

ALL_CAPABILITIES: tuple[str, ...] = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
    "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
    "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
    "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
    "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
)

DEFAULT_MASKED_PATHS: tuple[str, ...] = (
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
)

DEFAULT_READONLY_PATHS: tuple[str, ...] = (
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
)

_NOFILE = 1048576


class SandboxView(Protocol):
    """What a container needs from its sandbox (pykubelet.runtime.sandbox.SandboxInfo)."""

    id: str
    name: str
    namespace: str
    uid: str
    hostname: str
    netns_path: str
    ipc_ns_path: str
    uts_ns_path: str
    hosts_path: str
    resolv_path: str
    hostname_path: str
    log_directory: str
    cgroup_parent: str


@dataclass(frozen=True)
class ResolvedUser:
    uid: int
    gid: int
    additional_gids: tuple[int, ...] = ()
    home: str = "/"


# ------------------------------------------------------------------------- process
def process_args(config: ContainerConfigSpec, image: ImageConfig) -> list[str]:
    """Kubernetes' rules: command overrides Entrypoint (and drops Cmd), args override Cmd."""
    command, args = list(config.command), list(config.args)
    if not command:
        if not args:
            args = list(image.cmd)
        command = list(image.entrypoint)
    argv = command + args
    if not argv:
        raise InvalidArgument(
            "command: no command specified: the request has no command or args and the "
            "image has no Entrypoint or Cmd"
        )
    return argv


def process_env(config: ContainerConfigSpec, image: ImageConfig, hostname: str) -> list[str]:
    """HOSTNAME, then image Env, then request envs; a later key replaces an earlier one."""
    merged: dict[str, str] = {}
    entries = [f"HOSTNAME={hostname}"] if hostname else []
    entries += list(image.env)
    for i, (key, value) in enumerate(config.envs):
        if not key or "=" in key:
            raise InvalidArgument(f"envs[{i}].key: {key!r} is not a valid variable name")
        entries.append(f"{key}={value}")
    for entry in entries:
        key, _, value = entry.partition("=")
        merged.pop(key, None)  # keep the position of the latest definition
        merged[key] = value
    if "PATH" not in merged:
        merged = {"PATH": DEFAULT_PATH.split("=", 1)[1], **merged}
    return [f"{k}={v}" for k, v in merged.items()]


def _read_db(path: Path) -> list[list[str]]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [line.split(":") for line in text.splitlines() if line and not line.startswith("#")]


def resolve_user(rootfs: Path, image_user: str, security: SecurityContext) -> ResolvedUser:
    """The uid/gid/groups the process runs as, looked up in the container's /etc files.

    The request's run_as_user/run_as_username win over the image's ``User``;
    run_as_group and supplemental groups are added as CRI says.
    """
    passwd = _read_db(rootfs / "etc" / "passwd")
    group = _read_db(rootfs / "etc" / "group")
    user_part, group_part = image_user, ""
    if ":" in image_user:
        user_part, group_part = image_user.split(":", 1)
    if security.run_as_user is not None:
        user_part, group_part = str(security.run_as_user), ""
    elif security.run_as_username:
        user_part, group_part = security.run_as_username, ""
    user_part = user_part or "0"
    uid, gid, name, home = 0, 0, "root", "/"
    if user_part:
        if user_part.isdigit():
            uid = int(user_part)
            entry = next((p for p in passwd if len(p) >= 4 and p[2] == user_part), None)
        else:
            entry = next((p for p in passwd if p[0] == user_part and len(p) >= 4), None)
            if entry is None:
                raise InvalidArgument(
                    f"user: {user_part!r} is not in the image's /etc/passwd"
                )
            uid = int(entry[2])
        if entry is not None:
            gid, name = int(entry[3]), entry[0]
            home = entry[5] if len(entry) > 5 and entry[5] else "/"
        else:
            name = ""
    if group_part:
        if group_part.isdigit():
            gid = int(group_part)
        else:
            g = next((g for g in group if g[0] == group_part and len(g) >= 3), None)
            if g is None:
                raise InvalidArgument(f"user: group {group_part!r} is not in /etc/group")
            gid = int(g[2])
    if security.run_as_group is not None:
        gid = security.run_as_group
    extra: list[int] = []
    if name:
        for g in group:
            if len(g) >= 4 and name in g[3].split(",") and g[2].isdigit():
                extra.append(int(g[2]))
    extra += list(security.supplemental_groups)
    gids = tuple(dict.fromkeys(g for g in extra if g != gid))
    return ResolvedUser(uid=uid, gid=gid, additional_gids=gids, home=home)


def host_capabilities() -> list[str]:
    """The capabilities in our own bounding set (what runc can grant at all).

    ALL_CAPABILITIES is in kernel bit order, so bit N of CapBnd is ALL_CAPABILITIES[N].
    """
    try:
        with open("/proc/self/status") as f:
            line = next(x for x in f if x.startswith("CapBnd:"))
        mask = int(line.split()[1], 16)
    except (OSError, StopIteration, ValueError, IndexError):
        return list(ALL_CAPABILITIES)
    return [c for i, c in enumerate(ALL_CAPABILITIES) if mask >> i & 1]


def capabilities(security: SecurityContext,
                 available: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """The container's capability set: defaults, then adds and drops ('ALL' allowed).

    ``available`` (default: every capability) bounds "all": privileged containers and
    ``add: [ALL]`` get every available capability, and adding one outside it is an error
    (root here lacks CAP_SYS_RESOURCE, so runc could not grant it).
    """
    every = list(available) if available is not None else list(ALL_CAPABILITIES)
    if security.privileged:
        return every

    def norm(c: str) -> str:
        c = c.strip().upper()
        return c if c.startswith("CAP_") or c == "ALL" else "CAP_" + c

    adds = [norm(c) for c in security.add_capabilities]
    drops = [norm(c) for c in security.drop_capabilities]
    for c in adds + drops:
        if c != "ALL" and c not in ALL_CAPABILITIES:
            raise InvalidArgument(f"linux.security_context.capabilities: unknown capability {c!r}")
    for c in adds:
        if c != "ALL" and c not in every:
            raise InvalidArgument(f"linux.security_context.capabilities: {c} is not available "
                                  "to this runtime (not in its bounding set)")
    caps = [c for c in DEFAULT_CAPABILITIES if c in every]
    if "ALL" in adds:
        caps = every
    else:
        caps += [c for c in adds if c not in caps]
    if "ALL" in drops:
        caps = [c for c in adds if c != "ALL"] if "ALL" not in adds else []
    else:
        caps = [c for c in caps if c not in drops]
    return caps


def seccomp_section(security: SecurityContext, caps: list[str]) -> dict[str, Any] | None:
    if security.privileged:
        return None
    profile = security.seccomp
    if profile.profile_type == SECCOMP_UNCONFINED:
        return None
    if profile.profile_type == SECCOMP_RUNTIME_DEFAULT:
        return seccomp.default_profile(caps)
    if profile.profile_type == SECCOMP_LOCALHOST:
        return seccomp.load_localhost_profile(profile.localhost_ref, caps)
    raise InvalidArgument(
        f"linux.security_context.seccomp.profile_type: unknown {profile.profile_type!r}"
    )


# ------------------------------------------------------------------------- mounts
def _default_mounts(readonly_sys: bool) -> list[dict[str, Any]]:
    sys_opts = ["nosuid", "noexec", "nodev", "ro" if readonly_sys else "rw"]
    return [
        {"destination": "/proc", "type": "proc", "source": "proc",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": sys_opts},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
         "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    ]


def build_mounts(config: ContainerConfigSpec, sandbox: SandboxView,
                 shm_source: str = "") -> list[dict[str, Any]]:
    """Default kernel filesystems, the pod's /etc files, then the request's mounts.

    ``shm_source`` is the pod's shared /dev/shm (one tmpfs per sandbox, or the node's for
    hostIPC pods), bind-mounted so containers sharing the IPC namespace share POSIX shm
    too; without it each container gets its own tmpfs. A request mount over the same
    destination replaces the default (kubelet mounts its own /etc/hosts for some pods).
    """
    wanted: dict[str, dict[str, Any]] = {}
    for m in _default_mounts(readonly_sys=not config.security.privileged):
        wanted[m["destination"]] = m
    if shm_source:
        wanted["/dev/shm"] = {"destination": "/dev/shm", "type": "bind", "source": shm_source,
                              "options": ["rbind", "rprivate", "rw"]}
    for dest, src in (("/etc/hosts", sandbox.hosts_path),
                      ("/etc/hostname", sandbox.hostname_path),
                      ("/etc/resolv.conf", sandbox.resolv_path)):
        if src:
            wanted[dest] = {"destination": dest, "type": "bind", "source": src,
                            "options": ["rbind", "rprivate",
                                        "ro" if config.security.readonly_rootfs else "rw"]}
    for i, mnt in enumerate(config.mounts):
        if not mnt.container_path or not os.path.isabs(mnt.container_path):
            raise InvalidArgument(f"mounts[{i}].container_path: {mnt.container_path!r} must be "
                                  "an absolute path")
        if not mnt.host_path or not os.path.isabs(mnt.host_path):
            raise InvalidArgument(f"mounts[{i}].host_path: {mnt.host_path!r} must be an "
                                  "absolute path")
        if not os.path.exists(mnt.host_path):
            raise InvalidArgument(f"mounts[{i}].host_path: {mnt.host_path!r} does not exist")
        propagation = {PROPAGATION_BIDIRECTIONAL: "rshared",
                       PROPAGATION_HOST_TO_CONTAINER: "rslave"}.get(mnt.propagation, "rprivate")
        dest = os.path.normpath(mnt.container_path)
        wanted[dest] = {"destination": dest, "type": "bind", "source": mnt.host_path,
                        "options": ["rbind", propagation, "ro" if mnt.readonly else "rw"]}
    # parents before children, so /dev is mounted before /dev/shm
    return sorted(wanted.values(), key=lambda m: m["destination"].rstrip("/").count("/"))


# ------------------------------------------------------------------------- linux
def namespaces(security: SecurityContext, sandbox: SandboxView,
               pid_ns_path: str = "", cgroup_v2: bool = False) -> list[dict[str, str]]:
    """The container's namespaces: the sandbox's network, IPC and UTS joined (hostNetwork:
    the node's network and UTS), its own mount (and PID, unless shared); on a cgroup v2
    host a container that is not privileged also gets its own cgroup namespace, so the
    read-only /sys/fs/cgroup shows its cgroup and hides the host's (containerd's
    WithNamespacedCgroup; v1 hosts and privileged containers keep the host's, for
    compatibility)."""
    ns: list[dict[str, str]] = [{"type": "mount"}]
    if security.network_mode != NS_NODE:
        ns.append({"type": "network", "path": sandbox.netns_path} if sandbox.netns_path
                  else {"type": "network"})
    if security.ipc_mode != NS_NODE:
        ns.append({"type": "ipc", "path": sandbox.ipc_ns_path}
                  if sandbox.ipc_ns_path and security.ipc_mode == NS_POD else {"type": "ipc"})
    if security.network_mode != NS_NODE:
        # hostNetwork shares the node's UTS namespace too (containerd: WithoutNamespace)
        ns.append({"type": "uts", "path": sandbox.uts_ns_path} if sandbox.uts_ns_path
                  else {"type": "uts"})
    if security.pid_mode == NS_TARGET:
        # another container's PID namespace (containerd: /proc/<target's pid>/ns/pid)
        if not pid_ns_path:
            raise InvalidArgument("pid namespace TARGET: no target container's namespace")
        ns.append({"type": "pid", "path": pid_ns_path})
    elif security.pid_mode == NS_CONTAINER or (security.pid_mode == NS_POD and not pid_ns_path):
        ns.append({"type": "pid"})
    elif security.pid_mode == NS_POD:
        ns.append({"type": "pid", "path": pid_ns_path})
    if cgroup_v2 and not security.privileged:
        ns.append({"type": "cgroup"})
    return ns


def resources_section(config: ContainerConfigSpec, has_memsw: bool = True) -> dict[str, Any]:
    r = config.resources
    for name in ("cpu_period", "cpu_quota", "cpu_shares", "memory_limit_in_bytes",
                 "memory_swap_limit_in_bytes"):
        value = getattr(r, name)
        if value < 0 and not (name == "cpu_quota" and value == -1):
            raise InvalidArgument(f"linux.resources.{name}: {value} must not be negative")
    out: dict[str, Any] = {"devices": [{"allow": False, "access": "rwm"}]}
    cpu: dict[str, Any] = {}
    if r.cpu_shares:
        cpu["shares"] = r.cpu_shares
    if r.cpu_quota:
        cpu["quota"] = r.cpu_quota
    if r.cpu_period:
        cpu["period"] = r.cpu_period
    if r.cpuset_cpus:
        cpu["cpus"] = r.cpuset_cpus
    if r.cpuset_mems:
        cpu["mems"] = r.cpuset_mems
    if cpu:
        out["cpu"] = cpu
    if r.memory_limit_in_bytes:
        mem: dict[str, Any] = {"limit": r.memory_limit_in_bytes}
        if has_memsw:
            mem["swap"] = r.memory_swap_limit_in_bytes or r.memory_limit_in_bytes
        out["memory"] = mem
    if r.unified:
        out["unified"] = dict(r.unified)
    return out


_NOT_HOST_DEVICES = ("/dev/pts", "/dev/shm", "/dev/mqueue", "/dev/console")


def host_devices(root: str = "/dev") -> list[dict[str, Any]]:
    """Every char/block device node under /dev, as OCI ``linux.devices`` entries.

    Privileged containers get them all (containerd's WithHostDevices): runc creates the
    nodes in the container's /dev tmpfs.
    """
    out: list[dict[str, Any]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if os.path.join(dirpath, d) not in _NOT_HOST_DEVICES]
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if path in _NOT_HOST_DEVICES:
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISCHR(st.st_mode):
                kind = "c"
            elif stat.S_ISBLK(st.st_mode):
                kind = "b"
            else:
                continue
            out.append({"path": path, "type": kind, "major": os.major(st.st_rdev),
                        "minor": os.minor(st.st_rdev), "fileMode": stat.S_IMODE(st.st_mode),
                        "uid": st.st_uid, "gid": st.st_gid})
    return out


def build_spec(
    config: ContainerConfigSpec,
    image: ImageConfig,
    sandbox: SandboxView,
    user: ResolvedUser,
    cgroups_path: str,
    *,
    pid_ns_path: str = "",
    min_oom_score_adj: int = 0,
    has_memsw: bool = True,
    shm_source: str = "",
    available_caps: list[str] | None = None,
    cgroup_v2: bool = False,
) -> dict[str, Any]:
    """The whole config.json (rootfs at ``<bundle>/rootfs``); ``cgroup_v2``: the host's
    cgroups are the unified hierarchy."""
    if not config.metadata.name:
        raise InvalidArgument("metadata.name: must not be empty")
    sec = config.security
    caps = capabilities(sec, available_caps)
    joins_uts = bool(sandbox.uts_ns_path)
    # never above our own hard limit: root lacks CAP_SYS_RESOURCE on some hosts
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = _NOFILE if hard == resource.RLIM_INFINITY else min(_NOFILE, hard)
    process: dict[str, Any] = {
        "terminal": config.tty,
        "user": {"uid": user.uid, "gid": user.gid},
        "args": process_args(config, image),
        "env": process_env(config, image, sandbox.hostname),
        "cwd": config.working_dir or image.working_dir or "/",
        "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": nofile, "soft": nofile}],
        "noNewPrivileges": sec.no_new_privs,  # exactly as asked, as containerd does
        "oomScoreAdj": max(config.resources.oom_score_adj, min_oom_score_adj),
    }
    if not os.path.isabs(process["cwd"]):
        raise InvalidArgument(f"working_dir: {process['cwd']!r} must be an absolute path")
    if user.additional_gids:
        process["user"]["additionalGids"] = list(user.additional_gids)
    linux: dict[str, Any] = {
        "cgroupsPath": cgroups_path,
        "namespaces": namespaces(sec, sandbox, pid_ns_path, cgroup_v2),
        "resources": resources_section(config, has_memsw),
    }
    if sec.privileged:
        linux["resources"]["devices"] = [{"allow": True, "access": "rwm"}]
        linux["devices"] = host_devices()
    if not sec.privileged:
        linux["maskedPaths"] = list(sec.masked_paths if sec.masked_paths is not None
                                    else DEFAULT_MASKED_PATHS)
        linux["readonlyPaths"] = list(sec.readonly_paths if sec.readonly_paths is not None
                                      else DEFAULT_READONLY_PATHS)
    profile = seccomp_section(sec, caps)
    if profile is not None:
        linux["seccomp"] = profile
    spec: dict[str, Any] = {
        "ociVersion": "1.0.2",
        "process": process,
        "root": {"path": "rootfs", "readonly": sec.readonly_rootfs},
        "mounts": build_mounts(config, sandbox, shm_source),
        "linux": linux,
        "annotations": {
            "io.kubernetes.cri.container-type": "container",
            "io.kubernetes.cri.container-name": config.metadata.name,
            "io.kubernetes.cri.sandbox-id": sandbox.id,
        },
    }
    if not joins_uts and sandbox.hostname and sec.network_mode != NS_NODE:
        spec["hostname"] = sandbox.hostname  # only in a UTS namespace of its own
    return spec
