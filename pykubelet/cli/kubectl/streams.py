"""``pykubectl exec``, ``attach`` and ``port-forward``: kubectl's streaming commands.

Each opens the pod's subresource on the API server (``pods/NAME/exec``, ``attach``,
``portforward``), which splices it to the node and on to the runtime
(``pykubelet.streaming.client`` speaks the protocols). As kubectl 1.32 does: exec and
attach over WebSocket ``v5.channel.k8s.io`` falling back to SPDY when the server refuses
the upgrade; port-forward as SPDY tunnelled in a WebSocket, falling back to plain SPDY.

With ``-t`` and a terminal on stdin the terminal goes raw for the session (restored on
every way out) and its size follows the window (SIGWINCH). A command's exit status is
pykubectl's (``command terminated with exit code N`` on stderr, as kubectl).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import Iterator
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.logs import choose_container
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.signals import stop_on_signals
from pykubelet.client.rest import PODS, StatusError

COMPLETED = ("Succeeded", "Failed")


def register(name: str, p: argparse.ArgumentParser) -> None:
    if name == "port-forward":
        p.description = "Forward one or more local ports to a pod."
        p.add_argument("pod", metavar="TYPE/NAME")
        p.add_argument("ports", nargs="+", metavar="[LOCAL_PORT:]REMOTE_PORT")
        p.add_argument("--address", default="127.0.0.1",
                       help="local address to listen on (comma-separated)")
        return
    p.description = ("Execute a command in a container." if name == "exec"
                     else "Attach to a process that is already running inside a container.")
    p.add_argument("pod", metavar="POD|pod/POD")
    p.add_argument("-c", "--container", default="", help="the container")
    p.add_argument("-i", "--stdin", action="store_true", help="pass stdin to the container")
    p.add_argument("-t", "--tty", action="store_true", help="stdin is a TTY")
    p.add_argument("-q", "--quiet", action="store_true", help="only the remote output")


def _pod(session: Session, word: str) -> tuple[str, dict[str, Any]]:
    kind, slash, name = word.rpartition("/")
    if slash and kind not in ("pod", "pods", "po"):
        raise CommandError(f"error: {kind} is not supported here: name a pod (pod/NAME)")
    ns = session.namespace
    try:
        return name, session.client.request("GET", PODS.path(ns, name))
    except StatusError as exc:
        if exc.not_found:
            raise CommandError(f'Error from server (NotFound): pods "{name}" not found') \
                from None
        raise


def _url(session: Session, name: str, sub: str, params: list[tuple[str, str]]) -> Any:
    from yarl import URL

    base = URL(session.client.server + PODS.path(session.namespace, name, sub))
    return base.with_query(params)


def _auth(session: Session) -> dict[str, str]:
    token = session.client.token
    return {"Authorization": f"Bearer {token}"} if token else {}


# ---------------------------------------------------------------------- exec / attach
def run(name: str, args: argparse.Namespace, session: Session) -> int:
    if name == "port-forward":
        return _port_forward(args, session)
    command: list[str] = list(args.after_dash)
    if name == "exec" and not command:
        raise CommandError("error: you must specify at least one command for the container")
    if name == "attach" and command:
        raise CommandError("error: attach takes no command (use exec)")
    pod_name, pod = _pod(session, args.pod)
    phase = (pod.get("status") or {}).get("phase", "")
    if phase in COMPLETED:
        verb = "exec into" if name == "exec" else "attach"
        raise CommandError(f"error: cannot {verb} a container in a completed pod; current "
                           f"phase is {phase}")
    container = choose_container(pod, args.container)
    tty = args.tty
    if tty and not (args.stdin and os.isatty(sys.stdin.fileno())):
        if not args.quiet:
            print("Unable to use a TTY - input is not a terminal or the right kind of file"
                  if args.stdin else
                  "Unable to use a TTY - input is not a terminal (use -i with -t)",
                  file=sys.stderr)
        tty = False
    params = [("container", container), ("stdout", "true")]
    if args.stdin:
        params.append(("stdin", "true"))
    if not tty:
        params.append(("stderr", "true"))
    else:
        params.append(("tty", "true"))
    params += [("command", c) for c in command]
    url = _url(session, pod_name, name, params)
    if name == "attach" and tty and not args.quiet:
        print("If you don't see a command prompt, try pressing enter.", file=sys.stderr,
              flush=True)
    with _raw_terminal(tty):
        return asyncio.run(_remote_command(session, url, args.stdin, tty))


@contextlib.contextmanager
def _raw_terminal(enabled: bool) -> Iterator[None]:
    """The local terminal in raw mode (keys go to the remote one as typed), restored."""
    if not enabled:
        yield
        return
    import termios
    import tty as tty_mod

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        # TCSANOW, as Go's term.MakeRaw: what was typed ahead is kept, not flushed
        tty_mod.setraw(fd, termios.TCSANOW)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _terminal_size() -> tuple[int, int]:
    size = os.get_terminal_size(sys.stdin.fileno())
    return size.columns, size.lines


async def _remote_command(session: Session, url: Any, stdin: bool, tty: bool) -> int:
    from pykubelet.streaming import protocols as p
    from pykubelet.streaming.client import UpgradeRefused, open_remote_command

    opts = p.StreamOptions(stdin=stdin, stdout=True, stderr=not tty, tty=tty)
    headers = _auth(session)
    ctx = session.client.ssl_context
    try:
        cmd = await open_remote_command(url, opts, transport="websocket", headers=headers,
                                        ssl=ctx)
    except (UpgradeRefused, _ws_refused()):
        try:  # kubectl's fallback: servers (and proxies) without WebSocket streaming
            cmd = await open_remote_command(url, opts, transport="spdy", headers=headers,
                                            ssl=ctx)
        except UpgradeRefused as exc:
            raise CommandError(refusal_text(exc)) from None
    except OSError as exc:
        raise CommandError(f"error: unable to connect to the server: {exc}") from None
    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task[Any]] = []
    try:
        if tty:
            await cmd.resize(*_terminal_size())

            def resized() -> None:
                tasks.append(loop.create_task(cmd.resize(*_terminal_size())))

            loop.add_signal_handler(signal.SIGWINCH, resized)
        if stdin:
            tasks.append(loop.create_task(_pump_stdin(cmd)))
        out, err = sys.stdout.buffer, sys.stderr.buffer
        async for stream, data in cmd.output():
            target = out if stream == "stdout" else err
            target.write(data)
            target.flush()
        try:
            code = await cmd.wait()
        except p.RemoteCommandError as exc:
            raise CommandError(f"error: {exc}") from None
    finally:
        if tty:
            loop.remove_signal_handler(signal.SIGWINCH)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await cmd.close()
    if code:
        print(f"command terminated with exit code {code}", file=sys.stderr)
    return code


async def _pump_stdin(cmd: Any) -> None:
    """Local stdin to the remote process; its end closes the remote stdin."""
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    queue: asyncio.Queue[bytes] = asyncio.Queue()

    def readable() -> None:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
        queue.put_nowait(data)

    try:
        loop.add_reader(fd, readable)
    except (PermissionError, ValueError):  # a regular file: read it in a thread
        while data := await asyncio.to_thread(os.read, fd, 65536):
            await cmd.write_stdin(data)
        await cmd.close_stdin()
        return
    try:
        while data := await queue.get():
            await cmd.write_stdin(data)
        await cmd.close_stdin()
    finally:
        loop.remove_reader(fd)


def _ws_refused() -> type[BaseException]:
    import aiohttp

    return aiohttp.WSServerHandshakeError


def refusal_text(exc: BaseException) -> str:
    """The server's refusal as kubectl prints it: its Status, else its words."""
    import json

    text = str(exc)
    body = text.split(": ", 2)[-1] if text.startswith("upgrade refused: HTTP") else text
    try:
        status = json.loads(body)
    except ValueError:
        return f"error: unable to upgrade connection: {body}"
    reason = status.get("reason", "")
    message = status.get("message", "") or body
    return f"Error from server ({reason}): {message}" if reason else f"Error from server: {message}"


