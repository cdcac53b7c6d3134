"""``pykubectl dashboard``: a local web view of the cluster that shows where every pod is
and why the scheduler put it there.

The floors, bottom up: ``rules`` (what the local proxy lets through, Host/Origin checks:
pure), ``view`` (nodes, pods and events folded into what the page draws: requested vs
allocatable per node, pod cards, the decision table: pure), ``reflector`` (list then watch,
resumed from the last resourceVersion), ``server`` (aiohttp: the page, its event stream and
the read-only proxy). This module is the command; aiohttp and the server are imported
when it runs, never when pykubectl starts (tests/unit/cli/kubectl/test_kubectl_imports.py).

As ``kubectl proxy``, the port carries the kubeconfig's credentials, so it listens on
127.0.0.1 by default and answers only requests naming an accepted host, from its own page;
unlike it, it only reads (see ``rules``).
"""

from __future__ import annotations

import argparse
import sys

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.session import Session

DEFAULT_PORT = 8001  # kubectl proxy's


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = ("Serve a live web view of the cluster (nodes, pods, events, why each "
                     "pod is where it is) on a local port, with the kubeconfig's credentials, "
                     "read-only.")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"the port to serve on (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--address", default="127.0.0.1",
                   help="the IP address to serve on (default 127.0.0.1)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    if not 0 <= args.port <= 65535:
        raise CommandError(f"error: --port {args.port}: not a port number")
    client = session.client
    from pykubelet.cli.kubectl.dashboard.rules import accepted_hosts
    from pykubelet.cli.kubectl.dashboard.server import Upstream, serve

    upstream = Upstream(client.server, client.token,
                        client.ssl_context if client.server.startswith("https") else None)

    def ready(url: str) -> None:
        print(f"Serving the dashboard on {url} (Ctrl-C to stop)", flush=True)
        if args.address not in ("127.0.0.1", "::1", "localhost"):
            print(f"warning: {args.address} is not loopback: whoever reaches this port "
                  "reads the cluster with your credentials", file=sys.stderr, flush=True)
        if args.no_browser:
            return
        import os

        # without a display, webbrowser would start a text browser on this terminal
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            print("No display to open a browser on: open the address above in one.",
                  flush=True)
            return
        import webbrowser

        webbrowser.open(url)

    serve(upstream, args.address, args.port, accepted_hosts(args.address), ready)
    return 0
