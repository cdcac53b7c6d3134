"""Which owners a pod's event concerns, and what it tells their expectations: the addPod,
updatePod and deletePod handlers that pkg/controller/replicaset and pkg/controller/daemon
write alike. A pod's controller (before and after a change of controllerRef) is synced;
for an orphan, every owner whose selector picks it, so one may adopt it; a pod appearing
is a creation observed, a pod gone or newly deleting a deletion observed, when its
controllerRef resolves to the live owner (resolveControllerRef: same name and uid)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykubelet.controlplane.controllers.activepods import labels_match, meta, spec_selector
from pykubelet.controlplane.controllers.controller_ref import controller_ref
from pykubelet.controlplane.controllers.informer import entry_key, object_key
from pykubelet.controlplane.storage.cacher import DELETED, CachedEvent

if TYPE_CHECKING:
    from pykubelet.controlplane.controllers.expectations import Expectations
    from pykubelet.controlplane.registry.store import GenericStore

Obj = dict[str, Any]


def owner_event_key(ev: CachedEvent, expectations: Expectations) -> str:
    """An owner's own event (addRS, updateRS, deleteRS; the DaemonSet's alike): its key to
    queue; a deleted owner's expectations are forgotten, so one recreated under that name
    starts afresh."""
    key = entry_key(ev.entry)
    if ev.type == DELETED:
        expectations.forget(key)
    return key


def controller_keys(ev: CachedEvent, kind: str) -> set[str]:
    """The keys of the pod's controllers of ``kind`` before and after the event (a changed
    controllerRef syncs the old controller too)."""
    ns = meta(ev.entry.view()).get("namespace", "")
    keys: set[str] = set()
    for entry in (ev.prev, ev.entry):
        ref = controller_ref(entry.view()) if entry is not None else None
        if ref is not None and ref.get("kind") == kind:
            keys.add(f"{ns}/{ref.get('name', '')}")
    return keys


def resolves(owners: GenericStore, ns: str, ref: Obj) -> bool:
    """resolveControllerRef: the owner of that name exists and has the reference's uid."""
    entry = owners.lookup(ns, ref.get("name", ""))
    return entry is not None and meta(entry.obj()).get("uid") == ref.get("uid")


def pod_owner_keys(ev: CachedEvent, kind: str, owners: GenericStore,
                   expectations: Expectations) -> set[str]:
    """The owners' keys to sync for a pod's event, after recording what it tells their
    expectations."""
    new = ev.entry.view()
    old = ev.prev.view() if ev.prev is not None else None
    ns = meta(new).get("namespace", "")
    keys = controller_keys(ev, kind)
    ref = controller_ref(new)
    if ref is not None and ref.get("kind") == kind and resolves(owners, ns, ref):
        owner = f"{ns}/{ref.get('name', '')}"
        if ev.type == DELETED or (meta(new).get("deletionTimestamp") and not (
                old is not None and meta(old).get("deletionTimestamp"))):
            expectations.deletion_observed(owner, object_key(new))
        elif old is None:
            expectations.creation_observed(owner)
    if ref is None and ev.type != DELETED:
        labels = meta(new).get("labels") or {}
        for entry in owners.select(ns, None):
            if labels_match(spec_selector(entry), labels):
                keys.add(f"{ns}/{entry.attrs.name}")
    return keys
