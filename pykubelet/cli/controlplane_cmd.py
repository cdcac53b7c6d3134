"""`pykubelet control-plane`: the control plane alone, no node (like
``k3s server --disable-agent``): the Kubernetes API on HTTPS, the store, the scheduler,
node lifecycle and pod GC. It writes an admin kubeconfig (mode 0600) once it serves and
prints the join command other nodes use."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

import click

DEFAULT_ROOT = "/var/lib/pykubelet/control-plane"


@click.group("control-plane", invoke_without_command=True)
@click.option("--root", "root", default=DEFAULT_ROOT, show_default=True,
              type=click.Path(file_okay=False), help="state: store, certificates, tokens")
@click.option("--listen", default="0.0.0.0:6443", show_default=True, help="ADDR:PORT for HTTPS")
@click.option("--kubeconfig", "kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="where to write the admin kubeconfig (default ROOT/admin.kubeconfig)")
@click.option("--advertise-address", default="", help="the address nodes reach the API on")
@click.option("--node-monitor-grace-period", type=float, default=40.0, show_default=True,
              help="seconds without a node lease before the node is NotReady (Unknown)")
@click.option("--default-watch-cache-size", type=click.IntRange(min=1), default=10_000,
              show_default=True, help="events kept per resource for resuming watches")
@click.option("--pod-gc-period", type=float, default=20.0, show_default=True,
              help="seconds between pod garbage collections")
@click.option("-v", "--verbose", is_flag=True, help="debug logging")
@click.pass_context
def control_plane(ctx: click.Context, root: str, listen: str, kubeconfig: str | None,
                  advertise_address: str, node_monitor_grace_period: float,
                  default_watch_cache_size: int, pod_gc_period: float, verbose: bool) -> None:
    """Run the control plane until SIGTERM/SIGINT."""
    ctx.obj = {"root": root}
    if ctx.invoked_subcommand is not None:
        return
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from pykubelet.controlplane.controllers import default_controllers
    from pykubelet.controlplane.server import ControlPlane, Options, split_listen

    try:
        split_listen(listen)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--listen") from None
    options = Options(root=Path(root), listen=listen,
                      kubeconfig=Path(kubeconfig) if kubeconfig else None,
                      advertise_address=advertise_address,
                      node_monitor_grace_period=node_monitor_grace_period,
                      watch_cache_size=default_watch_cache_size,
                      pod_gc_period=pod_gc_period)
    cp = ControlPlane(options)
    cp.controllers = default_controllers()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await cp.start()
        except OSError as exc:
            await cp.stop()
            raise click.ClickException(
                f"cannot serve on {listen}: {exc.strerror or exc}") from None
        click.echo(f"control plane serving on {cp.local_url}; admin kubeconfig: "
                   f"{cp.kubeconfig_path}", err=True)
        # the token itself never goes to a log: it is printed on request only
        click.echo(f"join other nodes with the output of: pykubelet control-plane --root {root} "
                   "join-command", err=True)
        await stop.wait()
        await cp.stop()

    try:
        asyncio.run(main())
    except PermissionError as exc:
        raise click.ClickException(f"{exc.filename}: {exc.strerror}") from None
    sys.exit(0)


@control_plane.command("join-command")
@click.pass_context
def join_command(ctx: click.Context) -> None:
    """Print what a node needs to join: server, token and CA hash."""
    from pykubelet.controlplane.pki import PKI, Tokens, ca_cert_hash

    root = Path(ctx.obj["root"])
    pki = PKI(root)
    if not pki.ca_cert_path.exists() or not (root / "tokens.json").exists():
        raise click.ClickException(f"{root}: no control plane state here (start it first)")
    from pykubelet.controlplane.server import join_command as render

    tokens = Tokens(root / "tokens.json")
    server_file = root / "server"
    server = server_file.read_text().strip() if server_file.exists() else "https://ADDRESS:6443"
    click.echo(render(server, tokens.join, ca_cert_hash(pki.ca_pem)))
