"""The generic store: every verb of every resource, driven by the resource's strategy
(apiserver's registry/generic/registry/store.go).

Reads come from the watch cache. Writes go to the store as conditional writes on the
revision they read (etcd's transactions, kube-apiserver's GuaranteedUpdate): an update
without a resourceVersion retries on a conflict, one with a stale resourceVersion is a
409. A write returns once the cache has seen it, so the writer reads its own write.

Create: decode (strict, or dropping unknown fields with a warning), namespace from the
URL, ``generateName``, the system fields (uid, creationTimestamp), the strategy's
PrepareForCreate, admission, validation, then the store, all on the one object the body
decoded into (stored as its encoding). Update and patch: the same over
the current object, keeping what a client may not change. Delete: the strategy's grace
period; a graceful delete or pending finalizers only stamp ``deletionTimestamp``, the
object goes when the grace ends (a node confirms) or the last finalizer is removed.
"""

from __future__ import annotations

import copy
import logging
import os
import random
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from pykubelet.api.errors import DecodeError
from pykubelet.api.machinery.codec import check_definition
from pykubelet.api.machinery.field import go_quote as quote
from pykubelet.api.machinery.timeutil import later, now, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry import managedfields
from pykubelet.controlplane.registry.gcpolicy import deletion_finalizers
from pykubelet.controlplane.registry.model import STRICT, UnknownFieldsError
from pykubelet.controlplane.registry.paging import decode_continue, encode_continue
from pykubelet.controlplane.registry.patch import (
    APPLY_PATCH,
    PatchApplyError,
    PatchError,
    PatchTooLarge,
    apply_patch,
)
from pykubelet.controlplane.registry.resources import ResourceInfo
from pykubelet.controlplane.registry.strategy import Obj, Strategy
from pykubelet.controlplane.storage import (
    ConflictError,
    KeyExistsError,
    NotFoundError,
    RequestTooLargeError,
    Storage,
    StorageError,
)
from pykubelet.controlplane.storage.cacher import (
    Attrs,
    Cacher,
    Entry,
    ResourceCache,
    TooOldError,
    Watcher,
)

log = logging.getLogger(__name__)

MAX_RETRIES = 16
_UID_RANDOM = random.Random(int.from_bytes(os.urandom(16), "big"))


def new_uid() -> str:
    """A random (version 4) UUID. UIDs are identities, not secrets; urandom per object
    costs more than the rest of a create on some virtual machines."""
    return str(uuid.UUID(int=_UID_RANDOM.getrandbits(128), version=4))
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apiserver's SimpleNameGenerator alphabet


@dataclass(frozen=True)
class User:
    """Who is asking: the admin, a node (``system:node:<name>``) or the control plane."""

    name: str
    groups: tuple[str, ...] = ()

    @property
    def node(self) -> str | None:
        """The node's name for a node's identity (upstream's NodeIdentifier: the name
        ``system:node:<name>`` and the group ``system:nodes``), else None."""
        prefix = "system:node:"
        if not self.name.startswith(prefix) or "system:nodes" not in self.groups:
            return None
        return self.name[len(prefix):]

    @property
    def is_admin(self) -> bool:
        return "system:masters" in self.groups


SYSTEM_USER = User("system:apiserver", ("system:masters",))


@dataclass
class Context:
    """One request's options."""

    user: User = SYSTEM_USER
    dry_run: bool = False
    subresource: str = ""  # the request's (admission tells pods/status from pods)
    field_validation: str = STRICT
    warnings: list[str] = field(default_factory=list)
    field_manager: str = ""  # the fieldManager parameter, else the user agent's prefix
    force: bool = False  # an apply takes fields other managers own
    apply: bool = False  # a server-side apply: managedFields come from the apply
    applied_fields: list[Any] | None = None  # an apply's managedFields for its create


PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"


