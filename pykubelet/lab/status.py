"""kind's status printer: one line per step, ✓ when it worked and ✗ when it did not, with
a spinner while it runs only when the stream is a terminal (logs and CI get plain lines)."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from typing import TextIO

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
OK = "✓"
FAILED = "✗"


class StatusPrinter:
    """``start(message)`` then ``end(ok)`` for every step."""

    def __init__(self, out: TextIO | None = None, tty: bool | None = None,
                 interval: float = 0.1) -> None:
        self.out = out if out is not None else sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        self.interval = interval
        self.message = ""
        self.started = 0.0
        self._stop = threading.Event()
        self._spinner: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, message: str) -> None:
        if self.message:
            self.end(True)
        self.message = message
        self.started = time.monotonic()
        if self.tty:
            self._stop.clear()
            self._spinner = threading.Thread(target=self._spin, name="spinner", daemon=True)
            self._spinner.start()

    def _spin(self) -> None:
        for frame in itertools.cycle(SPINNER):
            with self._lock:
                self.out.write(f"\r {frame} {self.message} ")
                self.out.flush()
            if self._stop.wait(self.interval):
                return

    def end(self, ok: bool) -> None:
        if not self.message:
            return
        if self._spinner is not None:
            self._stop.set()
            self._spinner.join()
            self._spinner = None
        took = time.monotonic() - self.started
        with self._lock:
            prefix = "\r\x1b[K" if self.tty else ""
            self.out.write(f"{prefix} {OK if ok else FAILED} {self.message} ({took:.1f}s)\n")
            self.out.flush()
        self.message = ""
