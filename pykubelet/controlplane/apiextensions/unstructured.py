"""A strategy over objects no class models (apimachinery's unstructured.Unstructured):
the metadata decoded as the object model's ObjectMeta, everything else kept as JSON.

The generic store works on a decoded view whose ``metadata`` it fills (uid,
creationTimestamp, generateName) and whose ``status`` a create clears; :class:`Unstructured`
is that view for CustomResourceDefinitions and custom resources, so both go through the
same store as every built-in kind. Subclasses say what the rest of the object must be
(:meth:`UnstructuredStrategy.decode_content`, :meth:`UnstructuredStrategy.content_errors`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.machinery import codec
from pykubelet.api.machinery.field import FieldError
from pykubelet.api.machinery.validation import name_is_dns_subdomain
from pykubelet.api.meta_validation import validate_object_meta, validate_object_meta_update
from pykubelet.api.types import ObjectMeta
from pykubelet.controlplane.registry.model import STRICT, WARN, UnknownFieldsError
from pykubelet.controlplane.registry.strategy import Obj, Strategy


@dataclass
class Unstructured:
    """An object as the store handles it: typed metadata, the rest as JSON."""

    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    content: Obj = field(default_factory=dict)  # apiVersion, kind, spec, status, ...

    @property
    def status(self) -> Any:
        return self.content.get("status")

    @status.setter
    def status(self, value: Any) -> None:
        if value is None:
            self.content.pop("status", None)
        else:
            self.content["status"] = value


class UnstructuredStrategy(Strategy):
    """Decoding, encoding and metadata rules of untyped objects."""

    def decode_content(self, content: Obj, unknown: str) -> list[str]:
        """Prepare the object's content in place (prune, default); the unknown fields
        dropped (strict decoding refuses them)."""
        return []

    def content_errors(self, obj: Unstructured) -> list[FieldError]:
        """The rules of the content (a schema's, a definition's)."""
        return []

    def content_update_errors(self, new: Unstructured, old: Unstructured) -> list[FieldError]:
        return self.content_errors(new)

    def decode_typed(self, body: Obj, unknown: str = STRICT) -> tuple[Obj, Any, list[str]]:
        meta_body = body.get("metadata")
        if meta_body is None:
            meta_body = {}
        found: list[str] = []
        meta = codec.decode(ObjectMeta, meta_body, "metadata", unknown=found)
        content = {k: copy.deepcopy(v) for k, v in body.items() if k != "metadata"}
        found += self.decode_content(content, unknown)
        if unknown == STRICT and found:
            raise UnknownFieldsError(found)
        typed = Unstructured(meta, content)
        warnings = [f'unknown field "{p}"' for p in found] if unknown == WARN else []
        return self.encoded(typed), typed, warnings

    def typed(self, obj: Obj) -> Any:
        meta = codec.decode(ObjectMeta, obj.get("metadata") or {}, "metadata", unknown=[])
        return Unstructured(meta, {k: v for k, v in obj.items() if k != "metadata"})

    def encoded(self, typed: Any) -> Obj:
        content = typed.content
        out: Obj = {"apiVersion": content.get("apiVersion"), "kind": content.get("kind"),
                    "metadata": codec.encode(typed.metadata)}
        for k, v in content.items():
            if k not in out:
                out[k] = copy.deepcopy(v)
        return out

    def patch_meta(self, path: tuple[str, ...]) -> Any:
        return None

    def validate_typed(self, typed: Any) -> list[Any]:
        errs: list[Any] = validate_object_meta(typed.metadata, namespaced=self.info.namespaced,
                                               name_fn=name_is_dns_subdomain)
        return errs + self.content_errors(typed)

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        n, o = self.typed(new), self.typed(old)
        errs: list[Any] = validate_object_meta_update(n.metadata, o.metadata)
        return errs + self.content_update_errors(n, o)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Any]:
        n, o = self.typed(new), self.typed(old)
        errs: list[Any] = validate_object_meta_update(n.metadata, o.metadata)
        return errs + self.content_update_errors(n, o)


__all__ = ["Unstructured", "UnstructuredStrategy"]
