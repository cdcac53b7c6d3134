"""Container defaults read from inside containers the agent runs, on containerd and on our
runtime side by side (issue 29 item 4): the capability set is containerd's default
(oci.defaultUnixCaps) changed only by the pod's add/drop, no_new_privs only when
allowPrivilegeEscalation is false, seccomp mode 2 for RuntimeDefault (the container's
profile winning over the pod's) and 0 for Unconfined or no profile (kubelet's seccompDefault
is off), kubelet's masked paths empty, /proc's kernel knobs read-only, and no host
namespace unless hostNetwork/hostPID/hostIPC ask. Read from an exec'd process, which runs
with the container's process settings on both runtimes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from agent_harness import busybox_pod

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]

CAP_BITS = {
    "CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6,
    "SETUID": 7, "SETPCAP": 8, "NET_BIND_SERVICE": 10, "NET_ADMIN": 12, "NET_RAW": 13,
    "SYS_CHROOT": 18, "SYS_PTRACE": 19, "MKNOD": 27, "AUDIT_WRITE": 29, "SETFCAP": 31,
}
# containerd's oci.defaultUnixCaps (Docker's default set too)
DEFAULT_CAPS = ("CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
                "SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL",
                "AUDIT_WRITE")
# kubelet's defaultMaskedPaths (pkg/securitycontext/util.go), which both runtimes apply
MASKED = ("/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
          "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
          "/sys/firmware", "/sys/devices/virtual/powercap")
READONLY = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
NAMESPACES = ("net", "pid", "ipc", "uts", "mnt")

PROBE = (
    "grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status "
    "| tr -d '\\t '; "
    f"for n in {' '.join(NAMESPACES)}; do echo ns.$n:$(readlink /proc/self/ns/$n); done; "
    f"for p in {' '.join(MASKED)}; do "
    "if [ -d $p ]; then echo $p:$(ls -A $p | wc -l); "
    "elif [ -e $p ]; then echo $p:$(head -c 4096 $p 2>/dev/null | wc -c); fi; done"
)


def mask(*caps: str) -> str:
    return f"{sum(1 << CAP_BITS[c] for c in caps):016x}"


def probe(h: Any, uid: str, container: str) -> dict[str, str]:
    code, out = h.exec(uid, container, ["sh", "-c", PROBE])
    assert code == 0, out
    return dict(line.split(":", 1) for line in out.splitlines() if ":" in line)


def mounts(h: Any, uid: str, container: str) -> dict[str, list[str]]:
    """Mount point -> its per-mount options, the last mount on each point winning."""
    code, out = h.exec(uid, container, ["cat", "/proc/self/mountinfo"])
    assert code == 0, out
    return {f[4]: f[5].split(",") for f in (ln.split() for ln in out.splitlines())}


def host_ns(name: str) -> str:
    return os.readlink(f"/proc/self/ns/{name}")


def test_defaults_capabilities_seccomp_and_masked_paths(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    sleep = ["sh", "-c", "exec sleep 3600"]
    pod = busybox_pod("defaults", "exec sleep 3600", container_name="plain")
    pod["spec"]["containers"] += [
        {"name": "strict", "image": pod["spec"]["containers"][0]["image"],
         "imagePullPolicy": "IfNotPresent", "command": sleep,
         "securityContext": {"allowPrivilegeEscalation": False,
                             "seccompProfile": {"type": "RuntimeDefault"}}},
        {"name": "caps", "image": pod["spec"]["containers"][0]["image"],
         "imagePullPolicy": "IfNotPresent", "command": sleep,
         "securityContext": {"capabilities": {"add": ["NET_ADMIN", "SYS_PTRACE"],
                                              "drop": ["NET_RAW", "CHOWN"]}}},
        {"name": "minimal", "image": pod["spec"]["containers"][0]["image"],
         "imagePullPolicy": "IfNotPresent", "command": sleep,
         "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}}},
    ]
    h.write("defaults", pod)
    uid = h.wait_running("defaults")["metadata"]["uid"]

    plain = probe(h, uid, "plain")
    default = mask(*DEFAULT_CAPS)
    assert default == "00000000a80425fb"
    assert {k: plain[k] for k in ("CapPrm", "CapEff", "CapBnd", "CapAmb")} == {
        "CapPrm": default, "CapEff": default, "CapBnd": default, "CapAmb": "0" * 16}
    assert (plain["NoNewPrivs"], plain["Seccomp"]) == ("0", "0")

    strict = probe(h, uid, "strict")
    assert (strict["CapEff"], strict["NoNewPrivs"], strict["Seccomp"]) == (default, "1", "2")

    caps = probe(h, uid, "caps")
    want = mask(*[c for c in DEFAULT_CAPS if c not in ("NET_RAW", "CHOWN")],
                "NET_ADMIN", "SYS_PTRACE")
    assert (caps["CapEff"], caps["CapBnd"]) == (want, want)
    minimal = probe(h, uid, "minimal")
    assert (minimal["CapEff"], minimal["CapBnd"]) == (mask("NET_BIND_SERVICE"),) * 2

    # no host namespace (the mount namespace is always the container's own)
    for n in NAMESPACES:
        assert plain[f"ns.{n}"] != host_ns(n), n
    # the pod's containers share the sandbox's network, IPC and UTS namespaces
    for n in ("net", "ipc", "uts"):
        assert strict[f"ns.{n}"] == plain[f"ns.{n}"], n

    masked = [p for p in MASKED if os.path.exists(p)]  # this kernel's (no /proc/kcore here)
    assert {"/proc/keys", "/proc/timer_list", "/sys/firmware"} <= set(masked)
    assert os.listdir("/sys/firmware")  # not empty on the host
    assert Path("/proc/timer_list").read_text()  # ... nor this
    where = mounts(h, uid, "plain")
    for p in masked:
        assert plain[p] == "0", f"{p} readable in the container: {plain[p]}"
        assert p in where, f"{p} not masked by a mount"
    for p in READONLY:
        if os.path.exists(p):
            assert "ro" in where.get(p, []), f"{p} not read-only: {where.get(p)}"
    h.remove("defaults")
    h.wait(lambda: not h.sandboxes(uid), 60, "removed")


def test_host_namespaces_only_when_asked_and_pod_seccomp(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    pod = busybox_pod("hostns", "exec sleep 3600", container_name="inherit",
                      hostNetwork=True, hostPID=True, hostIPC=True,
                      securityContext={"seccompProfile": {"type": "RuntimeDefault"}})
    pod["spec"]["containers"].append(
        {"name": "unconfined", "image": pod["spec"]["containers"][0]["image"],
         "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", "exec sleep 3600"],
         "securityContext": {"seccompProfile": {"type": "Unconfined"}}})
    h.write("hostns", pod)
    uid = h.wait_running("hostns")["metadata"]["uid"]
    inherit = probe(h, uid, "inherit")
    for n in ("net", "pid", "ipc", "uts"):
        assert inherit[f"ns.{n}"] == host_ns(n), n
    assert inherit["ns.mnt"] != host_ns("mnt")
    assert inherit["Seccomp"] == "2"  # the pod's RuntimeDefault
    assert probe(h, uid, "unconfined")["Seccomp"] == "0"  # the container's own wins
    h.remove("hostns")
    h.wait(lambda: not h.sandboxes(uid), 60, "removed")
