"""ContainerManager with real runc, conmon, overlayfs and cgroups (as root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import container_manager_fixtures
import pytest
from container_manager_fixtures import Env, wait_for

from pykubelet.runtime import cgroups, logs
from pykubelet.runtime.container_request import (
    ContainerConfigSpec,
    ContainerMetadata,
    MountSpec,
    Resources,
    SeccompProfile,
    SecurityContext,
)
from pykubelet.runtime.container_store import CREATED, EXITED, RUNNING, ContainerFilter
from pykubelet.runtime.containers import ExecTimeout
from pykubelet.runtime.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
)

pytestmark = [pytest.mark.root, pytest.mark.runc]

# the shared fixtures (a plain module, since conftest.py belongs to the CRI tests)
env = container_manager_fixtures.env
busybox_archive = container_manager_fixtures.busybox_archive


def cfg(name: str, *command: str, **kw: object) -> ContainerConfigSpec:
    return ContainerConfigSpec(metadata=ContainerMetadata(name), image="busybox",
                               command=tuple(command), log_path=f"{name}/0.log",
                               **kw)  # type: ignore[arg-type]


def run_to_exit(env: Env, sb: object, config: ContainerConfigSpec, timeout: float = 20):
    m = env.manager
    cid = m.create(sb, config)
    m.start(cid)
    return cid, wait_for(lambda: (s := m.status(cid)).state == EXITED and s, timeout)


def log_of(env: Env, sb: object, name: str) -> list[str]:
    """The container's stdout lines (conmon reads stdout and stderr separately, so their
    relative order in the file is not the order the process wrote them)."""
    path = Path(sb.log_directory) / name / "0.log"  # type: ignore[attr-defined]
    return logs.read_messages(path, "stdout")


def test_exit_codes_and_reasons(env: Env) -> None:
    sb = env.sandbox()
    _, ok = run_to_exit(env, sb, cfg("ok", "sh", "-c", "echo done"))
    assert (ok.exit_code, ok.reason) == (0, "Completed")
    assert ok.started_at >= ok.created_at > 0
    assert ok.finished_at >= ok.started_at
    _, bad = run_to_exit(env, sb, cfg("bad", "sh", "-c", "echo oops >&2; exit 1"))
    assert (bad.exit_code, bad.reason) == (1, "Error")
    assert log_of(env, sb, "ok") == ["done"]
    entries = list(logs.read_entries(Path(sb.log_directory) / "bad" / "0.log"))
    assert [(e.stream, e.partial, e.content) for e in entries] == [("stderr", False, b"oops")]


def test_stop_sends_sigterm_then_sigkill(env: Env) -> None:
    sb = env.sandbox()
    m = env.manager
    # sh as PID 1 ignores SIGTERM: stop must escalate to SIGKILL after the timeout
    stubborn = m.create(sb, cfg("stubborn", "sleep", "1000"))
    m.start(stubborn)
    assert m.status(stubborn).state == RUNNING
    t = time.monotonic()
    m.stop(stubborn, 1)
    took = time.monotonic() - t
    st = m.status(stubborn)
    assert (st.state, st.exit_code, st.reason) == (EXITED, 137, "Error")
    assert took >= 1.0
    # a process that handles SIGTERM exits with its own code, before the timeout
    polite = m.create(sb, cfg("polite", "sh", "-c",
                              "trap 'echo bye; exit 143' TERM; echo up; "
                              "while true; do sleep 0.1; done"))
    m.start(polite)
    wait_for(lambda: log_of(env, sb, "polite") == ["up"])
    t = time.monotonic()
    m.stop(polite, 30)
    assert time.monotonic() - t < 10
    st = m.status(polite)
    assert (st.exit_code, st.reason) == (143, "Error")
    assert log_of(env, sb, "polite") == ["up", "bye"]
    m.stop(polite, 30)  # stopping an exited container is a no-op
    # timeout 0 kills at once
    now = m.create(sb, cfg("now", "sleep", "1000"))
    m.start(now)
    m.stop(now, 0)
    assert m.status(now).exit_code == 137


def test_oom_killed_under_a_tiny_memory_limit(env: Env) -> None:
    sb = env.sandbox()
    limit = 8 << 20
    config = cfg("hog", "sh", "-c", "tail /dev/zero",
                 resources=Resources(memory_limit_in_bytes=limit))
    cid = env.manager.create(sb, config)
    rec_cgroup = env.manager._get(cid).cgroups_path
    mem_dir = cgroups.controller_dir(rec_cgroup, "memory")
    assert int((mem_dir / "memory.limit_in_bytes").read_text()) == limit
    env.manager.start(cid)
    st = wait_for(lambda: (s := env.manager.status(cid)).state == EXITED and s, 30)
    assert (st.exit_code, st.reason) == (137, "OOMKilled")
    assert not Path("oom").exists()  # conmon's marker stays in the container's directory
    env.manager.remove(cid)


def test_removal_leaves_nothing(env: Env) -> None:
    sb = env.sandbox()
    m = env.manager
    cid = m.create(sb, cfg("gone", "sleep", "1000"))
    m.start(cid)
    rec = m._get(cid)
    cdir = env.root / "containers" / cid
    assert (cdir / "bundle" / "rootfs" / "bin" / "busybox").exists()
    assert cgroups.existing_dirs(rec.cgroups_path)
    conmon_pid = int((cdir / "conmon.pid").read_text())
    m.remove(cid)
    assert not cdir.exists()
    with open("/proc/self/mountinfo") as f:
        assert str(cdir) not in f.read()
    assert cgroups.existing_dirs(rec.cgroups_path) == []
    assert not (env.root / "runc" / cid).exists()
    assert not Path(f"/proc/{conmon_pid}").exists() or b"conmon" not in Path(
        f"/proc/{conmon_pid}/cmdline").read_bytes()
    assert not (env.store.root / "leases" / f"{cid}.json").exists()
    assert m.list() == []
    m.remove(cid)  # idempotent
    with pytest.raises(NotFound):
        m.status(cid)
    # the log stays for the kubelet to read and rotate
    assert (Path(sb.log_directory) / "gone" / "0.log").exists()


def test_bad_requests_change_nothing(env: Env) -> None:
    sb = env.sandbox()
    m = env.manager

    def nothing_changed() -> None:
        assert m.list() == []
        assert [p.name for p in (env.root / "containers").iterdir()
                if not p.name.startswith(".")] == []
        assert list((env.store.root / "leases").iterdir()) == []
        with open("/proc/self/mountinfo") as f:
            assert str(env.root / "containers") not in f.read()

    with pytest.raises(NotFound, match=r"image\.image: image 'nosuch' not found"):
        m.create(sb, ContainerConfigSpec(ContainerMetadata("x"), image="nosuch",
                                         command=("true",)))
    with pytest.raises(InvalidArgument, match=r"metadata\.name"):
        m.create(sb, cfg("", "true"))
    with pytest.raises(InvalidArgument, match=r"image\.image"):
        m.create(sb, ContainerConfigSpec(ContainerMetadata("x"), image=""))
    with pytest.raises(NotFound, match="pod sandbox 'removed' not found"):
        m.create("removed", cfg("x", "true"))
    with pytest.raises(InvalidArgument, match="working_dir"):
        m.create(sb, cfg("x", "true", working_dir="relative"))
    with pytest.raises(InvalidArgument, match=r"mounts\[0\]\.host_path"):
        m.create(sb, cfg("x", "true", mounts=(MountSpec("/data", "/nonexistent/rtc"),)))
    with pytest.raises(InvalidArgument, match="unknown capability"):
        m.create(sb, cfg("x", "true", security=SecurityContext(add_capabilities=("BOGUS",))))
    with pytest.raises(InvalidArgument, match="not in the image's /etc/passwd"):
        m.create(sb, cfg("x", "true", security=SecurityContext(run_as_username="nobody2")))
    with pytest.raises(InvalidArgument, match="localhost_ref"):
        m.create(sb, cfg("x", "true", security=SecurityContext(
            seccomp=SeccompProfile("Localhost", "/nonexistent/profile.json"))))
    # runc itself refusing: the binary does not exist in the image
    with pytest.raises(FailedPrecondition, match="nosuchbinary"):
        m.create(sb, cfg("x", "/nosuchbinary"))
    nothing_changed()
    with pytest.raises(NotFound):
        m.start("0" * 64)
    with pytest.raises(NotFound):
        m.stop("0" * 64, 0)
    # the same name twice in one sandbox and attempt
    cid = m.create(sb, cfg("dup", "true"))
    with pytest.raises(AlreadyExists, match="reserved"):
        m.create(sb, cfg("dup", "true"))
    m.start(cid)
    wait_for(lambda: m.status(cid).state == EXITED)
    with pytest.raises(FailedPrecondition, match="only be started once"):
        m.start(cid)
    m.remove(cid)
    m.remove_all_in_sandbox(sb.id)  # the pod's /dev/shm goes with the sandbox
    nothing_changed()


def test_list_filters_exec_and_stats(env: Env) -> None:
    sb1, sb2 = env.sandbox(), env.sandbox()
    m = env.manager
    a = m.create(sb1, cfg("a", "sleep", "1000", labels={"app": "a", "tier": "x"}))
    b = m.create(sb2, cfg("b", "sleep", "1000", labels={"app": "b"}))
    m.start(a)
    assert {s.id for s in m.list()} == {a, b}
    assert [s.id for s in m.list(ContainerFilter(sandbox_id=sb2.id))] == [b]
    assert [s.id for s in m.list(ContainerFilter(state=RUNNING))] == [a]
    assert [s.id for s in m.list(ContainerFilter(state=CREATED))] == [b]
    assert [s.id for s in m.list(ContainerFilter(labels={"app": "a"}))] == [a]
    assert m.list(ContainerFilter(labels={"app": "a", "tier": "y"})) == []
    assert [s.id for s in m.list(ContainerFilter(id=a[:10]))] == [a]

    out, err, code = m.exec_sync(a, ["sh", "-c", "echo out; echo err >&2; exit 5"], 10)
    assert (out, err, code) == (b"out\n", b"err\n", 5)
    out, _, code = m.exec_sync(a, ["cat", "/etc/group"], 10)
    assert code == 0
    assert out.startswith(b"root:x:0:")
    with pytest.raises(FailedPrecondition, match="nosuchcmd"):
        m.exec_sync(a, ["nosuchcmd"], 10)
    with pytest.raises(FailedPrecondition, match="not running"):
        m.exec_sync(b, ["true"], 10)
    t = time.monotonic()
    with pytest.raises(ExecTimeout, match="timeout"):
        m.exec_sync(a, ["sleep", "30"], 1)
    assert time.monotonic() - t < 10

    m.exec_sync(a, ["sh", "-c", "head -c 3000000 /dev/zero > /tmp/blob"], 20)
    stats = m.stats(a)
    assert stats.memory_usage_bytes > 0
    assert stats.cpu_usage_core_nanoseconds > 0
    assert stats.writable_layer_bytes >= 3000000
    assert {s.id for s in m.list_stats()} == {a, b}
    busy = m.create(sb1, cfg("busy", "sh", "-c", "while true; do :; done",
                             resources=Resources(memory_limit_in_bytes=64 << 20)))
    m.start(busy)
    m.stats(busy)
    time.sleep(0.5)
    later = m.stats(busy)
    assert 100_000_000 < later.cpu_usage_nano_cores < 2_100_000_000  # ~1 core spinning
    assert 0 < later.memory_available_bytes < 64 << 20
    m.remove(busy)

    m.stop_all_in_sandbox(sb1.id, 0)
    assert m.status(a).state == EXITED
    assert m.status(b).state == CREATED
    m.remove_all_in_sandbox(sb2.id)
    assert [s.id for s in m.list()] == [a]


def test_no_new_privs_off_unless_asked(env: Env) -> None:
    """An unprivileged container whose request leaves no_new_privs unset can gain privileges
    (setuid programs work), as with containerd."""
    sb = env.sandbox()
    config = cfg("nnp", "sh", "-c", "grep NoNewPrivs: /proc/self/status",
                 security=SecurityContext(run_as_user=65534, run_as_group=65534))
    _, st = run_to_exit(env, sb, config)
    assert st.exit_code == 0
    assert "NoNewPrivs:\t0" in log_of(env, sb, "nnp")


def test_reopen_log_creates_the_new_file_at_once(env: Env) -> None:
    """kubelet's rotation renames the log, calls ReopenContainerLog, then expects the file
    back even when the container writes nothing more (containerd opens it before replying)."""
    sb = env.sandbox()
    m = env.manager
    cid = m.create(sb, cfg("quiet", "sh", "-c", "echo once; exec sleep 1000"))
    m.start(cid)
    path = Path(sb.log_directory) / "quiet" / "0.log"
    wait_for(lambda: len(logs.read_messages(path)) >= 1)
    for i in range(5):
        os.rename(path, path.with_name(f"0.log.2026010{i}-000000"))
        m.reopen_log(cid)
        assert path.exists()
    m.stop(cid, 0)


def test_reopen_log_after_rotation(env: Env) -> None:
    sb = env.sandbox()
    m = env.manager
    cid = m.create(sb, cfg("talker", "sh", "-c",
                           "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.05; done"))
    m.start(cid)
    path = Path(sb.log_directory) / "talker" / "0.log"
    wait_for(lambda: len(logs.read_messages(path)) >= 2)
    rotated = path.with_name("0.log.20260101-000000")
    os.rename(path, rotated)
    m.reopen_log(cid)
    wait_for(lambda: path.exists() and len(logs.read_messages(path)) >= 2)
    old_last = logs.read_messages(rotated)[-1]
    new_first = logs.read_messages(path)[0]
    assert int(new_first.split()[1]) > int(old_last.split()[1])
    m.stop(cid, 0)
    with pytest.raises(FailedPrecondition):
        m.reopen_log(cid)


def test_spec_in_a_real_container(env: Env, tmp_path: Path) -> None:
    """Namespaces joined, pod files mounted, user, caps, no_new_privs, masked paths."""
    ns = f"rtc-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        hosts = tmp_path / "hosts"
        hosts.write_text("127.0.0.1 localhost\n10.95.0.7 rtc-pod\n")
        resolv = tmp_path / "resolv.conf"
        resolv.write_text("nameserver 10.95.0.1\n")
        hostname = tmp_path / "hostname"
        hostname.write_text("rtc-pod\n")
        data = tmp_path / "data"
        data.mkdir()
        (data / "in.txt").write_text("from host")
        sb = env.sandbox(netns_path=f"/run/netns/{ns}", hosts_path=str(hosts),
                         resolv_path=str(resolv), hostname_path=str(hostname))
        script = (
            "readlink /proc/self/ns/net; cat /etc/hosts /etc/resolv.conf; hostname; "
            "id -u; id -g; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
            "echo fw=$(ls /sys/firmware | wc -l); "
            "echo 1 > /proc/sys/kernel/pid_max || echo ro-proc-sys; "
            "cat /data/in.txt; echo; echo $GREETING $HOSTNAME; pwd; "
            "echo hi > /data/out.txt || echo ro-data"
        )
        config = cfg("spec", "sh", "-c", script, working_dir="/tmp",
                     envs=(("GREETING", "hello"),),
                     mounts=(MountSpec("/data", str(data), readonly=True),),
                     security=SecurityContext(run_as_user=65534, run_as_group=65534,
                                              no_new_privs=True,
                                              seccomp=SeccompProfile("RuntimeDefault")))
        _, st = run_to_exit(env, sb, config)
        out = log_of(env, sb, "spec")
        netns_inode = os.stat(f"/run/netns/{ns}").st_ino
        assert out[0] == f"net:[{netns_inode}]"
        assert "10.95.0.7 rtc-pod" in out
        assert "nameserver 10.95.0.1" in out
        assert "rtc-pod" in out
        assert out[out.index("rtc-pod") + 1:out.index("rtc-pod") + 3] == ["65534", "65534"]
        assert "NoNewPrivs:\t1" in out
        assert "Seccomp:\t2" in out
        assert "CapEff:\t0000000000000000" in out  # non-root: no effective capabilities
        assert os.listdir("/sys/firmware")  # not empty on the host ...
        assert "fw=0" in out  # ... but masked in the container
        assert "ro-proc-sys" in out
        assert "from host" in "".join(out)
        assert "hello rtc-pod" in out
        assert "/tmp" in out
        assert "ro-data" in out
        assert st.exit_code == 0
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=False)


def test_root_capabilities_and_seccomp_profiles(env: Env, tmp_path: Path) -> None:
    sb = env.sandbox()
    script = "grep -E '^(CapBnd|Seccomp):' /proc/self/status; mkdir /tmp/d && echo made"
    _, _ = run_to_exit(env, sb, cfg("caps", "sh", "-c", script, security=SecurityContext(
        drop_capabilities=("NET_RAW",), add_capabilities=("NET_ADMIN",),
        seccomp=SeccompProfile("Unconfined"))))
    out = log_of(env, sb, "caps")
    bnd = int(out[0].split()[1], 16)
    expected = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_FSETID": 4,
                "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
                "CAP_NET_BIND_SERVICE": 10, "CAP_NET_ADMIN": 12, "CAP_SYS_CHROOT": 18,
                "CAP_MKNOD": 27, "CAP_AUDIT_WRITE": 29, "CAP_SETFCAP": 31}
    assert bnd == sum(1 << b for b in expected.values())
    assert "Seccomp:\t0" in out
    assert "made" in out
    # a Localhost profile that forbids mkdir
    profile = tmp_path / "no-mkdir.json"
    profile.write_text(json.dumps({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO",
                      "errnoRet": 1}],
    }))
    _, st = run_to_exit(env, sb, cfg("local", "sh", "-c", script, security=SecurityContext(
        seccomp=SeccompProfile("Localhost", str(profile)))))
    out = log_of(env, sb, "local")
    assert "Seccomp:\t2" in out
    assert "made" not in out
    assert st.exit_code != 0


def test_args_follow_kubernetes_rules(env: Env, tmp_path: Path) -> None:
    from pykubelet.runtime.image_build import build_busybox_image

    archive = tmp_path / "ep.tar"
    build_busybox_image(archive, name="localhost/ep:1", entrypoint=["echo", "ep"], cmd=["cmd"],
                        env=["PATH=/bin", "FROM_IMAGE=yes", "OVERRIDE=image"],
                        working_dir="/etc")
    env.store.import_archive(archive)
    sb = env.sandbox()
    cases = {
        "none": ((), (), "ep cmd"),
        "args": ((), ("a",), "ep a"),
        "command": (("echo", "c"), (), "c"),
        "both": (("echo", "c"), ("a",), "c a"),
    }
    for name, (command, args, want) in cases.items():
        run_to_exit(env, sb, ContainerConfigSpec(ContainerMetadata(name), image="localhost/ep:1",
                                                 command=command, args=args,
                                                 log_path=f"{name}/0.log"))
        assert log_of(env, sb, name) == [want], name
    run_to_exit(env, sb, ContainerConfigSpec(
        ContainerMetadata("env"), image="localhost/ep:1",
        command=("sh", "-c", "echo $FROM_IMAGE $OVERRIDE $(pwd)"),
        envs=(("OVERRIDE", "request"),), log_path="env/0.log"))
    assert log_of(env, sb, "env") == ["yes request /etc"]


def test_recover_after_restart_and_half_created_leftovers(env: Env) -> None:
    sb = env.sandbox()
    m = env.manager
    running = m.create(sb, cfg("running", "sleep", "1000"))
    m.start(running)
    exits_later = m.create(sb, cfg("later", "sh", "-c", "sleep 1; exit 9"))
    m.start(exits_later)
    created = m.create(sb, cfg("created", "true"))
    # a create that crashed half way: runc state, mount and lease exist, no record
    half = m.create(sb, cfg("half", "sleep", "1000"))
    (env.root / "containers" / half / "record.json").unlink()

    time.sleep(1.5)  # "later" exits while no manager looks
    m2 = env.new_manager()
    m2.recover()
    states = {s.name: (s.state, s.exit_code) for s in m2.list()}
    assert states == {"running": (RUNNING, 0), "later": (EXITED, 9), "created": (CREATED, 0)}
    assert not (env.root / "containers" / half).exists()
    assert not (env.root / "runc" / half).exists()
    assert not (env.store.root / "leases" / f"{half}.json").exists()
    with open("/proc/self/mountinfo") as f:
        assert half not in f.read()
    # the recovered manager drives the old containers as its own
    m2.start(created)
    assert wait_for(lambda: m2.status(created).state == EXITED)
    m2.stop(running, 0)
    assert m2.status(running).exit_code == 137
    with pytest.raises(AlreadyExists):
        m2.create(sb, cfg("running", "true"))  # names survive the restart too
    for cid in (running, exits_later, created):
        m2.remove(cid)
    assert m2.list() == []
    # leftovers without a container directory: runc state and an image lease
    stray = m2.create(sb, cfg("stray", "sleep", "1000"))
    (env.root / "containers" / stray / "record.json").unlink()
    subprocess.run(["umount", str(env.root / "containers" / stray / "bundle" / "rootfs")],
                   check=True)
    shutil.rmtree(env.root / "containers" / stray)
    env.new_manager().recover()
    assert not (env.root / "runc" / stray).exists()
    assert env.store.lease_holders() == []
    # a sandbox removed while the runtime was down: its /dev/shm goes at the next recover
    shm = env.root / "containers" / ".shm" / sb.id
    assert shm.is_dir()
    del env.sandboxes[sb.id]
    env.new_manager().recover()
    assert not shm.exists()


def test_stop_a_created_container_and_update_resources(env: Env) -> None:
    sb = env.sandbox()
    m = env.manager
    cid = m.create(sb, cfg("never", "sleep", "1000"))
    m.stop(cid, 0)
    st = m.status(cid)
    assert st.state == EXITED
    assert st.exit_code == 137
    m.remove(cid)

    cid = m.create(sb, cfg("upd", "sleep", "1000",
                           resources=Resources(memory_limit_in_bytes=64 << 20, cpu_shares=256)))
    m.start(cid)
    rec = m._get(cid)
    mem = cgroups.controller_dir(rec.cgroups_path, "memory") / "memory.limit_in_bytes"
    shares = cgroups.controller_dir(rec.cgroups_path, "cpu") / "cpu.shares"
    assert int(mem.read_text()) == 64 << 20
    assert int(shares.read_text()) == 256
    m.update_resources(cid, Resources(memory_limit_in_bytes=128 << 20, cpu_shares=512))
    assert int(mem.read_text()) == 128 << 20
    assert int(shares.read_text()) == 512
    assert m.status(cid).resources["memory_limit_in_bytes"] == 128 << 20
    m.remove(cid)


def test_a_dead_monitor_is_reported_not_hidden(env: Env) -> None:
    """conmon killed: the container still runs (RUNNING); once it dies the code is unknown."""
    sb = env.sandbox()
    m = env.manager
    cid = m.create(sb, cfg("orphan", "sleep", "1000"))
    m.start(cid)
    conmon_pid = int((env.root / "containers" / cid / "conmon.pid").read_text())
    os.kill(conmon_pid, 9)
    wait_for(lambda: b"conmon" not in Path(f"/proc/{conmon_pid}/cmdline").read_bytes()
             if Path(f"/proc/{conmon_pid}").exists() else True)
    assert m.status(cid).state == RUNNING
    os.kill(m._get(cid).pid, 9)
    st = wait_for(lambda: (s := m.status(cid)).state == EXITED and s)
    assert (st.exit_code, st.reason) == (255, "Unknown")
    assert "monitor" in st.message
    m.remove(cid)


def test_concurrent_lifecycles(env: Env) -> None:
    """gRPC serves RPCs on a thread pool: creates, lists and removes run at the same time."""
    from concurrent.futures import ThreadPoolExecutor

    sb = env.sandbox()
    m = env.manager
    stop_listing = False
    seen: list[int] = []

    def lister() -> None:
        while not stop_listing:
            seen.append(len(m.list()))

    def lifecycle(i: int) -> tuple[int, str]:
        cid = m.create(sb, cfg(f"c{i}", "sh", "-c", f"exit {i}"))
        m.start(cid)
        st = wait_for(lambda: (s := m.status(cid)).state == EXITED and s)
        m.remove(cid)
        return st.exit_code, st.reason

    with ThreadPoolExecutor(max_workers=6) as pool:
        listing = pool.submit(lister)
        try:
            results = list(pool.map(lifecycle, range(8)))
        finally:
            stop_listing = True
        listing.result(timeout=30)
    assert results == [(i, "Completed" if i == 0 else "Error") for i in range(8)]
    assert m.list() == []
    assert max(seen) >= 1
    assert [p.name for p in (env.root / "containers").iterdir()
            if not p.name.startswith(".")] == []
    assert list((env.root / "runc").iterdir()) == []


def test_pod_containers_share_dev_shm(env: Env) -> None:
    sb = env.sandbox()
    m = env.manager
    _, st = run_to_exit(env, sb, cfg("writer", "sh", "-c", "echo shared > /dev/shm/x"))
    assert st.exit_code == 0
    _, _ = run_to_exit(env, sb, cfg("reader", "sh", "-c", "cat /dev/shm/x; "
                                                          "grep ' /dev/shm ' /proc/mounts"))
    out = log_of(env, sb, "reader")
    assert out[0] == "shared"
    assert "tmpfs" in out[1]
    assert "size=65536k" in out[1]
    other = env.sandbox()
    _, _ = run_to_exit(env, other, cfg("stranger", "sh", "-c",
                                       "cat /dev/shm/x 2>/dev/null || echo none"))
    assert log_of(env, other, "stranger") == ["none"]
    shm = env.root / "containers" / ".shm" / sb.id
    with open("/proc/self/mountinfo") as f:
        assert str(shm) in f.read()
    m.remove_all_in_sandbox(sb.id)
    m.remove_all_in_sandbox(other.id)
    with open("/proc/self/mountinfo") as f:
        assert str(env.root / "containers" / ".shm") not in f.read()
    assert not shm.exists()


def test_runtime_default_seccomp_blocks_new_user_namespaces(env: Env) -> None:
    """The kernel lets anyone make a user namespace; RuntimeDefault's clone/unshare rules not."""
    sb = env.sandbox()
    script = "unshare -U true && echo userns-allowed || echo userns-blocked"
    for name, profile in (("def", "RuntimeDefault"), ("unc", "Unconfined")):
        run_to_exit(env, sb, cfg(name, "sh", "-c", script,
                                 security=SecurityContext(seccomp=SeccompProfile(profile))))
    def stdout(name: str) -> list[str]:
        return logs.read_messages(Path(sb.log_directory) / name / "0.log", "stdout")

    assert stdout("unc") == ["userns-allowed"]
    assert stdout("def") == ["userns-blocked"]


