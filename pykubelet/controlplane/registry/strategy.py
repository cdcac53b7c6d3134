"""A resource's strategy: the hooks the generic store calls (pkg/registry/*/strategy.go).

The store knows nothing of Pods or Nodes; it asks the strategy to decode a body, prepare
an object for create or update, validate it, say which fields selectors may use, and how
a delete proceeds. Hooks are pure functions of their arguments, so they are tested
without HTTP or disk. Objects are canonical dicts (what the object model encodes).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from pykubelet.api.errors import DecodeError
from pykubelet.api.kinds import Kind
from pykubelet.api.machinery.openapi import PatchMeta
from pykubelet.api.machinery.timeutil import micro_time, parse_time, rfc3339
from pykubelet.controlplane.registry.gcpolicy import DELETE_DEPENDENTS
from pykubelet.controlplane.registry.model import STRICT, WARN, UnknownFieldsError
from pykubelet.controlplane.registry.resources import ResourceInfo
from pykubelet.controlplane.storage import Storage
from pykubelet.controlplane.storage.cacher import Attrs

Obj = dict[str, Any]
# what a BeginCreate/BeginUpdate hook returns: called once the write is done (True) or
# failed or was dropped (False), to keep or undo what the hook took (registry.FinishFunc)
Finish = Callable[[bool], Awaitable[None]]

# ---------------------------------------------------------------------------- time


def canonical_time(value: object, path: str, micro: bool = False) -> str | None:
    """A metav1.Time (or MicroTime) as the API writes it back: UTC, ``Z``, seconds (or
    exactly six fractional digits). Clients send any RFC 3339 form (what Go's time.Parse
reads: an offset is required)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{path}: expected an RFC 3339 time string")
    try:
        t = parse_time(value)
    except ValueError:
        raise ValueError(f'{path}: parsing time "{value}" as RFC 3339 failed') from None
    return micro_time(t) if micro else rfc3339(t)


# ---------------------------------------------------------------------------- the base


