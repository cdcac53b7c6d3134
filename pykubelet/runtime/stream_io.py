"""What the runtime's streaming server runs: exec through runc, attach through conmon,
port-forward into a pod's network namespace. Each takes a ``CommandIO`` (or a port) from
``pykubelet.streaming.server`` and does the container side.

- exec: ``runc exec`` with pipes; with a TTY, runc gets a pty of ours as its stdio and makes
  the container's own (it copies between them and resizes on SIGWINCH, so a resize sets
  our pty's size and signals runc). The exit code is runc's, which is the process's.
  runc copies our pty's size to the container's only after the process started, so a
  command typed ahead (``stty size`` before the prompt) saw a 0x0 terminal: the exec waits
  briefly for the client's first size (kubectl and crictl send it at once) and gives it to
  runc as the process's ``consoleSize``, which runc sets on the pty before the process runs.
  That needs a process.json: the container's own process from its config.json with the
  command, ``terminal`` and the size replaced, as runc builds one from its flags and as
  containerd builds an exec's process from the container's spec.
- attach: conmon's attach socket (SOCK_SEQPACKET): each message from it is one byte naming
  the pipe (2 stdout, 3 stderr) then data; what we write goes to the container's stdin;
  shutting our write side down ends the attach's stdin (conmon closes the container's stdin
  for stdinOnce containers). Resizes go to conmon's control fifo.
- port-forward: a TCP socket created inside the pod's network namespace (a socket stays in
  the namespace it was made in), connected to 127.0.0.1:PORT, as containerd dials
  ``localhost:PORT`` from inside the sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pty
import signal
import socket
import struct
import tempfile
import termios
from pathlib import Path
from typing import Any

from pykubelet.runtime import monitor
from pykubelet.runtime.netns import CLONE_NEWNET, _enter, in_throwaway_thread
from pykubelet.runtime.runc import Runc
from pykubelet.streaming.server import CommandFailed, CommandIO

ATTACH_PIPE_STDOUT = 2
ATTACH_PIPE_STDERR = 3
_ATTACH_BUF = 8192 + 1
_EOT = b"\x04"
CONMON_CONTROL_PACE_S = 0.02  # how often to look whether conmon read its control fifo
CONMON_CONTROL_POLLS = 100  # ... for at most 2 s
FIRST_RESIZE_WAIT_S = 1.0  # how long a TTY exec waits for the client's terminal size
DEFAULT_TERMINAL = (80, 24)  # width, height when a client sends none


def _set_winsize(fd: int, width: int, height: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))


async def _pump_stdin(io: CommandIO, write: object, close: object) -> None:
    """Client stdin to the process until the client closes it."""
    while chunk := await io.read_stdin():
        await write(chunk)  # type: ignore[operator]
    await close()  # type: ignore[operator]


def _runc_failure(log_path: Path) -> str:
    """runc's own error (not the process's), from its JSON log, or ""."""
    try:
        lines = log_path.read_text().splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("level") in ("error", "fatal"):
                return str(entry.get("msg", ""))
    return ""


async def first_terminal_size(io: CommandIO) -> tuple[int, int]:
    """(width, height): the client's first resize, or 80x24 when none comes in time (an
    end of the resizes stays queued for the copier)."""
    try:
        size = await asyncio.wait_for(io.resizes.get(), FIRST_RESIZE_WAIT_S)
    except TimeoutError:
        return DEFAULT_TERMINAL
    if size is None or not (size.width and size.height):
        if size is None:
            io.resizes.put_nowait(None)
        return DEFAULT_TERMINAL
    return size.width, size.height


def exec_process(config_json: Path, cmd: list[str], width: int, height: int
                 ) -> dict[str, Any]:
    """The process.json of a TTY exec: the container's process (user, env, cwd,
    capabilities, rlimits...) running ``cmd`` on a terminal of that size."""
    process = dict(json.loads(config_json.read_text())["process"])
    process.update(args=cmd, terminal=True, consoleSize={"height": height, "width": width})
    return process


async def exec_in_container(runc: Runc, cid: str, cmd: list[str], io: CommandIO,
                            config_json: Path | None = None) -> int:
    """Run ``cmd`` in container ``cid`` wired to ``io``; returns its exit code.
    ``config_json``: the container's OCI config, whose process a TTY exec starts from."""
    with tempfile.TemporaryDirectory(prefix="pyk-exec-") as tmp:
        log_path = Path(tmp) / "runc.log"
        base = [runc.binary, "--root", str(runc.root), "--log", str(log_path),
                "--log-format", "json", "exec"]
        if io.opts.tty:
            width, height = await first_terminal_size(io)
            if config_json is not None:
                process_json = Path(tmp) / "process.json"
                process_json.write_text(json.dumps(exec_process(config_json, cmd, width,
                                                                height)))
                launch = ["--process", str(process_json), cid]
            else:
                launch = ["--tty", cid, *cmd]
            code = await _exec_tty(base, launch, io, width, height)
        else:
            code = await _exec_pipes(base, cid, cmd, io)
        if code != 0:
            failure = _runc_failure(log_path)
            if failure:
                raise CommandFailed(f"failed to exec in container: OCI runtime exec failed: "
                                    f"{failure}")
        return code


