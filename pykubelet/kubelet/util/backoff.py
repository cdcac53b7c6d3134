"""Per-key exponential back-off: client-go util/flowcontrol/backoff.go, clock injected.

kubelet keeps one Backoff for container restarts (10 s initial, 300 s cap), keyed
by `name_namespace_uid_container_hash`. An entry starts at the initial delay and
doubles on each next() up to the cap; it "expires" (is treated as fresh) when the
event it is asked about comes more than 2 x cap (10 min) after its last update, which
is how a container that ran for 10 minutes gets its back-off reset.

No jitter: kubelet builds its container back-off without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

INITIAL_CONTAINER_BACKOFF = 10.0  # kubelet: backOffPeriod
MAX_CONTAINER_BACKOFF = 300.0  # kubelet: MaxContainerBackOff

Clock = Callable[[], float]


@dataclass
class _Entry:
    backoff: float
    last_update: float


class Backoff:
    """flowcontrol.Backoff with an injected clock (seconds since the epoch)."""

    def __init__(
        self,
        clock: Clock,
        initial: float = INITIAL_CONTAINER_BACKOFF,
        maximum: float = MAX_CONTAINER_BACKOFF,
    ) -> None:
        self._clock = clock
        self.initial = initial
        self.maximum = maximum
        self._entries: dict[str, _Entry] = {}

    def get(self, key: str) -> float:
        """The current delay for `key` (0 when it has none)."""
        entry = self._entries.get(key)
        return entry.backoff if entry else 0.0

    def next(self, key: str, event_time: float) -> None:
        """Move `key` to its next delay; fresh (initial) if absent or expired."""
        entry = self._entries.get(key)
        if entry is None or self._has_expired(event_time, entry.last_update):
            entry = _Entry(backoff=self.initial, last_update=0.0)
            self._entries[key] = entry
        else:
            entry.backoff = min(entry.backoff * 2, self.maximum)
        entry.last_update = self._clock()

    def reset(self, key: str) -> None:
        """Forget `key` (client-go's Reset deletes the entry)."""
        self._entries.pop(key, None)

    def is_in_backoff_since(self, key: str, event_time: float) -> bool:
        """True while less than the current delay has passed since `event_time`."""
        entry = self._live(key, event_time)
        return entry is not None and self._clock() - event_time < entry.backoff

    def is_in_backoff_since_update(self, key: str, event_time: float) -> bool:
        """True while `event_time` is less than the current delay after the last update."""
        entry = self._live(key, event_time)
        return entry is not None and event_time - entry.last_update < entry.backoff

    def _live(self, key: str, event_time: float) -> _Entry | None:
        """`key`'s entry unless absent or expired at `event_time` (what both
        IsInBackOffSince checks start with)."""
        entry = self._entries.get(key)
        if entry is None or self._has_expired(event_time, entry.last_update):
            return None
        return entry

    def gc(self) -> None:
        """Forget entries not updated for 2 x the cap."""
        now = self._clock()
        for key in [k for k, e in self._entries.items() if self._has_expired(now, e.last_update)]:
            del self._entries[key]

    def delete(self, key: str) -> None:
        self._entries.pop(key, None)

    def keys(self) -> list[str]:
        return list(self._entries)

    def _has_expired(self, event_time: float, last_update: float) -> bool:
        # "consider stable if it's ok for twice the maxDuration"
        return event_time - last_update > self.maximum * 2
