"""Controller ownerReferences, read and written the one way every controller does:
metav1.GetControllerOf and NewControllerRef, and the adopt and release patches of
pkg/controller/controller_ref_manager.go (a controller adopts an orphan its selector picks
by becoming its controller, and releases an object it owns that no longer matches by
dropping its references). ``adopt`` and ``release`` return the changed object, or None
when there is nothing to write, so they serve as guaranteed_update mutations."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def controller_ref(obj: Obj) -> Obj | None:
    """metav1.GetControllerOf: the owner reference with controller=true."""
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def controller_of(obj: Obj, kind: str, api_version: str) -> Obj | None:
    """metav1.GetControllerOf, when the controller is of ``kind`` (a copy)."""
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind and (
                ref.get("apiVersion") == api_version):
            return dict(ref)
    return None


def new_controller_ref(owner: Obj, api_version: str, kind: str) -> Obj:
    """metav1.NewControllerRef: controller and blockOwnerDeletion set."""
    m = _meta(owner)
    return {"apiVersion": api_version, "kind": kind, "name": m.get("name", ""),
            "uid": m.get("uid", ""), "controller": True, "blockOwnerDeletion": True}


def adopt(obj: Obj, ref: Obj) -> Obj | None:
    """The adopt patch: ``ref`` appended, unless ``obj`` has a controller already or is
    being deleted (then None: not ours to take)."""
    if controller_ref(obj) is not None or _meta(obj).get("deletionTimestamp"):
        return None
    obj.setdefault("metadata", {}).setdefault("ownerReferences", []).append(ref)
    return obj


def release(obj: Obj, uid: Any) -> Obj | None:
    """The release patch: every reference to the owner ``uid`` dropped (the field too when
    none remain); None when there was none."""
    refs = _meta(obj).get("ownerReferences") or []
    kept = [r for r in refs if r.get("uid") != uid]
    if len(kept) == len(refs):
        return None
    if kept:
        obj["metadata"]["ownerReferences"] = kept
    else:
        obj["metadata"].pop("ownerReferences", None)
    return obj
