"""`pykubelet run [--config FILE]`: the node agent.

With no control plane server configured it serves the static pods of ``staticPodPath``
alone, with their status as JSON at ``/pods`` on the local HTTP port. With no
``containerRuntimeEndpoint`` it first starts the embedded runtime (``pykubelet runtime``)
on ``runDir/cri.sock`` as a child process, and stops it on exit (pods keep running:
the runtime's container monitors survive it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import click
import psutil

from pykubelet import state_lock
from pykubelet.config import DEFAULT_CONFIG_PATH, KubeletConfig, KubeletConfigError, load_config

if TYPE_CHECKING:
    from pykubelet.cli.runtime_in_agent import InAgentRuntime
    from pykubelet.kubelet.agent import Kubelet

from pykubelet.systemd.notify import child_environment

log = logging.getLogger("pykubelet.run")
#: the embedded runtime's /metrics (containerd's customary metrics port)
RUNTIME_METRICS_PORT = 1338


class _AdoptedRuntime:
    """A runtime a previous `pykubelet run` started (then crashed): stopped by pid on exit."""

    def __init__(self, pid: int) -> None:
        self.pid = pid  # 0: unknown, nothing is signalled

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def wait(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while self.pid > 0 and time.monotonic() < end:
            try:
                os.kill(self.pid, 0)
            except OSError:
                return
            time.sleep(0.1)
        raise subprocess.TimeoutExpired("pykubelet runtime", timeout)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def poll(self) -> int | None:
        """None while the pid lives (as Popen.poll); its exit status is not ours to read."""
        if self.pid <= 0:
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return -1
        except OSError:
            return None
        return None

    def _signal(self, sig: signal.Signals) -> None:
        """``sig`` to the runtime, if its pid is known (one gone already is no error)."""
        if self.pid > 0:
            with contextlib.suppress(OSError):
                os.kill(self.pid, sig)


def _answers(sock: Path) -> bool:
    from pykubelet.kubelet.cri.cri_client import CRICallError, CRIClient

    if not sock.exists():
        return False
    try:
        with CRIClient(f"unix://{sock}", timeout=3) as c:
            c.version()
        return True
    except CRICallError:
        return False


def lock_state(cfg: KubeletConfig) -> list[state_lock.StateLock]:
    """One agent per rootDir and per runDir: lock ``kubelet.lock`` in each (with our pid),
    or refuse in one line naming the agent that holds it."""
    held: list[state_lock.StateLock] = []
    for field, directory in (("rootDir", cfg.rootDir), ("runDir", cfg.runDir)):
        path = Path(directory) / state_lock.KUBELET_LOCK
        if any(lock.path == path for lock in held):
            continue  # runDir == rootDir
        try:
            held.append(state_lock.acquire(path))
        except state_lock.StateLocked as exc:
            for lock in held:
                lock.release()
            who = f"pid {exc.pid} ({state_lock.describe(exc.pid)})" if exc.pid else "another agent"
            raise click.ClickException(
                f"{field} {directory} is in use by {who}: stop it first, or give this node "
                f"its own {field}"
            ) from None
        except OSError as exc:
            for lock in held:
                lock.release()
            raise click.ClickException(
                f"{field} {directory}: cannot lock {path}: {exc.strerror}"
            ) from None
    return held


def check_healthz_port(cfg: KubeletConfig) -> None:
    """Refuse before anything starts when the HTTP port cannot be bound."""
    if not cfg.healthzPort:
        return
    family = socket.AF_INET6 if ":" in cfg.healthzBindAddress else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the HTTP server binds
        try:
            s.bind((cfg.healthzBindAddress, cfg.healthzPort))
        except OSError as exc:
            raise click.ClickException(_port_message(cfg, exc)) from None


def _port_message(cfg: KubeletConfig, exc: OSError) -> str:
    return (f"healthzPort {cfg.healthzPort} on {cfg.healthzBindAddress}: {exc.strerror} "
            "(set another healthzPort in the config, or 0 to turn the HTTP port off)")


def _runtime_serving(pid: int, sock: Path) -> bool:
    """Whether ``pid`` is a pykubelet runtime listening on ``sock`` (pids get reused)."""
    try:
        return f"unix://{sock}" in psutil.Process(pid).cmdline()
    except psutil.Error:
        return False


def runtime_argv(cfg: KubeletConfig, sock: str | Path, log_level: str) -> list[str]:
    """`pykubelet runtime` as the node's config asks for it (its root, socket, CNI, and
    the registries it may pull from over plain HTTP)."""
    cmd = [
        sys.executable, "-m", "pykubelet.cli.main", "runtime",
        "--root", cfg.rootDir,
        "--listen", f"unix://{sock}",
        "--cni-conf-dir", cfg.cniConfDir,
        "--cni-bin-dir", cfg.cniBinDir,
        "--log-level", log_level,
    ]
    for host in cfg.insecureRegistries:
        cmd += ["--insecure-registry", host]
    return cmd


def start_embedded_runtime(
    cfg: KubeletConfig, log_level: str = "warning"
) -> subprocess.Popen[bytes] | _AdoptedRuntime:
    """Start `pykubelet runtime` on runDir/cri.sock and wait for its socket. If a runtime
    already holds rootDir (the last agent was killed, its runtime was not), adopt it:
    never two runtimes on one root. The runtime logs to our stderr (journald under
    systemd) at ``log_level`` (daemon_logging.runtime_log_level: warnings by default)."""
    sock = Path(cfg.runDir) / "cri.sock"
    sock.parent.mkdir(parents=True, exist_ok=True)
    lock = Path(cfg.rootDir) / state_lock.RUNTIME_LOCK
    if state_lock.holder(lock) is not None:
        end = time.monotonic() + 60
        while True:
            pid = state_lock.holder(lock)
            if pid is None:
                break  # it just exited: start our own below
            if pid and _runtime_serving(pid, sock) and _answers(sock):
                log.info("embedded runtime pid %d already serves %s: adopting it", pid, sock)
                return _AdoptedRuntime(pid)
            if pid and not _runtime_serving(pid, sock):
                raise click.ClickException(
                    f"rootDir {cfg.rootDir} is in use by pid {pid} "
                    f"({state_lock.describe(pid)}), which does not serve {sock}"
                )
            if time.monotonic() > end:
                raise click.ClickException(
                    f"the runtime holding rootDir {cfg.rootDir} (pid {pid}) does not answer "
                    f"on {sock}"
                )
            time.sleep(0.2)
    if _answers(sock):
        raise click.ClickException(
            f"{sock} is served by a runtime on another root; give this node its own runDir"
        )
    cmd = runtime_argv(cfg, sock, log_level)
    metrics_address = f"{cfg.healthzBindAddress}:{RUNTIME_METRICS_PORT}"
    if cfg.healthzPort and _can_listen(cfg.healthzBindAddress, RUNTIME_METRICS_PORT):
        cmd += ["--metrics-address", metrics_address]  # beside the agent's port
    elif cfg.healthzPort:
        log.warning("runtime metrics off: %s is in use by another process", metrics_address)
    # stdout too goes to our stderr: the runtime prints nothing for a user on stdout. Its
    # pid is in rootDir/runtime.lock while it runs (state_lock.holder reads it).
    proc = subprocess.Popen(cmd, stdout=sys.stderr.fileno(), start_new_session=True,
                            env=child_environment())
    end = time.monotonic() + 60
    while not sock.exists():  # a stale one: Kubelet's wait_ready waits for the real one
        if proc.poll() is not None:
            raise click.ClickException(
                f"embedded runtime exited with {proc.returncode} (its log is above)"
            )
        if time.monotonic() > end:
            proc.terminate()
            raise click.ClickException(f"embedded runtime did not listen on {sock}")
        time.sleep(0.05)
    log.info("embedded runtime pid %d serving %s", proc.pid, sock)
    return proc


RuntimeProcess: TypeAlias = "subprocess.Popen[bytes] | _AdoptedRuntime | InAgentRuntime"


def start_runtime(cfg: KubeletConfig, log_level: str) -> RuntimeProcess | None:
    """The embedded runtime as the config asks: none with containerRuntimeEndpoint, in
    this process with runtimeInAgent, else a `pykubelet runtime` child."""
    if not cfg.uses_embedded_runtime:
        return None
    if cfg.runtimeInAgent:
        from pykubelet.cli.runtime_in_agent import start_in_agent

        return start_in_agent(cfg, log_level)
    return start_embedded_runtime(cfg, log_level)


def supervise_runtime(cfg: KubeletConfig, proc: RuntimeProcess | None,
                      start: Callable[[KubeletConfig], RuntimeProcess]) -> RuntimeProcess | None:
    """The agent is its embedded runtime's supervisor, as systemd is containerd's under a
    kubelet (Restart=always): a runtime that exited (killed, crashed) is started again on
    the same root and socket, and adopts its containers (their monitors outlived it). A
    start that fails is logged and tried at the next check; a live runtime, or none (an
    external endpoint), is left as it is."""
    if proc is None:
        return None
    code = proc.poll()
    if code is None:
        return proc
    log.warning("embedded runtime pid %d exited (%s): starting it again", proc.pid, code)
    try:
        return start(cfg)
    except click.ClickException as exc:
        log.warning("embedded runtime: %s; trying again", exc.message)
        return proc


def read_config(config_path: str | None) -> KubeletConfig:
    """``--config``, else the default file, else the single-node default, which is said
    aloud: it starts a control plane too, on loopback."""
    if config_path is not None:
        return load_config(config_path)
    if DEFAULT_CONFIG_PATH.exists():
        return load_config(DEFAULT_CONFIG_PATH)
    from pykubelet.config import single_node_default

    cfg = single_node_default()
    assert cfg.controlPlane is not None
    log.info("no node config (--config, or %s): running the single-node default, a control "
             "plane and this node; the API listens on %s, this host only (a config's "
             "controlPlane.listen serves others, e.g. 0.0.0.0:6443; `pykubelet "
             "install-service` writes one)", DEFAULT_CONFIG_PATH, cfg.controlPlane.listen)
    return cfg


@click.command("run")
@click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), default=None,
    help=f"node config (default {DEFAULT_CONFIG_PATH}; without one, a single-node "
         "default: the control plane and this node, on the embedded runtime)",
)
@click.option("-v", "--verbose", "verbosity", count=True,
              help="more detail: -v the agent's debug lines (and the embedded runtime's "
                   "per-call lines), -vv everything (libraries too)")
def run(config_path: str | None, verbosity: int) -> None:
    """Run the node agent (kubelet) until SIGTERM/SIGINT.

    Runs the static pods of staticPodPath, and with `server:` (or `controlPlane:`, which
    also runs the control plane here) the pods the cluster binds to this node, through
    the CRI runtime at containerRuntimeEndpoint (empty: the embedded `pykubelet
    runtime`, started on runDir/cri.sock); serves their status at /pods on healthzPort,
    and logs one line per pod event to stderr, the embedded runtime's warnings included.

    Under systemd (a Type=notify unit, see `pykubelet install-service`) it says READY=1
    once it serves and has synced once, keeps a readable status line, pings the watchdog
    only while healthy, and logs to the journal with levels."""
    from pykubelet import daemon_logging
    from pykubelet.systemd.service import SystemdService

    daemon_logging.setup(verbosity)
    service = SystemdService()
    service.starting("reading the node config")
    try:
        cfg = read_config(config_path)
    except KubeletConfigError as exc:
        raise click.ClickException(str(exc)) from None

    locks = lock_state(cfg)
    check_healthz_port(cfg)
    try:
        from pykubelet.default_network import ensure_default_network

        ensure_default_network(cfg.cniConfDir, cfg.podCIDR, cfg.cniBinDir)
    except OSError as exc:
        log.warning("cniConfDir %s: cannot write the default network: %s", cfg.cniConfDir,
                    exc)
    if cfg.uses_embedded_runtime:
        service.starting(f"starting the embedded runtime on {cfg.runtime_endpoint}")
    runtime_proc = start_runtime(cfg, daemon_logging.runtime_log_level(verbosity))

    from pykubelet.kubelet.agent import Kubelet

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    from pykubelet.kubelet.cri.cri_client import CRICallError

    try:
        agent = Kubelet(cfg)
    except CRICallError as exc:
        if runtime_proc is not None:
            runtime_proc.terminate()
        raise click.ClickException(
            f"containerRuntimeEndpoint {cfg.runtime_endpoint}: the runtime does not answer "
            f"({exc.code}: {exc.details})"
        ) from None
    service.starting(f"starting node {agent.node_name}")
    try:
        agent.start()
    except OSError as exc:  # the HTTP port, taken since check_healthz_port
        _abandon(agent, runtime_proc)
        raise click.ClickException(_port_message(cfg, exc)) from None
    if cfg.controlPlane is not None or cfg.server:
        service.starting("starting the control plane and joining it" if cfg.controlPlane
                         else f"joining {cfg.server}")
    try:
        control = _start_control_plane(cfg, agent)
    except click.ClickException:  # the control plane or the join refused, in one line
        _abandon(agent, runtime_proc)
        raise
    service.starting("waiting for the first sync")
    while not agent.synced_once.wait(0.5) and not stop.is_set():
        pass
    where = (
        f"http://{cfg.healthzBindAddress}:{cfg.healthzPort}/pods" if cfg.healthzPort else "off"
    )
    log.info(
        "node %s running: runtime %s, static pods %s, status %s",
        agent.node_name, cfg.runtime_endpoint, cfg.staticPodPath or "-", where,
    )
    service.ready(agent.healthy, lambda: _status_line(cfg, agent))
    runtime_level = daemon_logging.runtime_log_level(verbosity)
    try:
        while not stop.wait(1.0):
            runtime_proc = supervise_runtime(
                cfg, runtime_proc, lambda c: start_embedded_runtime(c, runtime_level))
    finally:
        service.stopping()
        if control is not None:
            control()
        agent.stop()
        if runtime_proc is not None:
            runtime_proc.terminate()
            try:
                runtime_proc.wait(15)
            except subprocess.TimeoutExpired:
                runtime_proc.kill()
        for lock in locks:
            lock.release()


def _abandon(agent: Kubelet, runtime_proc: RuntimeProcess | None) -> None:
    """A start that failed half way: stop the agent and the runtime we started."""
    agent.stop()
    if runtime_proc is not None:
        runtime_proc.terminate()


def _start_control_plane(cfg: KubeletConfig, agent: Kubelet) -> Callable[[], None] | None:
    """The control plane (``controlPlane:``) and the node's cluster side (``server:``, or
    the control node itself); returns a stop function, or None without a cluster."""
    from pykubelet.cli import cluster_side

    return cluster_side.start(cfg, agent)


def _can_listen(host: str, port: int) -> bool:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _status_line(cfg: KubeletConfig, agent: Kubelet) -> str:
    """What `systemctl status pykubelet` shows while the node runs."""
    line = f"Running: node {agent.node_name}, {agent.status_summary()}"
    if cfg.controlPlane is not None:
        line += f"; control plane on {cfg.controlPlane.listen}"
    elif cfg.server:
        line += f"; joined {cfg.server}"
    return line