def test_readonly_rootfs_and_privileged(env: Env) -> None:
    sb = env.sandbox()
    run_to_exit(env, sb, cfg("ro", "sh", "-c", "touch /x 2>/dev/null && echo rw || echo ro; "
                                               "touch /dev/shm/x && echo shm-rw",
                             security=SecurityContext(readonly_rootfs=True)))
    assert log_of(env, sb, "ro") == ["ro", "shm-rw"]
    run_to_exit(env, sb, cfg("priv", "sh", "-c",
                             "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
                             "mkdir /m && mount -t tmpfs none /m && echo mounted; "
                             "test -c /dev/net/tun && echo tun",
                             security=SecurityContext(privileged=True,
                                                      seccomp=SeccompProfile("RuntimeDefault"))))
    out = log_of(env, sb, "priv")
    cap_eff = int(out[0].split()[1], 16)
    assert cap_eff & (1 << 21)  # CAP_SYS_ADMIN
    want_tun = ["tun"] if os.path.exists("/dev/net/tun") else []  # host devices are there
    assert out[1:] == ["NoNewPrivs:\t0", "Seccomp:\t0", "mounted", *want_tun]


def test_long_lines_are_split_into_partial_chunks(env: Env) -> None:
    sb = env.sandbox()
    run_to_exit(env, sb, cfg("long", "sh", "-c",
                             "head -c 40000 /dev/zero | tr '\\0' x; echo; echo short"))
    path = Path(sb.log_directory) / "long" / "0.log"
    entries = list(logs.read_entries(path))
    assert any(e.partial for e in entries)  # the 40000-byte line came in P chunks ...
    assert all(len(e.content) <= 16 * 1024 for e in entries)
    assert logs.read_messages(path, "stdout") == ["x" * 40000, "short"]  # ... then one F