@dataclass
class DeleteOptions:
    grace_period_seconds: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None  # the legacy field Orphan replaced

    @classmethod
    def from_dict(cls, d: Obj | None, path: str = "") -> DeleteOptions:
        """A DeleteOptions body as typed decoding reads it (an int64 grace, an object of
        preconditions: anything else is 400), then ValidateDeleteOptions (422)."""
        try:
            d = check_definition(DELETE_OPTIONS, d or {}, path) or {}
        except DecodeError as exc:
            raise errors.bad_request(
                f'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: {exc}'
            ) from None
        pre = d.get("preconditions") or {}
        options = cls(d.get("gracePeriodSeconds"), pre.get("uid"), pre.get("resourceVersion"),
                      "All" in (d.get("dryRun") or []), d.get("propagationPolicy"),
                      d.get("orphanDependents"))
        if d.get("orphanDependents") is not None and options.propagation_policy is not None:
            options.invalid(f"propagationPolicy: Invalid value: "
                            f"{quote(options.propagation_policy)}: orphanDependents and "
                            "deletionPropagation cannot be both set")
        options.validate()
        return options

    def validate(self) -> None:
        policy = self.propagation_policy
        if policy is not None and policy not in PROPAGATION_POLICIES:
            self.invalid(f"propagationPolicy: Unsupported value: {quote(policy)}: supported "
                         'values: "Foreground", "Background", "Orphan", "nil"')

    @staticmethod
    def invalid(text: str) -> None:
        raise errors.invalid("DeleteOptions", "meta.k8s.io", "", [errors.cause(text)])


@dataclass
class ListResult:
    entries: list[Entry]
    revision: int
    continue_token: str = ""
    remaining: int | None = None


# Attrs, Entry and Watcher are what the registry's reads and watches hand out: the HTTP
# layer reads them from here and never reaches into the cache below
__all__ = ["Attrs", "Context", "DeleteOptions", "Entry", "GenericStore", "ListResult", "Obj",
           "Registry", "User", "Watcher", "encode"]

# An admission plugin (op, store, new, old, ctx): on CREATE it reads the new object, which
# is an encoding of the one decoded view; a plugin that changes a new object is a
# MutatingAdmission, and edits that view
AdmitFn = Callable[[str, "GenericStore", Obj, Obj | None, Context], Awaitable[None]]


@dataclass(frozen=True)
class MutatingAdmission:
    """An admission plugin that changes a new object (kube-apiserver's MutationInterface,
    on CREATE): it edits the object model's view the store decoded once, so validation
    reads what it wrote without decoding the object again. ``other_ops``: what it does
    on UPDATE and DELETE, over the encoded objects (NamespaceLifecycle's protected
    namespaces), for a plugin that reads a create's view to spare its encoding."""

    admit: Callable[[GenericStore, Any, Context], Awaitable[None]]
    other_ops: AdmitFn | None = None


def encode(obj: Obj) -> bytes:
    """Stored form: kind, apiVersion, metadata first; no resourceVersion (it is the
    write's revision, added when served)."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("selfLink", None)
    out: Obj = {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"), "metadata": meta}
    for k, v in obj.items():
        if k not in out:
            out[k] = v
    return orjson.dumps(out)


def _body_rv(body: Any) -> str:
    """The resourceVersion a patch or an applied configuration carries: the update's
    precondition ("" for none, or for a body that is no object)."""
    if not isinstance(body, dict):
        return ""
    return str((body.get("metadata") or {}).get("resourceVersion") or "")


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _set_finalizers(obj: Obj, finalizers: list[str]) -> None:
    if finalizers:
        _meta(obj)["finalizers"] = finalizers
    else:
        _meta(obj).pop("finalizers", None)


class Registry:
    """All resources' stores over one storage and one cache, and the admission chain."""

    def __init__(self, storage: Storage, cacher: Cacher) -> None:
        self.storage = storage
        self.cacher = cacher
        self.stores: dict[tuple[str, str], GenericStore] = {}
        self.admission: list[AdmitFn | MutatingAdmission] = []

    def add(self, strategy: Strategy, ring_size: int | None = None) -> GenericStore:
        cache = self.cacher.register(strategy.info.storage_prefix, strategy.attrs,
                                     ring_size or 10_000)
        for f in strategy.indexed_fields:
            cache.add_index(f)
        store = GenericStore(self, strategy, cache)
        self.stores[(strategy.info.group, strategy.info.resource)] = store
        return store

    def store(self, info: ResourceInfo) -> GenericStore:
        return self.stores[(info.group, info.resource)]

    def by_resource(self, group: str, resource: str) -> GenericStore | None:
        return self.stores.get((group, resource))


