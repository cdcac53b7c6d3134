"""A thin driver for the runc binary: one method per runc verb we use.

Every call names its own ``--root`` so tests and lab nodes keep their runc state apart.
``create`` is not here: conmon runs ``runc create`` as its child (see monitor.py), so that
conmon can reap the container and record its exit status.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_RUNC = "/usr/sbin/runc"
_MSG_RE = re.compile(r'msg="((?:[^"\\]|\\.)*)"')


class RuncError(Exception):
    """runc failed; ``msg`` is runc's own error message."""

    def __init__(self, verb: str, msg: str) -> None:
        super().__init__(f"runc {verb}: {msg}")
        self.verb = verb
        self.msg = msg


def runc_message(stderr: str) -> str:
    """The ``msg="..."`` of runc's logrus output, else the last stderr line."""
    found = _MSG_RE.findall(stderr)
    if found:
        return found[-1].encode().decode("unicode_escape")
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "unknown error"


@dataclass(frozen=True)
class ExecResult:
    stdout: bytes
    stderr: bytes
    exit_code: int
    timed_out: bool = False


class Runc:
    def __init__(self, root: str | os.PathLike[str], binary: str = DEFAULT_RUNC) -> None:
        self.root = Path(root)
        self.binary = binary
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)

    def base_args(self) -> list[str]:
        return [self.binary, "--root", str(self.root)]

    def _run(self, verb: str, *args: str, timeout: float = 60) -> str:
        proc = subprocess.run([*self.base_args(), verb, *args], capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise RuncError(verb, runc_message(proc.stderr))
        return proc.stdout

    def start(self, cid: str) -> None:
        self._run("start", cid)

    def kill(self, cid: str, sig: int = signal.SIGTERM, *, all_processes: bool = False) -> None:
        args = ["--all"] if all_processes else []
        self._run("kill", *args, cid, str(int(sig)))

    def delete(self, cid: str, *, force: bool = False) -> None:
        """Delete the container's runc state and cgroup; a missing container is fine."""
        try:
            self._run("delete", *(["--force"] if force else []), cid)
        except RuncError as exc:
            if "does not exist" not in exc.msg and "not exist" not in exc.msg:
                raise

    def state(self, cid: str) -> dict[str, Any] | None:
        """runc's state.json view (status created/running/stopped), None if unknown."""
        try:
            return json.loads(self._run("state", cid))
        except RuncError as exc:
            if "does not exist" in exc.msg:
                return None
            raise

    def list_ids(self) -> list[str]:
        """Container IDs runc knows under our root (read from its state dirs: no subprocess)."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / "state.json").exists())

    def exec_sync(self, cid: str, cmd: list[str], timeout: float | None,
                  max_output: int = 16 << 20) -> ExecResult:
        """Run ``cmd`` in the container (its config.json process settings) and wait.

        On timeout the exec'd process is killed (SIGKILL by pid) and ``timed_out`` set.
        """
        pid_file = self.root / f".exec-{cid[:12]}-{os.getpid()}-{time.monotonic_ns()}.pid"
        proc = subprocess.Popen([*self.base_args(), "exec", "--pid-file", str(pid_file), cid,
                                 *cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        timed_out = False
        try:
            try:
                out, err = proc.communicate(timeout=timeout if timeout else None)
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
                except (OSError, ValueError):
                    proc.kill()
                out, err = proc.communicate(timeout=30)
        finally:
            try:
                pid_file.unlink()
            except FileNotFoundError:
                pass
        code = proc.returncode
        if code == 255 and not timed_out and b"level=error" in err:
            raise RuncError("exec", runc_message(err.decode(errors="replace")))
        return ExecResult(out[:max_output], err[:max_output], code, timed_out)
