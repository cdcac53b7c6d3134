"""``pykubectl logs POD [-c C]`` (kubectl's logs): read the pod, pick the container (``-c``,
else the ``kubectl.kubernetes.io/default-container`` annotation, else the first, saying so
when there are several), then stream ``pods/NAME/log`` to stdout as it arrives
(``-f`` follows until the container ends or the connection does)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.timeouts import parse_duration
from pykubelet.client.rest import PODS, StatusError

DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Print the logs for a container in a pod."
    p.add_argument("pod", nargs="?", default="", metavar="POD|pod/POD")
    p.add_argument("container_arg", nargs="?", default="", metavar="CONTAINER")
    p.add_argument("-c", "--container", default="", help="the container")
    p.add_argument("-f", "--follow", action="store_true", help="stream new lines")
    p.add_argument("-p", "--previous", action="store_true",
                   help="the previous instance of the container")
    p.add_argument("--tail", type=int, default=-1, help="only the last N lines")
    p.add_argument("--timestamps", action="store_true", help="prefix each line with its time")
    p.add_argument("--since", default="", help="only newer than this (5s, 2m, 3h)")
    p.add_argument("--since-time", default="", help="only after this RFC3339 time")
    p.add_argument("--limit-bytes", type=int, default=0, help="at most this many bytes")


def container_names(pod: dict[str, Any]) -> str:
    """kubectl's list of a pod's containers (``a, b, dbg (ephem), init (init)``)."""
    spec = pod.get("spec") or {}
    names = [c.get("name", "") for c in spec.get("containers") or []]
    names += [f"{c.get('name', '')} (ephem)" for c in spec.get("ephemeralContainers") or []]
    names += [f"{c.get('name', '')} (init)" for c in spec.get("initContainers") or []]
    return ", ".join(names)


def _has_container(pod: dict[str, Any], name: str) -> bool:
    spec = pod.get("spec") or {}
    return any(c.get("name") == name for key in ("containers", "initContainers",
                                                 "ephemeralContainers")
               for c in spec.get(key) or [])


def choose_container(pod: dict[str, Any], wanted: str) -> str:
    """The container to read, as kubectl chooses it (notes go to stderr)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    name = meta.get("name", "")
    container = wanted
    if not container:
        default = (meta.get("annotations") or {}).get(DEFAULT_CONTAINER, "")
        if default:
            if _has_container(pod, default):
                container = default
            else:
                print(f'Default container name "{default}" not found in pod {name}',
                      file=sys.stderr)
    if not container:
        containers = spec.get("containers") or []
        if not containers:
            raise CommandError(f"error: pod {meta.get('namespace', '')}/{name} does not have "
                               "any containers")
        container = containers[0].get("name", "")
        if len(containers) > 1 or spec.get("initContainers") or spec.get("ephemeralContainers"):
            print(f'Defaulted container "{container}" out of: {container_names(pod)}',
                  file=sys.stderr, flush=True)
    if not _has_container(pod, container):
        raise CommandError(f"error: container {container} is not valid for pod {name}")
    return container


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    word = args.pod
    if not word:
        raise CommandError("error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.")
    kind, slash, pod_name = word.rpartition("/")
    if slash and session.discovery.resolve_one(kind).resource != "pods":
        raise CommandError(f"error: cannot get the logs from {kind}: only pods have logs here")
    if args.container and args.container_arg:
        raise CommandError("error: only one of -c or an inline [CONTAINER] arg is allowed")
    ns = session.namespace
    try:
        pod = session.client.request("GET", PODS.path(ns, pod_name))
    except StatusError as exc:
        if exc.not_found:
            raise CommandError(f'error: error from server (NotFound): pods "{pod_name}" not '
                               f'found in namespace "{ns}"') from None
        raise
    container = choose_container(pod, args.container or args.container_arg)
    params: dict[str, Any] = {"container": container}
    if args.follow:
        params["follow"] = "true"
    if args.previous:
        params["previous"] = "true"
    if args.tail >= 0:
        params["tailLines"] = args.tail
    if args.timestamps:
        params["timestamps"] = "true"
    if args.since:
        if args.since_time:
            raise CommandError("error: at most one of `sinceTime` or `sinceSeconds` may be "
                               "specified")
        params["sinceSeconds"] = max(1, int(parse_duration(args.since, "--since") + 0.999))
    if args.since_time:
        params["sinceTime"] = args.since_time
    if args.limit_bytes > 0:
        params["limitBytes"] = args.limit_bytes
    out = sys.stdout.buffer
    timeout = None if args.follow else session.client.timeout
    for chunk in session.client.stream(PODS.path(ns, pod_name, "log"), params, timeout=timeout):
        out.write(chunk)
        out.flush()
    return 0
