"""The CRI gRPC server on a unix socket (mode 0600, 16 MiB messages)."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from concurrent import futures

import grpc

from pykubelet.runtime.cri.instrument import ErrorInterceptor
from pykubelet.runtime.cri.servicer import ImageServicer, RuntimeServicer, add_to_server
from pykubelet.runtime.metrics import RuntimeMetrics

MAX_MESSAGE = 16 * 1024 * 1024


def socket_path(listen: str) -> str:
    """``unix:///run/x.sock`` -> ``/run/x.sock``; ValueError for anything else."""
    if listen.startswith("unix://"):
        path = listen[len("unix://"):]
    elif listen.startswith("/"):
        path = listen
    else:
        raise ValueError(f"--listen: {listen!r} must be unix:///ABSOLUTE/PATH")
    if not path.startswith("/"):
        raise ValueError(f"--listen: {listen!r} must name an absolute socket path")
    return path


def _clear_stale_socket(path: str) -> None:
    """Remove a socket left by a dead runtime; refuse to steal one that still answers."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ValueError(f"--listen: {path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(0.5)
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise ValueError(f"--listen: another process already serves {path}")


def start_server(listen: str, runtime: RuntimeServicer, images: ImageServicer,
                 max_workers: int = 128, metrics: RuntimeMetrics | None = None) -> grpc.Server:
    """Bind and start; the socket exists with mode 0600 before this returns.

    ``max_workers`` bounds the RPCs served at once; beyond it calls queue. kubelet starting
    50 pods sends ~50 RunPodSandbox/CreateContainer at once, each holding a worker for
    hundreds of ms, so with 32 workers PLEG's ListContainers waited ~2 s behind them; idle
    workers cost only a thread each.
    """
    path = socket_path(listen)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    _clear_stale_socket(path)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="cri"),
        interceptors=[ErrorInterceptor(metrics)],
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
        ],
    )
    add_to_server(server, runtime, images)
    old = os.umask(0o177)  # the socket is created 0600: no window with wider modes
    try:
        server.add_insecure_port(f"unix://{path}")
        server.start()
    finally:
        os.umask(old)
    with contextlib.suppress(FileNotFoundError):
        os.chmod(path, 0o600)
    return server