class Strategy:
    """Defaults for a resource whose objects have no spec/status split. The object model
    (``pykubelet.api.kinds``) decodes, defaults and validates each kind; a strategy adds
    what the registry does around that (status kept apart, selectable fields, deletion)."""

    info: ResourceInfo
    name_rule = "subdomain"
    allow_create_on_update = False
    allow_unconditional_update = True
    return_deleted_object = False
    has_status = False
    # metadata.generation: 1 on create, +1 on each update that changes the spec (the
    # PrepareForCreate/PrepareForUpdate of every resource with a spec a controller observes)
    tracks_generation = False
    # writes through this strategy record their manager in metadata.managedFields (the
    # handlers' FieldManager); a write straight to storage (pods/binding) does not
    tracks_managed_fields = True
    selectable_fields: tuple[str, ...] = ()
    indexed_fields: tuple[str, ...] = ()
    # what a delete without a propagation policy does to dependents
    # (GarbageCollectionDeleteStrategy; upstream's batch/v1 Jobs and v1 ReplicationControllers
    # orphan, for compatibility)
    garbage_collection_policy = DELETE_DEPENDENTS

    @property
    def kind(self) -> Kind[Any]:
        """The object model's kind of the resource (declared once, in its ResourceInfo)."""
        return self.info.model

    # -- decoding
    def decode(self, body: Obj, unknown: str = STRICT) -> tuple[Obj, list[str]]:
        """The canonical object (decoded, defaulted, encoded back) and its warnings."""
        obj, _typed, warnings = self.decode_typed(body, unknown)
        return obj, warnings

    def decode_typed(self, body: Obj, unknown: str = STRICT) -> tuple[Obj, Any, list[str]]:
        """One walk of the body: the canonical object, the object model's (defaulted) view
        of it, and the warnings. Strict: every unknown field is named at once (400), before
        any ill-typed one; Warn/Ignore: they are dropped, Warn says so."""
        typed, warnings = self._decode(body, unknown)
        obj = self.kind.encode(typed)
        self.canonicalize(obj)
        return obj, typed, warnings

    def decode_view(self, body: Obj, unknown: str = STRICT) -> tuple[Any, list[str]]:
        """decode_typed without the canonical object, for a create, which writes the
        object model's view (admission and the store encode it afterwards): an encode of
        ~90 us less per pod create. A strategy that decodes its own way or canonicalizes
        still encodes here, so a value with no canonical form stays the body's error."""
        if (type(self).decode_typed is not Strategy.decode_typed
                or type(self).canonicalize is not Strategy.canonicalize):
            _obj, typed, warnings = self.decode_typed(body, unknown)
            return typed, warnings
        return self._decode(body, unknown)

    def _decode(self, body: Obj, unknown: str) -> tuple[Any, list[str]]:
        dropped: list[str] = []
        try:
            typed = self.kind.decode(body, unknown=dropped)
        except DecodeError:
            if unknown == STRICT:  # unknown fields are reported first, as strict decoding does
                paths = self.kind.unknown_fields(body)
                if paths:
                    raise UnknownFieldsError(paths) from None
            raise
        if unknown == STRICT and dropped:
            raise UnknownFieldsError(dropped)
        self.kind.set_defaults(typed)
        return typed, [f'unknown field "{p}"' for p in dropped] if unknown == WARN else []

    def canonicalize(self, obj: Obj) -> None:
        """Upstream's Canonicalize: write a decoded object's values in the API's one form
        (times as metav1.Time/MicroTime); ValueError for a value that has none."""

    def patch_meta(self, path: tuple[str, ...]) -> PatchMeta | None:
        """Upstream's patch strategy for the field at ``path`` (None: not a field we know)."""
        try:
            return self.kind.patch_meta(*path)
        except (KeyError, TypeError):
            return None

    def typed(self, obj: Obj) -> Any:
        """The object model's view of a canonical object (for the kind's rules)."""
        return self.kind.decode(obj, unknown=[])

    def encoded(self, typed: Any) -> Obj:
        """The canonical object of the object model's view (an encode, never a decode)."""
        obj = self.kind.encode(typed)
        self.canonicalize(obj)
        return obj

    # -- create / update
    def prepare_typed_for_create(self, typed: Any) -> None:
        """Upstream's PrepareForCreate, on the object model's view the store decoded once
        (admission and validation then read that same object): clear what a create may
        not set: no status (None, which the encoding leaves out: a new object has none
        until its controller writes one) and generation 1 where it is tracked."""
        if self.has_status:
            typed.status = None
        if self.tracks_generation:
            typed.metadata.generation = 1

    def prepare_for_create(self, obj: Obj, typed: Any = None) -> None:
        """PrepareForCreate on the canonical dict, for a strategy that has not moved to
        prepare_typed_for_create: the store then decodes the prepared object once more
        for validation. ``typed``: the view the dict was encoded from."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        if self.tracks_generation:
            gen = (old.get("metadata") or {}).get("generation", 1)
            if new.get("spec") != old.get("spec"):
                gen += 1
            new.setdefault("metadata", {})["generation"] = gen

    def validate(self, obj: Obj) -> list[Any]:
        return self.validate_typed(self.typed(obj))

    def validate_typed(self, typed: Any) -> list[Any]:
        """Validation of the object model's view (a create validates what it decoded)."""
        return list(self.kind.validate(typed))

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        return list(self.kind.validate_update(self.typed(new), self.typed(old)))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Any]:
        """ValidateXStatusUpdate. A spec the write left as it was is decoded once, from
        the old object, and shared: a status write keeps the old spec, and decoding the
        pod's spec twice was most of a pods/status PATCH's CPU."""
        typed_old = self.typed(old)
        if "spec" in new and hasattr(typed_old, "spec") and same_json(new["spec"],
                                                                     old.get("spec")):
            typed_new = self.typed({k: v for k, v in new.items() if k != "spec"})
            typed_new.spec = typed_old.spec
        else:
            typed_new = self.typed(new)
        return list(self.kind.validate_status_update(typed_new, typed_old))

    def update_body(self, new: Obj, old: Obj) -> Obj:
        """The part of an update's (patched) object the store decodes: all of it, but
        where prepare_for_update takes a field from the old object whatever the write
        says, a field the write left as it was need not be decoded again."""
        return new

    # -- hooks around the store's writes (genericregistry.Store's BeginCreate, BeginUpdate
    # and AfterDelete): for resources that take something outside their object, as
    # Services take ClusterIPs and node ports
    async def begin_create(self, storage: Storage, obj: Obj, dry_run: bool) -> Finish | None:
        """Before PrepareForCreate; may change ``obj``; None: nothing to finish."""
        return None

    async def begin_update(self, storage: Storage, new: Obj, old: Obj,
                           dry_run: bool) -> Finish | None:
        """Before PrepareForUpdate; may change ``new``."""
        return None

    async def after_delete(self, storage: Storage, obj: Obj) -> None:
        """Once ``obj`` is gone from the store."""

    def after_create(self, typed: Any) -> None:
        """Once ``typed`` is written (genericregistry.Store's AfterCreate)."""

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

    def pending_finalizers(self, obj: Obj) -> bool:
        """Finalizers besides metadata.finalizers that keep a deleted object (a
        namespace's spec.finalizers); the store deletes it once these are gone too."""
        return False

    def begin_deletion(self, obj: Obj) -> None:
        """What an object whose deletion started (stamped with deletionTimestamp, kept for
        its grace period or finalizers) says besides (a namespace turns Terminating)."""

    # -- subresources
    def subresource_strategy(self, name: str) -> Strategy | None:
        """The wrapped strategy a subresource served by the generic store writes through
        (``status``; pods add ``ephemeralcontainers``), None for the others."""
        return StatusStrategy(self) if name == "status" else None


