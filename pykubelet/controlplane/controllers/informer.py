"""The informer wiring the watch-driven controllers share: client-go's shared informer
plus work queue pattern (a controller lists its primary resource once, queues every
object's ``namespace/name`` key, then hears each change from the watch cache and queues
the keys it concerns; workers sync one key at a time). Here the informer is the
registry's watch cache (``registry.cacher``), whose listeners each controller joins.

:class:`InformerController` does the list, the listening and the unlistening, and runs
the queue's workers meanwhile; each controller keeps its own ``_on_event`` (which keys an
event concerns) and its own queue.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.registry.store import Entry, GenericStore, Registry

Obj = dict[str, Any]


class KeyQueue(Protocol):
    def add(self, key: str) -> None: ...

    async def run(self) -> None: ...


def entry_key(entry: Entry) -> str:
    """cache.MetaNamespaceKeyFunc of a stored object: ``namespace/name``."""
    return f"{entry.attrs.namespace}/{entry.attrs.name}"


def object_key(obj: Obj) -> str:
    """cache.MetaNamespaceKeyFunc of a decoded object: ``namespace/name``."""
    m = obj.get("metadata") or {}
    return f"{m.get('namespace', '')}/{m.get('name', '')}"


def split_key(key: str) -> tuple[str, str]:
    """cache.SplitMetaNamespaceKey: ``namespace/name``, or a cluster-scoped ``name``."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", ns)


def get_by_key(store: GenericStore, key: str) -> Obj | None:
    """The lister's Get a sync starts with: the object the queue's key names, decoded
    from the watch cache, or None once it is gone (upstream's indexer GetByKey)."""
    entry = store.lookup(*split_key(key))
    return None if entry is None else entry.obj()


class InformerController:
    """A controller fed by the watch cache: ``primary`` is the resource whose keys it
    queues; subclasses set ``registry``, ``primary`` and ``queue`` and decide in
    ``_on_event``."""

    registry: Registry
    primary: GenericStore
    queue: KeyQueue

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        raise NotImplementedError

    def get_primary(self, key: str) -> Obj | None:
        """What a sync starts with: the primary object its key names (the primary
        lister's Get), None once it is gone."""
        return get_by_key(self.primary, key)

    def start(self) -> None:
        """The initial list (every primary object's key queued), then the events."""
        for entry in self.primary.select(None, None):
            self.queue.add(entry_key(entry))
        self.registry.cacher.listeners.append(self._on_event)

    def stop(self) -> None:
        if self._on_event in self.registry.cacher.listeners:
            self.registry.cacher.listeners.remove(self._on_event)

    @contextmanager
    def informing(self) -> Iterator[None]:
        """Started for the ``with`` block, stopped when it ends however it ends."""
        self.start()
        try:
            yield
        finally:
            self.stop()

    async def run(self) -> None:
        """The controller's life: its queue's workers, informed while they run."""
        with self.informing():
            await self.queue.run()
