"""A resource's strategy: the hooks the generic store calls (pkg/registry/*/strategy.go).

The store knows nothing of Pods or Nodes; it asks the strategy to decode a body, prepare
an object for create or update, validate it, say which fields selectors may use, and how
a delete proceeds. Hooks are pure functions of their arguments, so they are tested
without HTTP or disk. Objects are canonical dicts (what the object model encodes).
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from typing import Any

from pykubelet.controlplane.cacher import Attrs
from pykubelet.controlplane.registry.model import STRICT, decode_typed
from pykubelet.controlplane.registry.resources import ResourceInfo

Obj = dict[str, Any]

# ---------------------------------------------------------------------------- time


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def rfc3339(t: dt.datetime) -> str:
    """metav1.Time on the wire: seconds precision, ``Z``."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(t: dt.datetime) -> str:
    """metav1.MicroTime: exactly six fractional digits (Go's typed decoding insists)."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def canonical_time(value: object, path: str, micro: bool = False) -> str | None:
    """A metav1.Time (or MicroTime) as the API writes it back: UTC, ``Z``, seconds (or
    exactly six fractional digits). Clients send any RFC 3339 form."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{path}: expected an RFC 3339 time string")
    try:
        t = parse_time(value)
    except ValueError:
        raise ValueError(f'{path}: parsing time "{value}" as RFC 3339 failed') from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return micro_time(t) if micro else rfc3339(t)