# ---------------------------------------------------------------------- port-forward
_PORT_SPEC = re.compile(r"^(\d*):?(\d+)$")


def parse_ports(specs: list[str]) -> list[tuple[int, int]]:
    """``8080``, ``9000:80``, ``:80`` (a free local port) -> (local, remote) pairs."""
    out = []
    for spec in specs:
        local_text, sep, remote_text = spec.rpartition(":")
        if not sep:
            local_text, remote_text = spec, spec
        try:
            remote = int(remote_text)
            local = int(local_text) if local_text else 0
        except ValueError:
            raise CommandError(f'error: invalid port spec "{spec}": ports are numbers') \
                from None
        if not 0 < remote < 65536 or not 0 <= local < 65536:
            raise CommandError(f'error: invalid port spec "{spec}": ports are 1-65535')
        out.append((local, remote))
    return out


def _port_forward(args: argparse.Namespace, session: Session) -> int:
    pairs = parse_ports(args.ports)
    pod_name, pod = _pod(session, args.pod)
    phase = (pod.get("status") or {}).get("phase", "")
    if phase != "Running":
        raise CommandError(f"error: unable to forward port because pod is not running. "
                           f"Current status={phase}")
    url = _url(session, pod_name, "portforward", [])
    try:
        asyncio.run(_forward(session, url, pairs, args.address.split(",")))
    except KeyboardInterrupt:
        pass
    return 0


async def _forward(session: Session, url: Any, pairs: list[tuple[int, int]],
                   addresses: list[str]) -> None:
    from pykubelet.streaming.client import PortForwardClient, UpgradeRefused, forward_local

    headers = _auth(session)
    ctx = session.client.ssl_context
    try:
        client = await PortForwardClient.connect(url, transport="websocket-spdy",
                                                 headers=headers, ssl=ctx)
    except (UpgradeRefused, _ws_refused()):
        try:
            client = await PortForwardClient.connect(url, transport="spdy", headers=headers,
                                                     ssl=ctx)
        except UpgradeRefused as exc:
            raise CommandError(refusal_text(exc)) from None
    except OSError as exc:
        raise CommandError(f"error: unable to connect to the server: {exc}") from None
    servers = []
    try:
        for local, remote in pairs:
            for address in addresses:
                server = await forward_local(client, remote, local_port=local, host=address)
                servers.append(server)
                bound = server.sockets[0].getsockname()[1]
                local = local or bound  # the other addresses take the same port
                host = f"[{address}]" if ":" in address else address
                print(f"Forwarding from {host}:{bound} -> {remote}", flush=True)
        stop = stop_on_signals()
        await stop.wait()
    finally:
        for s in servers:
            s.close()
        await client.close()
