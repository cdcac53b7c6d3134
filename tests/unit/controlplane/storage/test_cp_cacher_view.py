"""The watch cache's listeners share one parse of an event's objects (Entry.view), as a
shared informer's handlers share one object, and the cache keeps only bytes afterwards:
the controllers' pod handlers parsed each pod create and binding ~40 times."""

from __future__ import annotations

import asyncio
from typing import Any

from pykubelet.controlplane.registry.store import encode
from pykubelet.controlplane.storage.cacher import VIEW, Attrs, CachedEvent, Cacher

PREFIX = "/registry/configmaps/"


def attrs(obj: dict[str, Any]) -> Attrs:
    meta = obj["metadata"]
    return Attrs(meta.get("namespace", ""), meta["name"], meta.get("labels") or {}, {})


def cm(value: str) -> bytes:
    return encode({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "namespace": "ns"}, "data": {"v": value}})


def test_listeners_share_one_parse_per_entry_and_the_cache_keeps_none() -> None:
    from pykubelet.controlplane.storage.sqlite import SQLiteStorage

    async def main() -> None:
        store = SQLiteStorage(":memory:")
        await store.start()
        cacher = Cacher(store)
        cache = cacher.register(PREFIX, attrs)
        views: list[list[tuple[int, int | None]]] = []  # per event, per listener

        def listener(_: object, ev: CachedEvent) -> None:
            view = ev.entry.view()
            assert view is ev.entry.view()
            prev = ev.prev.view() if ev.prev is not None else None
            if len(views) == 0 or len(views[-1]) == 2:
                views.append([])
            views[-1].append((id(view), id(prev) if prev is not None else None))

        cacher.listeners += [listener, listener]
        try:
            await cacher.start()
            kv = await store.create(PREFIX + "ns/a", cm("1"))
            changed = await store.update(kv.key, cm("2"), kv.mod_revision)
            await cacher.wait_for(changed.mod_revision, timeout=5)
            assert len(views) == 2
            for first, second in views:
                assert first == second  # both listeners read the same parsed objects
            assert views[1][0][1] is not None  # the update's previous object too
            entry = cache.entries[kv.key]
            assert entry.obj()["data"] == {"v": "2"}
            assert VIEW not in entry.cache  # the cache keeps the bytes, not the parse
            for ev in cache.events_since(0):
                assert VIEW not in ev.entry.cache
                assert ev.prev is None or VIEW not in ev.prev.cache
        finally:
            await cacher.stop()
            await store.close()

    asyncio.run(main())


def test_an_events_new_object_is_parsed_once_for_its_attributes_and_its_listeners(
        monkeypatch: Any) -> None:
    """The parse that gives the cache an entry's selectable attributes is the listeners'
    view: a write's object is parsed once, not once more by the first listener's view()."""
    import orjson

    from pykubelet.controlplane.storage import cacher as cacher_module
    from pykubelet.controlplane.storage.sqlite import SQLiteStorage

    parsed: list[bytes] = []

    class CountingJSON:
        dumps = staticmethod(orjson.dumps)

        @staticmethod
        def loads(data: bytes) -> Any:
            parsed.append(data)
            return orjson.loads(data)

    async def main() -> None:
        store = SQLiteStorage(":memory:")
        await store.start()
        cacher = Cacher(store)
        cacher.register(PREFIX, attrs)
        seen: list[dict[str, Any]] = []
        cacher.listeners.append(lambda _, ev: seen.append(ev.entry.view()))
        try:
            await cacher.start()
            monkeypatch.setattr(cacher_module, "orjson", CountingJSON)
            kv = await store.create(PREFIX + "ns/a", cm("1"))
            await cacher.wait_for(kv.mod_revision, timeout=5)
            assert [v["data"] for v in seen] == [{"v": "1"}]
            assert len(parsed) == 1
        finally:
            await cacher.stop()
            await store.close()

    asyncio.run(main())
