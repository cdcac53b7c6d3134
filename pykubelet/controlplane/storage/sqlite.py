"""The embedded store: SQLite in WAL mode, one row per revision, as k3s's kine keeps it.

Table ``kine``: ``id`` is the revision; each row records one write of ``name`` (the key):
``created``/``deleted`` flags, the key's ``create_revision``, the revision it replaced
(``prev_revision``), the new ``value`` and the ``old_value``. A delete writes a tombstone
row carrying the last value. The live state is, per key, its newest row when that row is
not a tombstone; compaction removes superseded rows and tombstones at or below a revision.

One process owns the file and one writer thread owns the connection. It takes every
write waiting in its queue, checks each one's precondition against the live state plus
the writes before it in the same batch, inserts the rows in one transaction and commits
once (``synchronous=FULL``: fsync of the WAL). That is group commit: one fsync serves a
whole batch of concurrent writers, so throughput grows with concurrency while each
write is still durable before anyone hears about it. After the commit the events go to
the watchers (in revision order) and only then are the writers answered, on the event
loop, so a client that hears "created" finds the object in the watch cache.

``path=":memory:"`` keeps the same code on a throw-away in-memory database (tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import queue
import sqlite3
import stat
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykubelet.controlplane.storage.interface import (
    MAX_REQUEST_BYTES,
    CompactedError,
    ConflictError,
    Event,
    KeyExistsError,
    KeyValue,
    NotFoundError,
    RequestTooLargeError,
    StorageError,
)

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kine (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    created INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    lease INTEGER NOT NULL DEFAULT 0,
    value BLOB,
    old_value BLOB
);
CREATE INDEX IF NOT EXISTS kine_name_id ON kine (name, id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

_INSERT = (
    "INSERT INTO kine (id, name, created, deleted, create_revision, prev_revision, value, "
    "old_value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)

MAX_BATCH = 1024  # writes per transaction
COMPACT_CHUNK = 2000  # revisions compacted per step, so writers are never held up long

_CREATE, _UPDATE, _DELETE = "create", "update", "delete"


@dataclass(slots=True)
class _Op:
    kind: str
    key: str = ""
    value: bytes = b""
    expected: int | None = None
    future: asyncio.Future[Any] | None = None
    call: Callable[[sqlite3.Connection], Any] | None = None  # reads / maintenance


@dataclass(slots=True)
class _Batch:
    events: list[Event] = field(default_factory=list)
    results: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = field(
        default_factory=list
    )
    revision: int = 0


class SQLiteStorage:
    """A :class:`~pykubelet.controlplane.storage.interface.Storage` on one SQLite file."""

    def __init__(self, path: str | Path, *, durable: bool = True) -> None:
        self.path = str(path)
        self.durable = durable
        self._queue: queue.SimpleQueue[_Op | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # owned by the writer thread once started: key -> (create_revision, mod_revision);
        # values stay on disk (the watch cache holds the served copies)
        self._live: dict[str, tuple[int, int]] = {}
        self._write_rev = 0
        # owned by the event loop
        self._rev = 0
        self._compacted = 0
        self._subscribers: list[asyncio.Queue[list[Event]]] = []
        self._conn: sqlite3.Connection | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.path != ":memory:":
            _make_private(Path(self.path))
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        await asyncio.to_thread(self._open, self._conn)
        self._rev = self._write_rev
        self._thread = threading.Thread(target=self._writer, name="store-writer", daemon=True)
        self._thread.start()

    def _open(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.executescript(_SCHEMA)
        rows = conn.execute(
            "SELECT k.name, k.create_revision, k.id FROM kine k JOIN "
            "(SELECT name, MAX(id) AS id FROM kine GROUP BY name) m ON k.id = m.id "
            "WHERE k.deleted = 0"
        ).fetchall()
        self._live = {name: (crev, rev) for name, crev, rev in rows}
        top = conn.execute("SELECT MAX(id) FROM kine").fetchone()[0] or 0
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'kine'").fetchone()
        compacted = conn.execute("SELECT value FROM meta WHERE key = 'compact_rev'").fetchone()
        self._compacted = compacted[0] if compacted else 0
        self._write_rev = max(top, seq[0] if seq else 0, self._compacted)
        log.info("store %s: %d keys at revision %d", self.path, len(self._live), self._write_rev)

    async def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            await asyncio.to_thread(self._thread.join)
            self._thread = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ reads
    def current_revision(self) -> int:
        return self._rev

    def compacted_revision(self) -> int:
        return self._compacted

    async def get(self, key: str) -> KeyValue | None:
        def read(conn: sqlite3.Connection) -> KeyValue | None:
            revs = self._live.get(key)
            if revs is None:
                return None
            (value,) = conn.execute("SELECT value FROM kine WHERE id = ?", (revs[1],)).fetchone()
            return KeyValue(key, bytes(value), revs[0], revs[1])

        result: KeyValue | None = await self._submit(_Op("read", call=read))
        return result

    async def list_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        # a consistent cut: read in the writer thread, between batches
        def read(conn: sqlite3.Connection) -> tuple[list[KeyValue], int]:
            keys = sorted(k for k in self._live if k.startswith(prefix))
            values = self._values(conn, [self._live[k][1] for k in keys])
            items = [KeyValue(k, values[self._live[k][1]], *self._live[k]) for k in keys]
            return items, self._write_rev

        result: tuple[list[KeyValue], int] = await self._submit(_Op("read", call=read))
        return result

    @staticmethod
    def _values(conn: sqlite3.Connection, revisions: list[int]) -> dict[int, bytes]:
        """The values written at ``revisions`` (rows by primary key, in chunks)."""
        out: dict[int, bytes] = {}
        for i in range(0, len(revisions), 500):
            chunk = revisions[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for rev, value in conn.execute(f"SELECT id, value FROM kine WHERE id IN ({marks})",
                                           chunk):
                out[rev] = bytes(value)
        return out

    async def history(self, from_revision: int) -> list[Event]:
        if from_revision <= self._compacted:
            raise CompactedError(from_revision, self._compacted)

        def read(conn: sqlite3.Connection) -> list[Event]:
            rows = conn.execute(
                "SELECT id, name, created, deleted, create_revision, prev_revision, value, "
                "old_value FROM kine WHERE id >= ? ORDER BY id",
                (from_revision,),
            ).fetchall()
            return [_row_event(r) for r in rows]

        events: list[Event] = await self._submit(_Op("read", call=read))
        return events

    # ------------------------------------------------------------------ writes
    async def create(self, key: str, value: bytes) -> KeyValue:
        _check_size(key, value)
        result: KeyValue = await self._submit(_Op(_CREATE, key, value))
        return result

    async def update(self, key: str, value: bytes, expected_revision: int) -> KeyValue:
        _check_size(key, value)
        result: KeyValue = await self._submit(_Op(_UPDATE, key, value, expected_revision))
        return result

    async def delete(self, key: str, expected_revision: int | None = None) -> KeyValue:
        result: KeyValue = await self._submit(_Op(_DELETE, key, b"", expected_revision))
        return result

    async def compact(self, revision: int) -> None:
        revision = min(revision, self._rev)
        start = self._compacted
        while start < revision:
            end = min(revision, start + COMPACT_CHUNK)
            await self._submit(_Op("read", call=functools.partial(self._compact_step, upto=end)))
            start = end
        self._compacted = max(self._compacted, revision)

    def _compact_step(self, conn: sqlite3.Connection, upto: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "DELETE FROM kine WHERE id <= ? AND (deleted = 1 OR id < "
                "(SELECT MAX(k2.id) FROM kine k2 WHERE k2.name = kine.name AND k2.id <= ?))",
                (upto, upto),
            )
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('compact_rev', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (upto,),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    async def checkpoint(self) -> None:
        """Fold the WAL back into the database file (after a compaction)."""
        await self._submit(_Op("read", call=self._checkpoint))

    @staticmethod
    def _checkpoint(conn: sqlite3.Connection) -> None:
        # the pragma answers a row: read it and close the cursor, or its statement stays in
        # progress and the next batch's COMMIT fails ("SQL statements in progress")
        cur = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            cur.fetchall()
        finally:
            cur.close()

    # ------------------------------------------------------------------ watch
    async def watch(self, from_revision: int) -> AsyncIterator[list[Event]]:
        q: asyncio.Queue[list[Event]] = asyncio.Queue()
        self._subscribers.append(q)
        try:
            last = from_revision - 1
            if from_revision <= self._rev:
                past = await self.history(from_revision)
                if past:
                    last = past[-1].kv.mod_revision
                    yield past
            while True:
                batch = await q.get()
                if batch and batch[-1].kv.mod_revision > last:
                    fresh = [e for e in batch if e.kv.mod_revision > last]
                    last = fresh[-1].kv.mod_revision
                    yield fresh
        finally:
            self._subscribers.remove(q)

    # ------------------------------------------------------------------ the writer thread
    async def _submit(self, op: _Op) -> Any:
        if self._thread is None or self._loop is None:
            raise StorageError("store is not started")
        op.future = self._loop.create_future()
        self._queue.put(op)
        return await op.future

    def _writer(self) -> None:
        conn = self._conn
        assert conn is not None
        assert self._loop is not None
        loop = self._loop
        while True:
            first = self._queue.get()
            if first is None:
                return
            ops = [first]
            while len(ops) < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)  # stop after this batch
                    break
                ops.append(nxt)
            writes = [op for op in ops if op.kind != "read"]
            batch = self._commit(conn, writes) if writes else _Batch(revision=self._write_rev)
            for op in ops:
                if op.kind != "read":
                    continue
                assert op.future is not None
                try:
                    batch.results.append((op.future, op.call(conn) if op.call else None, None))
                except BaseException as exc:
                    batch.results.append((op.future, None, exc))
            loop.call_soon_threadsafe(self._publish, batch)

    def _commit(self, conn: sqlite3.Connection, writes: list[_Op]) -> _Batch:
        batch = _Batch()
        overlay: dict[str, KeyValue | None] = {}
        rows: list[tuple[Any, ...]] = []
        rev = self._write_rev
        outcomes: list[tuple[_Op, Any, BaseException | None]] = []
        # the values updates and deletes replace, read once for the whole batch
        wanted = [self._live[op.key][1] for op in writes
                  if op.kind != _CREATE and op.key in self._live]
        stored = self._values(conn, wanted) if wanted else {}
        for op in writes:
            if op.key in overlay:
                cur = overlay[op.key]
            else:
                revs = self._live.get(op.key)
                cur = None if revs is None else KeyValue(op.key, stored.get(revs[1], b""), *revs)
            if op.kind == _CREATE:
                if cur is not None:
                    outcomes.append((op, None, KeyExistsError(op.key)))
                    continue
                rev += 1
                kv = KeyValue(op.key, op.value, rev, rev)
                rows.append((rev, op.key, 1, 0, rev, 0, op.value, None))
                batch.events.append(Event(kv, None))
                overlay[op.key] = kv
                outcomes.append((op, kv, None))
                continue
            if cur is None:
                outcomes.append((op, None, NotFoundError(op.key)))
                continue
            if op.expected is not None and op.expected != cur.mod_revision:
                outcomes.append((op, None, ConflictError(op.key, op.expected, cur.mod_revision)))
                continue
            rev += 1
            if op.kind == _UPDATE:
                kv = KeyValue(op.key, op.value, cur.create_revision, rev)
                rows.append((rev, op.key, 0, 0, cur.create_revision, cur.mod_revision,
                             op.value, cur.value))
                batch.events.append(Event(kv, cur))
                overlay[op.key] = kv
            else:
                kv = KeyValue(op.key, cur.value, cur.create_revision, rev)
                rows.append((rev, op.key, 0, 1, cur.create_revision, cur.mod_revision,
                             cur.value, cur.value))
                batch.events.append(Event(kv, cur, deleted=True))
                overlay[op.key] = None
            outcomes.append((op, kv, None))
        if rows:
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(_INSERT, rows)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                log.error("store commit failed: %s", exc)
                err = StorageError(f"store write failed: {exc}")
                batch.events = []
                batch.results = [(op.future, None, err) for op in writes if op.future]
                batch.revision = self._write_rev
                return batch
            for key, value in overlay.items():
                if value is None:
                    self._live.pop(key, None)
                else:
                    self._live[key] = (value.create_revision, value.mod_revision)
            self._write_rev = rev
        batch.revision = self._write_rev
        batch.results = [(op.future, res, exc) for op, res, exc in outcomes if op.future]
        return batch

    def _publish(self, batch: _Batch) -> None:
        """On the loop: advance the revision, feed the watchers, then answer the callers."""
        if batch.revision > self._rev:
            self._rev = batch.revision
        if batch.events:
            for q in self._subscribers:
                q.put_nowait(batch.events)
        for fut, result, exc in batch.results:
            if fut.done():
                continue
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(result)


def _check_size(key: str, value: bytes) -> None:
    """etcd's request size limit, so both stores refuse the same objects."""
    if len(key) + len(value) > MAX_REQUEST_BYTES:
        raise RequestTooLargeError()


def _make_private(path: Path) -> None:
    """The store file and its WAL and shared-memory files 0600 (SQLite gives the -wal and
    -shm files the database file's mode), made so before SQLite opens them, and fixed when
    an older version left them readable: Secrets are in them. A directory made here 0700."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        with contextlib.suppress(FileNotFoundError):
            if stat.S_IMODE(name.stat().st_mode) != 0o600:
                os.chmod(name, 0o600)


def _row_event(row: tuple[Any, ...]) -> Event:
    rev, name, created, deleted, crev, prev_rev, value, old_value = row
    prev = None
    if not created:
        prev = KeyValue(name, bytes(old_value or b""), crev, prev_rev)
    kv = KeyValue(name, bytes(value or b""), crev, rev)
    return Event(kv, prev, deleted=bool(deleted))
