"""A workload controller's status write (updateReplicaSetStatus,
updateStatefulSetStatus): through the ``status`` subresource, only when the computed status
differs from the object's, only onto the same object (uid), and nothing when it is gone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.activepods import meta
from pykubelet.controlplane.registry.store import Entry
from pykubelet.controlplane.registry.strategy import StatusStrategy

if TYPE_CHECKING:
    from pykubelet.controlplane.registry.store import GenericStore

Obj = dict[str, Any]


async def write_status(store: GenericStore, obj: Obj, status: Obj) -> Obj:
    """Replace ``obj``'s status with ``status`` unless they are equal; the object as it
    stands after (``obj`` itself when nothing was written or it is gone)."""
    if status == (obj.get("status") or {}):
        return obj
    uid = meta(obj).get("uid")

    def write(cur: Obj) -> Obj | None:
        if meta(cur).get("uid") != uid:
            return None
        cur["status"] = status
        return cur

    try:
        result = await store.guaranteed_update(
            meta(obj).get("namespace", ""), meta(obj).get("name", ""), write,
            StatusStrategy(store.strategy))
    except errors.StatusError as exc:
        if exc.code != 404:
            raise
        return obj
    return result.obj() if isinstance(result, Entry) else result
