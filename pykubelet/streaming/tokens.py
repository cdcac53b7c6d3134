"""Single-use, expiring tokens naming a cached streaming request (kubelet's requestCache).

Exec/Attach/PortForward answer a URL ``<base>/<verb>/<token>``; the request stays here until
the client connects (once) or the token expires (1 minute). At most 1000 are in flight.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

TTL = 60.0
MAX_IN_FLIGHT = 1000
TOKEN_LEN = 8


class TooManyInFlight(Exception):
    """More unconsumed requests than MAX_IN_FLIGHT."""


class RequestCache:
    def __init__(self, ttl: float = TTL, max_in_flight: int = MAX_IN_FLIGHT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.max_in_flight = max_in_flight
        self.clock = clock
        self._entries: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def insert(self, request: Any) -> str:
        with self._lock:
            self._gc()
            if len(self._entries) >= self.max_in_flight:
                raise TooManyInFlight(f"maximum number of in-flight requests exceeded "
                                      f"({self.max_in_flight})")
            while True:
                token = secrets.token_urlsafe(TOKEN_LEN)[:TOKEN_LEN]
                if token not in self._entries:
                    break
            self._entries[token] = (self.clock() + self.ttl, request)
            return token

    def consume(self, token: str) -> Any | None:
        """The request, once; None for an unknown, used or expired token."""
        with self._lock:
            entry = self._entries.pop(token, None)
        if entry is None or self.clock() > entry[0]:
            return None
        return entry[1]

    def __len__(self) -> int:
        with self._lock:
            self._gc()
            return len(self._entries)

    def _gc(self) -> None:
        now = self.clock()
        while self._entries:
            token, (expires, _) = next(iter(self._entries.items()))
            if now <= expires:
                return
            del self._entries[token]
