"""The registry alone, as the control plane builds it, over an in-memory SQLite store and
its watch cache: no HTTP, no files, no processes (upstream's registry tests over
etcd3testing, with our store seam)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pykubelet.controlplane.registry.install import new_registry
from pykubelet.controlplane.registry.namespaces import SYSTEM_NAMESPACES
from pykubelet.controlplane.registry.resources import NAMESPACES
from pykubelet.controlplane.registry.store import Context, Registry
from pykubelet.controlplane.storage.cacher import Cacher
from pykubelet.controlplane.storage.sqlite import SQLiteStorage


@asynccontextmanager
async def memory_registry(namespaces: tuple[str, ...] = SYSTEM_NAMESPACES
                          ) -> AsyncIterator[Registry]:
    """A started registry with ``namespaces`` created; closed on the way out."""
    storage = SQLiteStorage(":memory:", durable=False)
    await storage.start()
    cacher = Cacher(storage)
    try:
        registry = new_registry(storage, cacher)
        await cacher.start()
        for name in namespaces:
            await registry.store(NAMESPACES).create(
                Context(), "", {"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": name}})
        yield registry
    finally:
        await cacher.stop()
        await storage.close()
