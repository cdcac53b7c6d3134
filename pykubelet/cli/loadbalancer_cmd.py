"""`pykubelet load-balancer`: the API servers' load balancer as a process of its own, the
cluster's front address (as kind's HA load balancer, or k3s's agent load balancer run
alone). TCP only: TLS stays end to end to the API servers."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import click

from pykubelet.cli.signals import stop_on_signals


@click.command("load-balancer")
@click.option("--listen", default="127.0.0.1:6444", show_default=True, metavar="ADDR:PORT",
              help="Where clients connect (they see the API servers' certificates, so "
                   "ADDR should be one the servers' certificates name).")
@click.option("--server", "servers", multiple=True, required=True, metavar="URL",
              help="An API server, https://HOST:PORT (repeatable; in preference order).")
@click.option("--state-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Keep the servers, the current one and their health here (JSON).")
@click.option("--health-interval", type=click.FloatRange(min=0.1), default=2.0,
              show_default=True, help="Seconds between health checks (GET /readyz).")
@click.option("--dial-timeout", type=click.FloatRange(min=0.1), default=2.0,
              show_default=True, help="Seconds a connection to a server may take.")
@click.option("-v", "--verbose", is_flag=True, help="debug logging")
def load_balancer(listen: str, servers: tuple[str, ...], state_file: Path | None,
                  health_interval: float, dial_timeout: float, verbose: bool) -> None:
    """Proxy TCP connections to the first healthy API server, until SIGTERM/SIGINT."""
    from pykubelet.client.loadbalancer import LoadBalancer, LoadBalancerError

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        lb = LoadBalancer(list(servers), listen, state_file=state_file,
                          health_interval=health_interval, dial_timeout=dial_timeout)
    except LoadBalancerError as exc:
        message = str(exc)
        hint = "--listen" if message.startswith("listen ") else "--server"
        raise click.BadParameter(message.removeprefix("listen "), param_hint=hint) from None

    async def main() -> None:
        stop = stop_on_signals()
        try:
            await lb.open()
        except OSError as exc:  # asyncio words it "error while attempting to bind ..."
            why = os.strerror(exc.errno) if exc.errno else str(exc)
            raise click.ClickException(f"--listen {listen}: cannot listen: {why}") from None
        click.echo(f"load balancer on {lb.url} for {', '.join(lb.servers())}", err=True)
        await stop.wait()
        await lb.close()

    asyncio.run(main())
