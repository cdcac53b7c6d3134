"""The watch cache: every read and every watch is served from memory, fed by the store's
watch (kube-apiserver's cacher and watch_cache.go).

The store holds objects without their resourceVersion (as etcd does: it is the write's
revision). Here each object gets its served form once, when its event arrives: the
stored JSON with ``metadata.resourceVersion`` spliced in, so a GET or a LIST of ten
thousand pods only joins bytes. A delete's event carries the last state stamped with the
delete's revision, so a client that resumes from it does not see the delete twice.

Per resource (key prefix) a :class:`ResourceCache` keeps the live objects, their labels
and selectable fields (from the resource's strategy) and a ring of recent events, each
with the object's previous state, so a selector watch turns "stopped matching" into
DELETED and "started matching" into ADDED as upstream's cacheWatcher does. A watch from a
revision older than what the ring still holds is refused (410 Expired), as is a list
continuation whose snapshot is gone.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from pykubelet.controlplane.storage.interface import (
    CompactedError,
    Event,
    KeyValue,
    Progress,
    Storage,
    StorageError,
)

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
DEFAULT_RING = 10_000
# The ring is aged by time too, as upstream's watch cache sizes itself to hold
# eventFreshDuration (75 s) of events and shrinks towards its lower bound (100 events) when
# what it holds is older: big objects do not stay in memory for 10,000 events' time.
EVENT_FRESH_S = 75.0
RING_LOWER_BOUND = 100
WATCHER_QUEUE_LIMIT = 10_000  # events a watcher may fall behind before it is closed
FUTURE_RV_WAIT_S = 3.0  # a watch or list ahead of the cache waits this long (as upstream)


class TooOldError(Exception):
    """A revision the cache no longer covers: the client must list again (410)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class TooLargeError(Exception):
    """A revision the cache has not reached (504, Retry-After 1)."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"Too large resource version: {requested}, current: {current}")


@dataclass(frozen=True, slots=True)
class Attrs:
    """What selectors look at: namespace, name, labels and the selectable fields."""

    namespace: str
    name: str
    labels: Mapping[str, str]
    fields: Mapping[str, str]


AttrsFn = Callable[[dict[str, Any]], Attrs]


VIEW = "view"  # Entry.cache's key of the parse its listeners share


@dataclass(slots=True)
class Entry:
    key: str
    data: bytes  # the served JSON (resourceVersion included)
    rev: int
    create_rev: int
    attrs: Attrs
    cache: dict[str, Any] = field(default_factory=dict)  # derived views (Table rows, ...)

    def obj(self) -> dict[str, Any]:
        parsed: dict[str, Any] = orjson.loads(self.data)
        return parsed

    def view(self) -> dict[str, Any]:
        """The object parsed once for every cache listener of the event that carries this
        entry, shared and read-only, as client-go's shared informer hands each handler the
        same object; the cacher drops it once its listeners ran (the cache keeps bytes), so
        call it only inside a listener. A pod's create and binding were parsed ~40 times by
        the controllers' handlers (issue 23 item 5)."""
        value: dict[str, Any] = self.derived(VIEW, self.obj)
        return value

    def derived(self, key: str, make: Callable[[], Any]) -> Any:
        """A view of this entry made once and kept (a watch event's line, a Table row),
        as upstream's cachingObject serializes an event once for every watcher."""
        value = self.cache.get(key)
        if value is None:
            value = self.cache[key] = make()
        return value


@dataclass(frozen=True, slots=True)
class CachedEvent:
    type: str
    rev: int
    entry: Entry  # the new state (for DELETED: the last state at the delete's revision)
    prev: Entry | None
    at: float = 0.0  # when it entered the cache (monotonic), for aging


def with_resource_version(value: bytes, rev: int) -> bytes:
    """Splice ``metadata.resourceVersion`` into stored JSON (objects are stored with
    ``kind``, ``apiVersion`` then ``metadata`` first, so the first ``"metadata":{`` is the
    object's own)."""
    marker = b'"metadata":{'
    i = value.find(marker)
    if i < 0:
        raise ValueError("stored object without metadata")
    j = i + len(marker)
    sep = b"" if value[j : j + 1] == b"}" else b","
    return b"%s\"resourceVersion\":\"%d\"%s%s" % (value[:j], rev, sep, value[j:])