class GenericStore:
    """One resource's verbs."""

    def __init__(self, registry: Registry, strategy: Strategy, cache: ResourceCache) -> None:
        self.registry = registry
        self.strategy = strategy
        self.info = strategy.info
        self.cache = cache

    # ------------------------------------------------------------------ helpers
    def _not_found(self, name: str) -> errors.StatusError:
        return errors.not_found(self.info.resource, self.info.group, name)

    def _decode(self, body: Any, ctx: Context, strategy: Strategy) -> Obj:
        return self._decode_typed(body, ctx, strategy)[0]

    def _decode_typed(self, body: Any, ctx: Context, strategy: Strategy,
                      canonical: bool = True) -> tuple[Obj, Any]:
        """The body decoded once: the canonical object (with ``canonical`` False, only
        its kind and apiVersion) and the object model's view of it."""
        if not isinstance(body, dict):
            raise errors.bad_request(
                f"{self.info.kind} in version \"{self.info.version}\" cannot be handled as a "
                f"{self.info.kind}: expected an object")
        kind = body.get("kind") or self.info.kind
        api_version = body.get("apiVersion") or self.info.group_version
        if kind != self.info.kind or api_version != self.info.group_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({self.info.group_version})" if api_version != self.info.group_version
                else f"{kind} in version \"{self.info.version}\" cannot be handled as a "
                f"{self.info.kind}: no kind \"{kind}\" is registered")
        body = dict(body)
        body["kind"], body["apiVersion"] = kind, api_version
        try:
            if canonical:
                obj, typed, warnings = strategy.decode_typed(body, ctx.field_validation)
            else:
                obj = {}
                typed, warnings = strategy.decode_view(body, ctx.field_validation)
        except UnknownFieldsError as exc:
            raise errors.bad_request(str(exc)) from None
        except (DecodeError, ValueError) as exc:
            raise errors.bad_request(
                f"{self.info.kind} in version \"{self.info.version}\" cannot be handled as a "
                f"{self.info.kind}: {exc}") from None
        ctx.warnings.extend(warnings)
        obj["kind"], obj["apiVersion"] = kind, api_version
        return obj, typed

    def _check_namespace(self, body: Any, namespace: str) -> None:
        meta = body.get("metadata") if isinstance(body, dict) else None
        given = meta.get("namespace") if isinstance(meta, dict) else None
        if self.info.namespaced and given and given != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the "
                                     "namespace sent on the request")

    def _invalid(self, obj: Obj, errs: list[Any]) -> errors.StatusError:
        name = _meta(obj).get("name") or _meta(obj).get("generateName", "")
        return errors.invalid(self.info.kind, self.info.group, name,
                              [errors.cause(e) for e in errs])

    async def _admit(self, op: str, obj: Obj, old: Obj | None, ctx: Context) -> None:
        for plugin in self.registry.admission:
            if not isinstance(plugin, MutatingAdmission):
                await plugin(op, self, obj, old, ctx)
            elif plugin.other_ops is not None:
                await plugin.other_ops(op, self, obj, old, ctx)

    async def _admit_create(self, typed: Any, strat: Strategy, ctx: Context) -> Obj:
        """The admission chain over a new object, in order: mutating plugins edit the
        decoded view, the others read its encoding. Returns the canonical object as the
        chain left it."""
        obj: Obj | None = None
        for plugin in self.registry.admission:
            if isinstance(plugin, MutatingAdmission):
                await plugin.admit(self, typed, ctx)
                obj = None
                continue
            if obj is None:
                obj = strat.encoded(typed)
            await plugin("CREATE", self, obj, None, ctx)
        return obj if obj is not None else strat.encoded(typed)

    async def _committed(self, rev: int, key: str, fallback: bytes | None = None) -> Entry:
        await self.registry.cacher.wait_for(rev)
        entry = self.cache.entries.get(key)
        if entry is None or entry.rev < rev:
            # written, then changed or deleted again before we looked: answer what we wrote
            for ev in reversed(self.cache.ring):
                if ev.rev == rev:
                    return ev.entry
            raise errors.internal(f"object {key} at revision {rev} is not in the cache")
        return entry

    def namespaced_key(self, namespace: str, name: str) -> str:
        return self.info.key(namespace, name)

    # ------------------------------------------------------------------ reads
    def get(self, namespace: str, name: str) -> Entry:
        entry = self.cache.entries.get(self.info.key(namespace, name))
        if entry is None:
            raise self._not_found(name)
        return entry

    def lookup(self, namespace: str, name: str) -> Entry | None:
        return self.cache.entries.get(self.info.key(namespace, name))

    @property
    def revision(self) -> int:
        """The newest revision the cache has seen (every resource's)."""
        return self.registry.cacher.rev

    def select(self, namespace: str | None, predicate: Callable[[Attrs], bool] | None,
               index: tuple[str, str] | None = None) -> Iterator[Entry]:
        """The live objects in key order that pass ``namespace`` and ``predicate``
        (``index``: an indexed field's exact value, as spec.nodeName)."""
        return self.cache.select(namespace, predicate, index)

    async def watch(self, namespace: str | None, predicate: Callable[[Attrs], bool],
                    resource_version: str) -> Watcher:
        """A watch from ``resource_version`` ("" or "0": the current state first, as
        ADDED events): a revision ahead of the cache is waited for (504 when it does not
        come), one the cache no longer holds gives a watcher carrying only that error."""
        since: int | None = None
        if resource_version not in ("", "0"):
            try:
                since = int(resource_version)
            except ValueError:
                raise errors.bad_request(
                    f"invalid resource version {resource_version!r}") from None
            cacher = self.registry.cacher
            if since > cacher.rev:
                try:
                    await cacher.wait_for(since)
                except Exception:  # TooLargeError, or the cache stopping meanwhile
                    raise errors.too_large_resource_version(since, cacher.rev) from None
        return self.cache.watch(namespace, predicate, since)

    def list_objects(
        self,
        namespace: str | None,
        predicate: Callable[[Any], bool] | None = None,
        index: tuple[str, str] | None = None,
        limit: int = 0,
        continue_token: str = "",
    ) -> ListResult:
        """A list, paged when ``limit`` > 0 (a non-positive limit is none, as upstream);
        a ``continue_token`` goes on at its revision (see :mod:`.paging`)."""
        limit = max(limit, 0)
        rev = self.registry.cacher.rev
        key_prefix = self.cache.prefix if namespace is None else (
            f"{self.cache.prefix}{namespace}/")
        if not continue_token:
            entries = list(self.cache.select(namespace, predicate, index))
        else:
            depth = 2 if self.info.namespaced and namespace is None else 1
            try:
                start, token_rev = decode_continue(continue_token, key_prefix, depth)
            except ValueError as exc:
                raise errors.bad_request(f"invalid continue token: {exc}") from None
            if token_rev > rev:
                raise errors.too_large_resource_version(token_rev, rev)
            if token_rev < 0:  # go on at the latest revision (after a 410)
                entries = list(self.cache.select(namespace, predicate, index, start))
            else:
                compacted = self.registry.storage.compacted_revision()
                try:
                    if token_rev <= compacted:
                        raise TooOldError(token_rev, compacted)
                    entries = self.cache.select_at(token_rev, namespace, predicate, index,
                                                   start)
                except TooOldError:
                    raise errors.expired(CONTINUE_EXPIRED, list_meta={
                        "continue": encode_continue(start, key_prefix, -1)}) from None
                rev = token_rev
        if limit and len(entries) > limit:
            page = entries[:limit]
            cont = encode_continue(page[-1].key + "\x00", key_prefix, rev)
            return ListResult(page, rev, cont, len(entries) - limit)
        return ListResult(entries, rev)

    # ------------------------------------------------------------------ create
    async def create(
        self, ctx: Context, namespace: str, body: Any, strategy: Strategy | None = None
    ) -> Entry | Obj:
        strat = strategy or self.strategy
        self._check_namespace(body, namespace)
        _kind, typed = self._decode_typed(body, ctx, strat, canonical=False)
        return await self._create_decoded(ctx, namespace, typed, strat)

    async def _create_decoded(self, ctx: Context, namespace: str, typed: Any,
                              strat: Strategy) -> Entry | Obj:
        """A create of an object decoded once (kube-apiserver's create: the system fields,
        PrepareForCreate, admission and validation on that one object, then its encoding
        stored); a create-on-update passes its object on, never its body again."""
        meta = typed.metadata
        if self.info.namespaced:
            meta.namespace = namespace
        if meta.resource_version:
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        if not meta.name and meta.generate_name:
            meta.name = meta.generate_name + "".join(
                random.choice(_NAME_CHARS) for _ in range(5))
        meta.uid = new_uid()
        meta.creation_timestamp = rfc3339(now())
        meta.deletion_timestamp = meta.deletion_grace_period_seconds = None
        meta.self_link, meta.managed_fields = "", []
        if type(strat).begin_create is Strategy.begin_create:
            return await self._create_prepared(ctx, namespace, typed, strat)
        # BeginCreate (allocators: a Service's ClusterIP and node ports) works on the dict
        obj = strat.encoded(typed)
        finish = await strat.begin_create(self.registry.storage, obj, ctx.dry_run)
        typed = strat.typed(obj)
        if finish is None:
            return await self._create_prepared(ctx, namespace, typed, strat)
        done = False
        try:
            result = await self._create_prepared(ctx, namespace, typed, strat)
            done = not ctx.dry_run
            return result
        finally:
            await finish(done)

    async def _create_prepared(self, ctx: Context, namespace: str, typed: Any,
                               strat: Strategy) -> Entry | Obj:
        """PrepareForCreate, admission, validation and the write, of the one typed object
        (a strategy that still prepares the dict gets its encoding, decoded once more)."""
        strat.prepare_typed_for_create(typed)
        prepared: Obj | None = None
        if type(strat).prepare_for_create is not Strategy.prepare_for_create:
            prepared = strat.encoded(typed)
            strat.prepare_for_create(prepared, typed)
            typed = strat.typed(prepared)
        # the writer's managedFields: of the object before mutating admission, as
        # kube-apiserver's create handler runs the field manager before Admit (what the
        # admission plugins add, e.g. a pod's token volume, is nobody's)
        managed = ctx.applied_fields
        if managed is None:
            tracked = prepared if prepared is not None else strat.encoded(typed)
            tracked["kind"], tracked["apiVersion"] = self.info.kind, self.info.group_version
            managedfields.track(strat, self.info.group_version, ctx.subresource,
                                ctx.field_manager, None, tracked)
            managed = _meta(tracked).get("managedFields")
        obj = await self._admit_create(typed, strat, ctx)
        obj["kind"], obj["apiVersion"] = self.info.kind, self.info.group_version
        if managed:
            _meta(obj)["managedFields"] = managed
        else:
            _meta(obj).pop("managedFields", None)
        errs = strat.validate_typed(typed)
        if errs:
            raise self._invalid(obj, errs)
        if ctx.dry_run:
            return obj
        name = typed.metadata.name
        key = self.info.key(namespace, name)
        try:
            kv = await self.registry.storage.create(key, encode(obj))
        except KeyExistsError:
            raise errors.already_exists(self.info.resource, self.info.group, name) from None
        except StorageError as exc:
            raise storage_error(exc) from None
        strat.after_create(typed)
        return await self._committed(kv.mod_revision, key)

    # ------------------------------------------------------------------ update / patch
    async def update(
        self, ctx: Context, namespace: str, name: str, body: Any,
        strategy: Strategy | None = None,
    ) -> Entry | Obj:
        strat = strategy or self.strategy
        self._check_namespace(body, namespace)
        obj, typed = self._decode_typed(body, ctx, strat)
        meta = _meta(obj)
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(f"the name of the object ({meta['name']}) does not match "
                                     f"the name on the URL ({name})")
        rv = str(meta.get("resourceVersion") or "")
        key = self.info.key(namespace, name)
        if self.cache.entries.get(key) is None:
            if self.strategy.allow_create_on_update and strategy is None:
                typed.metadata.resource_version, typed.metadata.name = "", name
                return await self._create_decoded(ctx, namespace, typed, self.strategy)
            raise self._not_found(name)
        return await self._guaranteed_update(
            ctx, namespace, name, lambda _old: copy.deepcopy(obj), strat, precondition=rv)

    async def patch(
        self, ctx: Context, namespace: str, name: str, patch_type: str, patch: Any,
        strategy: Strategy | None = None,
    ) -> Entry | Obj:
        strat = strategy or self.strategy
        if patch_type == APPLY_PATCH:
            return await self._apply(ctx, namespace, name, patch, strat, strategy is None)

        def mutate(old: Obj) -> Obj:
            try:
                patched = apply_patch(patch_type, old, patch, strat.patch_meta)
            except PatchApplyError as exc:
                raise errors.unprocessable(str(exc)) from None
            except PatchTooLarge as exc:
                raise errors.entity_too_large(str(exc)) from None
            except PatchError as exc:
                raise errors.bad_request(str(exc)) from None
            self._check_patched(patched, old, namespace, name)
            return self._decode(strat.update_body(patched, old), ctx, strat)

        return await self._guaranteed_update(ctx, namespace, name, mutate, strat,
                                             precondition=_body_rv(patch))

    async def _apply(self, ctx: Context, namespace: str, name: str, config: Any,
                     strat: Strategy, main: bool) -> Entry | Obj:
        """A server-side apply (handlers/patch.go's applyPatcher): over the live object,
        or, when there is none and this is the main resource, a create of the applied
        configuration."""
        ctx.apply = True
        gv = self.info.group_version
        if self.lookup(namespace, name) is None:
            if not main:
                raise self._not_found(name)
            merged = managedfields.apply(strat, gv, ctx.subresource, ctx.field_manager,
                                         ctx.force, None, config)
            meta = _meta(merged)
            if meta.get("name") != name:
                shown = meta.get("name") if isinstance(meta.get("name"), str) else ""
                raise errors.bad_request(f"the name of the object ({str(shown)[:256]}) does "
                                         f"not match the name on the URL ({name})")
            ctx.applied_fields = meta.pop("managedFields", [])
            self._check_namespace(merged, namespace)
            return await self.create(ctx, namespace, merged)

        def mutate(old: Obj) -> Obj:
            merged = managedfields.apply(strat, gv, ctx.subresource, ctx.field_manager,
                                         ctx.force, old, config)
            self._check_patched(merged, old, namespace, name)
            return self._decode(merged, ctx, strat)

        return await self._guaranteed_update(ctx, namespace, name, mutate, strat,
                                             precondition=_body_rv(config))

    def _check_patched(self, patched: Obj, old: Obj, namespace: str, name: str) -> None:
        """What upstream's patcher checks of the patched object: its name and namespace
        are the URL's (checkName, 400), and a resourceVersion it carries is a precondition
        (409 when it is not the current one, as Store.Update compares them)."""
        meta = patched.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        obj_name = meta.get("name")
        if obj_name != name:
            shown = obj_name if isinstance(obj_name, str) else ""
            raise errors.bad_request(f"the name of the object ({shown[:256]}) does not match "
                                     f"the name on the URL ({name})")
        obj_ns = meta.get("namespace")
        if self.info.namespaced and obj_ns and obj_ns != namespace:
            shown = obj_ns if isinstance(obj_ns, str) else str(obj_ns)
            raise errors.bad_request(f"the namespace of the object ({shown[:256]}) does not "
                                     f"match the namespace on the request ({namespace})")
        rv = meta.get("resourceVersion")
        if rv and rv != _meta(old).get("resourceVersion"):
            raise errors.conflict(self.info.resource, self.info.group, name)

    async def guaranteed_update(
        self, namespace: str, name: str, mutate: Callable[[Obj], Obj | None],
        strategy: Strategy | None = None, ctx: Context | None = None,
    ) -> Entry | Obj:
        """For the control plane's own writers: re-read and retry until it applies.
        ``mutate`` gets a copy of the current object; returning None leaves it as is."""
        return await self._guaranteed_update(ctx or Context(), namespace, name, mutate,
                                             strategy or self.strategy)

    async def _guaranteed_update(
        self,
        ctx: Context,
        namespace: str,
        name: str,
        mutate: Callable[[Obj], Obj | None],
        strat: Strategy,
        precondition: str = "",
    ) -> Entry | Obj:
        key = self.info.key(namespace, name)
        for _attempt in range(MAX_RETRIES):
            cur = self.cache.entries.get(key)
            if cur is None:
                raise self._not_found(name)
            if precondition and precondition != str(cur.rev):
                raise errors.conflict(self.info.resource, self.info.group, name)
            old = cur.obj()
            new = mutate(cur.obj())  # a second parse: ~10x cheaper than a deepcopy of one
            if new is None:
                return cur
            nm, om = _meta(new), _meta(old)
            if nm.get("uid") and nm["uid"] != om.get("uid"):
                raise errors.conflict(self.info.resource, self.info.group, name,
                                      f"Precondition failed: UID in precondition: "
                                      f"{nm.get('uid')}, UID in object meta: {om.get('uid')}")
            # what a client never changes (BeforeUpdate's system fields)
            for f in ("uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation"):
                if f in om:
                    nm[f] = copy.deepcopy(om[f])
                else:
                    nm.pop(f, None)
            nm["name"] = name
            if self.info.namespaced:
                nm["namespace"] = namespace
            finish = await strat.begin_update(self.registry.storage, new, old, ctx.dry_run)
            done = False
            try:
                result = await self._update_prepared(ctx, key, name, new, old, cur, strat,
                                                     precondition)
                if result is None:
                    continue  # a conflict: read again
                done = not ctx.dry_run
                return result
            finally:
                if finish is not None:
                    await finish(done)
        raise errors.conflict(self.info.resource, self.info.group, name,
                              "too many concurrent updates; please try again")

    async def _update_prepared(self, ctx: Context, key: str, name: str, new: Obj, old: Obj,
                               cur: Entry, strat: Strategy, precondition: str
                               ) -> Entry | Obj | None:
        """The rest of one update attempt; None: the store's revision moved on."""
        nm, om = _meta(new), _meta(old)
        strat.prepare_for_update(new, old)
        await self._admit("UPDATE", new, old, ctx)
        if not ctx.apply and strat.tracks_managed_fields:
            managedfields.track(strat, self.info.group_version, ctx.subresource,
                                ctx.field_manager, old, new)
        errs = strat.validate_update(new, old)
        if errs:
            raise self._invalid(new, errs)
        if ctx.dry_run:
            _meta(new)["resourceVersion"] = str(cur.rev)
            return new
        data = encode(new)
        if data == encode(old):
            return cur
        finalize = bool(nm.get("deletionTimestamp")) and not nm.get("finalizers") and (
            not self._pending_finalizers(new))
        deleted = finalize and bool(om.get("finalizers") or self._pending_finalizers(old))
        try:
            if deleted:
                kv = await self.registry.storage.delete(key, cur.rev)
            else:
                kv = await self.registry.storage.update(key, data, cur.rev)
        except ConflictError:
            if precondition:
                raise errors.conflict(self.info.resource, self.info.group, name) from None
            return None
        except NotFoundError:
            raise self._not_found(name) from None
        except StorageError as exc:
            raise storage_error(exc) from None
        if deleted:
            await self.strategy.after_delete(self.registry.storage, new)
        return await self._committed(kv.mod_revision, key)

    def _pending_finalizers(self, obj: Obj) -> bool:
        return self.strategy.pending_finalizers(obj)

    # ------------------------------------------------------------------ delete
    async def delete(
        self, ctx: Context, namespace: str, name: str, options: DeleteOptions,
    ) -> tuple[Entry | Obj, bool]:
        """Delete (or start deleting) an object: (its last state, deleted now?)."""
        key = self.info.key(namespace, name)
        for _attempt in range(MAX_RETRIES):
            cur = self.cache.entries.get(key)
            if cur is None:
                raise self._not_found(name)
            old = cur.obj()
            om = _meta(old)
            if options.uid is not None and options.uid != om.get("uid"):
                raise errors.conflict(self.info.resource, self.info.group, name,
                                      f"Precondition failed: UID in precondition: {options.uid}, "
                                      f"UID in object meta: {om.get('uid')}")
            if options.resource_version is not None and options.resource_version != str(cur.rev):
                raise errors.conflict(
                    self.info.resource, self.info.group, name,
                    f"Precondition failed: ResourceVersion in precondition: "
                    f"{options.resource_version}, ResourceVersion in meta: {cur.rev}")
            await self._admit("DELETE", old, None, ctx)
            grace = self.strategy.grace_period(old, options.grace_period_seconds)
            # the garbage collector's finalizers this delete asks for (None: unchanged)
            gc_finalizers = deletion_finalizers(
                om.get("finalizers") or [], options.propagation_policy,
                options.orphan_dependents, self.strategy.garbage_collection_policy)
            finalizers = bool(om.get("finalizers") if gc_finalizers is None
                              else gc_finalizers) or self._pending_finalizers(old)
            new: Obj | None = None
            t = now()
            if om.get("deletionTimestamp"):
                if not finalizers and grace == 0:
                    new = None  # delete now
                elif gc_finalizers is not None and not om.get("deletionGracePeriodSeconds"):
                    # no graceful deletion pending: the options may still change the
                    # collector's finalizers (BeforeDelete, then the finalizers' update)
                    new = copy.deepcopy(old)
                    _set_finalizers(new, gc_finalizers)
                else:
                    current = om["deletionTimestamp"]
                    wanted = rfc3339(later(t, grace))
                    if wanted < current and grace < (om.get("deletionGracePeriodSeconds") or 0):
                        new = copy.deepcopy(old)
                        _meta(new)["deletionTimestamp"] = wanted
                        _meta(new)["deletionGracePeriodSeconds"] = grace
                    else:
                        return cur, False
            elif grace > 0 or finalizers:
                new = copy.deepcopy(old)
                nm = _meta(new)
                nm["deletionTimestamp"] = rfc3339(later(t, grace))
                nm["deletionGracePeriodSeconds"] = grace
                if gc_finalizers is not None:
                    _set_finalizers(new, gc_finalizers)
                self.strategy.begin_deletion(new)
            if ctx.dry_run or options.dry_run:
                return (new if new is not None else old), new is None
            try:
                if new is not None:
                    kv = await self.registry.storage.update(key, encode(new), cur.rev)
                    return await self._committed(kv.mod_revision, key), False
                kv = await self.registry.storage.delete(key, cur.rev)
            except ConflictError:
                continue
            except NotFoundError:
                raise self._not_found(name) from None
            except StorageError as exc:
                raise storage_error(exc) from None
            await self.strategy.after_delete(self.registry.storage, old)
            await self.registry.cacher.wait_for(kv.mod_revision)
            for ev in reversed(self.cache.ring):
                if ev.rev == kv.mod_revision:
                    return ev.entry, True
            return old, True
        raise errors.conflict(self.info.resource, self.info.group, name,
                              "too many concurrent updates; please try again")

    async def delete_collection(
        self, ctx: Context, namespace: str | None, predicate: Callable[[Any], bool] | None,
        options: DeleteOptions,
    ) -> list[Entry | Obj]:
        out: list[Entry | Obj] = []
        for entry in list(self.cache.select(namespace, predicate)):
            try:
                obj, _ = await self.delete(ctx, entry.attrs.namespace, entry.attrs.name, options)
            except errors.StatusError as exc:
                if exc.code == 404:
                    continue
                raise
            out.append(obj)
        return out

    def events_since(self, rev: int) -> list[Any]:
        try:
            return self.cache.events_since(rev)
        except TooOldError as exc:
            raise errors.expired(str(exc)) from None


def storage_error(exc: StorageError) -> errors.StatusError:
    """A store's failure as kube-apiserver answers it: etcd's "request is too large" is not
    a Status error there, so it is a 500 with etcd's message and no reason; others 500
    InternalError."""
    if isinstance(exc, RequestTooLargeError):
        return errors.StatusError(500, "", str(exc))
    return errors.internal(str(exc))


# kube-apiserver's message for a continue whose revision is gone (etcd3 store's
# inconsistentContinue), answered with a token that goes on at the latest revision
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You "
    "can start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list.")
