"""The seeded plan of a fault run: which process dies, during which operation, how long
after the request, so a failing run is replayed with the same seed.

``PYKUBE_FAULT_SEED`` (default 29) seeds the plan; ``PYKUBE_FAULT_POINTS`` says how many
kill points each victim gets (default 10, a CI-sized run of a few minutes; 30 or more is
the long run issue 29 asks to have run). The points of one victim are spread over the
operations and, within each, over delays from the request (0 ms: the control plane's
create or delete itself; tens of ms: the scheduler's binding; hundreds of ms to seconds:
the agent's SyncPod, the runtime's sandbox and its CNI ADD, or on delete the containers'
stop and CNI DEL), so every phase is hit across a run whatever the machine's speed.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

SEED_ENV = "PYKUBE_FAULT_SEED"
POINTS_ENV = "PYKUBE_FAULT_POINTS"
DEFAULT_SEED = 29
DEFAULT_POINTS = 10

VICTIMS = ("agent", "runtime", "control-plane")
OPERATIONS = ("create", "delete")
# the window after the request in which the kill falls, per operation, in seconds: wide
# enough to reach past the pod's start (or stop) on a loaded 2-core machine
WINDOWS = {"create": 2.5, "delete": 2.0}


@dataclass(frozen=True)
class KillPoint:
    """SIGKILL ``victim`` ``delay`` seconds after sending the ``operation`` request."""
    index: int
    victim: str
    operation: str
    delay: float

    def __str__(self) -> str:
        return f"#{self.index} {self.victim} {self.operation}+{self.delay * 1000:.0f}ms"


def seed() -> int:
    return int(os.environ.get(SEED_ENV, "") or DEFAULT_SEED)


def points_per_victim() -> int:
    return max(1, int(os.environ.get(POINTS_ENV, "") or DEFAULT_POINTS))


def plan(victim: str, count: int, rng_seed: int) -> list[KillPoint]:
    """``count`` kill points of ``victim``: operations alternate (a create, then a delete
    of a pod the run holds) and each delay is drawn in its operation's window, a quarter
    of them in its first 10% (where the control plane writes and the scheduler binds)."""
    rng = random.Random(f"{rng_seed}/{victim}")
    out = []
    for i in range(count):
        op = OPERATIONS[i % len(OPERATIONS)]
        window = WINDOWS[op]
        early = rng.random() < 0.25
        delay = rng.uniform(0.0, window * (0.1 if early else 1.0))
        out.append(KillPoint(i, victim, op, round(delay, 3)))
    return out