def test_the_cgroup_filesystem_is_mounted_read_only(env: Env) -> None:
    """containerd's default: /sys/fs/cgroup mounted read-only; on a cgroup v2 host in the
    container's own cgroup namespace (its cgroup is the root it sees). On v1 runc puts a
    tmpfs there with each hierarchy mounted read-only below it."""
    sb = env.sandbox()
    script = ("awk '$5 ~ \"^/sys/fs/cgroup\" {print \"mnt\", $5, $6}' /proc/self/mountinfo; "
              "echo files=$(ls /sys/fs/cgroup | wc -l); "
              "for f in /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max; do "
              "[ -e $f ] && { echo 5 > $f 2>/dev/null && echo writable || echo ro-cgroup; }; "
              "done; cat /proc/self/cgroup")
    _, st = run_to_exit(env, sb, cfg("cg", "sh", "-c", script))
    out = log_of(env, sb, "cg")
    mounts = {m[1]: m[2].split(",") for m in (line.split() for line in out)
              if m[0] == "mnt"}
    assert "/sys/fs/cgroup" in mounts, out
    assert "files=0" not in out, out
    assert "ro-cgroup" in out, out
    assert "writable" not in out, out
    if (Path("/sys/fs/cgroup") / "cgroup.controllers").exists():  # v2
        assert mounts["/sys/fs/cgroup"][0] == "ro", mounts
        assert "0::/" in out, out  # its own cgroup namespace
    else:
        below = [opts for dest, opts in mounts.items() if dest != "/sys/fs/cgroup"]
        assert below, mounts
        assert all(opts[0] == "ro" for opts in below), mounts
    assert st.exit_code == 0
