"""The namespace controller (pkg/controller/namespace): a namespace being deleted has its
content removed (pods with their grace periods), then its ``kubernetes`` finalizer, and
then it is gone."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.namespaces import FINALIZER_KUBERNETES
from pykubelet.controlplane.registry.resources import NAMESPACES
from pykubelet.controlplane.registry.store import Context, DeleteOptions
from pykubelet.controlplane.registry.strategy import StatusStrategy

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

PERIOD_S = 2.0


class _Finalize(StatusStrategy):
    """namespaces/finalize: only spec.finalizers changes."""

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        finalizers = (new.get("spec") or {}).get("finalizers")
        super().prepare_for_update(new, old)
        new["status"] = old.get("status") or {}
        new["spec"] = {"finalizers": finalizers} if finalizers else {}


def _drop_kubernetes_finalizer(ns: dict[str, Any]) -> dict[str, Any]:
    spec = ns.setdefault("spec", {})
    spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != FINALIZER_KUBERNETES]
    return ns


async def run_namespace_controller(cp: ControlPlane) -> None:
    registry = cp.registry
    namespaces = registry.store(NAMESPACES)
    while True:
        await asyncio.sleep(PERIOD_S)
        for entry in list(namespaces.select(None, None)):
            if entry.attrs.fields.get("status.phase") != "Terminating":
                continue
            ns = entry.attrs.name
            remaining = 0
            for store in registry.stores.values():
                if not store.info.namespaced:
                    continue
                for obj in list(store.select(ns, None)):
                    remaining += 1
                    if (obj.obj().get("metadata") or {}).get("deletionTimestamp"):
                        continue
                    try:
                        await store.delete(Context(), ns, obj.attrs.name, DeleteOptions())
                    except errors.StatusError as exc:
                        if exc.code != 404:
                            log.warning("namespace %s: deleting %s %s: %s", ns,
                                        store.info.resource, obj.attrs.name, exc.message)
            if remaining:
                continue
            try:
                await namespaces.guaranteed_update("", ns, _drop_kubernetes_finalizer,
                                                   _Finalize(namespaces.strategy))
                log.info("namespace %s: content removed, namespace deleted", ns)
            except errors.StatusError as exc:
                if exc.code != 404:
                    log.warning("namespace %s: finalize: %s", ns, exc.message)
