"""Run a short-lived tool with text on stdin, via posix_spawn.

An exec'd plugin pays ~5 ms just to import ``subprocess`` (signal, selectors,
threading); the iptables tools need only: spawn with pipes, feed stdin, read the
output, reap. Outputs are small (a rule listing, an error line), so reading
stdout then stderr after writing stdin cannot deadlock on pipe buffers here.
"""

from __future__ import annotations

import os


class Child:
    """A spawned tool: write its stdin at once, collect its output and status later."""

    def __init__(self, argv: list[str], stdin: str = "") -> None:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self.pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[
                (os.POSIX_SPAWN_DUP2, in_r, 0),
                (os.POSIX_SPAWN_DUP2, out_w, 1),
                (os.POSIX_SPAWN_DUP2, err_w, 2),
            ])
        except BaseException:
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        self._out, self._err = out_r, err_r
        try:
            data = stdin.encode()
            while data:
                data = data[os.write(in_w, data):]
        except BrokenPipeError:
            pass  # the tool exited early; its status says why
        finally:
            os.close(in_w)

    @staticmethod
    def _drain(fd: int) -> str:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        os.close(fd)
        return b"".join(chunks).decode("utf-8", "replace")

    def wait(self) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) once the tool has finished."""
        out, err = self._drain(self._out), self._drain(self._err)
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status), out, err


def run(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    """Run ``argv`` to completion: (exit status, stdout, stderr)."""
    return Child(argv, stdin).wait()