# ---------------------------------------------------------------------------- meta rules

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(rf"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def _q(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def invalid(path: str, value: object, detail: str) -> str:
    return f"{path}: Invalid value: {_q(value)}: {detail}"


def required(path: str, detail: str = "") -> str:
    return f"{path}: Required value" + (f": {detail}" if detail else "")


def forbidden(path: str, detail: str) -> str:
    return f"{path}: Forbidden: {detail}"


def dns_subdomain(path: str, value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(invalid(path, value, "must be no more than 253 characters"))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(invalid(path, value, SUBDOMAIN_MSG))
    return errs


def dns_label(path: str, value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(invalid(path, value, "must be no more than 63 characters"))
    if not _DNS1123_LABEL_RE.match(value):
        errs.append(invalid(path, value, LABEL_MSG))
    return errs


def qualified_name(path: str, value: str) -> list[str]:
    prefix, slash, name = value.rpartition("/")
    errs = []
    if slash:
        if not prefix:
            errs.append(invalid(path, value, "prefix part must be non-empty"))
        elif len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix):
            errs.append(invalid(path, value, "prefix part " + SUBDOMAIN_MSG))
    if not name:
        errs.append(invalid(path, value, "name part must be non-empty"))
    elif len(name) > 63:
        errs.append(invalid(path, value, "name part must be no more than 63 characters"))
    elif not _QUALIFIED_NAME_RE.match(name):
        errs.append(invalid(path, value, QUALIFIED_NAME_MSG))
    return errs


def label_value(path: str, value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(invalid(path, value, "must be no more than 63 characters"))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(invalid(path, value, LABEL_VALUE_MSG))
    return errs


def validate_object_meta(obj: Obj, info: ResourceInfo, name_rule: str = "subdomain") -> list[str]:
    """ValidateObjectMeta: name or generateName, namespace scope, labels, annotations."""
    meta = obj.get("metadata") or {}
    errs: list[str] = []
    name = meta.get("name", "")
    check = dns_label if name_rule == "label" else dns_subdomain
    if not name:
        if not meta.get("generateName"):
            errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs += check("metadata.name", name)
    ns = meta.get("namespace", "")
    if info.namespaced:
        if not ns:
            errs.append(required("metadata.namespace"))
        else:
            errs += dns_label("metadata.namespace", ns)
    elif ns:
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    for key, value in (meta.get("labels") or {}).items():
        errs += qualified_name("metadata.labels", key)
        errs += label_value("metadata.labels", value)
    total = 0
    for key, value in (meta.get("annotations") or {}).items():
        errs += qualified_name("metadata.annotations", key.lower())
        total += len(key) + len(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(f"metadata.annotations: Too long: must have at most "
                    f"{TOTAL_ANNOTATION_SIZE_LIMIT} bytes")
    for i, fin in enumerate(meta.get("finalizers") or []):
        errs += qualified_name(f"metadata.finalizers[{i}]", fin)
    return errs


def validate_object_meta_update(new: Obj, old: Obj) -> list[str]:
    """ValidateObjectMetaUpdate: what a client may never change."""
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    errs = []
    for fld in ("name", "namespace", "uid", "creationTimestamp"):
        if nm.get(fld) != om.get(fld):
            errs.append(invalid(f"metadata.{fld}", nm.get(fld, ""),
                                "field is immutable"))
    if om.get("deletionTimestamp") and nm.get("finalizers") is not None:
        added = set(nm.get("finalizers") or []) - set(om.get("finalizers") or [])
        if added:
            errs.append(forbidden("metadata.finalizers",
                                  "no new finalizers can be added if the object is being deleted, "
                                  f"found new finalizers {sorted(added)!r}"))
    return errs


# ---------------------------------------------------------------------------- the base


class Strategy:
    """Defaults for a resource whose objects have no spec/status split."""

    info: ResourceInfo
    name_rule = "subdomain"
    allow_create_on_update = False
    allow_unconditional_update = True
    return_deleted_object = False
    has_status = False
    selectable_fields: tuple[str, ...] = ()
    indexed_fields: tuple[str, ...] = ()

    # -- decoding
    def decode(self, body: Obj, unknown: str = STRICT) -> tuple[Obj, list[str]]:
        """Canonical object and warnings. Kinds without a typed model keep the body."""
        return copy.deepcopy(body), []

    # -- create / update
    def prepare_for_create(self, obj: Obj) -> None:
        if self.has_status:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)

    def validate(self, obj: Obj) -> list[Any]:
        return validate_object_meta(obj, self.info, self.name_rule)

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        return validate_object_meta(new, self.info, self.name_rule) + (
            validate_object_meta_update(new, old))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Any]:
        return []

    # -- selectors
    def attrs(self, obj: Obj) -> Attrs:
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        ns = meta.get("namespace", "")
        fields = {"metadata.name": name}
        if self.info.namespaced:
            fields["metadata.namespace"] = ns
        fields.update(self.fields(obj))
        # selectors read a missing field as "": keep only the ones that say something
        return Attrs(ns, name, meta.get("labels") or {}, {k: v for k, v in fields.items() if v})

    def fields(self, obj: Obj) -> dict[str, str]:
        return {}

    def field_names(self) -> tuple[str, ...]:
        base = ("metadata.name", "metadata.namespace") if self.info.namespaced else (
            "metadata.name",)
        return base + self.selectable_fields

    # -- delete
    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """Seconds before the object goes (0: at once). Only pods wait by default."""
        return 0


class StatusStrategy(Strategy):
    """The ``/status`` subresource of a resource: writes change status (and metadata
    labels/annotations), never the spec (podStatusStrategy and its siblings)."""

    def __init__(self, base: Strategy) -> None:
        self.base = base
        self.info = base.info
        self.name_rule = base.name_rule
        self.selectable_fields = base.selectable_fields

    def decode(self, body: Obj, unknown: str = STRICT) -> tuple[Obj, list[str]]:
        return self.base.decode(body, unknown)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        for key in list(new):
            if key not in ("kind", "apiVersion", "metadata", "status"):
                del new[key]
        for key, value in old.items():
            if key not in ("kind", "apiVersion", "metadata", "status"):
                new[key] = copy.deepcopy(value)
        nm, om = new.setdefault("metadata", {}), old.get("metadata") or {}
        for fld in ("ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if fld in om:
                nm[fld] = copy.deepcopy(om[fld])
            else:
                nm.pop(fld, None)

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        return validate_object_meta_update(new, old) + self.base.validate_status_update(new, old)

    def attrs(self, obj: Obj) -> Attrs:
        return self.base.attrs(obj)

    def fields(self, obj: Obj) -> dict[str, str]:
        return self.base.fields(obj)


__all__ = ["STRICT", "Obj", "StatusStrategy", "Strategy", "decode_typed"]
