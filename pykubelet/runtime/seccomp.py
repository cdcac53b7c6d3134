"""seccomp profiles for containers: RuntimeDefault, Unconfined and Localhost.

RuntimeDefault is an allowlist in the spirit of containerd's and docker's default profile:
every syscall an ordinary program needs is allowed, the ones that reach outside a
container (mount, module loading, clock setting, kexec, bpf, ptrace of others, ...) are
allowed only when the container holds the capability that would make them legal anyway,
and everything else fails with EPERM. ``clone`` may not create namespaces without
CAP_SYS_ADMIN, and ``clone3`` answers ENOSYS so libc falls back to ``clone``, which
seccomp can inspect.

Localhost profiles are JSON files on the node, in the OCI ``LinuxSeccomp`` shape or
docker's shape (with ``includes``/``excludes`` by capability and architecture); both are
reduced here to what runc takes.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable
from typing import Any

from pykubelet.runtime.errors import InvalidArgument

EPERM = 1
ENOSYS = 38

# Clone flags that create namespaces; without CAP_SYS_ADMIN clone must not set any of them.
_CLONE_NS_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)

_ARCHES = {
    "x86_64": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "aarch64": ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"],
}
_GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}

# Grouped by purpose so a reader can see why each is harmless inside a container.
_FILES = """
access faccessat faccessat2 chdir fchdir getcwd chmod fchmod fchmodat chown fchown fchownat
lchown creat open openat openat2 close close_range dup dup2 dup3 fcntl flock fsync fdatasync
sync syncfs sync_file_range ftruncate truncate fallocate fadvise64 readahead lseek read readv
pread64 preadv preadv2 write writev pwrite64 pwritev pwritev2 sendfile copy_file_range splice
tee vmsplice link linkat symlink symlinkat unlink unlinkat rename renameat renameat2 mkdir
mkdirat rmdir mknod mknodat readlink readlinkat stat lstat fstat newfstatat statx statfs
fstatfs getdents getdents64 umask utime utimes utimensat futimesat getxattr lgetxattr
fgetxattr setxattr lsetxattr fsetxattr listxattr llistxattr flistxattr removexattr
lremovexattr fremovexattr name_to_handle_at inotify_init inotify_init1 inotify_add_watch
inotify_rm_watch fanotify_mark ioctl memfd_create
"""
_MEMORY = """
brk mmap munmap mremap mprotect madvise mincore msync mlock mlock2 mlockall munlock
munlockall remap_file_pages membarrier pkey_alloc pkey_free pkey_mprotect
"""
_PROCESS = """
execve execveat exit exit_group fork vfork wait4 waitid kill tkill tgkill getpid getppid
gettid getpgid setpgid getpgrp getsid setsid getuid geteuid getgid getegid getresuid
getresgid getgroups setuid setgid setreuid setregid setresuid setresgid setfsuid setfsgid
setgroups capget capset prctl getpriority setpriority getrlimit setrlimit prlimit64
getrusage times sched_yield sched_getaffinity sched_setaffinity sched_getattr sched_setattr
sched_getparam sched_setparam sched_getscheduler sched_setscheduler sched_get_priority_max
sched_get_priority_min sched_rr_get_interval set_tid_address set_robust_list
get_robust_list futex futex_waitv rseq restart_syscall pidfd_open pidfd_send_signal
ioprio_get ioprio_set getcpu get_thread_area set_thread_area arch_prctl modify_ldt
process_mrelease seccomp landlock_create_ruleset landlock_add_rule landlock_restrict_self
uname sysinfo getrandom
"""
_SIGNALS_TIME = """
rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigsuspend rt_sigtimedwait
rt_sigqueueinfo rt_tgsigqueueinfo sigaltstack signalfd signalfd4 pause alarm nanosleep
clock_nanosleep clock_gettime clock_getres gettimeofday time getitimer setitimer
timer_create timer_delete timer_gettime timer_settime timer_getoverrun timerfd_create
timerfd_gettime timerfd_settime eventfd eventfd2 adjtimex
"""
_IO_WAIT = """
poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait
epoll_pwait2 pipe pipe2 io_setup io_destroy io_submit io_cancel io_getevents io_pgetevents
"""
# io_uring_* are left out on purpose: a large kernel attack surface (docker dropped them too)
_NET_IPC = """
socketpair bind connect listen accept accept4 getsockname getpeername getsockopt setsockopt
sendto sendmsg sendmmsg recvfrom recvmsg recvmmsg shutdown msgget msgsnd msgrcv msgctl
semget semop semtimedop semctl shmget shmat shmdt shmctl mq_open mq_unlink mq_timedsend
mq_timedreceive mq_notify mq_getsetattr
"""
_SYS_ADMIN = """
bpf clone clone3 fanotify_init fsconfig fsmount fsopen fspick lookup_dcookie mount
mount_setattr move_mount open_tree perf_event_open quotactl quotactl_fd setdomainname
sethostname setns syslog umount2 unshare
"""
ALWAYS_ALLOWED: frozenset[str] = frozenset(
    " ".join((_FILES, _MEMORY, _PROCESS, _SIGNALS_TIME, _IO_WAIT, _NET_IPC)).split()
)

# Syscalls allowed only with a capability (without it the kernel would refuse them anyway,
# but the filter removes the attack surface).
BY_CAPABILITY: dict[str, frozenset[str]] = {
    "CAP_SYS_ADMIN": frozenset(_SYS_ADMIN.split()),
    "CAP_SYS_BOOT": frozenset({"reboot"}),
    "CAP_SYS_CHROOT": frozenset({"chroot"}),
    "CAP_SYS_MODULE": frozenset({"init_module", "finit_module", "delete_module"}),
    "CAP_SYS_PACCT": frozenset({"acct"}),
    "CAP_SYS_PTRACE": frozenset(
        {"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
         "process_madvise"}
    ),
    "CAP_SYS_RAWIO": frozenset({"iopl", "ioperm"}),
    "CAP_SYS_TIME": frozenset({"settimeofday", "clock_settime", "clock_adjtime"}),
    "CAP_SYS_TTY_CONFIG": frozenset({"vhangup"}),
    "CAP_SYS_NICE": frozenset({"get_mempolicy", "set_mempolicy", "mbind"}),
    "CAP_SYSLOG": frozenset({"syslog"}),
    "CAP_BPF": frozenset({"bpf"}),
    "CAP_PERFMON": frozenset({"perf_event_open"}),
    "CAP_DAC_READ_SEARCH": frozenset({"open_by_handle_at"}),
}

# personality(2) values that are harmless: PER_LINUX, PER_LINUX32, UNAME26 variants, query.
_PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
AF_VSOCK = 40


def _arches() -> list[str]:
    return _ARCHES.get(platform.machine(), [])


def default_profile(capabilities: Iterable[str]) -> dict[str, Any]:
    """The RuntimeDefault profile for a container holding ``capabilities``."""
    caps = set(capabilities)
    allowed = set(ALWAYS_ALLOWED)
    for cap, names in BY_CAPABILITY.items():
        if cap in caps:
            allowed |= names
    # ptrace of own children is harmless on kernels >= 4.8 (seccomp is re-checked after it)
    allowed |= {"ptrace", "process_vm_readv", "process_vm_writev"}
    syscalls: list[dict[str, Any]] = [{"names": sorted(allowed), "action": "SCMP_ACT_ALLOW"}]
    syscalls.append({
        "names": ["socket"], "action": "SCMP_ACT_ALLOW",
        "args": [{"index": 0, "value": AF_VSOCK, "op": "SCMP_CMP_NE"}],
    })
    for value in _PERSONALITIES:
        syscalls.append({
            "names": ["personality"], "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 0, "value": value, "op": "SCMP_CMP_EQ"}],
        })
    if "CAP_SYS_ADMIN" not in caps:
        syscalls.append({
            "names": ["clone"], "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 0, "value": _CLONE_NS_FLAGS, "valueTwo": 0,
                      "op": "SCMP_CMP_MASKED_EQ"}],
        })
        syscalls.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS})
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": EPERM,
        "architectures": _arches(),
        "syscalls": syscalls,
    }


def _rule_applies(rule: dict[str, Any], caps: set[str], arch: str) -> bool:
    inc = rule.get("includes") or {}
    exc = rule.get("excludes") or {}
    if inc.get("caps") and not set(inc["caps"]) <= caps:
        return False
    if inc.get("arches") and arch not in inc["arches"]:
        return False
    if exc.get("caps") and set(exc["caps"]) & caps:
        return False
    return not (exc.get("arches") and arch in exc["arches"])


def load_localhost_profile(path: str, capabilities: Iterable[str]) -> dict[str, Any]:
    """A Localhost profile (absolute path on the node) reduced to runc's LinuxSeccomp."""
    field = "linux.security_context.seccomp.localhost_ref"
    if not path or not os.path.isabs(path):
        raise InvalidArgument(f"{field}: {path!r} must be an absolute path to a profile")
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError as exc:
        raise InvalidArgument(f"{field}: profile {path!r} does not exist") from exc
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"{field}: profile {path!r} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict) or "defaultAction" not in doc:
        raise InvalidArgument(f"{field}: profile {path!r} has no defaultAction")
    caps = set(capabilities)
    arch = _GO_ARCH.get(platform.machine(), platform.machine())
    out: dict[str, Any] = {"defaultAction": doc["defaultAction"]}
    if "defaultErrnoRet" in doc:
        out["defaultErrnoRet"] = doc["defaultErrnoRet"]
    if doc.get("architectures"):
        out["architectures"] = doc["architectures"]
    elif doc.get("archMap"):
        native = _arches()[:1]
        for arch_entry in doc["archMap"]:
            if arch_entry.get("architecture") in native:
                out["architectures"] = [arch_entry["architecture"],
                                        *(arch_entry.get("subArchitectures") or [])]
    if doc.get("flags"):
        out["flags"] = doc["flags"]
    syscalls = []
    for i, rule in enumerate(doc.get("syscalls") or []):
        names = rule.get("names") or ([rule["name"]] if rule.get("name") else [])
        if not names or "action" not in rule:
            raise InvalidArgument(f"{field}: profile {path!r} syscalls[{i}] needs names and "
                                  "an action")
        if not _rule_applies(rule, caps, arch):
            continue
        entry: dict[str, Any] = {"names": list(names), "action": rule["action"]}
        if rule.get("args"):
            entry["args"] = rule["args"]
        if "errnoRet" in rule:
            entry["errnoRet"] = rule["errnoRet"]
        syscalls.append(entry)
    out["syscalls"] = syscalls
    return out
