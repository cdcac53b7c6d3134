"""The lab's processes: `pykubelet run` (and, where the build has no embedded control plane,
`pykubelet control-plane`) started inside a node's network namespace, and stopped again.

A process enters only the node's network namespace (``nsenter --net``, which then execs
it, so the pid we record is the daemon's own): it keeps the host's mounts, so its runtime's
namespace pins and rootfs mounts are seen, and removed, from the host as any node's are.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from pykubelet.lab.layout import NETNS_DIR
from pykubelet.lab.state import ProcessRef

NSENTER = "nsenter"
_children: list[subprocess.Popen[bytes]] = []


def embedded_control_plane_available() -> bool:
    """Whether `pykubelet run` in this build joins a cluster, and so serves the control
    plane itself when its config has ``controlPlane:`` (the node bootstrap is there);
    else the lab runs `pykubelet control-plane` beside node 1's agent."""
    return importlib.util.find_spec("pykubelet.client.bootstrap") is not None


def pykubelet_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "pykubelet.cli.main", *args]


def start_in_netns(netns: str, argv: list[str], log_path: Path) -> ProcessRef:
    """Start ``argv`` in the named network namespace, detached (its own session), with
    stdout and stderr appended to ``log_path``."""
    return start_detached([NSENTER, f"--net={NETNS_DIR / netns}", "--", *argv], log_path)


def start_detached(cmd: list[str], log_path: Path) -> ProcessRef:
    """Start ``cmd`` detached (its own session), stdout and stderr appended to
    ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True)
    _children.append(proc)  # outlives this command; kept so it is never collected running
    return ProcessRef.of(proc.pid)


def exited(ref: ProcessRef) -> bool:
    """Reap it if it is our child and dead; True when it no longer runs."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(ref.pid, os.WNOHANG)
    return not ref.alive()


def stop(refs: list[ProcessRef], timeout: float = 15.0) -> None:
    """SIGTERM, wait up to ``timeout``, then SIGKILL whatever still runs."""
    kill(_signal_and_wait(refs, signal.SIGTERM, timeout, 0.1))


def kill(refs: list[ProcessRef], timeout: float = 5.0) -> None:
    _signal_and_wait(refs, signal.SIGKILL, timeout, 0.05)


def _signal_and_wait(refs: list[ProcessRef], sig: signal.Signals, timeout: float,
                     poll: float) -> list[ProcessRef]:
    """``sig`` to every live process, then up to ``timeout`` for them to exit (reaped if
    ours); the ones still running."""
    live = [r for r in refs if r.alive()]
    for r in live:
        with contextlib.suppress(OSError):
            os.kill(r.pid, sig)
    end = time.monotonic() + timeout
    while live and time.monotonic() < end:
        live = [r for r in live if not exited(r)]
        if live:
            time.sleep(poll)
    return live


def pids_in_netns(inodes: set[int]) -> list[int]:
    """Every process whose network namespace is one of ``inodes`` (nsfs inode numbers)."""
    out = []
    for p in psutil.pids():
        if p == os.getpid():
            continue
        try:
            if os.stat(f"/proc/{p}/ns/net").st_ino in inodes:
                out.append(p)
        except OSError:
            continue
    return out


def pids_with_arg(fragment: str) -> list[int]:
    """Processes whose command line mentions ``fragment`` (a lab node's own directory):
    container monitors and runc calls of a node whose namespaces are already gone."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if p.pid == os.getpid():
            continue
        cmdline = p.info.get("cmdline") or []
        if any(fragment in a for a in cmdline):
            out.append(p.pid)
    return out


def find(*args: str) -> int | None:
    """The oldest live process whose command line holds ``args`` in a row (``--config``,
    a node's config file): a lab process started again by hand is still the node's."""
    found: list[tuple[float, int]] = []
    n = len(args)
    for p in psutil.process_iter(["cmdline", "create_time", "status"]):
        cmdline = p.info.get("cmdline") or []
        if p.info.get("status") == psutil.STATUS_ZOMBIE or p.pid == os.getpid():
            continue
        if any(tuple(cmdline[i:i + n]) == args for i in range(len(cmdline) - n + 1)):
            found.append((p.info.get("create_time") or 0.0, p.pid))
    return min(found)[1] if found else None


def tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
