"""Streaming URLs' tokens: single use, expire after the TTL, bounded in flight."""

from __future__ import annotations

import pytest

from pykubelet.streaming.tokens import RequestCache, TooManyInFlight


def test_tokens_are_single_use_and_expire() -> None:
    now = [0.0]
    cache = RequestCache(ttl=60, clock=lambda: now[0])
    a = cache.insert("exec-a")
    b = cache.insert("exec-b")
    assert a != b
    assert len(a) == 8
    assert cache.consume(a) == "exec-a"
    assert cache.consume(a) is None  # used
    now[0] = 61
    assert cache.consume(b) is None  # expired
    assert cache.consume("nope") is None


def test_in_flight_is_bounded_and_expired_ones_make_room() -> None:
    now = [0.0]
    cache = RequestCache(ttl=60, max_in_flight=2, clock=lambda: now[0])
    cache.insert(1)
    cache.insert(2)
    with pytest.raises(TooManyInFlight):
        cache.insert(3)
    now[0] = 100
    assert len(cache) == 0
    cache.insert(4)
