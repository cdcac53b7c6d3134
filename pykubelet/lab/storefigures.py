"""The size of a lab's SQLite store, as a soak compares it before and after (issue 29 item 2).

The control plane compacts every five minutes and keeps the newest 10,000 revisions
(controllers/maintenance.py); SQLite keeps the pages a compaction frees in the file for
reuse (kine vacuums only at start), so the file never shrinks while it runs, as etcd's db
needs a defrag. Two figures therefore say whether the store came back:

- the live file as the control plane left it: its bytes (with the WAL), rows, the revision
  it compacted to, and the bytes its pages in use hold (``page_count - freelist_count``);
- a consistent copy (SQLite's online backup) compacted to its current revision by the
  store's own code and vacuumed: what the control plane's compaction converges to once
  the soak's revisions leave its window, and so what must be back near its start.

Live keys are counted per resource (``/registry/<resource>/``), so a kind of object the
soak leaves behind is named.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class StoreFigures:
    file_bytes: int  # the database file and its WAL
    used_bytes: int  # pages in use (not on the freelist)
    rows: int  # revisions on record
    revision: int
    compacted_revision: int
    compacted_bytes: int  # a copy compacted to ``revision`` and vacuumed
    live_keys: Counter[str] = field(default_factory=Counter)  # resource -> live keys


def resource_of(key: str) -> str:
    """``/registry/pods/default/a`` -> ``pods``; two-level prefixes keep both parts:
    ``services/specs``, ``services/endpoints`` and a custom resource's ``<group>/<plural>``
    (kube-apiserver's key layout)."""
    parts = key.strip("/").split("/")
    if len(parts) < 2 or parts[0] != "registry":
        return key
    if len(parts) >= 3 and (parts[1] == "services" or "." in parts[1]):
        return f"{parts[1]}/{parts[2]}"
    return parts[1]


def _read(conn: sqlite3.Connection) -> tuple[int, int, int, int, Counter[str]]:
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    rows, top = conn.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM kine").fetchone()
    meta = conn.execute("SELECT value FROM meta WHERE key = 'compact_rev'").fetchone()
    live: Counter[str] = Counter()
    for (name,) in conn.execute(
            "SELECT k.name FROM kine k JOIN (SELECT name, MAX(id) AS id FROM kine GROUP BY "
            "name) m ON k.id = m.id WHERE k.deleted = 0"):
        live[resource_of(name)] += 1
    return (pages - free) * page_size, rows, top, meta[0] if meta else 0, live


async def _compact(path: Path) -> None:
    from pykubelet.controlplane.storage.sqlite import SQLiteStorage

    store = SQLiteStorage(path, durable=False)
    await store.start()
    try:
        await store.compact(store.current_revision())
        await store.checkpoint()
    finally:
        await store.close()


def measure(path: Path) -> StoreFigures:
    """The store at ``path`` now (read while the control plane runs: a read transaction
    and an online backup, never a write to the live file)."""
    file_bytes = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    with tempfile.TemporaryDirectory(prefix="soak-store-") as tmp:
        copy = Path(tmp) / "store.db"
        src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        dst = sqlite3.connect(copy)
        try:
            src.backup(dst)
            used, rows, rev, compacted, live = _read(src)
        finally:
            src.close()
            dst.close()
        asyncio.run(_compact(copy))
        conn = sqlite3.connect(copy, isolation_level=None)
        try:
            conn.execute("VACUUM")
        finally:
            conn.close()
        compacted_bytes = copy.stat().st_size
    return StoreFigures(file_bytes, used, rows, rev, compacted, compacted_bytes, live)
