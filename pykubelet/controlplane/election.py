"""Leader election's settings (kube-scheduler's ``--leader-elect-*``) and what the control
plane knows of each elector; the loop itself is controllers/leaderelection.py."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class LeaderElection:
    """Timings in seconds: a Lease is held for ``lease_duration``; its holder renews every
    ``retry_period`` and stops leading when it has not renewed for ``renew_deadline``."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("leader election: need retryPeriod < renewDeadline < "
                             "leaseDuration")


class Elector(Protocol):
    """One Lease's elector, as the control plane sees it (status, tests)."""

    name: str
    identity: str
    leading: bool


def default_identity() -> str:
    """As kube-scheduler's: the host name and a unique id."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"
