"""Runs Debian's etcd (package etcd-server) as a child process: one member, or one member
of a static cluster, with its data in a directory of ours. Tests start one on loopback
ports under a temporary directory and remove it afterwards; the lab starts one member per
control node.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ETCD = "etcd"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class EtcdServer:
    """One etcd member: ``start()``, then ``client_url``; ``stop()`` (or ``kill()``)."""

    data_dir: Path
    name: str = "default"
    host: str = "127.0.0.1"
    client_port: int = 0
    peer_port: int = 0
    initial_cluster: str = ""  # "n1=http://a:2380,n2=http://b:2380"; empty: just this one
    progress_notify_interval: str = "5s"
    extra_args: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    # TLS on the client port: (CA that clients' certificates must chain to, serving
    # certificate, its key); None: plain http
    client_tls: tuple[Path, Path, Path] | None = None

    @property
    def client_url(self) -> str:
        scheme = "https" if self.client_tls else "http"
        return f"{scheme}://{self.host}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://{self.host}:{self.peer_port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def command(self) -> list[str]:
        cluster = self.initial_cluster or f"{self.name}={self.peer_url}"
        cmd = [
            ETCD, "--name", self.name, "--data-dir", str(self.data_dir),
            "--listen-client-urls", self.client_url,
            "--advertise-client-urls", self.client_url,
            "--listen-peer-urls", self.peer_url,
            "--initial-advertise-peer-urls", self.peer_url,
            "--initial-cluster", cluster,
            "--initial-cluster-state", "new",
            "--experimental-watch-progress-notify-interval", self.progress_notify_interval,
            "--logger", "zap", "--log-level", "warn",
            *self.extra_args,
        ]
        if self.client_tls:
            ca, cert, key = self.client_tls
            cmd += ["--client-cert-auth", "--trusted-ca-file", str(ca), "--cert-file", str(cert),
                    "--key-file", str(key)]
        return cmd

    def start(self, timeout: float = 30.0, wait: bool = True) -> None:
        if shutil.which(ETCD) is None:
            raise RuntimeError("etcd is not installed (Debian package etcd-server)")
        if not self.client_port:
            self.client_port = free_port(self.host)
        if not self.peer_port:
            self.peer_port = free_port(self.host)
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        out = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        out.close()
        if wait:
            self.wait_serving(timeout)

    def wait_serving(self, timeout: float = 30.0) -> None:
        """Return once the member answers on its client port (a cluster member also needs
        a quorum before it answers reads, which callers wait for with their first call)."""
        assert self.proc is not None
        end = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited {self.proc.returncode}:\n"
                                   + self.log_path.read_text()[-3000:])
            with contextlib.suppress(OSError), socket.create_connection(
                    (self.host, self.client_port), timeout=0.5):
                return
            if time.monotonic() > end:
                self.stop()
                raise RuntimeError("etcd did not serve in time:\n"
                                   + self.log_path.read_text()[-3000:])
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def remove(self) -> None:
        """Stop, then remove the data directory and the log."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.log_path.unlink(missing_ok=True)
