"""The control plane's event recorder: events named as client-go's makeEvent names them,
and repeats found again by the correlator."""

from __future__ import annotations

import asyncio
import time

from pykubelet.controlplane.controllers.recorder import NORMAL, WARNING, EventRecorder
from pykubelet.controlplane.registry.events import EventStrategy
from pykubelet.controlplane.registry.resources import EVENTS
from pykubelet.controlplane.registry.store import Registry
from pykubelet.controlplane.storage.cacher import Cacher
from pykubelet.controlplane.storage.sqlite import SQLiteStorage


def test_events_are_named_object_dot_hex_nanoseconds_and_repeats_bump_the_same_one() -> None:
    async def main() -> list[dict[str, object]]:
        store = SQLiteStorage(":memory:")
        await store.start()
        cacher = Cacher(store)
        registry = Registry(store, cacher)
        registry.add(EventStrategy())
        await cacher.start()
        try:
            rec = EventRecorder(registry, "default-scheduler")
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "web", "namespace": "default", "uid": "u1"}}
            before = time.time_ns()
            await rec.event(pod, WARNING, "FailedScheduling", "0/3 nodes are available")
            await rec.event(pod, NORMAL, "Scheduled", "Successfully assigned default/web")
            await rec.event(pod, WARNING, "FailedScheduling", "0/3 nodes are available")
            after = time.time_ns()
            events = registry.store(EVENTS)
            return [e.obj() for e in events.cache.select(None, None)] + [
                {"before": before, "after": after}]
        finally:
            await cacher.stop()
            await store.close()

    *items, bounds = asyncio.run(main())
    by_reason = {e["reason"]: e for e in items}
    assert len(items) == 2  # the repeat bumped the first
    assert by_reason["FailedScheduling"]["count"] == 2
    names = [by_reason[r]["metadata"]["name"] for r in ("FailedScheduling", "Scheduled")]  # type: ignore[index]
    stamps = []
    for name in names:
        obj, _, suffix = name.rpartition(".")
        assert obj == "web"
        stamps.append(int(suffix, 16))
    assert bounds["before"] <= stamps[0] < stamps[1] <= bounds["after"]  # type: ignore[operator]
