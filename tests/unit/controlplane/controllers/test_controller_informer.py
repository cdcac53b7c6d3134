"""The informer wiring every watch-driven controller shares (controllers/informer.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from pykubelet.controlplane.controllers.informer import (
    InformerController,
    entry_key,
    object_key,
)


class _Controller(InformerController):
    def __init__(self, names: list[tuple[str, str]]) -> None:
        self.registry = SimpleNamespace(cacher=SimpleNamespace(listeners=[]))  # type: ignore[assignment]
        entries = [SimpleNamespace(attrs=SimpleNamespace(namespace=ns, name=n)) for ns, n in names]
        self.primary = SimpleNamespace(select=lambda ns, sel: list(entries))  # type: ignore[assignment]
        self.keys: list[str] = []
        self.queue = SimpleNamespace(add=self.keys.append)

    def _on_event(self, cache: Any, ev: Any) -> None:
        self.keys.append("event")


def test_start_queues_every_primary_key_then_listens_and_stop_unlistens() -> None:
    c = _Controller([("a", "x"), ("b", "y")])
    c.start()
    assert c.keys == ["a/x", "b/y"]
    assert c.registry.cacher.listeners == [c._on_event]
    c.registry.cacher.listeners[0](None, None)
    assert c.keys[-1] == "event"
    c.stop()
    c.stop()  # a second stop is harmless
    assert c.registry.cacher.listeners == []


def test_informing_stops_listening_however_the_block_ends() -> None:
    c = _Controller([])
    seen: list[object] = []

    def worker() -> None:
        with c.informing():
            seen.extend(c.registry.cacher.listeners)
            raise RuntimeError("worker died")

    with pytest.raises(RuntimeError):
        worker()
    assert seen == [c._on_event]
    assert c.registry.cacher.listeners == []


def test_keys_are_namespace_slash_name() -> None:
    assert object_key({"metadata": {"namespace": "ns", "name": "web"}}) == "ns/web"
    assert object_key({}) == "/"
    entry = SimpleNamespace(attrs=SimpleNamespace(namespace="ns", name="web"))
    assert entry_key(entry) == "ns/web"  # type: ignore[arg-type]


def test_run_works_the_queue_while_informing_and_unlistens_after() -> None:
    """run(): the list and the listening for as long as the queue's workers run."""
    c = _Controller([("a", "x")])
    seen: list[object] = []

    async def queue_run() -> None:
        seen.extend(c.registry.cacher.listeners)

    c.queue.run = queue_run  # type: ignore[attr-defined]
    asyncio.run(c.run())
    assert c.keys == ["a/x"]
    assert seen == [c._on_event]
    assert c.registry.cacher.listeners == []