class Watcher:
    """One client's watch: its filter and the queue of (type, entry) it has to send."""

    def __init__(
        self,
        namespace: str | None,
        predicate: Callable[[Attrs], bool],
        on_close: Callable[[Watcher], None],
    ) -> None:
        self.namespace = namespace
        self.predicate = predicate
        self.queue: asyncio.Queue[tuple[str, Entry] | None] = asyncio.Queue()
        self._on_close = on_close
        self.closed = False
        self.last_rev = 0
        # what a watch without a revision sends first, as ADDED events (kept apart from
        # the queue: a list of any size is not "falling behind")
        self.initial: list[Entry] = []
        # a watch from a revision the cache no longer holds: this error is all it sends
        # (upstream's newErrWatcher)
        self.error: TooOldError | None = None

    def _passes(self, e: Entry | None) -> bool:
        if e is None:
            return False
        if self.namespace is not None and e.attrs.namespace != self.namespace:
            return False
        return self.predicate(e.attrs)

    def offer(self, ev: CachedEvent) -> None:
        if self.closed:
            return
        cur = ev.type != DELETED and self._passes(ev.entry)
        prev = self._passes(ev.prev)
        kind: str | None = None
        entry = ev.entry
        if ev.type == DELETED:
            kind = DELETED if prev else None
        elif cur and prev:
            kind = MODIFIED
        elif cur:
            kind = ADDED
        elif prev:
            # stopped matching: DELETED with the object as it last matched, at this revision
            assert ev.prev is not None
            kind = DELETED
            entry = ev.prev
            entry = Entry(entry.key, with_rv_replaced(entry.data, ev.rev), ev.rev,
                          entry.create_rev, entry.attrs)
        if kind is None:
            self.last_rev = ev.rev
            return
        if self.queue.qsize() >= WATCHER_QUEUE_LIMIT:
            log.warning("closing a watcher that fell %d events behind", self.queue.qsize())
            self.close()
            return
        self.last_rev = ev.rev
        self.queue.put_nowait((kind, entry))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)
            self._on_close(self)


def with_rv_replaced(data: bytes, rev: int) -> bytes:
    """The served JSON of an entry with its resourceVersion replaced by ``rev``."""
    marker = b'"metadata":{"resourceVersion":"'
    i = data.find(marker)
    if i < 0:
        return with_resource_version(data, rev)
    j = data.index(b'"', i + len(marker))
    return b"%s%d%s" % (data[: i + len(marker)], rev, data[j:])


