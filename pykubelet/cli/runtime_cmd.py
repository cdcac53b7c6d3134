"""`pykubelet runtime`: the CRI v1 runtime alone (RuntimeService + ImageService), like containerd.

Stopping the runtime (SIGTERM/SIGINT) leaves pods and containers running: namespaces are
pinned by bind mounts and each container has its own monitor, so a restarted runtime
picks them up from its checkpoints.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from pathlib import Path

import click

from pycni import defaults as cni_defaults
from pykubelet import state_lock
from pykubelet.runtime.runc import DEFAULT_RUNC


@click.command("runtime")
@click.option("--root", "root", type=click.Path(file_okay=False, path_type=Path),
              default="/var/lib/pykubelet", show_default=True,
              help="State directory: images, sandboxes, containers.")
@click.option("--listen", default="unix:///run/pykubelet/cri.sock", show_default=True,
              help="CRI endpoint: unix:///PATH (created with mode 0600).")
@click.option("--cni-conf-dir", default="/etc/cni/net.d", show_default=True)
@click.option("--cni-bin-dir", "cni_bin_dirs", multiple=True,
              default=[cni_defaults.BIN_PATH], show_default=True,
              help="Where CNI plugins are found, searched in order (repeatable, or DIR:DIR).")
@click.option("--cni-cache-dir", default="/var/lib/cni", show_default=True, hidden=True)
@click.option("--netns-dir", default="/run/netns", show_default=True, hidden=True,
              help="Where network namespace pins are bind-mounted.")
@click.option("--netns-prefix", default="", hidden=True,
              help="Name prefix of netns pins (default: pyk<hash of --root>-).")
@click.option("--runc", "runc_binary", default=DEFAULT_RUNC, show_default=True,
              help="The OCI runtime binary (runc, or a wrapper with runc's CLI).")
@click.option("--stream-address", default="127.0.0.1", show_default=True,
              help="Address of the streaming server (the URLs of Exec/Attach/PortForward).")
@click.option("--stream-port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Its port; 0 picks a free one.")
@click.option("--insecure-registry", "insecure_registries", multiple=True, metavar="HOST[:PORT]",
              help="Pull from this registry over plain HTTP (repeatable; localhost and "
                   "loopback addresses always may).")
@click.option("--metrics-address", default="", metavar="HOST:PORT",
              help="Serve Prometheus metrics at http://HOST:PORT/metrics (default: off, as "
                   "containerd's metrics.address).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]))
def runtime(root: Path, listen: str, cni_conf_dir: str, cni_bin_dirs: tuple[str, ...],
            cni_cache_dir: str, netns_dir: str, netns_prefix: str, runc_binary: str,
            stream_address: str, stream_port: int, insecure_registries: tuple[str, ...],
            metrics_address: str, log_level: str) -> None:
    """Serve CRI v1 on a unix socket: runc containers in pinned-namespace sandboxes."""
    logging.basicConfig(
        level=getattr(logging, log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from pykubelet.runtime.cri.server import socket_path, start_server
    from pykubelet.runtime.service import Runtime, RuntimeOptions

    try:
        sock = socket_path(listen)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if not (os.path.isfile(runc_binary) and os.access(runc_binary, os.X_OK)):
        raise click.BadParameter(f"{runc_binary}: not an executable file", param_hint="--runc")
    root = root.absolute()
    locks = [_lock(root / state_lock.RUNTIME_LOCK, f"--root {root}", "--root"),
             _lock(Path(sock + ".lock"), f"--listen {listen}", "--listen")]
    metrics = None
    if metrics_address:
        from pykubelet.runtime.metrics import RuntimeMetrics

        metrics = RuntimeMetrics()
        try:
            metrics_server, _ = metrics.serve(metrics_address)
        except ValueError as exc:
            raise click.BadParameter(str(exc).split(": ", 1)[1],
                                     param_hint="--metrics-address") from None
        except OSError as exc:
            raise click.ClickException(
                f"--metrics-address {metrics_address}: {exc.strerror or exc}") from None
    options = RuntimeOptions(
        root=root.resolve(), cni_conf_dir=cni_conf_dir,
        cni_bin_dirs=cni_defaults.split_path(*cni_bin_dirs),
        cni_cache_dir=cni_cache_dir, netns_dir=netns_dir, netns_prefix=netns_prefix,
        runc_binary=runc_binary, stream_address=stream_address, stream_port=stream_port,
        insecure_registries=insecure_registries,
    )
    try:
        rt = Runtime.open(options)
    except OSError as exc:
        if exc.filename:  # a file or directory under the root
            raise click.ClickException(
                f"--root {root}: cannot set up {exc.filename}: {exc.strerror}") from None
        # the streaming server could not listen
        raise click.ClickException(
            f"--stream-address/--stream-port {stream_address}:{stream_port}: "
            f"{exc.strerror or exc}") from None
    try:
        server = start_server(listen, rt.runtime_servicer, rt.image_servicer, metrics=metrics)
    except ValueError as exc:
        rt.close()
        raise click.ClickException(str(exc)) from exc
    done = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    logging.getLogger("pykubelet.runtime").info(
        "pykubelet runtime serving CRI v1 on %s (root %s)", listen, root
    )
    while not done.wait(1.0):
        pass
    server.stop(grace=5).wait()
    rt.close()
    if metrics is not None:
        metrics_server.shutdown()
        metrics_server.server_close()
    with contextlib.suppress(OSError):
        os.unlink(sock)
    logging.getLogger("pykubelet.runtime").info("stopped; pods and containers keep running")
    for lock in locks:
        lock.release()


def _lock(path: Path, what: str, option: str) -> state_lock.StateLock:
    """One runtime per root and per socket: or one line naming the holder."""
    try:
        return state_lock.acquire(path)
    except state_lock.StateLocked as exc:
        who = f"pid {exc.pid} ({state_lock.describe(exc.pid)})" if exc.pid else "another runtime"
        raise click.ClickException(f"{what} is in use by {who}: one runtime per {option}") from None
    except OSError as exc:
        what = "it" if exc.filename in (None, str(path.parent)) else exc.filename
        raise click.ClickException(
            f"{option} {path.parent}: cannot create {what}: {exc.strerror}") from None