async def _exec_pipes(base: list[str], cid: str, cmd: list[str], io: CommandIO) -> int:
    sub = asyncio.subprocess
    proc = await asyncio.create_subprocess_exec(
        *base, cid, *cmd, stdin=sub.PIPE if io.opts.stdin else sub.DEVNULL,
        stdout=sub.PIPE if io.opts.stdout else sub.DEVNULL,
        stderr=sub.PIPE if io.opts.stderr else sub.DEVNULL)

    async def copy(stream: asyncio.StreamReader | None, write: object) -> None:
        while stream is not None and (chunk := await stream.read(64 * 1024)):
            await write(chunk)  # type: ignore[operator]

    tasks = []
    if proc.stdin is not None:
        stdin = proc.stdin

        async def write_in(data: bytes) -> None:
            stdin.write(data)
            await stdin.drain()

        async def close_in() -> None:
            stdin.close()

        tasks.append(asyncio.create_task(_pump_stdin(io, write_in, close_in)))
    outputs = [asyncio.create_task(copy(proc.stdout, io.write_stdout)),
               asyncio.create_task(copy(proc.stderr, io.write_stderr))]
    try:
        await asyncio.gather(*outputs)
        return await proc.wait()
    finally:
        for t in tasks:
            t.cancel()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()  # runc passes the signal on to the process
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
        await asyncio.gather(*tasks, *outputs, return_exceptions=True)


async def _exec_tty(base: list[str], launch: list[str], io: CommandIO, width: int,
                    height: int) -> int:
    loop = asyncio.get_running_loop()
    master, slave = pty.openpty()
    _set_winsize(master, width, height)  # runc copies it to the container's on SIGWINCH
    try:
        proc = await asyncio.create_subprocess_exec(
            *base, *launch, stdin=slave, stdout=slave, stderr=slave,
            start_new_session=True)
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    out_done = asyncio.Event()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()

    def readable() -> None:
        try:
            data = os.read(master, 64 * 1024)
        except BlockingIOError:
            return
        except OSError:  # EIO: every holder of the other side is gone
            data = b""
        if data:
            chunks.put_nowait(data)
        else:
            loop.remove_reader(master)
            out_done.set()
            chunks.put_nowait(b"")

    loop.add_reader(master, readable)

    async def forward_out() -> None:
        while chunk := await chunks.get():
            await io.write_stdout(chunk)

    async def write_in(data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(master, view)
                view = view[n:]
            except BlockingIOError:
                await asyncio.sleep(0.005)

    async def close_in() -> None:
        await write_in(_EOT)  # a terminal's end of input

    async def resizes() -> None:
        while (size := await io.resizes.get()) is not None:
            _set_winsize(master, size.width, size.height)
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGWINCH)

    tasks = [asyncio.create_task(forward_out()), asyncio.create_task(resizes())]
    if io.opts.stdin:
        tasks.append(asyncio.create_task(_pump_stdin(io, write_in, close_in)))
    try:
        code = await proc.wait()
        # what the process wrote last is still in the pty: read until EIO, briefly
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(out_done.wait(), 2)
        chunks.put_nowait(b"")
        await tasks[0]
        return code
    finally:
        loop.remove_reader(master)
        for t in tasks[1:]:
            t.cancel()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        await asyncio.gather(*tasks, return_exceptions=True)
        os.close(master)


