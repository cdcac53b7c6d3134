"""Per-pod stage trace: where a pod's time goes between its create and Running.

Each component that moves a pod on writes one JSON line per stage it reaches, with the pod's
UID and its own clocks (wall and monotonic: every process of a lab shares the host's, so
lines from the control plane and three agents line up), to the file named by the
``PYKUBE_POD_TRACE`` environment variable. Off when the variable is unset (the default): a
``stage`` call is then one attribute test. A line is one ``write`` on an ``O_APPEND``
descriptor, so processes writing the same file do not interleave within a line.

Stages, in the order a pod passes them (``STAGES``): ``created`` (the API stored it),
``binding`` (the scheduler chose a node and its binding cycle began), ``scheduled`` (the
binding was written), ``seen`` (the node's agent got it from its watch), ``sync`` (a pod
worker began the sandbox), ``sandbox_ready`` (RunPodSandbox returned, CNI ADD inside),
``container_created``, ``container_started``, ``status_set`` (the agent computed the pod
Running and ready), ``status_running`` (its status patch saying so returned),
``watch_running`` (a client's watch saw that; written by the client, e.g.
bench/cluster_bench.py).

``read`` and ``breakdown`` turn the file back into per-stage durations for the bench.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path

ENV = "PYKUBE_POD_TRACE"
STAGES = ("created", "binding", "scheduled", "seen", "sync", "sandbox_ready",
          "container_created", "container_started", "status_set", "status_running",
          "watch_running")
TOTAL = "total: "


class _Sink:
    """The trace file, opened on first use (a process that never traces never opens it)."""

    def __init__(self) -> None:
        self.path: str | None = os.environ.get(ENV) or None
        self.fd: int | None = None
        self.lock = threading.Lock()

    def write(self, line: bytes) -> None:
        if self.fd is None:
            with self.lock:
                if self.fd is None and self.path is not None:
                    self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                                      | os.O_CLOEXEC, 0o600)
        if self.fd is not None:
            os.write(self.fd, line)


_sink = _Sink()


def configure(path: str | None) -> None:
    """Trace to ``path`` from now on (None: off); for tests and the bench's own process."""
    global _sink
    old, _sink = _sink, _Sink()
    _sink.path = path
    if old.fd is not None:
        os.close(old.fd)


def enabled() -> bool:
    return _sink.path is not None


def stage(name: str, uid: str, **extra: str) -> None:
    """Record that pod ``uid`` reached stage ``name`` now (nothing when tracing is off)."""
    if _sink.path is None or not uid:
        return
    rec = {"uid": uid, "stage": name, "wall": time.time(), "mono": time.monotonic(),
           "pid": os.getpid(), **extra}
    try:
        _sink.write((json.dumps(rec, separators=(",", ":")) + "\n").encode())
    except OSError:
        pass  # a trace never fails the work it watches


def read(path: str | Path) -> dict[str, dict[str, float]]:
    """uid -> stage -> wall time of its first record (a retried stage counts once: the
    first time the pod got there)."""
    out: dict[str, dict[str, float]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut by a crash
            stages = out.setdefault(rec["uid"], {})
            stages.setdefault(rec["stage"], rec["wall"])
    return out


def breakdown(traces: dict[str, dict[str, float]],
              stages: Iterable[str] = STAGES) -> dict[str, list[float]]:
    """Per step ``"a -> b"`` between consecutive stages a pod recorded, the seconds each
    pod spent there; plus ``"created -> <last>"`` end to end. Stages a pod lacks are
    skipped (the step runs from the previous stage it has)."""
    order = list(stages)
    out: dict[str, list[float]] = {}
    for recs in traces.values():
        present = [s for s in order if s in recs]
        for a, b in pairwise(present):
            out.setdefault(f"{a} -> {b}", []).append(recs[b] - recs[a])
        if len(present) > 2 and present[0] == order[0]:
            out.setdefault(f"{TOTAL}{order[0]} -> {present[-1]}", []).append(
                recs[present[-1]] - recs[present[0]])
    return out
