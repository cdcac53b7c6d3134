"""What the API layer asks of a store, shaped like etcd v3's KV and Watch so that an etcd
backend drops in beside SQLite without touching anything above it.

One global revision counts every write; an object's ``mod_revision`` is its
resourceVersion. Writes are conditional the way etcd transactions are: ``create`` only
if the key is absent, ``update``/``delete`` only if the key is still at the revision the
caller read (kube-apiserver's GuaranteedUpdate retries on a conflict). A write returns
only once it is durable. ``watch`` replays every write after a revision, in revision
order, with each write's previous value, until it is cancelled; a revision already
compacted away is refused with CompactedError (the API's 410 Gone).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

# the seam's names, as the package re-exports them (storage/__init__.py)
__all__ = [
    "CompactedError",
    "ConflictError",
    "Event",
    "KeyExistsError",
    "KeyValue",
    "NotFoundError",
    "Progress",
    "RequestTooLargeError",
    "Storage",
    "StorageError",
]

class StorageError(Exception):
    """Base of the store's errors; the message is for operators."""


# etcd's default --max-request-bytes (1.5 MiB): a write larger than that is refused
MAX_REQUEST_BYTES = 1536 * 1024


class RequestTooLargeError(StorageError):
    """A write over MAX_REQUEST_BYTES, refused as etcd refuses it (ErrRequestTooLarge);
    kube-apiserver answers its message as a 500."""

    def __init__(self) -> None:
        super().__init__("etcdserver: request is too large")


class NotFoundError(StorageError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}")
        self.key = key


class KeyExistsError(StorageError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key exists: {key}")
        self.key = key


class ConflictError(StorageError):
    """The key is no longer at the revision the caller read."""

    def __init__(self, key: str, expected: int, actual: int) -> None:
        super().__init__(f"conflict on {key}: expected revision {expected}, found {actual}")
        self.key = key
        self.expected = expected
        self.actual = actual


class CompactedError(StorageError):
    """The requested revision was compacted: the caller must list again."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"revision {requested} is compacted (compacted up to {compacted})")
        self.requested = requested
        self.compacted = compacted


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int


@dataclass(frozen=True, slots=True)
class Event:
    """One write: ``kv`` is the new state (for a delete: the tombstone's key and revision,
    with the value the key held); ``prev`` what the key held before (None on create)."""

    kv: KeyValue
    prev: KeyValue | None
    deleted: bool = False

    @property
    def created(self) -> bool:
        return self.prev is None and not self.deleted


class Progress(list[Event]):
    """A batch without events from a watch: the store vouches that every write under the
    watched range up to ``revision`` was sent (etcd's progress notification). A watch
    cache moves its revision there, so bookmarks name it."""

    def __init__(self, revision: int) -> None:
        super().__init__()
        self.revision = revision


class Storage(Protocol):
    """A revisioned key-value store (see the module docstring)."""

    path: str  # where the store is (a file, or etcd's endpoints), for logs

    async def start(self) -> None:
        """Open the store (create it if new); repairs what a crash left."""

    async def close(self) -> None: ...

    def current_revision(self) -> int: ...

    def compacted_revision(self) -> int: ...

    async def get(self, key: str) -> KeyValue | None: ...

    async def list_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every live key under ``prefix`` (sorted by key) and the revision it reflects."""

    async def create(self, key: str, value: bytes) -> KeyValue: ...

    async def update(self, key: str, value: bytes, expected_revision: int) -> KeyValue: ...

    async def delete(self, key: str, expected_revision: int | None = None) -> KeyValue:
        """Remove ``key``; returns the tombstone (key, the last value, the delete's revision)."""

    def watch(self, from_revision: int) -> AsyncIterator[list[Event]]:
        """Every write with revision >= ``from_revision``, in batches, until cancelled; an
        empty batch is a :class:`Progress`."""

    async def history(self, from_revision: int) -> list[Event]:
        """The writes still on record with revision >= ``from_revision`` (for a watch cache
        that starts up and wants to serve resumed watches)."""

    async def compact(self, revision: int) -> None:
        """Forget superseded values and tombstones at or below ``revision``."""

    async def checkpoint(self) -> None:
        """Give back the space a compaction freed, where the backend needs telling."""
