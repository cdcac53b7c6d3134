"""Namespaces (pkg/registry/core/namespace): a DNS-1123 label name, phase Active, the
``kubernetes`` finalizer; deletion marks the namespace Terminating and the namespace
controller removes its content, then the namespace."""

from __future__ import annotations

from typing import Any

from pykubelet.api.objects import NamespaceSpec, NamespaceStatus
from pykubelet.controlplane.registry.resources import NAMESPACES
from pykubelet.controlplane.registry.strategy import Obj, Strategy

FINALIZER_KUBERNETES = "kubernetes"
NAME_LABEL = "kubernetes.io/metadata.name"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class NamespaceStrategy(Strategy):
    info = NAMESPACES
    name_rule = "label"
    has_status = True
    selectable_fields = ("status.phase",)

    def prepare_typed_for_create(self, typed: Any) -> None:
        typed.spec = NamespaceSpec(finalizers=[FINALIZER_KUBERNETES])
        typed.status = NamespaceStatus(phase="Active")
        typed.metadata.labels[NAME_LABEL] = typed.metadata.name

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        new["spec"] = dict(old.get("spec") or {})
        _name_label(new)

    def fields(self, obj: Obj) -> dict[str, str]:
        return {"status.phase": (obj.get("status") or {}).get("phase", "")}

    def pending_finalizers(self, obj: Obj) -> bool:
        """spec.finalizers (the namespace controller's ``kubernetes``) hold a deleted
        namespace until its content is gone, as the namespace REST storage's Delete."""
        return bool((obj.get("spec") or {}).get("finalizers"))

    def begin_deletion(self, obj: Obj) -> None:
        """A namespace being deleted is Terminating: no new content may enter it."""
        obj.setdefault("status", {})["phase"] = "Terminating"


def _name_label(obj: Obj) -> None:
    """The apiserver labels every namespace with its own name (since 1.21)."""
    meta = obj.setdefault("metadata", {})
    meta.setdefault("labels", {})[NAME_LABEL] = meta.get("name", "")