def _resize_container_tty(init_pid: int, width: int, height: int) -> None:
    """Set the size of the terminal the container's init has on stdin, from this side:
    the kernel tells the container's foreground processes (SIGWINCH), and conmon's control
    fifo, whose parser mishandles resizes that follow one another, is not needed."""
    fd = os.open(f"/proc/{init_pid}/fd/0", os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK
                 | os.O_CLOEXEC)
    try:
        if not os.isatty(fd):
            raise OSError(f"the container's stdin is not a terminal (pid {init_pid})")
        _set_winsize(fd, width, height)
    finally:
        os.close(fd)


async def attach_container(socket_path: Path, paths: monitor.MonitorPaths,
                           io: CommandIO, init_pid: int = 0) -> int:
    """Stream a running container's stdio until it exits or the client goes."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    sock.setblocking(False)
    # the path may exceed sun_path's 108 bytes: connect through an O_PATH fd of its dir,
    # as conmon binds it
    dir_fd = -1
    try:
        dir_fd = os.open(socket_path.parent, os.O_PATH | os.O_CLOEXEC)
        await loop.sock_connect(sock, f"/proc/self/fd/{dir_fd}/{socket_path.name}")
    except OSError as exc:
        sock.close()
        raise CommandFailed(f"attach: conmon's socket {socket_path}: {exc}") from exc
    finally:
        if dir_fd >= 0:
            os.close(dir_fd)

    async def read_out() -> None:
        while True:
            try:
                msg = await loop.sock_recv(sock, _ATTACH_BUF)
            except OSError:
                return
            if not msg:
                return
            pipe, data = msg[0], msg[1:]
            if pipe == ATTACH_PIPE_STDOUT:
                await io.write_stdout(data)
            elif pipe == ATTACH_PIPE_STDERR:
                await io.write_stderr(data)

    async def write_in(data: bytes) -> None:
        for i in range(0, len(data), _ATTACH_BUF - 1):
            await loop.sock_sendall(sock, data[i:i + _ATTACH_BUF - 1])

    async def close_in() -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    async def resizes() -> None:
        # conmon (2.1.6) parses the first line of its control buffer for every line a read
        # brings, so two resizes read together apply the first twice (kubectl attach sends
        # size+1 then the size, to force a redraw): send only the newest size, and the next
        # only once conmon has read this one (the fifo is empty), so each is a read of its own
        while (size := await io.resizes.get()) is not None:
            while not io.resizes.empty():
                newer = io.resizes.get_nowait()
                if newer is None:
                    io.resizes.put_nowait(None)
                    break
                size = newer
            if init_pid > 0:
                try:
                    _resize_container_tty(init_pid, size.width, size.height)
                    continue
                except OSError:
                    pass  # conmon's way, then
            with contextlib.suppress(OSError):
                monitor.resize_terminal(paths, size.width, size.height)
            for _ in range(CONMON_CONTROL_POLLS):
                await asyncio.sleep(CONMON_CONTROL_PACE_S)
                try:
                    if not monitor.control_pending(paths):
                        break
                except OSError:
                    break

    reader = asyncio.create_task(read_out())
    others = [asyncio.create_task(resizes())]
    if io.opts.stdin:
        others.append(asyncio.create_task(_pump_stdin(io, write_in, close_in)))
    waits: list[asyncio.Future[Any]] = [reader, asyncio.ensure_future(io.gone.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (*waits, *others):
            t.cancel()
        await asyncio.gather(*waits, *others, return_exceptions=True)
        sock.close()
    return 0


def _socket_in_netns(netns_path: str) -> socket.socket:
    def make() -> socket.socket:
        if netns_path:
            _enter(netns_path, CLONE_NEWNET)
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)

    return in_throwaway_thread(make, "portforward-netns")


async def dial_in_netns(netns_path: str, port: int
                        ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection to 127.0.0.1:``port`` in the namespace pinned at ``netns_path``
    (the host's when empty: a hostNetwork pod)."""
    sock = await asyncio.to_thread(_socket_in_netns, netns_path)
    sock.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise ConnectionRefusedError(f"dial tcp4 127.0.0.1:{port}: {exc.strerror or exc}"
                                     ) from exc
    return await asyncio.open_connection(sock=sock)
