"""The store seam: a revisioned key-value log shaped like etcd v3 (as kine serves it)."""

from pykubelet.controlplane.storage.interface import (
    CompactedError,
    ConflictError,
    Event,
    KeyExistsError,
    KeyValue,
    NotFoundError,
    Progress,
    RequestTooLargeError,
    Storage,
    StorageError,
)

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