class ResourceCache:
    """The cache of one resource (one key prefix of the store)."""

    def __init__(self, prefix: str, attrs_fn: AttrsFn, ring_size: int = DEFAULT_RING,
                 clock: Callable[[], float] = time.monotonic,
                 current_rev: Callable[[], int] = lambda: 0) -> None:
        self.prefix = prefix
        self.clock = clock
        self.current_rev = current_rev  # the cacher's revision (every resource's)
        self.attrs_fn = attrs_fn
        self.entries: dict[str, Entry] = {}
        self.ring: deque[CachedEvent] = deque()
        self.ring_size = ring_size
        self.floor = 0  # watches from revisions >= floor can be served
        self.watchers: set[Watcher] = set()
        self._sorted_keys: list[str] | None = None
        self.indexes: dict[str, dict[str, set[str]]] = {}  # field -> value -> keys

    # ------------------------------------------------------------------ feeding
    def make_entry(self, key: str, value: bytes, rev: int, create_rev: int,
                   keep_view: bool = False) -> Entry:
        """``keep_view``: the parse that gave the attributes stays as the entry's view for
        the listeners of its event (the cacher drops it after them): one parse per write."""
        data = with_resource_version(value, rev)
        parsed = orjson.loads(data)
        entry = Entry(key, data, rev, create_rev, self.attrs_fn(parsed))
        if keep_view:
            entry.cache[VIEW] = parsed
        return entry

    def add_index(self, field_name: str) -> None:
        """Index a selectable field (spec.nodeName for pods: each node's watch is cheap)."""
        idx: dict[str, set[str]] = {}
        for key, e in self.entries.items():
            idx.setdefault(e.attrs.fields.get(field_name, ""), set()).add(key)
        self.indexes[field_name] = idx

    def _index_remove(self, e: Entry) -> None:
        for name, idx in self.indexes.items():
            keys = idx.get(e.attrs.fields.get(name, ""))
            if keys is not None:
                keys.discard(e.key)

    def _index_add(self, e: Entry) -> None:
        for name, idx in self.indexes.items():
            idx.setdefault(e.attrs.fields.get(name, ""), set()).add(e.key)

    def apply(self, ev: Event) -> CachedEvent:
        key = ev.kv.key
        prev = self.entries.get(key)
        if ev.deleted:
            last = prev or self.make_entry(key, ev.kv.value, ev.kv.mod_revision,
                                           ev.kv.create_revision)
            entry = Entry(key, with_rv_replaced(last.data, ev.kv.mod_revision),
                          ev.kv.mod_revision, last.create_rev, last.attrs)
            if prev is not None:
                del self.entries[key]
                self._index_remove(prev)
                self._sorted_keys = None
            cached = CachedEvent(DELETED, ev.kv.mod_revision, entry, prev, self.clock())
        else:
            entry = self.make_entry(key, ev.kv.value, ev.kv.mod_revision, ev.kv.create_revision,
                                    keep_view=True)
            if prev is None:
                self._sorted_keys = None
            else:
                self._index_remove(prev)
            self.entries[key] = entry
            self._index_add(entry)
            cached = CachedEvent(MODIFIED if prev is not None else ADDED,
                                 ev.kv.mod_revision, entry, prev, self.clock())
        self.ring.append(cached)
        self._trim(cached.at)
        for w in list(self.watchers):
            w.offer(cached)
        return cached

    def load(self, entries: Iterable[Entry], history: Iterable[CachedEvent], floor: int) -> None:
        self.entries = {e.key: e for e in entries}
        now = self.clock()
        self.ring = deque(replace(ev, at=now) for ev in history)  # aged from now on
        self.floor = floor
        self._trim(now)
        self._sorted_keys = None
        for name in list(self.indexes):
            self.add_index(name)

    def _trim(self, now: float) -> None:
        """Drop the oldest events beyond ring_size, and those older than EVENT_FRESH_S
        beyond RING_LOWER_BOUND; watches and continuations from before are then 410."""
        ring = self.ring
        while len(ring) > self.ring_size or (
                len(ring) > RING_LOWER_BOUND and now - ring[0].at > EVENT_FRESH_S):
            self.floor = ring.popleft().rev

    # ------------------------------------------------------------------ reading
    def sorted_keys(self) -> list[str]:
        if self._sorted_keys is None:
            self._sorted_keys = sorted(self.entries)
        return self._sorted_keys

    def select(
        self,
        namespace: str | None,
        predicate: Callable[[Attrs], bool] | None,
        index: tuple[str, str] | None = None,
        start: str = "",
    ) -> Iterator[Entry]:
        """The live entries in key order, from key ``start`` on, that pass ``namespace``
        and ``predicate``."""
        if index is not None and index[0] in self.indexes:
            keys: list[str] = sorted(self.indexes[index[0]].get(index[1], ()))
        else:
            keys = self.sorted_keys()
        if namespace is not None:
            prefix = f"{self.prefix}{namespace}/"
            start = max(start, prefix)
        for i in range(bisect.bisect_left(keys, start) if start else 0, len(keys)):
            key = keys[i]
            if namespace is not None and not key.startswith(prefix):
                if key > prefix:
                    break
                continue
            e = self.entries[key]
            if predicate is None or predicate(e.attrs):
                yield e

    def select_at(
        self,
        rev: int,
        namespace: str | None,
        predicate: Callable[[Attrs], bool] | None,
        index: tuple[str, str] | None = None,
        start: str = "",
    ) -> list[Entry]:
        """What :meth:`select` answered at revision ``rev``: the live entries with the
        ring's events after ``rev`` undone (a paged list's later pages read the first
        page's revision). TooOldError when the ring no longer reaches back to ``rev``."""
        before: dict[str, Entry | None] = {}  # key -> its state at rev
        for ev in reversed(self.events_since(rev)):
            before[ev.entry.key] = ev.prev
        out = [e for e in self.select(namespace, predicate, index, start)
               if e.key not in before]
        prefix = self.prefix if namespace is None else f"{self.prefix}{namespace}/"
        for key, e in before.items():
            if e is None or key < start or not key.startswith(prefix):
                continue
            if index is not None and e.attrs.fields.get(index[0], "") != index[1]:
                continue
            if predicate is None or predicate(e.attrs):
                out.append(e)
        out.sort(key=lambda e: e.key)
        return out

    def watch(self, namespace: str | None, predicate: Callable[[Attrs], bool],
              since: int | None) -> Watcher:
        """A new watcher (the cacher's Watch). With ``since`` None it starts with every
        matching live object (``initial``) and follows from the current revision; else it
        replays the ring's events after ``since`` first. Subscribing and taking the starting
        point are one step, so nothing falls in between. A revision the ring no longer
        covers gives a closed watcher that carries only the TooOldError (410)."""
        watcher = Watcher(namespace, predicate, self.watchers.discard)
        if since is None:
            watcher.initial = list(self.select(namespace, predicate))
            watcher.last_rev = self.current_rev()
        else:
            try:
                past = self.events_since(since)
            except TooOldError as exc:
                watcher.error = exc
                watcher.closed = True
                return watcher
            for ev in past:
                watcher.offer(ev)
            watcher.last_rev = max(since, watcher.last_rev)
        self.watchers.add(watcher)
        return watcher

    def events_since(self, rev: int) -> list[CachedEvent]:
        """The ring's events after ``rev``; TooOldError when some may be gone."""
        if rev < self.floor:
            raise TooOldError(rev, self.floor + 1)
        out = []
        for ev in reversed(self.ring):
            if ev.rev <= rev:
                break
            out.append(ev)
        out.reverse()
        return out


