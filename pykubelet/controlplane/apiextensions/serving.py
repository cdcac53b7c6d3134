"""The custom resources this API server serves, as CRDs come, change and go
(customresource_handler.go's crdHandler plus the naming, establishing and finalizing
controllers of apiextensions-apiserver).

:class:`CustomResources` holds, per served (group, version, plural), a generic store over
one watch cache per definition (keys ``/registry/<group>/<plural>/...`` as upstream).
:meth:`CustomResources.run` follows the definitions: a new or changed one has its names
checked against the others (NamesAccepted), is served, then marked Established; a
deleted one has its objects deleted, its finalizer removed and is no longer served.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiextensions.crds import (
    CLEANUP_FINALIZER,
    CRDS,
    condition,
    set_condition,
    storage_version,
)
from pykubelet.controlplane.apiextensions.customresources import CustomResourceStrategy
from pykubelet.controlplane.apiextensions.versions import VersionedCache
from pykubelet.controlplane.registry.resources import ALL, ResourceInfo
from pykubelet.controlplane.registry.store import (
    Context,
    DeleteOptions,
    GenericStore,
    Registry,
)
from pykubelet.controlplane.registry.strategy import Obj
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

log = logging.getLogger(__name__)
RING = 10_000


def version_priority(version: str) -> tuple[int, int, int, str]:
    """CompareKubeAwareVersionStrings' order as a sort key (GA, then beta, then alpha,
    higher numbers first; anything else last, by name)."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if m is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), version)


@dataclass
class Served:
    """One definition's serving: a watch cache and a store per served version (the
    storage version's cache fed by the store, the others mirroring it)."""

    crd: Obj
    cache: VersionedCache  # the storage version's
    stores: dict[str, GenericStore] = field(default_factory=dict)  # version -> store
    mirrors: list[VersionedCache] = field(default_factory=list)

    @property
    def storage(self) -> GenericStore:
        return self.stores[storage_version(self.crd)] if storage_version(self.crd) in (
            self.stores) else next(iter(self.stores.values()))

    def follow(self, cache: ResourceCache, event: CachedEvent) -> None:
        """The cacher's listener: the storage cache's events, mirrored."""
        if cache is self.cache:
            for mirror in self.mirrors:
                mirror.follow(event)


