"""What the garbage collector does with one object, decided from the objects alone
(garbagecollector.go: classifyReferences, attemptToDeleteItem,
processDeletingDependentsItem, orphanDependents). No I/O: the collector looks the owners
and dependents up and carries the answer out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykubelet.controlplane.registry.gcpolicy import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN,
)

Obj = dict[str, Any]

SOLID = "solid"  # the owner exists (same uid) and is not waiting for its dependents
DANGLING = "dangling"  # no such owner, or one of another uid
WAITING = "waitingForDependentsDeletion"  # the owner is being deleted in the foreground
INVALID = "invalid"  # a cluster-scoped object naming a namespaced owner: never resolves


@dataclass(frozen=True)
class Action:
    """One step for the collector: ``verb`` is one of
    ``none``, ``delete`` (with ``policy``), ``patch-owners`` (drop the ``uids`` from the
    object's ownerReferences), ``unblock-then-delete`` (blockOwnerDeletion false on every
    reference, then delete in the foreground), ``remove-finalizer`` (``finalizer``),
    ``enqueue`` (the ``uids`` of dependents to attempt first) and ``forget`` (an error a
    retry cannot mend)."""

    verb: str
    policy: str = ""
    uids: tuple[str, ...] = ()
    finalizer: str = ""
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


NOTHING = Action("none")


def meta(obj: Obj) -> Obj:
    m: Obj = obj.get("metadata") or {}
    return m


def owner_refs(obj: Obj) -> list[Obj]:
    return [r for r in meta(obj).get("ownerReferences") or [] if isinstance(r, dict)]


def is_deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def deleting_dependents(obj: Obj) -> bool:
    """Being deleted in the foreground (the owner waits for its blocking dependents)."""
    return is_deleting(obj) and FINALIZER_DELETE_DEPENDENTS in (meta(obj).get("finalizers")
                                                                or [])


def orphaning(obj: Obj) -> bool:
    return is_deleting(obj) and FINALIZER_ORPHAN in (meta(obj).get("finalizers") or [])


def owner_state(ref: Obj, owner: Obj | None, owner_namespaced: bool,
                dependent_namespace: str) -> str:
    """One reference classified as upstream's isDangling and classifyReferences do. The
    owner is looked up by kind and name in the dependent's namespace (or cluster-wide for
    a cluster-scoped kind): an owner of the same name elsewhere, or of another uid, is
    not this reference's owner."""
    if not dependent_namespace and owner_namespaced:
        return INVALID
    if owner is None or meta(owner).get("uid") != ref.get("uid"):
        return DANGLING
    if deleting_dependents(owner):
        return WAITING
    return SOLID


def attempt_to_delete(item: Obj, states: dict[str, str], dependents: list[Obj]) -> Action:
    """attemptToDeleteItem: ``states`` maps each owner reference's uid to its
    :func:`owner_state`; ``dependents`` are the objects naming ``item`` as an owner."""
    if is_deleting(item) and not deleting_dependents(item):
        return NOTHING  # already going, and not waiting for anything of ours
    if deleting_dependents(item):
        return deleting_dependents_item(item, dependents)
    refs = owner_refs(item)
    if not refs:
        return NOTHING
    if any(states.get(str(r.get("uid"))) == INVALID for r in refs):
        return Action("forget", reason="a cluster-scoped object cannot have a namespaced "
                                       "owner")
    solid = [r for r in refs if states.get(str(r.get("uid"))) == SOLID]
    dangling = [r for r in refs if states.get(str(r.get("uid"))) == DANGLING]
    waiting = [r for r in refs if states.get(str(r.get("uid"))) == WAITING]
    if solid:
        if not dangling and not waiting:
            return NOTHING  # a live owner keeps it
        # keep the object for its live owners; forget the others
        return Action("patch-owners", uids=tuple(str(r.get("uid")) for r in
                                                 [*dangling, *waiting]))
    if waiting and dependents:
        if any(deleting_dependents(d) for d in dependents):
            # a dependent waits for it while an owner waits for it: break the possible
            # cycle by not blocking, then delete in the foreground
            return Action("unblock-then-delete", policy="Foreground")
        return Action("delete", policy="Foreground")
    finalizers = meta(item).get("finalizers") or []
    if FINALIZER_ORPHAN in finalizers:
        policy = "Orphan"
    elif FINALIZER_DELETE_DEPENDENTS in finalizers:
        policy = "Foreground"
    else:
        policy = "Background"
    return Action("delete", policy=policy)


def blocking(owner: Obj, dependent: Obj) -> bool:
    """The dependent names ``owner`` with blockOwnerDeletion: true."""
    uid = meta(owner).get("uid")
    return any(r.get("uid") == uid and r.get("blockOwnerDeletion") is True
               for r in owner_refs(dependent))


def deleting_dependents_item(item: Obj, dependents: list[Obj]) -> Action:
    """processDeletingDependentsItem: with no blocking dependent left the
    foregroundDeletion finalizer goes (and with it the object); else the blocking
    dependents not yet being deleted are attempted first."""
    blockers = [d for d in dependents if blocking(item, d)]
    if not blockers:
        return Action("remove-finalizer", finalizer=FINALIZER_DELETE_DEPENDENTS)
    todo = tuple(str(meta(d).get("uid")) for d in blockers if not is_deleting(d))
    return Action("enqueue", uids=todo) if todo else NOTHING


def without_owner(dependent: Obj, owner_uid: str) -> Obj | None:
    """The dependent with ``owner_uid`` dropped from its ownerReferences (orphaning), or
    None when it does not name that owner."""
    refs = owner_refs(dependent)
    kept = [r for r in refs if r.get("uid") != owner_uid]
    if len(kept) == len(refs):
        return None
    m = meta(dependent)
    if kept:
        m["ownerReferences"] = kept
    else:
        m.pop("ownerReferences", None)
    return dependent


def without_owners(obj: Obj, uids: tuple[str, ...]) -> Obj | None:
    """The object with every reference to ``uids`` dropped, or None when none is there."""
    out: Obj | None = None
    for uid in uids:
        out = without_owner(obj, uid) or out
    return out


def unblocked(obj: Obj) -> Obj | None:
    """Every owner reference with blockOwnerDeletion false (unblockOwnerReferences), or
    None when none blocked."""
    changed = False
    for r in owner_refs(obj):
        if r.get("blockOwnerDeletion") is True:
            r["blockOwnerDeletion"] = False
            changed = True
    return obj if changed else None


def without_finalizer(obj: Obj, finalizer: str) -> Obj | None:
    fins = meta(obj).get("finalizers") or []
    if finalizer not in fins:
        return None
    kept = [f for f in fins if f != finalizer]
    if kept:
        meta(obj)["finalizers"] = kept
    else:
        meta(obj).pop("finalizers", None)
    return obj
