"""ControllerExpectations (pkg/controller/controller_utils.go): the creates and deletes a
controller has asked for and not yet seen come back through its watch, per controller
key, so a sync that runs before they arrive does not repeat them. Expectations older than
five minutes are dropped (a lost watch event must not stall the controller)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

EXPECTATIONS_TIMEOUT_S = 5 * 60.0


@dataclass
class _Expectation:
    add: int = 0
    delete: int = 0
    deleting: set[str] = field(default_factory=set)  # UIDTrackingControllerExpectations
    at: float = 0.0


class Expectations:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._by_key: dict[str, _Expectation] = {}

    def satisfied(self, key: str) -> bool:
        """SatisfiedExpectations: nothing pending, expired, or never set."""
        exp = self._by_key.get(key)
        if exp is None:
            return True
        if exp.add <= 0 and exp.delete <= 0:
            return True
        return self.clock() - exp.at > EXPECTATIONS_TIMEOUT_S

    def expect_creations(self, key: str, n: int) -> None:
        self._by_key[key] = _Expectation(add=n, at=self.clock())

    def expect_deletions(self, key: str, pod_keys: list[str]) -> None:
        self._by_key[key] = _Expectation(delete=len(pod_keys), deleting=set(pod_keys),
                                         at=self.clock())

    def expect(self, key: str, creations: int, deletion_keys: list[str]) -> None:
        """SetExpectations: creates and deletes asked for in one sync (the DaemonSet's)."""
        self._by_key[key] = _Expectation(add=creations, delete=len(deletion_keys),
                                         deleting=set(deletion_keys), at=self.clock())

    def creation_observed(self, key: str) -> None:
        exp = self._by_key.get(key)
        if exp is not None:
            exp.add -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        exp = self._by_key.get(key)
        if exp is not None and pod_key in exp.deleting:
            exp.deleting.discard(pod_key)
            exp.delete -= 1

    def lower_creations(self, key: str, n: int) -> None:
        """The creates skipped or failed: they will never be observed."""
        exp = self._by_key.get(key)
        if exp is not None:
            exp.add -= n

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)
