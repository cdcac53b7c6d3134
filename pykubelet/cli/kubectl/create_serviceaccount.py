"""``pykubectl create serviceaccount NAME`` and ``pykubectl create token NAME`` as kubectl's
create_serviceaccount.go and create_token.go: the first prints ``serviceaccount/NAME
created``; the second asks the TokenRequest API (``--duration`` in whole seconds,
``--audience`` repeatable, ``--bound-object-kind Pod|Secret --bound-object-name N
[--bound-object-uid U]``) and prints the token, with a newline only on a terminal, as
kubectl does (``$(kubectl create token x)`` and pipes get the bare token)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykubelet.api.machinery.duration import parse_duration
from pykubelet.cli.kubectl.create_options import post, print_created
from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.printers import require_output, to_json, to_yaml
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import Resource, StatusError

Obj = dict[str, Any]

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts")
GENERATORS = {"serviceaccount": "serviceaccount", "sa": "serviceaccount", "token": "token"}
BOUND_OBJECT_KINDS = {"Node": "v1", "Pod": "v1", "Secret": "v1"}


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--duration", default="", help="(token) requested lifetime, e.g. 10m")
    p.add_argument("--audience", action="append", default=[],
                   help="(token) an audience of the token; repeatable")
    p.add_argument("--bound-object-kind", default="", help="(token) Pod, Secret or Node")
    p.add_argument("--bound-object-name", default="", help="(token) the bound object's name")
    p.add_argument("--bound-object-uid", default="", help="(token) the bound object's uid")


def run(words: list[str], args: argparse.Namespace, session: Session) -> int:
    gen = GENERATORS[words[0]]
    names = words[1:]
    if gen == "token":
        if len(names) != 1:
            raise CommandError("error: exactly one NAME is required, got "
                               f"{len(names)}\nSee 'pykubectl create token -h' for help and "
                               "examples")
        return _token(names[0], args, session)
    if len(names) != 1:
        raise CommandError(f"error: exactly one NAME is required, got {len(names)}\n"
                           f"See 'pykubectl create {words[0]} -h' for help and examples")
    require_output(args.output)
    ns = session.namespace
    meta: Obj = {"name": names[0]}
    if session.explicit_namespace:
        meta["namespace"] = ns
    meta["creationTimestamp"] = None
    obj: Obj = {"kind": "ServiceAccount", "apiVersion": "v1", "metadata": meta}
    try:
        obj = post(session, SERVICE_ACCOUNTS.path(ns), obj, args)
    except StatusError as exc:
        raise CommandError(f"error: failed to create serviceaccount: {exc.message}") from None
    print_created(args, "serviceaccount", obj)
    return 0


def token_request(args: argparse.Namespace) -> Obj:
    """The TokenRequest kubectl sends (TokenOptions.Validate, then Run's request)."""
    seconds = 0.0
    if args.duration:
        try:
            seconds = parse_duration(args.duration)
        except ValueError as exc:
            raise CommandError(f'error: invalid argument "{args.duration}" for "--duration" '
                               f"flag: {exc}") from None
    if seconds < 0:
        raise CommandError("error: --duration must be greater than or equal to 0")
    if seconds != int(seconds):
        raise CommandError("error: --duration cannot be expressed in units less than seconds")
    if any(not a for a in args.audience):
        raise CommandError("error: --audience must not be an empty string")
    kind = args.bound_object_kind
    if not kind:
        if args.bound_object_name:
            raise CommandError("error: --bound-object-name can only be set if "
                               "--bound-object-kind is provided")
        if args.bound_object_uid:
            raise CommandError("error: --bound-object-uid can only be set if "
                               "--bound-object-kind is provided")
    else:
        if kind not in BOUND_OBJECT_KINDS:
            raise CommandError("error: supported --bound-object-kind values are "
                               + ", ".join(sorted(BOUND_OBJECT_KINDS)))
        if not args.bound_object_name:
            raise CommandError("error: --bound-object-name is required if --bound-object-kind "
                               "is provided")
    spec: Obj = {}
    if args.audience:
        spec["audiences"] = list(args.audience)
    if seconds > 0:
        spec["expirationSeconds"] = int(seconds)
    if kind:
        ref: Obj = {"kind": kind, "apiVersion": BOUND_OBJECT_KINDS[kind],
                    "name": args.bound_object_name}
        if args.bound_object_uid:
            ref["uid"] = args.bound_object_uid
        spec["boundObjectRef"] = ref
    return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": spec, "status": {
                "token": "", "expirationTimestamp": None}}


def _token(name: str, args: argparse.Namespace, session: Session) -> int:
    body = token_request(args)
    path = SERVICE_ACCOUNTS.path(session.namespace, name, "token")
    try:
        out: Obj = session.client.request("POST", path, body=body)
    except StatusError as exc:
        raise CommandError(f"error: failed to create token: {exc.message}") from None
    token = (out.get("status") or {}).get("token") or ""
    if not token:
        raise CommandError("error: failed to create token: no token in server response")
    if args.output in ("json", "yaml"):
        sys.stdout.write(to_json(out) if args.output == "json" else to_yaml(out))
    elif sys.stdout.isatty():
        print(token)
    else:
        sys.stdout.write(token)
    return 0
