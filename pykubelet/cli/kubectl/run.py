"""``pykubectl run NAME --image IMG [-- ARGS]``: one pod, shaped as kubectl run shapes it
(label ``run=NAME`` unless ``--labels``, a container named NAME, ``restartPolicy`` from
``--restart``, arguments after ``--`` as the container's args, or its command with
``--command``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.printers import print_operation, require_output
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import PODS

RESTART = ("Always", "OnFailure", "Never")


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Create and run a particular image in a pod."
    p.add_argument("name", nargs="?", default="", metavar="NAME")
    p.add_argument("--image", default="", help="the container image (required)")
    p.add_argument("--restart", default="Always", help="Always|OnFailure|Never")
    p.add_argument("-l", "--labels", default="", help="k=v,k2=v2 (default: run=NAME)")
    p.add_argument("--annotations", action="append", default=[], help="k=v; repeatable")
    p.add_argument("--env", action="append", default=[], help="K=V; repeatable")
    p.add_argument("--port", type=int, default=None, help="the container port to expose")
    p.add_argument("--image-pull-policy", default="", help="Always|IfNotPresent|Never")
    p.add_argument("--command", action="store_true",
                   help="what follows -- is the command, not the args")
    p.add_argument("--dry-run", nargs="?", const="client", default="none",
                   choices=("none", "client", "server"), help="none|client|server")
    p.add_argument("-o", "--output", default="", help="name|json|yaml")


def pod_for(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The pod kubectl run would create (errors name the flag)."""
    if not name:
        raise CommandError("error: NAME is required for run")
    if not args.image:
        raise CommandError('error: required flag(s) "image" not set')
    if args.restart not in RESTART:
        raise CommandError(f"error: invalid restart policy: {args.restart}")
    labels = _pairs(args.labels.split(",") if args.labels else [], "label spec",
                    "unexpected label spec") if args.labels else {"run": name}
    container: dict[str, Any] = {"name": name, "image": args.image}
    rest: list[str] = args.after_dash
    if rest:
        container["command" if args.command else "args"] = rest
    elif args.command:
        raise CommandError("error: --command requires a command after --")
    if args.env:
        env = _pairs(args.env, "env", "invalid env")
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if args.port is not None:
        if not 0 < args.port < 65536:
            raise CommandError(f"error: --port: {args.port} is not a valid port number")
        container["ports"] = [{"containerPort": args.port}]
    if args.image_pull_policy:
        container["imagePullPolicy"] = args.image_pull_policy
    container["resources"] = {}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if args.annotations:
        meta["annotations"] = _pairs(args.annotations, "annotation", "invalid annotation")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [container], "restartPolicy": args.restart,
                     "dnsPolicy": "ClusterFirst"}}


def _pairs(items: list[str], what: str, problem: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"error: {problem}: {item}")
        out[key] = value
    return out


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    pod = pod_for(args.name, args)
    require_output(args.output)
    obj = pod
    if args.dry_run != "client":
        params: dict[str, Any] = {"fieldManager": "kubectl-run"}
        if args.dry_run == "server":
            params["dryRun"] = "All"
        obj = session.client.request("POST", PODS.path(session.namespace), params=params,
                                     body=pod)
    print_operation(sys.stdout, args.output, args.dry_run, obj, f"pod/{args.name}", "created")
    return 0
