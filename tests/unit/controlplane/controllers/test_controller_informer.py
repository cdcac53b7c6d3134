"""The informer wiring every watch-driven controller shares (controllers/informer.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from pykubelet.controlplane.controllers.informer import (
    InformerController,
    entry_key,
    get_by_key,
    object_key,
    split_key,
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


def test_split_key_is_split_meta_namespace_key() -> None:
    assert split_key("ns/web") == ("ns", "web")
    assert split_key("/node-a") == ("", "node-a")  # entry_key of a cluster-scoped object
    assert split_key("node-a") == ("", "node-a")


def test_get_by_key_decodes_what_the_cache_holds_and_none_when_gone() -> None:
    """A lister's Get by a queue key: the object, or None once it left the cache."""
    asked: list[tuple[str, str]] = []
    obj = {"metadata": {"namespace": "ns", "name": "web"}}

    def lookup(ns: str, name: str) -> object:
        asked.append((ns, name))
        return SimpleNamespace(obj=lambda: obj) if name == "web" else None

    store = SimpleNamespace(lookup=lookup)
    assert get_by_key(store, "ns/web") is obj  # type: ignore[arg-type]
    assert get_by_key(store, "ns/gone") is None  # type: ignore[arg-type]
    assert get_by_key(store, "/cluster-role") is None  # type: ignore[arg-type]
    assert asked == [("ns", "web"), ("ns", "gone"), ("", "cluster-role")]


def test_get_primary_is_the_primary_listers_get() -> None:
    obj = {"metadata": {"namespace": "a", "name": "x"}}
    c = _Controller([])
    c.primary = SimpleNamespace(  # type: ignore[assignment]
        lookup=lambda ns, name: SimpleNamespace(obj=lambda: obj) if (ns, name) == ("a", "x")
        else None)
    assert c.get_primary("a/x") is obj
    assert c.get_primary("a/y") is None
