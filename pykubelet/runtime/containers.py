"""ContainerManager: CRI containers as OCI bundles run by runc under a conmon monitor.

API (what ``cri/container_rpc.py`` and the sandbox manager call)::

    ContainerManager(root, images, sandbox_lookup, *, runc_root=None, socket_dir=None,
                     default_cgroup_parent="/pykubelet", runc_binary=..., conmon_binary=...)
    create(sandbox: SandboxInfo | str, config: ContainerConfigSpec) -> container id
    start(id)                          CREATED -> RUNNING (``runc start``)
    stop(id, timeout)                  stop signal (image StopSignal, else SIGTERM), SIGKILL
                                       after ``timeout`` s; no-op unless created/running
    remove(id)                         kill if needed, runc delete, unmount, drop files;
                                       unknown IDs are fine (idempotent)
    status(id) -> ContainerStatus      NotFound for unknown IDs
    list(ContainerFilter | None) -> list[ContainerStatus]
    exec_sync(id, cmd, timeout) -> (stdout, stderr, exit_code)
    stats(id) -> ContainerStats;  list_stats(filter) -> list[ContainerStats]
    update_resources(id, Resources);  reopen_log(id)
    stop_all_in_sandbox(sandbox_id, timeout);  remove_all_in_sandbox(sandbox_id)
    recover()                          after a restart: reload records, clean half-creates,
                                       stray runc state, leases and orphaned pod /dev/shm

The records, states and status types are ``container_store``'s, the pods' /dev/shm mounts
``pod_shm``'s, the stats ``container_stats``'s; this module runs the containers' lives.

Errors: InvalidArgument (a bad field, named), NotFound (container, sandbox or image),
AlreadyExists (the name is taken in that sandbox and attempt), FailedPrecondition (wrong
state, or runc/conmon refused: their message is kept), ExecTimeout (DEADLINE_EXCEEDED).
A failed create leaves nothing behind (mount, lease, runc state, files, name).

Layout under ``root`` (``<--root>/containers``)::

    <id>/record.json    what CreateContainer said + start/finish times (atomic rewrite)
    <id>/bundle/        config.json, rootfs (the overlay mount), conmon's ctl/attach fifos
    <id>/upper, work/   the writable layer
    <id>/exit/<id>      conmon's exit file;  <id>/persist/oom  conmon's OOM marker
    .shm/<sandbox id>   the pod's /dev/shm (a tmpfs shared by its containers, removed
                        with the sandbox by remove_all_in_sandbox)
    <runc_root>/<id>/   runc's state (default ``<root>/../runc``)

Exit codes and logs survive a runtime restart because conmon, not this process, is the
container's parent and log writer; ``status`` reads conmon's files, so a container that
exited while the runtime was down reports its true code. OOM kills are seen through
conmon's ``oom`` file or the memory cgroup's ``oom_kill`` counter.

Reads are cheap (kubelet's PLEG lists every second): conmon records an exit before it
exits, so while a container's conmon runs (held by a pidfd in ``monitor.MonitorWatcher``,
one epoll_wait per RPC) its record in memory is the answer, and statuses are rebuilt only
when a field changed. Reads take no lock. After a restart everything is rebuilt lazily
from the records and conmon's files, as before.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from pykubelet.runtime import cgroups, monitor, oci_spec, rootfs
from pykubelet.runtime.container_request import (
    NS_NODE,
    NS_TARGET,
    ContainerConfigSpec,
    ContainerMetadata,
    Resources,
)
from pykubelet.runtime.container_stats import StatsSampler
from pykubelet.runtime.container_store import (
    BOOT_ID,
    CREATED,
    EXITED,
    REASON_COMPLETED,
    REASON_ERROR,
    REASON_OOM,
    REASON_UNKNOWN,
    RUNNING,
    UNKNOWN_EXIT_CODE,
    ContainerFilter,
    ContainerRecord,
    ContainerStats,
    ContainerStatus,
    build_status,
    process_alive,
    process_start,
    write_json,
)
from pykubelet.runtime.errors import (
    AlreadyExists,
    CRIError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unavailable,
)
from pykubelet.runtime.images import ImageStore
from pykubelet.runtime.logs import ensure_parent, resolve_log_path
from pykubelet.runtime.pod_shm import PodShm
from pykubelet.runtime.runc import DEFAULT_RUNC, Runc, RuncError, runc_message

log = logging.getLogger(__name__)

_STOP_KILL_WAIT = 10.0  # seconds to wait for an exit after SIGKILL


class ExecTimeout(CRIError):
    """ExecSync ran past its timeout (the process was killed)."""

    grpc_code = "DEADLINE_EXCEEDED"


def _parse_signal(name: str) -> int:
    if not name:
        return int(signal.SIGTERM)
    if name.isdigit():
        return int(name)
    key = name.upper()
    if not key.startswith("SIG"):
        key = "SIG" + key
    try:
        return int(signal.Signals[key])
    except KeyError:
        return int(signal.SIGTERM)


class ContainerManager:
    def __init__(
        self,
        root: str | os.PathLike[str],
        images: ImageStore,
        sandbox_lookup: Callable[[str], oci_spec.SandboxView],
        *,
        runc_root: str | os.PathLike[str] | None = None,
        socket_dir: str | os.PathLike[str] | None = None,
        default_cgroup_parent: str = "/pykubelet",
        runc_binary: str = DEFAULT_RUNC,
        conmon_binary: str = monitor.DEFAULT_CONMON,
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o711)
        self.images = images
        self.sandbox_lookup = sandbox_lookup
        self.runc = Runc(runc_root if runc_root is not None else self.root.parent / "runc",
                         runc_binary)
        self.socket_dir = Path(socket_dir) if socket_dir is not None else self.root / ".s"
        self.default_cgroup_parent = default_cgroup_parent
        self.conmon_binary = conmon_binary
        # _lock guards the maps below and is never held across I/O: the read RPCs take no
        # lock at all (they read the maps through atomic snapshots: a dict lookup, or
        # list(dict.values()), each one step under the GIL)
        self._lock = threading.RLock()
        self._records: dict[str, ContainerRecord] = {}
        self._names: dict[str, str] = {}
        self._ctr_locks: dict[str, threading.Lock] = {}
        self._creating: dict[str, int] = {}  # sandbox id -> creates in flight
        self._shm = PodShm(self.root / ".shm")  # the pods' /dev/shm mounts
        self._stats = StatsSampler()
        # read-path state, memory only, in step with the records (the records on disk stay
        # the truth after a restart): see _quick_state and _status_of
        self._monitor_paths: dict[str, monitor.MonitorPaths] = {}
        self._monitors = monitor.MonitorWatcher()
        self._statuses: dict[str, tuple[tuple[Any, ...], ContainerStatus]] = {}
        self._min_oom = oci_spec.own_oom_score_adj()
        self._has_memsw = cgroups.has_memsw()
        self._cgroup_v2 = cgroups.is_v2()
        self._host_caps = oci_spec.host_capabilities()

    # ------------------------------------------------------------------ paths, records
    def _dir(self, cid: str) -> Path:
        return self.root / cid

    def _paths(self, cid: str) -> monitor.MonitorPaths:
        paths = self._monitor_paths.get(cid)
        if paths is None:
            paths = monitor.MonitorPaths.under(self._dir(cid), self._dir(cid) / "bundle")
            self._monitor_paths[cid] = paths
        return paths

    def _forget(self, cid: str) -> None:
        """Drop the read-path caches of a container that is gone (or never came to be)."""
        self._monitors.forget(cid)
        self._statuses.pop(cid, None)
        self._monitor_paths.pop(cid, None)

    def _save(self, rec: ContainerRecord) -> None:
        try:
            write_json(self._dir(rec.id) / "record.json", asdict(rec))
        except FileNotFoundError:
            if self._dir(rec.id).exists():
                raise  # else: removed concurrently, nothing left to record

    def _ctr_lock(self, cid: str) -> threading.Lock:
        with self._lock:
            return self._ctr_locks.setdefault(cid, threading.Lock())

    def _get(self, cid: str, *, field: str = "container_id") -> ContainerRecord:
        if not cid:
            raise InvalidArgument(f"{field}: must not be empty")
        rec = self._records.get(cid)  # no lock: see __init__
        if rec is None:
            hits = [r for k, r in list(self._records.items()) if k.startswith(cid)]
            if len(hits) == 1:
                rec = hits[0]
        if rec is None:
            raise NotFound(f"container {cid!r} not found")
        return rec

    # ------------------------------------------------------------------ create
    def create(self, sandbox: oci_spec.SandboxView | str, config: ContainerConfigSpec) -> str:
        if isinstance(sandbox, str):
            sandbox = self.sandbox_lookup(sandbox)
        if not config.metadata.name:
            raise InvalidArgument("metadata.name: must not be empty")
        if not config.image:
            raise InvalidArgument("image.image: must not be empty")
        image = self.images.require(config.image, field="image.image")
        pid_ns_path = getattr(sandbox, "pid_ns_path", "")
        if config.security.pid_mode == NS_TARGET:
            pid_ns_path = self._target_pid_ns(config.security.target_id, sandbox.id)
        log_path = resolve_log_path(sandbox.log_directory, config.log_path)
        full_name = "_".join((config.metadata.name, sandbox.name, sandbox.namespace,
                              sandbox.uid, str(config.metadata.attempt)))
        cid = secrets.token_hex(32)
        with self._lock:
            holder = self._names.get(full_name)
            if holder is not None:
                raise AlreadyExists(
                    f"container name {full_name!r} is reserved for container {holder[:12]}")
            self._names[full_name] = cid
            self._creating[sandbox.id] = self._creating.get(sandbox.id, 0) + 1
        cdir = self._dir(cid)
        bundle = cdir / "bundle"
        target = bundle / "rootfs"
        leased = mounted = False
        try:
            cdir.mkdir(mode=0o711)
            lowers = self.images.acquire_lease(cid, image)
            leased = True
            rootfs.mount_overlay(lowers, cdir / "upper", cdir / "work", target)
            mounted = True
            user = oci_spec.resolve_user(target, image.config.user, config.security)
            parent = (sandbox.cgroup_parent or self.default_cgroup_parent).rstrip("/")
            cgroups_path = f"{parent}/{cid}"
            effective = _with_sandbox_modes(config, sandbox)
            spec = oci_spec.build_spec(
                effective, image.config, sandbox, user,
                cgroups_path, pid_ns_path=pid_ns_path, min_oom_score_adj=self._min_oom,
                has_memsw=self._has_memsw,
                shm_source=self._shm.for_sandbox(sandbox.id, effective.security),
                available_caps=self._host_caps, cgroup_v2=self._cgroup_v2,
            )
            write_json(bundle / "config.json", spec)
            conmon_log = log_path or str(cdir / "console.log")
            ensure_parent(conmon_log)
            rec = ContainerRecord(
                id=cid, sandbox_id=sandbox.id, name=config.metadata.name,
                attempt=config.metadata.attempt, full_name=full_name, image_ref=config.image,
                image_id=image.id, labels=dict(config.labels),
                annotations=dict(config.annotations), log_path=log_path,
                cgroups_path=cgroups_path, mounts=[asdict(m) for m in config.mounts],
                created_at=time.time_ns(), stop_signal=image.config.stop_signal,
                host_pid_ns=not any(n["type"] == "pid" for n in spec["linux"]["namespaces"]),
                resources=asdict(config.resources),
                image_digest_ref=image.repo_digests[0] if image.repo_digests else image.id,
                uid=user.uid, gid=user.gid, additional_gids=list(user.additional_gids),
                stdin=config.stdin, stdin_once=config.stdin_once, tty=config.tty,
            )
            paths = self._paths(cid)
            try:
                rec.pid = monitor.start_monitor(
                    cid, paths, log_path=conmon_log, runc_root=self.runc.root,
                    socket_dir=self.socket_dir, runtime=self.runc.binary,
                    conmon=self.conmon_binary, stdin=config.stdin,
                    stdin_once=config.stdin_once, terminal=config.tty,
                )
            except monitor.MonitorError as exc:
                raise FailedPrecondition(f"create container {config.metadata.name!r}: "
                                         f"{exc}") from exc
            rec.pid_start = process_start(rec.pid)[1]
            rec.boot_id = BOOT_ID
            self._save(rec)
        except BaseException:
            self._discard(cid, mounted=mounted, leased=leased)
            with self._lock:
                self._names.pop(full_name, None)
                self._done_creating(sandbox.id)
                if not self._creating.get(sandbox.id) and not self._in_sandbox(sandbox.id):
                    self._shm.release(sandbox.id)  # a failed first create leaves nothing
            raise
        with self._lock:
            self._records[cid] = rec
            self._done_creating(sandbox.id)
        log.info("container %s (%s) created in sandbox %s", cid[:12], config.metadata.name,
                 sandbox.id[:12])
        return cid

    def _target_pid_ns(self, target_id: str, sandbox_id: str) -> str:
        """pid=TARGET (an ephemeral container's ``targetContainerName``): the PID namespace
        of a running container of the same sandbox, joined by path as containerd does
        (``/proc/<target's init>/ns/pid``)."""
        if not target_id:
            raise InvalidArgument("linux.security_context.namespace_options.target_id: must "
                                  "name a container when pid is TARGET")
        target = self._get(target_id, field="target_id")
        if target.sandbox_id != sandbox_id:
            raise InvalidArgument(f"target container {target.id[:12]} is not in sandbox "
                                  f"{sandbox_id[:12]}")
        if self._observe(target) != RUNNING or target.pid <= 0:
            raise FailedPrecondition(f"target container {target.id[:12]} is not running")
        return f"/proc/{target.pid}/ns/pid"

    def _done_creating(self, sandbox_id: str) -> None:
        left = self._creating.get(sandbox_id, 1) - 1
        if left > 0:
            self._creating[sandbox_id] = left
        else:
            self._creating.pop(sandbox_id, None)

    def _discard(self, cid: str, *, mounted: bool = True, leased: bool = True) -> None:
        """Undo a create: runc state, conmon, mount, files, lease."""
        self._forget(cid)
        with contextlib.suppress(RuncError, OSError):
            self.runc.delete(cid, force=True)
        if mounted:
            with contextlib.suppress(OSError):
                rootfs.unmount(self._dir(cid) / "bundle" / "rootfs")
        shutil.rmtree(self._dir(cid), ignore_errors=True)
        with contextlib.suppress(OSError):
            (self.socket_dir / cid[:16]).unlink()
        if leased:
            self.images.release_lease(cid)

    # ------------------------------------------------------------------ start / stop
    def start(self, cid: str) -> None:
        rec = self._get(cid)
        with self._ctr_lock(rec.id):
            st = self._observe(rec)
            if st != CREATED:
                raise FailedPrecondition(
                    f"container {rec.id[:12]} is {st.removeprefix('CONTAINER_').lower()}, "
                    "not created: it can only be started once")
            started = time.time_ns()
            try:
                self.runc.start(rec.id)
            except RuncError as exc:
                rec.finished_at = time.time_ns()
                rec.exit_code = UNKNOWN_EXIT_CODE
                rec.reason = "StartError"
                rec.message = exc.msg
                self._save(rec)
                raise FailedPrecondition(f"start container {rec.id[:12]}: {exc.msg}") from exc
            rec.started_at = started
            self._save(rec)

    def stop(self, cid: str, timeout: int | float) -> None:
        rec = self._get(cid)
        with self._ctr_lock(rec.id):
            self._stop_locked(rec, timeout)

    def _stop_locked(self, rec: ContainerRecord, timeout: float) -> None:
        st = self._observe(rec)
        if st not in (CREATED, RUNNING):
            return
        paths = self._paths(rec.id)
        if timeout > 0:
            self._signal(rec, _parse_signal(rec.stop_signal))
            if self._wait_exit(rec, paths, timeout):
                return
        self._signal(rec, int(signal.SIGKILL))
        if not self._wait_exit(rec, paths, _STOP_KILL_WAIT):
            raise Unavailable(f"container {rec.id[:12]} did not exit after SIGKILL")

    def _signal(self, rec: ContainerRecord, sig: int) -> None:
        """Signal the container's init (all its processes when it shares the host pid ns)."""
        paths = self._paths(rec.id)
        if rec.host_pid_ns and sig == signal.SIGKILL:
            with contextlib.suppress(RuncError):
                self.runc.kill(rec.id, sig, all_processes=True)
            return
        pid = rec.pid or monitor.read_pid(paths.container_pidfile)
        if pid <= 0:
            return
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return  # already gone
        try:
            # the pidfd pins the pid: if it is our process now, the signal reaches it
            if (monitor.read_exit_code(paths, rec.id) is None
                    and process_alive(pid, rec.pid_start, rec.boot_id)):
                signal.pidfd_send_signal(pidfd, sig)
        except OSError:
            pass
        finally:
            os.close(pidfd)

    def _wait_exit(self, rec: ContainerRecord, paths: monitor.MonitorPaths,
                   timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            if self._observe(rec) == EXITED:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    # ------------------------------------------------------------------ remove
    def remove(self, cid: str) -> None:
        try:
            rec = self._get(cid)
        except NotFound:
            return
        with self._ctr_lock(rec.id):
            if rec.id not in self._records:
                return
            if self._observe(rec) in (CREATED, RUNNING):
                self._stop_locked(rec, 0)
            self._observe(rec)  # records the exit (and OOM) before the cgroup goes
            paths = self._paths(rec.id)
            try:
                self.runc.delete(rec.id, force=True)
            except RuncError as exc:
                raise Unavailable(f"remove container {rec.id[:12]}: {exc.msg}") from exc
            deadline = time.monotonic() + 5
            while monitor.monitor_alive(paths, rec.id) and time.monotonic() < deadline:
                time.sleep(0.01)
            rootfs.unmount(self._dir(rec.id) / "bundle" / "rootfs")
            cgroups.remove_empty(rec.cgroups_path)
            shutil.rmtree(self._dir(rec.id), ignore_errors=True)
            with contextlib.suppress(OSError):
                (self.socket_dir / rec.id[:16]).unlink()
            self.images.release_lease(rec.id)
            with self._lock:
                self._records.pop(rec.id, None)
                self._stats.forget(rec.id)
                if self._names.get(rec.full_name) == rec.id:
                    del self._names[rec.full_name]
            self._forget(rec.id)
        with self._lock:
            self._ctr_locks.pop(rec.id, None)
        log.info("container %s removed", rec.id[:12])

    def stop_all_in_sandbox(self, sandbox_id: str, timeout: int) -> None:
        for rec in self._in_sandbox(sandbox_id):
            with contextlib.suppress(NotFound):
                self.stop(rec.id, timeout)

    def remove_all_in_sandbox(self, sandbox_id: str) -> None:
        """RemovePodSandbox: every container of the pod, then the pod's /dev/shm."""
        for rec in self._in_sandbox(sandbox_id):
            self.remove(rec.id)
        self._shm.release(sandbox_id)

    def _in_sandbox(self, sandbox_id: str) -> list[ContainerRecord]:
        with self._lock:
            return [r for r in self._records.values() if r.sandbox_id == sandbox_id]

    # ------------------------------------------------------------------ status
    def _observe(self, rec: ContainerRecord, *, refreshed: bool = False) -> str:
        """The container's state now, recording a new exit in its record.

        conmon records the exit (exit file, OOM marker) before it exits, so while it runs
        nothing on disk can have changed and the record has the answer: that costs a dict
        lookup once ``self._monitors`` is refreshed (one epoll_wait per RPC; ``refreshed``
        says the caller did it). A conmon not watched yet (first read, after a restart) or
        seen to exit sends the read to disk, as every read went before.
        """
        if rec.finished_at:
            return EXITED
        if not refreshed:
            self._monitors.refresh()
        if self._monitors.running(rec.id):
            return RUNNING if rec.started_at else CREATED
        state = self._observe_on_disk(rec)
        if state != EXITED and rec.id in self._records:
            self._monitors.watch(self._paths(rec.id), rec.id)
            if rec.id not in self._records:  # removed meanwhile: remove() may have missed it
                self._monitors.forget(rec.id)
        return state

    def _observe_on_disk(self, rec: ContainerRecord) -> str:
        """``_observe`` the long way: conmon's exit file, conmon's and the init's /proc."""
        paths = self._paths(rec.id)
        exited = monitor.read_exit_code(paths, rec.id)
        if exited is None and rec.started_at and not monitor.monitor_alive(paths, rec.id):
            exited = monitor.read_exit_code(paths, rec.id)  # conmon may just have finished
            if exited is None and not process_alive(rec.pid, rec.pid_start, rec.boot_id):
                rec.finished_at = time.time_ns()
                rec.exit_code = UNKNOWN_EXIT_CODE
                rec.reason = REASON_UNKNOWN
                rec.message = "the container's monitor exited without recording an exit code"
                self._save(rec)
                return EXITED
        if exited is None:
            return RUNNING if rec.started_at else CREATED
        code, finished = exited
        oom = monitor.oom_recorded(paths) or cgroups.oom_killed_count(rec.cgroups_path) > 0
        rec.exit_code = code
        # the exit file's mtime comes from the coarse kernel clock: never before the start
        rec.finished_at = max(finished, rec.started_at, rec.created_at)
        rec.reason = REASON_OOM if oom else (REASON_COMPLETED if code == 0 else REASON_ERROR)
        self._save(rec)
        return EXITED

    def _status_of(self, rec: ContainerRecord, *, refreshed: bool = False) -> ContainerStatus:
        """The status (shared between callers: read-only), rebuilt only when it changed.

        A status depends on the record's immutable fields (fixed at create) and on the ones
        below plus ``resources`` (replaced, never mutated in place, by update_resources).
        """
        state = self._observe(rec, refreshed=refreshed)
        key = (state, rec.started_at, rec.finished_at, rec.exit_code, rec.reason, rec.message,
               rec.pid)
        hit = self._statuses.get(rec.id)
        if hit is not None and hit[0] == key and hit[1].resources == rec.resources:
            return hit[1]
        status = build_status(rec, state)
        if rec.id in self._records:
            self._statuses[rec.id] = (key, status)
        return status

    def status(self, cid: str) -> ContainerStatus:
        return self._status_of(self._get(cid))

    def list(self, flt: ContainerFilter | None = None) -> list[ContainerStatus]:
        recs = list(self._records.values())  # no lock: see __init__
        self._monitors.refresh()
        out = []
        for rec in recs:
            if flt is not None:
                if flt.id and not rec.id.startswith(flt.id):
                    continue
                if flt.sandbox_id and not rec.sandbox_id.startswith(flt.sandbox_id):
                    continue
                if any(rec.labels.get(k) != v for k, v in flt.labels.items()):
                    continue
            st = self._status_of(rec, refreshed=True)
            if flt is not None and flt.state is not None and st.state != flt.state:
                continue
            if rec.id in self._records:  # not removed meanwhile
                out.append(st)
        out.sort(key=lambda s: s.created_at)
        return out

    # ------------------------------------------------------------------ exec, logs, stats
    def exec_sync(
        self, cid: str, cmd: builtins.list[str], timeout: float = 0
    ) -> tuple[bytes, bytes, int]:
        rec = self._get(cid)
        if not cmd:
            raise InvalidArgument("cmd: must not be empty")
        if self._observe(rec) != RUNNING:
            raise FailedPrecondition(f"container {rec.id[:12]} is not running")
        try:
            res = self.runc.exec_sync(rec.id, list(cmd), timeout or None)
        except RuncError as exc:
            raise FailedPrecondition(f"exec in container {rec.id[:12]}: {exc.msg}") from exc
        if res.timed_out:
            raise ExecTimeout(f"exec in container {rec.id[:12]}: timeout {timeout}s exceeded")
        return res.stdout, res.stderr, res.exit_code

    def running(self, cid: str) -> ContainerRecord:
        """The record of a running container (Exec, Attach); FailedPrecondition otherwise."""
        rec = self._get(cid)
        if self._observe(rec) != RUNNING:
            raise FailedPrecondition(f"container {rec.id[:12]} is not running")
        return rec

    def bundle_dir(self, cid: str) -> Path:
        """The OCI bundle of container ``cid`` (config.json, rootfs)."""
        return self._paths(cid).bundle

    def attach_paths(self, rec: ContainerRecord) -> tuple[Path, Path]:
        """(conmon's attach socket, its control fifo) for ``rec``."""
        return self.socket_dir / rec.id[:16] / "attach", self._paths(rec.id).bundle / "ctl"

    def reopen_log(self, cid: str) -> None:
        rec = self._get(cid)
        if self._observe(rec) != RUNNING:
            raise FailedPrecondition(f"container {rec.id[:12]} is not running")
        try:
            monitor.reopen_log(self._paths(rec.id),
                              rec.log_path or str(self._dir(rec.id) / "console.log"))
        except OSError as exc:
            raise Unavailable(f"reopen log of container {rec.id[:12]}: {exc}") from exc

    def stats(self, cid: str) -> ContainerStats:
        return self._stats_of(self._get(cid))

    def list_stats(self, flt: ContainerFilter | None = None) -> builtins.list[ContainerStats]:
        return [self._stats_of(self._get(s.id)) for s in self.list(flt)]

    def _stats_of(self, rec: ContainerRecord) -> ContainerStats:
        return self._stats.sample(rec, self._dir(rec.id) / "upper")

    def update_resources(self, cid: str, resources: Resources) -> None:
        """UpdateContainerResources: new cgroup limits through ``runc update``."""
        rec = self._get(cid)
        if self._observe(rec) not in (CREATED, RUNNING):
            raise FailedPrecondition(f"container {rec.id[:12]} is not running")
        section = oci_spec.resources_section(
            ContainerConfigSpec(metadata=_META, image="-", resources=resources),
            self._has_memsw)
        section.pop("devices", None)
        proc = subprocess.run([*self.runc.base_args(), "update", "--resources", "-", rec.id],
                              input=json.dumps(section), capture_output=True, text=True,
                              timeout=30)
        if proc.returncode != 0:
            raise FailedPrecondition(f"update container {rec.id[:12]}: "
                                     f"{runc_message(proc.stderr)}")
        rec.resources = asdict(resources)
        self._save(rec)

    # ------------------------------------------------------------------ recovery
    def recover(self) -> None:
        """Reload every container record after a restart; discard half-made containers."""
        records: dict[str, ContainerRecord] = {}
        for d in sorted(self.root.iterdir()) if self.root.is_dir() else []:
            if not d.is_dir() or d.name.startswith("."):
                continue
            try:
                rec = ContainerRecord.from_json(json.loads((d / "record.json").read_text()))
            except (OSError, ValueError, TypeError):
                log.warning("discarding half-created container %s", d.name[:12])
                self._discard(d.name)
                continue
            records[rec.id] = rec
        with self._lock:
            self._records = records
            self._names = {r.full_name: r.id for r in records.values()}
        for rec in records.values():
            self._observe(rec)
        # runc state and image leases whose container directory is gone
        for cid in self.runc.list_ids():
            if cid not in records:
                log.warning("deleting runc container %s unknown to our records", cid[:12])
                with contextlib.suppress(RuncError):
                    self.runc.delete(cid, force=True)
        for holder in self.images.lease_holders():
            if holder not in records and not self._dir(holder).exists():
                self.images.release_lease(holder)
        for sandbox_id in self._shm.sandbox_ids():
            try:
                self.sandbox_lookup(sandbox_id)
            except NotFound:
                if not any(r.sandbox_id == sandbox_id for r in records.values()):
                    self._shm.release(sandbox_id)  # its sandbox went away while we were down
        log.info("recovered %d containers", len(records))


_META = ContainerMetadata(name="update")


def _with_sandbox_modes(
    config: ContainerConfigSpec, sandbox: oci_spec.SandboxView
) -> ContainerConfigSpec:
    """The sandbox decides network and IPC namespaces (hostNetwork/hostIPC pods)."""
    sec = config.security
    net = getattr(sandbox, "network_mode", sec.network_mode)
    ipc = getattr(sandbox, "ipc_mode", sec.ipc_mode)
    if net == NS_NODE or ipc == NS_NODE:
        sec = replace(sec, network_mode=net if net == NS_NODE else sec.network_mode,
                      ipc_mode=ipc if ipc == NS_NODE else sec.ipc_mode)
        return replace(config, security=sec)
    return config
