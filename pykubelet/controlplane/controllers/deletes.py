"""A controller's delete of an object it owns or made (an old ReplicaSet, a
ControllerRevision past the history limit, a stale EndpointSlice or Endpoints): a NotFound
means it is already gone, which is what the controller wanted, so it is no error (upstream's
``if err != nil && !apierrors.IsNotFound(err)``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.store import Context, DeleteOptions

if TYPE_CHECKING:
    from pykubelet.controlplane.registry.store import GenericStore


async def delete_unless_gone(store: GenericStore, namespace: str, name: str) -> None:
    """Delete ``namespace/name``; a 404 passes, any other error is raised."""
    try:
        await store.delete(Context(), namespace, name, DeleteOptions())
    except errors.StatusError as exc:
        if exc.code != 404:
            raise