def same_json(a: Any, b: Any) -> bool:
    """The same JSON value, types included (``==`` says 1 == 1.0 == True). A value orjson
    cannot encode (an integer past 64 bits from a YAML body) is "not the same": the caller
    then decodes it and names what is wrong with it."""
    if a is b:
        return True
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:  # orjson.JSONEncodeError
        return False


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value: a parse of its encoding, ~10x cheaper than
    copy.deepcopy on a pod's spec."""
    return orjson.loads(orjson.dumps(value))


STATUS_KEEPS_METADATA = ("ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds")


def keep_all_but_status(new: Obj, old: Obj,
                        metadata: tuple[str, ...] = STATUS_KEEPS_METADATA) -> None:
    """A status write's PrepareForUpdate: every top-level field but status (and metadata)
    is the old object's, and so are the `metadata` fields named (the rest of metadata,
    labels and annotations among them, is the writer's)."""
    for key in list(new):
        if key not in ("kind", "apiVersion", "metadata", "status"):
            del new[key]
    for key, value in old.items():
        if key not in ("kind", "apiVersion", "metadata", "status"):
            new[key] = json_copy(value)
    nm, om = new.setdefault("metadata", {}), old.get("metadata") or {}
    for fld in metadata:
        if fld in om:
            nm[fld] = copy.deepcopy(om[fld])
        else:
            nm.pop(fld, None)


_STATUS_WRITES = ("kind", "apiVersion", "metadata", "status")


class StatusStrategy(Strategy):
    """The ``/status`` subresource of a resource: writes change status (and metadata
    labels/annotations), never the spec (podStatusStrategy and its siblings)."""

    def __init__(self, base: Strategy) -> None:
        self.base = base
        self.info = base.info
        self.name_rule = base.name_rule
        self.selectable_fields = base.selectable_fields

    def decode_typed(self, body: Obj, unknown: str = STRICT) -> tuple[Obj, Any, list[str]]:
        return self.base.decode_typed(body, unknown)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep_all_but_status(new, old)

    def update_body(self, new: Obj, old: Obj) -> Obj:
        """Without the top-level fields (the spec) equal to the old object's, when
        prepare_for_update is keep_all_but_status: those are the old object's in the end
        and were valid there, so decoding them again finds nothing (upstream's status
        write decodes them only to drop them). A changed one is still decoded, so an
        ill-typed spec in a status patch stays a 400."""
        if type(self).prepare_for_update is not StatusStrategy.prepare_for_update:
            return new
        same = [k for k, v in new.items() if k not in _STATUS_WRITES and k in old
                and same_json(v, old[k])]
        return {k: v for k, v in new.items() if k not in same} if same else new

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        return self.base.validate_status_update(new, old)

    def attrs(self, obj: Obj) -> Attrs:
        return self.base.attrs(obj)

    def fields(self, obj: Obj) -> dict[str, str]:
        return self.base.fields(obj)


__all__ = ["STRICT", "Obj", "StatusStrategy", "Strategy", "keep_all_but_status"]
