"""A watch's BOOKMARK never names a revision whose event is still to be sent.

The soak's lost pod (issue 29, soak-121/once-7ng49): node2's pod watch (fieldSelector
spec.nodeName=node2, bookmarks on, timeoutSeconds 300) reached its deadline at 07:36:45,
the second the pod was bound to node2. The binding was taken by the watcher while the
stream was writing the event before it; at the deadline the stream wrote a BOOKMARK at
the watcher's last revision (the binding's) and ended, leaving the binding in the queue.
The agent's informer resumed after the bookmark, so the binding's ADDED never came and
the pod stayed Pending. Upstream's cacheWatcher sends bookmarks through the same channel
as events, so one never overtakes an event; these tests hold ours to that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from pykubelet.controlplane.apiserver.handlers.watch import WatchStream
from pykubelet.controlplane.storage import Event, KeyValue
from pykubelet.controlplane.storage.cacher import Attrs, ResourceCache

PREFIX = "/registry/pods/"
NODE = "node2"


def _attrs(obj: dict[str, Any]) -> Attrs:
    meta = obj["metadata"]
    return Attrs(meta["namespace"], meta["name"], {},
                 {"spec.nodeName": obj["spec"].get("nodeName", "")})


def _on_node(a: Attrs) -> bool:
    return a.fields.get("spec.nodeName") == NODE


class _Info:
    kind = "Pod"
    group_version = "v1"


class _Store:
    """What the stream reads of the registry's store: its info and the cache's revision."""

    info = _Info()

    def __init__(self) -> None:
        self.revision = 0


class _Pods:
    """A pods cache fed as the store's watch feeds it: creates and bindings, in revision
    order, each moving the cacher's revision (the store's ``revision``)."""

    def __init__(self, store: _Store) -> None:
        self.cache = ResourceCache(PREFIX, _attrs, current_rev=lambda: store.revision)
        self.store = store
        self.values: dict[str, KeyValue] = {}

    def write(self, name: str, node: str = "") -> int:
        key = f"{PREFIX}soak/{name}"
        rev = self.store.revision + 1
        obj = {"kind": "Pod", "apiVersion": "v1",
               "metadata": {"name": name, "namespace": "soak"}, "spec": {"nodeName": node}}
        prev = self.values.get(key)
        kv = KeyValue(key, orjson.dumps(obj), prev.create_revision if prev else rev, rev)
        self.cache.apply(Event(kv, prev))
        self.values[key] = kv
        self.store.revision = rev
        return rev


class _SlowClient:
    """The stream's response: a write takes a while (a busy control plane, a slow agent),
    and ``during_write`` runs meanwhile, as other writers' commits reach the cache then."""

    def __init__(self, during_write: Callable[[int], Awaitable[None]]) -> None:
        self.during_write = during_write
        self.lines: list[dict[str, Any]] = []
        self.writes = 0

    async def write(self, data: bytes) -> None:
        self.lines += [orjson.loads(line) for line in data.splitlines() if line.strip()]
        self.writes += 1
        await self.during_write(self.writes)


def _rev(line: dict[str, Any]) -> int:
    return int(line["object"]["metadata"]["resourceVersion"])


def _assert_no_bookmark_overtakes(lines: list[dict[str, Any]], taken: list[int]) -> None:
    """Every event at or below a bookmark's revision was sent before the bookmark."""
    sent: set[int] = set()
    for line in lines:
        if line["type"] == "BOOKMARK":
            missing = [r for r in taken if r <= _rev(line) and r not in sent]
            assert not missing, (
                f"BOOKMARK at {_rev(line)} before the events at {missing}: a client resuming "
                f"from it never gets them; sent: {[(x['type'], _rev(x)) for x in lines]}")
        else:
            sent.add(_rev(line))


def test_a_binding_taken_during_the_last_write_is_sent_before_the_final_bookmark() -> None:
    async def main() -> None:
        store = _Store()
        pods = _Pods(store)
        pods.write("plain", NODE)
        start = store.revision
        watcher = pods.cache.watch(None, _on_node, start)  # the informer's resumed watch
        stream = WatchStream(store, None, _on_node, str(start),  # type: ignore[arg-type]
                             timeout_s=0.2, bookmarks=True, bookmark_interval=60.0)
        pods.write("web", NODE)  # one event for the stream to write
        pods.write("once")  # the Job's pod, created unbound
        bound: list[int] = []

        async def during_write(n: int) -> None:
            if n == 1:  # the scheduler binds the Job's pod while the stream writes
                bound.append(pods.write("once", NODE))
                await asyncio.sleep(0.3)  # and the write outlasts the watch's deadline

        client = _SlowClient(during_write)
        await asyncio.wait_for(stream._follow(client, watcher), 5)  # type: ignore[arg-type]
        watcher.close()

        assert client.lines[-1]["type"] == "BOOKMARK"
        _assert_no_bookmark_overtakes(client.lines, [start + 1, bound[0]])
        # the agent resumes from the last revision it heard: the binding reaches it
        resume = _rev(client.lines[-1])
        again = pods.cache.watch(None, _on_node, resume)
        heard = [(line["type"], line["object"]["metadata"]["name"]) for line in client.lines
                 if line["type"] != "BOOKMARK"]
        while not again.queue.empty():
            item = again.queue.get_nowait()
            assert item is not None
            heard.append((item[0], item[1].attrs.name))
        again.close()
        assert ("ADDED", "once") in heard, heard

    asyncio.run(main())


def test_a_periodic_bookmark_waits_for_the_events_already_taken() -> None:
    async def main() -> None:
        store = _Store()
        pods = _Pods(store)
        start = pods.write("plain", NODE)
        watcher = pods.cache.watch(None, _on_node, start)
        stream = WatchStream(store, None, _on_node, str(start),  # type: ignore[arg-type]
                             timeout_s=0.5, bookmarks=True, bookmark_interval=0.05)
        taken = [pods.write("web", NODE)]

        async def during_write(n: int) -> None:
            if n == 1:  # a binding lands while the stream writes, past the bookmark's time
                taken.append(pods.write("once", NODE))
                await asyncio.sleep(0.1)

        client = _SlowClient(during_write)
        await asyncio.wait_for(stream._follow(client, watcher), 5)  # type: ignore[arg-type]
        watcher.close()

        assert any(line["type"] == "BOOKMARK" for line in client.lines[:-1]), client.lines
        _assert_no_bookmark_overtakes(client.lines, taken)
        assert [_rev(x) for x in client.lines if x["type"] != "BOOKMARK"] == taken

    asyncio.run(main())
