"""The embedded runtime inside the agent's process (``runtimeInAgent: true``), as k3s runs
containerd's CRI beside its kubelet in one binary: the same CRI server on
runDir/cri.sock (crictl and a second kubelet still use it), without a second Python
interpreter. A separate `pykubelet runtime` process costs ~59 MiB RSS (~39 MiB PSS) idle,
almost all of it an interpreter with grpc, protobuf and aiohttp that the agent has
loaded already; in the agent its modules add ~1.4 MiB (bench/node_footprint.py).

What is given up: a runtime that dies alone (the agent restarts it, supervise_runtime)
cannot happen apart from the agent, and a restarted agent restarts its runtime too; pods
and containers keep running across both (pinned namespaces, a monitor per container),
as they do across a restart of `pykubelet runtime`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pycni import defaults as cni_defaults
from pykubelet import state_lock
from pykubelet.config import KubeletConfig

if TYPE_CHECKING:
    import grpc

    from pykubelet.runtime.service import Runtime

log = logging.getLogger("pykubelet.run")


class InAgentRuntime:
    """The runtime served from this process; ``poll`` is None while it serves, so the
    agent's supervisor leaves it alone, as it does a live runtime process."""

    def __init__(self, runtime: Runtime, server: grpc.Server, sock: Path,
                 locks: list[state_lock.StateLock]) -> None:
        self.pid = os.getpid()
        self._runtime, self._server, self._sock, self._locks = runtime, server, sock, locks
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def terminate(self) -> None:
        """Stop serving (5 s grace for calls in flight); pods and containers keep running."""
        if self.returncode is not None:
            return
        self._server.stop(grace=5).wait()
        self._runtime.close()
        with contextlib.suppress(OSError):
            self._sock.unlink()
        for lock in self._locks:
            lock.release()
        self.returncode = 0

    def wait(self, timeout: float | None = None) -> int:
        return self.returncode if self.returncode is not None else 0

    def kill(self) -> None:
        self.terminate()


def _lock(path: Path, what: str) -> state_lock.StateLock:
    """One runtime per root and per socket, as `pykubelet runtime` locks them."""
    try:
        return state_lock.acquire(path)
    except state_lock.StateLocked as exc:
        who = f"pid {exc.pid} ({state_lock.describe(exc.pid)})" if exc.pid else "another runtime"
        raise click.ClickException(
            f"{what} is in use by {who}: stop it first (runtimeInAgent serves the runtime "
            "in the agent)") from None


def start_in_agent(cfg: KubeletConfig, log_level: str = "warning") -> InAgentRuntime:
    """Serve CRI v1 on runDir/cri.sock from this process, with the options
    run_cmd.runtime_argv gives a runtime process (root, CNI dirs, insecure registries)."""
    from pykubelet.runtime.cri.server import start_server
    from pykubelet.runtime.service import Runtime, RuntimeOptions

    logging.getLogger("pykubelet.runtime").setLevel(getattr(logging, log_level.upper()))
    sock = Path(cfg.runDir) / "cri.sock"
    sock.parent.mkdir(parents=True, exist_ok=True)
    root = Path(cfg.rootDir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    locks = [_lock(root / state_lock.RUNTIME_LOCK, f"rootDir {root}")]
    try:
        locks.append(_lock(Path(f"{sock}.lock"), f"{sock}"))
        rt = Runtime.open(RuntimeOptions(
            root=root, cni_conf_dir=cfg.cniConfDir,
            cni_bin_dirs=cni_defaults.split_path(cfg.cniBinDir),
            insecure_registries=tuple(cfg.insecureRegistries)))
    except (OSError, click.ClickException) as exc:
        for lock in locks:
            lock.release()
        if isinstance(exc, click.ClickException):
            raise
        raise click.ClickException(f"embedded runtime: {exc}") from None
    try:
        server = start_server(f"unix://{sock}", rt.runtime_servicer, rt.image_servicer)
    except ValueError as exc:
        rt.close()
        for lock in locks:
            lock.release()
        raise click.ClickException(f"embedded runtime: {exc}") from None
    log.info("embedded runtime serving %s in the agent's process", sock)
    return InAgentRuntime(rt, server, sock, locks)
