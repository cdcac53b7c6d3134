"""Several served versions of one custom resource over one store: the ``None``
conversion (apiextensions' nopConverter: a version differs only in its apiVersion).

Each served version reads through its own watch cache whose objects carry that version's
apiVersion: the storage version's cache is fed by the store's watch like any resource's;
the others mirror it, event for event, with apiVersion rewritten. So a get, a list or a
watch of any version shows the same objects at the same resourceVersions, each in the
version asked for, and a write through any version is read back in every other."""

from __future__ import annotations

import re
from collections.abc import Callable

import orjson

from pykubelet.controlplane.storage import Event, KeyValue
from pykubelet.controlplane.storage.cacher import (
    DELETED,
    AttrsFn,
    CachedEvent,
    Entry,
    ResourceCache,
    with_resource_version,
)

_API_VERSION = re.compile(rb'"apiVersion":"[^"]*"')


class VersionedCache(ResourceCache):
    """A watch cache whose objects read as ``api_version``."""

    def __init__(self, prefix: str, attrs_fn: AttrsFn, api_version: str, ring_size: int,
                 current_rev: Callable[[], int], mirror: bool = False) -> None:
        super().__init__(prefix, attrs_fn, ring_size, current_rev=current_rev)
        self.api_version = f'"apiVersion":"{api_version}"'.encode()
        self.mirror = mirror  # fed with served JSON (resourceVersion in) by another cache

    def make_entry(self, key: str, value: bytes, rev: int, create_rev: int,
                   keep_view: bool = False) -> Entry:
        # keep_view ignored: a mirror applies its source's events outside the cacher's
        # batches, which drop the listeners' views, so it keeps bytes only
        data = value if self.mirror else with_resource_version(value, rev)
        data = _API_VERSION.sub(lambda _m: self.api_version, data, count=1)
        return Entry(key, data, rev, create_rev, self.attrs_fn(orjson.loads(data)))

    def mirror_of(self, source: ResourceCache) -> None:
        """Fill from ``source``'s current objects (a mirror made while it serves)."""
        entries = [self.make_entry(e.key, e.data, e.rev, e.create_rev)
                   for e in source.entries.values()]
        self.load(entries, [], source.current_rev())

    def follow(self, event: CachedEvent) -> None:
        """Apply one of the source cache's events."""
        e = event.entry
        self.apply(Event(KeyValue(e.key, e.data, e.create_rev, event.rev), None,
                         deleted=event.type == DELETED))


__all__ = ["VersionedCache"]
