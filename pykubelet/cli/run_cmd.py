"""`pykubelet run [--config FILE]`: the node agent.

With no control plane server configured it serves the static pods of ``staticPodPath``
alone, with their status as JSON at ``/pods`` on the local HTTP port. With no
``containerRuntimeEndpoint`` it first starts the embedded runtime (``pykubelet runtime``)
on ``runDir/cri.sock`` as a child process, and stops it on exit (pods keep running:
the runtime's container monitors survive it).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
import psutil

if TYPE_CHECKING:
    from pykubelet.kubelet.agent import Kubelet

from pycni.atomic_files import write_atomic
from pykubelet.config import DEFAULT_CONFIG_PATH, ConfigError, KubeletConfig, load_config
from pykubelet.systemd.notify import child_environment

log = logging.getLogger("pykubelet.run")
#: the embedded runtime's /metrics (containerd's customary metrics port)
RUNTIME_METRICS_PORT = 1338


class _AdoptedRuntime:
    """A runtime a previous `pykubelet run` started (then crashed): stopped by pid on exit."""

    def __init__(self, pid: int) -> None:
        self.pid = pid  # 0: unknown, nothing is signalled

    def terminate(self) -> None:
        if self.pid <= 0:
            return
        try:
            os.kill(self.pid, signal.SIGTERM)
        except OSError:
            pass

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
        if self.pid <= 0:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


def _answers(sock: Path) -> bool:
    from pykubelet.kubelet.cri_client import CRICallError, CRIClient

    if not sock.exists():
        return False
    try:
        with CRIClient(f"unix://{sock}", timeout=3) as c:
            c.version()
        return True
    except CRICallError:
        return False


def start_embedded_runtime(cfg: KubeletConfig) -> subprocess.Popen[bytes] | _AdoptedRuntime:
    """Start `pykubelet runtime` on runDir/cri.sock and wait for its socket. If one still
    serves there (this agent was killed, its runtime was not), adopt it: never two
    runtimes on one root."""
    sock = Path(cfg.runDir) / "cri.sock"
    sock.parent.mkdir(parents=True, exist_ok=True)
    pidfile = Path(cfg.runDir) / "runtime.pid"
    if _answers(sock):
        try:
            pid = int(pidfile.read_text().strip())
            # only ever signal the runtime serving this socket (pids get reused)
            if f"unix://{sock}" not in psutil.Process(pid).cmdline():
                pid = 0
        except (OSError, ValueError, psutil.Error):
            pid = 0
        log.info("embedded runtime already serving on %s (pid %s): adopting it", sock, pid or "?")
        return _AdoptedRuntime(pid)
    log_path = Path(cfg.rootDir) / "runtime.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pykubelet.cli.main", "runtime",
        "--root", cfg.rootDir,
        "--listen", f"unix://{sock}",
        "--cni-conf-dir", cfg.cniConfDir,
        "--cni-bin-dir", cfg.cniBinDir,
    ]
    metrics_address = f"{cfg.healthzBindAddress}:{RUNTIME_METRICS_PORT}"
    if cfg.healthzPort and _can_listen(cfg.healthzBindAddress, RUNTIME_METRICS_PORT):
        cmd += ["--metrics-address", metrics_address]  # beside the agent's port
    elif cfg.healthzPort:
        log.warning("runtime metrics off: %s is in use by another process", metrics_address)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env=child_environment())
    write_atomic(pidfile, f"{proc.pid}\n", durable=False)  # under runDir: gone with the host
    end = time.monotonic() + 60
    while not sock.exists():
        if proc.poll() is not None:
            raise click.ClickException(
                f"embedded runtime exited with {proc.returncode}; see {log_path}"
            )
        if time.monotonic() > end:
            proc.terminate()
            raise click.ClickException(f"embedded runtime did not listen on {sock}")
        time.sleep(0.05)
    return proc


@click.command("run")
@click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), default=None,
    help=f"node config (default {DEFAULT_CONFIG_PATH}; single-node defaults if absent)",
)
@click.option("-v", "--verbose", "verbosity", count=True,
              help="more detail: -v the agent's debug lines, -vv everything (libraries too)")
def run(config_path: str | None, verbosity: int) -> None:
    """Run the node agent (kubelet) until SIGTERM/SIGINT.

    Under systemd (a Type=notify unit, see `pykubelet install-service`) it says READY=1
    once it serves and has synced once, keeps a readable status line, pings the watchdog
    only while healthy, and logs to the journal with levels."""
    from pykubelet import daemon_logging
    from pykubelet.systemd.service import SystemdService

    daemon_logging.setup(verbosity)
    service = SystemdService()
    service.starting("reading the node config")
    try:
        if config_path is not None:
            cfg = load_config(config_path)
        elif DEFAULT_CONFIG_PATH.exists():
            cfg = load_config(DEFAULT_CONFIG_PATH)
        else:
            from pykubelet.config import single_node_default

            cfg = single_node_default()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None

    if cfg.uses_embedded_runtime:
        service.starting(f"starting the embedded runtime on {cfg.runtime_endpoint}")
    runtime_proc = start_embedded_runtime(cfg) if cfg.uses_embedded_runtime else None

    from pykubelet.kubelet.agent import Kubelet

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    from pykubelet.kubelet.cri_client import CRICallError

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
    agent.start()
    if cfg.controlPlane is not None or cfg.server:
        service.starting("starting the control plane and joining it" if cfg.controlPlane
                         else f"joining {cfg.server}")
    control = _start_control_plane(cfg, agent)
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
    try:
        while not stop.wait(1.0):
            pass
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