class CustomResources:
    """The served custom resources and the controller that keeps them."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.served: dict[str, Served] = {}  # CRD name -> serving
        self.on_change: list[Callable[[], None]] = []  # OpenAPI, discovery caches
        # subresources served by a function (scale), by name
        self.subresources: dict[str, Any] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()

    # ------------------------------------------------------------------ lookups
    def store(self, group: str, version: str, resource: str) -> GenericStore | None:
        if (group, version, resource) == (CRDS.group, CRDS.version, CRDS.resource):
            return self._crd_store()
        for served in self.served.values():
            spec = served.crd["spec"]
            if spec["group"] == group and spec["names"]["plural"] == resource:
                return served.stores.get(version)
        return None

    def resources(self) -> list[ResourceInfo]:
        """CRDs, then every served version's ResourceInfo, for discovery."""
        return [r for r, _schema in self.schemas()]

    def schemas(self) -> list[tuple[ResourceInfo, Obj | None]]:
        """(ResourceInfo, its version's schema) of CRDs (no schema) and of each served
        version, a group's preferred version first, for discovery and OpenAPI."""
        out: list[tuple[ResourceInfo, Obj | None]] = [(CRDS, None)]
        for served in self.served.values():
            for store in sorted(served.stores.values(),
                                key=lambda s: version_priority(s.info.version)):
                strategy = store.strategy
                assert isinstance(strategy, CustomResourceStrategy)
                out.append((store.info, strategy.schema))
        return out

    def group_versions(self) -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        for r in self.resources():
            if (r.group, r.version) not in seen:
                seen.append((r.group, r.version))
        return seen

    # ------------------------------------------------------------------ serving
    async def serve(self, crd: Obj) -> None:
        """Serve (or serve anew after a change) every served version of ``crd``."""
        name = crd["metadata"]["name"]
        served = self.served.get(name)
        stored = storage_version(crd)
        if served is not None and storage_version(served.crd) != stored:
            self.unserve(name)  # another storage version: its cache reads anew
            served = None
        if served is None:
            probe = CustomResourceStrategy(crd, stored)
            cache = await self._register_cache(probe)
            served = self.served[name] = Served(crd, cache)
            self.registry.cacher.listeners.append(served.follow)
        elif served.stores and served.crd.get("spec") == crd.get("spec"):
            served.crd = crd  # a status change: what is served stays as it is
            return
        for mirror in served.mirrors:  # a changed spec: its watchers start again
            for w in list(mirror.watchers):
                w.close()
        served.crd = crd
        served.stores, served.mirrors = {}, []
        for v in crd["spec"].get("versions") or []:
            if not v.get("served"):
                continue
            strategy = CustomResourceStrategy(crd, v["name"])
            cache = served.cache
            if v["name"] != stored:
                cache = VersionedCache(served.cache.prefix, strategy.attrs,
                                       strategy.info.group_version, RING,
                                       served.cache.current_rev, mirror=True)
                cache.mirror_of(served.cache)
                served.mirrors.append(cache)
            served.stores[v["name"]] = GenericStore(self.registry, strategy, cache)
        if served.stores:  # the registry's walkers (namespace deletion, the garbage
            # collector) find custom resources as they find every other resource
            spec = crd["spec"]
            self.registry.stores[(spec["group"], spec["names"]["plural"])] = served.storage
        self._changed()

    async def _register_cache(self, strategy: CustomResourceStrategy) -> VersionedCache:
        """A watch cache for a resource that appears while the cache runs: registered
        (so the store's events reach it from now on), then filled from the store."""
        cacher = self.registry.cacher
        prefix = strategy.info.storage_prefix
        cache = VersionedCache(prefix, strategy.attrs, strategy.info.group_version, RING,
                               lambda: cacher.rev)
        cacher.resources[prefix] = cache
        items, _rev = await self.registry.storage.list_prefix(prefix)
        entries = [cache.make_entry(kv.key, kv.value, kv.mod_revision, kv.create_revision)
                   for kv in items]
        cache.load(entries, [], cacher.rev)
        return cache

    def unserve(self, name: str) -> None:
        served = self.served.pop(name, None)
        if served is None:
            return
        spec = served.crd["spec"]
        self.registry.stores.pop((spec["group"], spec["names"]["plural"]), None)
        cacher = self.registry.cacher
        if cacher.resources.get(served.cache.prefix) is served.cache:
            del cacher.resources[served.cache.prefix]
        if served.follow in cacher.listeners:
            cacher.listeners.remove(served.follow)
        for cache in (served.cache, *served.mirrors):
            for w in list(cache.watchers):
                w.close()
        self._changed()

    def _changed(self) -> None:
        for fn in self.on_change:
            fn()

    # ------------------------------------------------------------------ the controller
    def _crd_store(self) -> GenericStore:
        return self.registry.store(CRDS)

    def enqueue(self, name: str) -> None:
        self._queue.put_nowait(name)

    def _listener(self, cache: ResourceCache, event: Any) -> None:
        if cache.prefix == CRDS.storage_prefix:
            self.enqueue(event.entry.attrs.name)

    async def run(self) -> None:
        """Follow the definitions for ever (one sync per name, retried after a failure)."""
        self.registry.cacher.listeners.append(self._listener)
        try:
            for entry in list(self._crd_store().select(None, None)):
                self.enqueue(entry.attrs.name)
            while True:
                name = await self._queue.get()
                try:
                    await self.sync(name)
                except Exception:
                    log.exception("syncing CustomResourceDefinition %s failed; retrying", name)
                    asyncio.get_running_loop().call_later(1.0, self.enqueue, name)
        finally:
            self.registry.cacher.listeners.remove(self._listener)

    async def sync(self, name: str) -> None:
        entry = self._crd_store().lookup("", name)
        if entry is None:
            self.unserve(name)
            return
        crd = entry.obj()
        if crd["metadata"].get("deletionTimestamp"):
            await self._finalize(crd)
            return
        accepted, message = self._names_accepted(crd)
        if accepted:
            await self.serve(crd)
        await self._write_status(name, accepted, message)

    def _names_accepted(self, crd: Obj) -> tuple[bool, str]:
        """The naming controller: a plural, singular, short name or kind another
        definition of the group (or a built-in resource) already took is refused."""
        spec = crd["spec"]
        group, names = spec["group"], spec["names"]
        taken_plural: set[str] = {r.resource for r in ALL if r.group == group}
        taken_kind: set[str] = {r.kind for r in ALL if r.group == group}
        taken_short: set[str] = set()
        for other in self._crd_store().select(None, None):
            if other.attrs.name == crd["metadata"]["name"]:
                continue
            o = other.obj()
            if (o.get("spec") or {}).get("group") != group:
                continue
            acc = (o.get("status") or {}).get("acceptedNames") or {}
            taken_plural |= {acc.get("plural", ""), acc.get("singular", "")}
            taken_short |= set(acc.get("shortNames") or [])
            taken_kind |= {acc.get("kind", ""), acc.get("listKind", "")}
        if names["plural"] in taken_plural:
            return False, f'"{names["plural"]}" is already in use'
        if names.get("singular") in taken_plural:
            return False, f'"{names["singular"]}" is already in use'
        for short in names.get("shortNames") or []:
            if short in taken_short:
                return False, f'"{short}" is already in use'
        if names["kind"] in taken_kind:
            return False, f'"{names["kind"]}" is already in use'
        return True, "no conflicts found"

    async def _write_status(self, name: str, accepted: bool, message: str) -> None:
        store = self._crd_store()
        status_strategy = store.strategy.subresource_strategy("status")

        def mutate(crd: Obj) -> Obj | None:
            status = crd.setdefault("status", {})
            if accepted:
                status["acceptedNames"] = dict(crd["spec"]["names"])
                set_condition(crd, "NamesAccepted", "True", "NoConflicts", message)
                established = condition(crd, "Established")
                if established is None or established.get("status") != "True":
                    set_condition(crd, "Established", "True", "InitialNamesAccepted",
                                  "the initial names have been accepted")
            else:
                set_condition(crd, "NamesAccepted", "False", "NameConflict", message)
                if condition(crd, "Established") is None:
                    set_condition(crd, "Established", "False", "NotAccepted",
                                  "not all names are accepted")
            return crd

        try:
            await store.guaranteed_update("", name, mutate, status_strategy)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    async def _finalize(self, crd: Obj) -> None:
        """The finalizing controller: every object of the definition deleted, then its
        finalizer removed (the store then removes the definition)."""
        name = crd["metadata"]["name"]
        served = self.served.get(name)
        if served is not None and served.stores:
            store = served.storage
            ctx = Context()
            await store.delete_collection(ctx, None, None, DeleteOptions())
            if any(True for _ in store.select(None, None)):
                # objects with finalizers of their own: wait for them
                asyncio.get_running_loop().call_later(1.0, self.enqueue, name)
                return
        self.unserve(name)
        crd_store = self._crd_store()

        def drop_finalizer(obj: Obj) -> Obj | None:
            finalizers = obj["metadata"].get("finalizers") or []
            if CLEANUP_FINALIZER not in finalizers:
                return None
            obj["metadata"]["finalizers"] = [f for f in finalizers if f != CLEANUP_FINALIZER]
            return obj

        try:
            await crd_store.guaranteed_update("", name, drop_finalizer)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise


__all__ = ["CustomResources", "version_priority"]


def serve_custom_resources(api: Any) -> CustomResources:
    """Give an APIServer its CRDs and custom resources, with OpenAPI documents that
    follow them; the caller runs :meth:`CustomResources.run`."""
    from pykubelet.controlplane.apiextensions.openapi import CustomOpenAPI
    from pykubelet.controlplane.apiextensions.scale import scale

    custom = CustomResources(api.registry)
    custom.subresources["scale"] = scale
    documents = CustomOpenAPI(api.openapi)
    custom.on_change.append(lambda: documents.update(custom.schemas()))
    documents.update(custom.schemas())
    api.custom = custom
    return custom
