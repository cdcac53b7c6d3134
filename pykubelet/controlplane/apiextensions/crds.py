"""apiextensions.k8s.io/v1 CustomResourceDefinitions as a resource
(pkg/registry/customresourcedefinition): defaults, the definition's rules, status kept
apart, and the deletion that waits for the definition's objects to go.

A delete stamps deletionTimestamp, adds the ``customresourcecleanup.apiextensions.k8s.io``
finalizer and the Terminating condition (upstream's REST.Delete); the cleanup
controller (:mod:`.controller`) deletes every custom resource, then removes the
finalizer and the store removes the definition.
"""

from __future__ import annotations

from typing import Any

from pykubelet.api.kinds import Kind
from pykubelet.api.machinery.field import FieldError
from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane.apiextensions import validation
from pykubelet.controlplane.apiextensions.unstructured import Unstructured, UnstructuredStrategy
from pykubelet.controlplane.registry.resources import ResourceInfo, Subresource
from pykubelet.controlplane.registry.strategy import Obj

GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"

# served by apiextensions beside the built-in resources of registry/resources.py (as
# apiextensions-apiserver is kube-apiserver's delegate); objects kept as JSON
CRD_KIND: Kind[Any] = Kind(GROUP, "v1", "CustomResourceDefinition", "customresourcedefinitions",
                           False, Unstructured)
CRDS = ResourceInfo(
    CRD_KIND, "customresourcedefinition", f"/registry/{GROUP}/customresourcedefinitions/",
    ("crd", "crds"), ("api-extensions",),
    subresources=(Subresource("status", "CustomResourceDefinition", ("get", "patch", "update"),
                              GROUP, "v1"),),
)

def storage_version(crd: Obj) -> str:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return str(v.get("name", ""))
    return ""


def condition(crd: Obj, ctype: str) -> Obj | None:
    for c in (crd.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def set_condition(crd: Obj, ctype: str, status: str, reason: str, message: str) -> None:
    """SetCRDCondition: the transition time moves only when the status changes."""
    conditions = crd.setdefault("status", {}).setdefault("conditions", [])
    for c in conditions:
        if c.get("type") == ctype:
            if c.get("status") != status:
                c["lastTransitionTime"] = rfc3339(now())
            c.update(status=status, reason=reason, message=message)
            return
    conditions.append({"type": ctype, "status": status, "lastTransitionTime": rfc3339(now()),
                       "reason": reason, "message": message})


class CRDStrategy(UnstructuredStrategy):
    info = CRDS
    has_status = True
    tracks_generation = True

    def decode_content(self, content: Obj, unknown: str) -> list[str]:
        validation.set_defaults(content)
        return []

    def prepare_typed_for_create(self, typed: Any) -> None:
        super().prepare_typed_for_create(typed)
        stored = storage_version(typed.content)
        typed.status = {"conditions": [], "acceptedNames": {"plural": "", "kind": ""},
                        "storedVersions": [stored] if stored else []}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        stored = storage_version(new)
        status = new.get("status")
        if stored and isinstance(status, dict):
            versions = status.setdefault("storedVersions", [])
            if stored not in versions:
                versions.append(stored)

    def content_errors(self, obj: Unstructured) -> list[FieldError]:
        return validation.validate(obj.content, obj.metadata)

    def content_update_errors(self, new: Unstructured, old: Unstructured) -> list[FieldError]:
        return validation.validate_update(new.content, new.metadata, old.content)

    def pending_finalizers(self, obj: Obj) -> bool:
        """A definition is never deleted at once: its first delete only starts it."""
        return not (obj.get("metadata") or {}).get("deletionTimestamp")

    def begin_deletion(self, obj: Obj) -> None:
        meta = obj.setdefault("metadata", {})
        finalizers = meta.setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        set_condition(obj, "Terminating", "True", "InstanceDeletionPending",
                      "CustomResourceDefinition marked for deletion; CustomResource deletion "
                      "will begin soon")


__all__ = ["CLEANUP_FINALIZER", "CRDS", "CRDStrategy", "condition", "set_condition",
           "storage_version"]
