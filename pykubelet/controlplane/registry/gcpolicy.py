"""Which garbage-collection finalizers a delete puts on an object (apiserver's
registry/generic/registry/store.go: shouldOrphanDependents, shouldDeleteDependents,
deletionFinalizersForGarbageCollection).

The API server does not collect anything itself: a delete that asks to orphan the
object's dependents (``propagationPolicy: Orphan``, the legacy ``orphanDependents: true``,
or a resource whose default is to orphan) puts the ``orphan`` finalizer on it; one that
asks for ``Foreground`` puts ``foregroundDeletion``. The object then stays, marked with
``deletionTimestamp``, until the garbage collector has done that work and removed the
finalizer. Background (the default of most resources) puts neither: the object goes at
once and the collector deletes its dependents afterwards."""

from __future__ import annotations

from collections.abc import Sequence

FINALIZER_ORPHAN = "orphan"  # metav1.FinalizerOrphanDependents
FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"  # metav1.FinalizerDeleteDependents

# rest.GarbageCollectionPolicy
DELETE_DEPENDENTS = "DeleteDependents"
ORPHAN_DEPENDENTS = "OrphanDependents"
UNSUPPORTED = "Unsupported"


def should_orphan(finalizers: Sequence[str], policy: str | None,
                  orphan_dependents: bool | None, default: str) -> bool:
    """The options first, then the object's finalizers, then the resource's default."""
    if default == UNSUPPORTED:
        return False
    if orphan_dependents is not None:
        return orphan_dependents
    if policy == "Orphan":
        return True
    if policy in ("Background", "Foreground"):
        return False
    for f in finalizers:
        if f == FINALIZER_ORPHAN:
            return True
        if f == FINALIZER_DELETE_DEPENDENTS:
            return False
    return default == ORPHAN_DEPENDENTS


def should_delete_dependents(finalizers: Sequence[str], policy: str | None,
                             orphan_dependents: bool | None, default: str) -> bool:
    """Foreground: asked in the options, or already asked (the finalizer is there)."""
    if default == UNSUPPORTED or orphan_dependents is not None:
        return False
    if policy == "Foreground":
        return True
    if policy in ("Background", "Orphan"):
        return False
    return FINALIZER_DELETE_DEPENDENTS in finalizers


def deletion_finalizers(finalizers: Sequence[str], policy: str | None,
                        orphan_dependents: bool | None, default: str) -> list[str] | None:
    """The object's finalizers after this delete, or None when they stay as they are."""
    orphan = should_orphan(finalizers, policy, orphan_dependents, default)
    foreground = should_delete_dependents(finalizers, policy, orphan_dependents, default)
    new = [f for f in finalizers if f not in (FINALIZER_ORPHAN, FINALIZER_DELETE_DEPENDENTS)]
    if orphan:
        new.append(FINALIZER_ORPHAN)
    if foreground:
        new.append(FINALIZER_DELETE_DEPENDENTS)
    return None if set(new) == set(finalizers) else new
