"""The per-container monitor: Debian's conmon, so exits and logs outlive the runtime.

conmon runs ``runc create`` as its child, becomes the container's subreaper, copies the
container's stdout/stderr into the CRI log file (its ``k8s-file`` driver writes
``<RFC3339Nano> <stream> <P|F> <msg>`` lines), and when the container exits writes the
exit code to ``<exit_dir>/<id>`` (128+N for signal N) and, after an OOM kill, a file
``oom`` in its persist dir. None of that needs the runtime process to be alive, so a
restarted runtime finds every exit recorded on disk.

Launch protocol (as CRI-O uses it): conmon gets the write end of a pipe in
``_OCI_SYNCPIPE``; after ``runc create`` it writes ``{"data": <container pid>}``, or a
negative ``data`` and a ``message`` on failure. conmon's own stdout/stderr must not be
pipes we stop reading (a late write would kill it with SIGPIPE), so they go to a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import struct
import subprocess
import termios
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CONMON = "/usr/bin/conmon"
WIN_RESIZE_EVENT = 1
REOPEN_LOGS_EVENT = 2


class MonitorError(Exception):
    """conmon or ``runc create`` failed; the message is theirs."""


@dataclass(frozen=True)
class MonitorPaths:
    """Where one container's monitor keeps its files (all under the container dir)."""

    bundle: Path
    exit_dir: Path
    persist_dir: Path
    conmon_pidfile: Path
    container_pidfile: Path
    conmon_log: Path

    @classmethod
    def under(cls, container_dir: Path, bundle: Path) -> MonitorPaths:
        return cls(
            bundle=bundle,
            exit_dir=container_dir / "exit",
            persist_dir=container_dir / "persist",
            conmon_pidfile=container_dir / "conmon.pid",
            container_pidfile=container_dir / "container.pid",
            conmon_log=container_dir / "conmon.log",
        )

    def exit_file(self, cid: str) -> Path:
        return self.exit_dir / cid

    def oom_file(self) -> Path:
        return self.persist_dir / "oom"


def start_monitor(
    cid: str,
    paths: MonitorPaths,
    *,
    log_path: str,
    runc_root: Path,
    socket_dir: Path,
    runtime: str = "/usr/sbin/runc",
    conmon: str = DEFAULT_CONMON,
    timeout: float = 60.0,
    stdin: bool = False,
    stdin_once: bool = False,
    terminal: bool = False,
) -> int:
    """Start conmon (which runs ``runc create``); returns the container's init pid.

    ``stdin``: conmon keeps a pipe to the container's stdin that Attach writes to (closed
    when an attach ends, if ``stdin_once``); ``terminal``: the container gets a pty whose
    master conmon holds (the spec must say ``terminal: true``).
    """
    for d in (paths.exit_dir, paths.persist_dir, socket_dir):
        d.mkdir(parents=True, exist_ok=True)
    r, w = os.pipe()
    args = [
        conmon, "--api-version", "1",
        "-c", cid, "-u", cid[:16], "-n", cid,
        "-r", runtime, "-b", str(paths.bundle),
        "-p", str(paths.container_pidfile), "-P", str(paths.conmon_pidfile),
        "-l", f"k8s-file:{log_path}",
        "--exit-dir", str(paths.exit_dir), "-0", str(paths.persist_dir),
        "--socket-dir-path", str(socket_dir),
        "--runtime-arg", f"--root={runc_root}",
        "--log-level", "info",
    ]
    if stdin:
        args.append("--stdin")
        if not stdin_once:
            args.append("--leave-stdin-open")
    if terminal:
        args.append("--terminal")
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
           "_OCI_SYNCPIPE": str(w)}
    try:
        with open(paths.conmon_log, "ab") as log:
            # conmon forks: the parent returns at once, the monitor lives on in a new session
            # cwd: conmon also drops an "oom" marker in its working directory
            proc = subprocess.Popen(args, env=env, pass_fds=(w,), stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log, start_new_session=True,
                                    cwd=paths.persist_dir)
    finally:
        os.close(w)
    try:
        data = _read_sync(r, timeout)
    finally:
        os.close(r)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    if not data:
        raise MonitorError(f"conmon exited before reporting: {_tail(paths.conmon_log)}")
    try:
        msg = json.loads(data.splitlines()[0])
    except ValueError as exc:
        raise MonitorError(f"conmon sent {data!r}") from exc
    pid = int(msg.get("data", -1))
    if pid <= 0:
        raise MonitorError(msg.get("message") or _tail(paths.conmon_log) or "runc create failed")
    return pid


