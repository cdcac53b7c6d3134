"""``pykubectl version`` and ``pykubectl api-resources`` (kubectl's, same columns and
order; api-resources always asks the server afresh, as kubectl does)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.printers import to_json, to_yaml
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.tabwriter import TabWriter


def register(name: str, p: argparse.ArgumentParser) -> None:
    if name == "version":
        p.description = "Print the client and server version information."
        p.add_argument("--client", action="store_true", help="the client version only")
        p.add_argument("-o", "--output", default="", help="json|yaml")
        return
    p.description = "Print the supported API resources on the server."
    p.add_argument("-o", "--output", default="", help="wide|name")
    p.add_argument("--namespaced", default=None, help="true|false: only these")
    p.add_argument("--api-group", default=None, help="only this group ('' for core)")
    p.add_argument("--verbs", default="", help="only resources with all these verbs (a,b)")
    p.add_argument("--categories", default="", help="only resources in all these (a,b)")
    p.add_argument("--no-headers", action="store_true", help="omit the header row")
    p.add_argument("--sort-by", default="", help="name|kind")


def client_version() -> dict[str, str]:
    import importlib.metadata
    import platform

    try:
        version = importlib.metadata.version("pykube-node")
    except importlib.metadata.PackageNotFoundError:  # run from a tree without metadata
        version = "0.0.0"
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {"gitVersion": f"v{version}+pykubectl",
            "goVersion": f"python{platform.python_version()}", "compiler": "cpython",
            "platform": f"{sys.platform}/{arch}"}


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    if name == "version":
        return _version(args, session)
    return _api_resources(args, session)


def _version(args: argparse.Namespace, session: Session) -> int:
    if args.output not in ("", "json", "yaml"):
        raise CommandError("error: --output must be 'yaml' or 'json'")
    out: dict[str, Any] = {"clientVersion": client_version()}
    server_error: BaseException | None = None
    if not args.client:
        try:
            out["serverVersion"] = session.client.request("GET", "/version")
        except Exception as exc:  # reported after the client's version, as kubectl does
            server_error = exc
    if args.output == "json":
        sys.stdout.write(to_json(out, indent=2))
    elif args.output == "yaml":
        sys.stdout.write(to_yaml(out))
    else:
        print(f"Client Version: {out['clientVersion']['gitVersion']}")
        if "serverVersion" in out:
            print(f"Server Version: {out['serverVersion'].get('gitVersion', '')}")
    sys.stdout.flush()
    if server_error is not None:
        raise server_error
    return 0


def _api_resources(args: argparse.Namespace, session: Session) -> int:
    if args.output not in ("", "wide", "name"):
        raise CommandError(f'error: --output {args.output} is not available')
    namespaced = None
    if args.namespaced is not None:
        namespaced = args.namespaced.lower() in ("1", "t", "true")
    verbs = [v for v in args.verbs.split(",") if v]
    categories = [c for c in args.categories.split(",") if c]
    rows = []
    for m in session.discovery.refresh():
        if not m.verbs:
            continue
        if args.api_group is not None and m.group != args.api_group:
            continue
        if namespaced is not None and m.namespaced != namespaced:
            continue
        if not set(verbs) <= set(m.verbs) or not set(categories) <= set(m.categories):
            continue
        rows.append(m)
    key = {"name": lambda m: m.resource, "kind": lambda m: m.kind}.get(args.sort_by)
    if key is None:
        rows.sort(key=lambda m: (m.group, m.resource))
    else:
        rows.sort(key=lambda m: (key(m), m.resource))
    w = TabWriter(sys.stdout)
    if not args.no_headers and args.output != "name":
        head = "NAME\tSHORTNAMES\tAPIVERSION\tNAMESPACED\tKIND"
        w.write(head + ("\tVERBS\tCATEGORIES\n" if args.output == "wide" else "\n"))
    for m in rows:
        if args.output == "name":
            w.write(m.resource + (f".{m.group}" if m.group else "") + "\n")
            continue
        line = (f"{m.resource}\t{','.join(m.short_names)}\t{m.group_version}\t"
                f"{'true' if m.namespaced else 'false'}\t{m.kind}")
        if args.output == "wide":
            line += f"\t{','.join(m.verbs)}\t{','.join(m.categories)}"
        w.write(line + "\n")
    w.flush()
    return 0
