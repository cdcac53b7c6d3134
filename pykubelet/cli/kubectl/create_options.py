"""What every ``create`` shares, as kubectl's create.go ``CreateSubcommandOptions`` and its
printer flags: the flags (-R, -o, --dry-run, --save-config, --field-manager), the write's
query (fieldManager, strict field validation, ``dryRun=All`` on a server dry run), the POST
skipped on a client dry run, and the line or document printed for the object created."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykubelet.cli.kubectl.printers import dry_run_suffix, omit_managed_fields, to_json, to_yaml
from pykubelet.cli.kubectl.session import Session

Obj = dict[str, Any]


def add_create_flags(p: argparse.ArgumentParser, save_config_help: str) -> None:
    """The flags after -f that create and apply share."""
    p.add_argument("-R", "--recursive", action="store_true", help="walk directories")
    p.add_argument("-o", "--output", default="", help="name|json|yaml")
    p.add_argument("--dry-run", nargs="?", const="client", default="none",
                   choices=("none", "client", "server"), help="none|client|server")
    p.add_argument("--save-config", action="store_true", help=save_config_help)
    p.add_argument("--field-manager", default="", help="the writer's name on the server")


def write_params(args: argparse.Namespace, manager: str = "kubectl-create") -> dict[str, Any]:
    """The query of a create or patch: --field-manager (else the command's), Strict
    validation, and dryRun=All on --dry-run=server."""
    params: dict[str, Any] = {"fieldManager": args.field_manager or manager,
                              "fieldValidation": "Strict"}
    if args.dry_run == "server":
        params["dryRun"] = "All"
    return params


def post(session: Session, path: str, obj: Obj, args: argparse.Namespace) -> Obj:
    """The object as the server created it, or as it is on a client dry run (not sent)."""
    if args.dry_run == "client":
        return obj
    result: Obj = session.client.request("POST", path, params=write_params(args), body=obj)
    return result


def print_created(args: argparse.Namespace, kind_string: str, obj: Obj) -> None:
    """-o json/yaml (without managedFields, as kubectl's OmitManagedFieldsPrinter), -o name,
    or ``KIND/NAME created`` with the dry run's suffix."""
    obj = omit_managed_fields(obj)
    name = (obj.get("metadata") or {}).get("name", "")
    if args.output == "json":
        sys.stdout.write(to_json(obj, sort_keys=args.dry_run != "client"))
    elif args.output == "yaml":
        sys.stdout.write(to_yaml(obj))
    elif args.output == "name":
        print(f"{kind_string}/{name}")
    else:
        print(f"{kind_string}/{name} created{dry_run_suffix(args.dry_run)}")