class Cacher:
    """All resources' caches over one store: one watch of the store feeds them."""

    def __init__(self, store: Storage) -> None:
        self.store = store
        self.resources: dict[str, ResourceCache] = {}  # prefix -> cache
        self.rev = 0
        self._rev_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self._rewatched = -FUTURE_RV_WAIT_S  # when the watch was last opened again
        self.listeners: list[Callable[[ResourceCache, CachedEvent], None]] = []
        self.started = time.monotonic()

    def register(self, prefix: str, attrs_fn: AttrsFn,
                 ring_size: int = DEFAULT_RING) -> ResourceCache:
        cache = ResourceCache(prefix, attrs_fn, ring_size, current_rev=lambda: self.rev)
        self.resources[prefix] = cache
        return cache

    def cache_for(self, key: str) -> ResourceCache | None:
        for prefix, cache in self.resources.items():
            if key.startswith(prefix):
                return cache
        return None

    async def start(self) -> None:
        """Load every resource from the store (state plus recent history), then follow."""
        items, rev = await self.store.list_prefix("/registry/")
        floor = max(self.store.compacted_revision(), rev - DEFAULT_RING)
        try:
            history = await self.store.history(floor + 1)
        except CompactedError:
            floor, history = rev, []
        history = [e for e in history if e.kv.mod_revision <= rev]
        by_prefix: dict[str, list[Entry]] = {p: [] for p in self.resources}
        hist_by_prefix: dict[str, list[CachedEvent]] = {p: [] for p in self.resources}
        for kv in items:
            cache = self.cache_for(kv.key)
            if cache is None:
                continue
            try:
                by_prefix[cache.prefix].append(
                    cache.make_entry(kv.key, kv.value, kv.mod_revision, kv.create_revision))
            except ValueError as exc:
                log.error("skipping unreadable stored object %s: %s", kv.key, exc)
        for ev in history:
            cache = self.cache_for(ev.kv.key)
            if cache is None:
                continue
            try:
                hist_by_prefix[cache.prefix].append(_history_event(cache, ev))
            except ValueError:
                continue
        for prefix, cache in self.resources.items():
            cache.load(by_prefix[prefix], hist_by_prefix[prefix], floor)
        self.rev = rev
        self._task = asyncio.create_task(self._follow(rev + 1), name="cacher")

    def rewatch(self, why: str) -> None:
        """Open the store's watch again after the last revision applied. A watch can go
        silent without failing (a stream its member no longer feeds); a consistent read
        the cache cannot catch up with finds it, and this repairs it (kube-apiserver's
        reflectors bound the same risk by ending their watches every few minutes)."""
        now = time.monotonic()
        if self._task is None or now - self._rewatched < FUTURE_RV_WAIT_S:
            return  # not started or stopped; or just done (for the reads waiting with this)
        self._rewatched = now
        log.warning("the watch cache is behind the store (%s): watching again after "
                    "revision %d", why, self.rev)
        self._task.cancel()  # (it applies nothing more: batches are applied between awaits)
        self._task = asyncio.create_task(self._follow(self.rev + 1), name="cacher")

    async def _follow(self, from_rev: int) -> None:
        """Apply the store's watch, for ever. A watch that fails is opened again after the
        last revision applied; one that fell behind the store's compaction (possible on
        etcd after a long partition) lists again and applies the difference, as a
        reflector's relist does."""
        relist = False
        while True:
            try:
                if relist:
                    from_rev = await self._relist()
                    relist = False
                async for batch in self.store.watch(from_rev):
                    self._apply_batch(batch)
                return
            except CompactedError:
                log.warning("the store compacted past revision %d: listing again", self.rev)
                relist = True
            except Exception as exc:  # the cache must follow for as long as it serves
                log.error("store watch failed (%s); following again after revision %d", exc,
                          self.rev, exc_info=not isinstance(exc, StorageError))
                await asyncio.sleep(1.0)
                from_rev = self.rev + 1

    def _apply_batch(self, batch: list[Event]) -> None:
        if isinstance(batch, Progress):  # nothing missed up to there: bookmarks say so
            if batch.revision > self.rev:
                self.rev = batch.revision
                self._wake()
            return
        for ev in batch:
            cache = self.cache_for(ev.kv.key)
            if cache is not None:
                try:
                    cached = cache.apply(ev)
                except ValueError as exc:
                    log.error("unreadable object %s at %d: %s", ev.kv.key,
                              ev.kv.mod_revision, exc)
                    continue
                for listener in self.listeners:
                    try:
                        listener(cache, cached)
                    except Exception:
                        log.exception("cache listener failed")
                cached.entry.cache.pop(VIEW, None)
                if cached.prev is not None:
                    cached.prev.cache.pop(VIEW, None)
        if batch:
            self.rev = max(self.rev, batch[-1].kv.mod_revision)
        self._wake()

    async def _relist(self) -> int:
        """List the store and apply what changed since the cache's state, as events at
        the list's revision; the revision to follow from."""
        items, rev = await self.store.list_prefix("/registry/")
        listed = {kv.key: kv for kv in items}
        changes: list[Event] = []
        for kv in items:  # what was written since: at its own revision (its resourceVersion)
            owner = self.cache_for(kv.key)
            if owner is None:
                continue
            old = owner.entries.get(kv.key)
            if old is None or old.rev != kv.mod_revision:
                changes.append(Event(kv, None))
        changes.sort(key=lambda e: e.kv.mod_revision)
        for cache in self.resources.values():  # deleted at some revision up to the list's
            for key, entry in cache.entries.items():
                if key not in listed:
                    changes.append(Event(KeyValue(key, b"", entry.create_rev, rev), None,
                                         deleted=True))
        if changes:
            self._apply_batch(changes)
        self.rev = max(self.rev, rev)
        self._wake()
        return rev + 1

    def _wake(self) -> None:
        if not self._rev_waiters:
            return
        ready = [f for r, f in self._rev_waiters if r <= self.rev]
        self._rev_waiters = [(r, f) for r, f in self._rev_waiters if r > self.rev]
        for f in ready:
            if not f.done():
                f.set_result(None)

    async def wait_for(self, rev: int, timeout: float = FUTURE_RV_WAIT_S) -> None:
        """Return once the cache has seen revision ``rev`` (read-your-writes, and
        upstream's wait for a resourceVersion ahead of the cache)."""
        if rev <= self.rev:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rev_waiters.append((rev, fut))
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise TooLargeError(rev, self.rev) from None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for cache in self.resources.values():
            for w in list(cache.watchers):
                w.close()


def _history_event(cache: ResourceCache, ev: Event) -> CachedEvent:
    prev = None
    if ev.prev is not None and ev.prev.value:
        prev = cache.make_entry(ev.kv.key, ev.prev.value, ev.prev.mod_revision,
                                ev.prev.create_revision)
    if ev.deleted:
        entry = cache.make_entry(ev.kv.key, ev.kv.value, ev.kv.mod_revision,
                                 ev.kv.create_revision)
        return CachedEvent(DELETED, ev.kv.mod_revision, entry, prev)
    entry = cache.make_entry(ev.kv.key, ev.kv.value, ev.kv.mod_revision, ev.kv.create_revision)
    return CachedEvent(ADDED if ev.created else MODIFIED, ev.kv.mod_revision, entry, prev)
