"""apps/v1 ControllerRevision: an immutable snapshot of a workload's state (a DaemonSet's or
StatefulSet's pod template), kept so ``kubectl rollout history/undo`` and the controllers
can tell revisions apart and go back to one.

Rules as pkg/apis/apps/validation's ValidateControllerRevision and
ValidateControllerRevisionUpdate: ``data`` is mandatory and immutable, ``revision`` is
non-negative and may change (the controllers renumber a revision brought back by an
undo), the name a DNS subdomain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.field import required
from pykubelet.api.machinery.validation import name_is_dns_subdomain, validate_non_negative
from pykubelet.api.meta_validation import (
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from pykubelet.api.types import KEEP, Model, ObjectMeta


@dataclass(kw_only=True)
class ControllerRevision(Model):
    __k8s__ = "io.k8s.api.apps.v1.ControllerRevision"

    api_version: str = field(default="apps/v1", metadata=KEEP)
    kind: str = field(default="ControllerRevision", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    # runtime.RawExtension: any JSON value, kept verbatim
    data: Any = None
    revision: int = field(default=0, metadata=KEEP)


def set_defaults_controller_revision(cr: ControllerRevision) -> ControllerRevision:
    if cr.metadata.namespace == "":
        cr.metadata.namespace = "default"
    return cr


def controller_revision_errors(cr: ControllerRevision) -> list[FieldError]:
    """ValidateControllerRevision."""
    errs = validate_object_meta(cr.metadata, namespaced=True, name_fn=name_is_dns_subdomain)
    if cr.data is None:
        errs.append(required("data", "data is mandatory"))
    errs += validate_non_negative(cr.revision, "revision")
    return errs


def controller_revision_update_errors(new: ControllerRevision, old: ControllerRevision
                                      ) -> list[FieldError]:
    """ValidateControllerRevisionUpdate: the data never changes."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    errs += controller_revision_errors(new)
    errs += validate_immutable(new.data, old.data, "data")
    return errs