def _read_sync(fd: int, timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise MonitorError(f"conmon did not report within {timeout:.0f}s")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
    return buf


def _tail(path: Path, n: int = 600) -> str:
    try:
        return path.read_text(errors="replace")[-n:].strip()
    except OSError:
        return ""


def read_exit_code(paths: MonitorPaths, cid: str) -> tuple[int, int] | None:
    """(exit code, finished_at ns) once conmon recorded the exit, else None."""
    f = paths.exit_file(cid)
    try:
        st = f.stat()
        text = f.read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return int(text), st.st_mtime_ns
    except ValueError:
        return 255, st.st_mtime_ns


def oom_recorded(paths: MonitorPaths) -> bool:
    return paths.oom_file().exists()


def read_pid(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 0


def monitor_alive(paths: MonitorPaths, cid: str) -> bool:
    """True while this container's conmon runs (its pid running conmon for ``cid``)."""
    pid = read_pid(paths.conmon_pidfile)
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return b"conmon" in argv[0] and cid.encode() in argv


class MonitorWatcher:
    """Which containers' conmons still run, for all of them at once, without /proc reads.

    Each watched conmon is held by a pidfd (``watch``: the pidfd pins the pid first, then
    the cmdline check proves it is that container's conmon, so a reused pid never passes),
    and every pidfd sits in one epoll set. ``refresh`` is one ``epoll_wait(0)``: the
    pidfds that turned readable are conmons that exited, which are dropped from the set.
    conmon writes the exit file before it exits, so while ``running(cid)`` holds, nothing
    about the container can have changed on disk.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoll = select.epoll()
        self._fds: dict[int, str] = {}  # pidfd -> container id
        self._running: dict[str, int] = {}  # container id -> pidfd
        weakref.finalize(self, _close_fds, self._fds, self._epoll)

    def running(self, cid: str) -> bool:
        """True while ``cid``'s conmon is watched and not yet seen to exit."""
        return cid in self._running

    def watch(self, paths: MonitorPaths, cid: str) -> bool:
        """Start watching ``cid``'s conmon; False when it is not running (or no fd is left)."""
        pid = read_pid(paths.conmon_pidfile)
        if pid <= 0:
            return False
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return False
        if not monitor_alive(paths, cid):
            os.close(fd)
            return False
        with self._lock:
            if cid in self._running:
                os.close(fd)
                return True
            try:
                self._epoll.register(fd, select.EPOLLIN)
            except OSError:
                os.close(fd)
                return False
            self._fds[fd] = cid
            self._running[cid] = fd
        return True

    def refresh(self) -> None:
        """Forget every conmon that exited since the last refresh."""
        if not self._running:
            return
        for fd, _ in self._epoll.poll(0):  # a pidfd turns readable when its process exits
            with self._lock:
                cid = self._fds.get(fd)
                if cid is not None:
                    self._drop(cid)

    def forget(self, cid: str) -> None:
        with self._lock:
            self._drop(cid)

    def _drop(self, cid: str) -> None:
        fd = self._running.pop(cid, None)
        if fd is not None:
            del self._fds[fd]
            os.close(fd)  # closing also takes it out of the epoll set

    def close(self) -> None:
        with self._lock:
            for cid in list(self._running):
                self._drop(cid)
            self._epoll.close()


def _close_fds(fds: dict[int, str], epoll: select.epoll) -> None:
    """A dropped watcher (a runtime torn down in tests) leaves no pidfd behind."""
    for fd in list(fds):
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()
    epoll.close()


def resize_terminal(paths: MonitorPaths, width: int, height: int) -> None:
    """Resize a terminal container's pty through conmon's control fifo."""
    fd = os.open(paths.bundle / "ctl", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        os.write(fd, f"{WIN_RESIZE_EVENT} {height} {width}\n".encode())
    finally:
        os.close(fd)


def control_pending(paths: MonitorPaths) -> int:
    """Bytes written to conmon's control fifo that conmon has not read yet (FIONREAD)."""
    fd = os.open(paths.bundle / "ctl", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        raw = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    finally:
        os.close(fd)
    return int(struct.unpack("i", raw)[0])


def reopen_log(paths: MonitorPaths, log_path: str = "", wait: float = 1.0) -> None:
    """Ask conmon to reopen the log file (after rotation) through its control fifo.

    kubelet renames the log, calls ReopenContainerLog and then expects the file back at
    once, even when the container writes nothing more (containerd opens it before it
    replies). conmon opens ``<log>.tmp`` and renames it over the log path whenever it gets
    to the request, so the file is created here first (a rename over it is harmless), and
    the reply waits briefly for conmon's own file to be in place, so later lines land in it.
    """
    before = None
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o640)
        try:
            before = os.fstat(fd).st_ino
        finally:
            os.close(fd)
    ctl = paths.bundle / "ctl"
    fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        os.write(fd, f"{REOPEN_LOGS_EVENT} 0 0\n".encode())
    finally:
        os.close(fd)
    if before is None:
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            if os.stat(log_path).st_ino != before:
                return  # conmon's file replaced ours
        except FileNotFoundError:
            pass
        time.sleep(0.002)
