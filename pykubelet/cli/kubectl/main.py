"""``pykubectl``: kubectl's habits for users without kubectl, over the same API and the same
kubeconfig, plus what kubectl cannot do (``why``: the scheduler's reasons).

Start-up is most of a short command's run, so this module imports only ``argparse`` and
finds the command's module by name; each command imports what it needs when it runs (no
click, grpc, aiohttp, pysched or control-plane code on this path). Flags may come before or
after the command, as with kubectl; ``--`` ends them (``run NAME --image I -- CMD ARGS``).
Every failure is one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

# command -> module under pykubelet.cli.kubectl
COMMANDS: dict[str, tuple[str, str]] = {
    "get": ("get", "Display one or many resources"),
    "describe": ("describing", "Show details of a pod, node or workload, with its events"),
    "apply": ("apply", "Apply a configuration to resources from files or stdin"),
    "create": ("create", "Create resources from files or stdin, or a deployment, job or "
               "cronjob from flags"),
    "run": ("run", "Run a particular image in a pod"),
    "delete": ("delete", "Delete resources by name, or those in files"),
    "scale": ("scale", "Set a new size for a deployment, replica set or stateful set"),
    "rollout": ("rollout", "Manage the rollout of a deployment, daemon set or stateful set"),
    "logs": ("logs", "Print the logs of a container in a pod"),
    "exec": ("streams", "Execute a command in a container"),
    "attach": ("streams", "Attach to a running container"),
    "port-forward": ("streams", "Forward one or more local ports to a pod"),
    "wait": ("wait", "Wait for a condition on one or many resources"),
    "cordon": ("nodes", "Mark a node as unschedulable"),
    "uncordon": ("nodes", "Mark a node as schedulable"),
    "drain": ("nodes", "Cordon a node and evict its pods"),
    "top": ("top", "Display resource (CPU/memory) usage of nodes or pods"),
    "why": ("why", "Why a pod is Pending, or why it went where it went (scheduler's reasons)"),
    "dashboard": ("dashboard", "Serve a live web view of the cluster on a local port"),
    "auth": ("auth", "Inspect authorization: can-i, whoami"),
    "version": ("info", "Print the client and server version"),
    "api-resources": ("info", "Print the resource types the server serves"),
}
# global flags that take a value (so the command word is found after them)
VALUE_FLAGS = ("--kubeconfig", "--context", "-n", "--namespace", "--cache-dir",
               "--request-timeout", "--as", "--as-group")


class Parser(argparse.ArgumentParser):
    """argparse whose mistakes are kubectl-style one-line errors."""

    def error(self, message: str) -> NoReturn:
        from pykubelet.cli.kubectl.errors import CommandError

        if message.startswith("unrecognized arguments: "):
            extra = message.split(": ", 1)[1]
            flag = next((a for a in extra.split() if a.startswith("-")), "")
            message = f"unknown flag: {flag}" if flag else f"unexpected arguments: {extra}"
        raise CommandError(f"error: {message} (see '{self.prog} --help')")


def add_global_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("global flags")
    g.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG's files, "
                   "else ~/.kube/config)")
    g.add_argument("--context", help="the kubeconfig context to use")
    g.add_argument("-n", "--namespace", help="the namespace (default: the context's)")
    g.add_argument("--cache-dir", help="discovery cache (default: $KUBECACHEDIR or "
                   "~/.kube/cache)")
    g.add_argument("--request-timeout", type=_duration, help="seconds (or 5s, 1m) to wait "
                   "for each answer")
    g.add_argument("--as", dest="as_user", default="",
                   help="the user to act as (impersonation: Impersonate-User)")
    g.add_argument("--as-group", action="append", default=[],
                   help="a group to act as, repeatable (Impersonate-Group)")


def _duration(text: str) -> float:
    from pykubelet.cli.kubectl.timeouts import parse_duration

    return parse_duration(text, "--request-timeout")


def split_command(argv: list[str]) -> tuple[str, list[str]]:
    """The command word and the other arguments (flags may precede the command)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a.startswith("-"):
            if a in VALUE_FLAGS:
                i += 2
                continue
            i += 1
            continue
        return a, argv[:i] + argv[i + 1:]
    return "", argv


def usage() -> str:
    width = max(len(c) for c in COMMANDS)
    lines = ["pykubectl controls a Kubernetes cluster (kubectl's commands and habits).", "",
             "Commands:"]
    lines += [f"  {c:<{width}}  {d}" for c, (_, d) in COMMANDS.items()]
    lines += ["", "Use 'pykubectl <command> --help' for a command's flags, "
              "'pykubectl --version' for this client's version."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from pykubelet.cli.kubectl.errors import CommandError

    argv = list(sys.argv[1:] if argv is None else argv)
    command, rest = split_command(argv)
    if not command:
        if any(a in ("-h", "--help") for a in rest) or not rest:
            print(usage())
            return 0
        if rest == ["--version"]:  # as every command of this distribution answers it
            from importlib.metadata import version

            print(f"pykubectl, version {version('pykube-node')}")
            return 0
        print("error: a command is needed (see 'pykubectl --help')", file=sys.stderr)
        return 1
    if command not in COMMANDS:
        print(f'error: unknown command "{command}" for "pykubectl" '
              "(see 'pykubectl --help')", file=sys.stderr)
        return 1
    module = importlib.import_module(f"pykubelet.cli.kubectl.{COMMANDS[command][0]}")
    parser = Parser(prog=f"pykubectl {command}", allow_abbrev=False)
    module.register(command, parser)
    add_global_flags(parser)
    tail: list[str] = []
    if "--" in rest:
        cut = rest.index("--")
        rest, tail = rest[:cut], rest[cut + 1:]
    session = None
    try:
        args = parser.parse_intermixed_args(rest)
        args.after_dash = tail
        from pykubelet.cli.kubectl.session import GlobalOptions, Session

        session = Session(GlobalOptions(args.kubeconfig, args.context, args.namespace,
                                        args.cache_dir, args.request_timeout,
                                        args.as_user, tuple(args.as_group)))
        return int(module.run(command, args, session) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except CommandError as exc:
        _report(str(exc))
        return exc.code
    except Exception as exc:  # every other failure is reported, never a traceback
        from pykubelet.cli.kubectl.errors import error_text

        if not _expected(exc):
            raise
        _report(error_text(exc, session.server if session else ""))
        return 1


def _expected(exc: BaseException) -> bool:
    """Failures that are the user's or the server's (reported on one line); anything else
    is a bug and keeps its traceback."""
    from pykubelet.client.kubeconfig import KubeconfigError
    from pykubelet.client.rest import ClientError

    return isinstance(exc, ClientError | KubeconfigError | OSError | ValueError)


def _report(message: str) -> None:
    sys.stdout.flush()
    print(message.rstrip("\n"), file=sys.stderr)


def _quiet_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def console() -> None:
    """The ``pykubectl`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    console()
