"""The EndpointSlice controller (pkg/controller/endpointslice), the legacy Endpoints
controller (pkg/controller/endpoint) and the EndpointSlice mirroring controller: each
Service with a selector gets the EndpointSlices (at most 100 endpoints each, labelled
``kubernetes.io/service-name`` and managed-by ``endpointslice-controller.k8s.io``, owned by
the Service) and the Endpoints object its pods make, kept as pods come, turn ready,
terminate and go. A Service without a selector is left alone: its Endpoints are its
user's, and are mirrored into slices of their own.

Watch-driven (controllers/informer.py): a Service's event, or a pod's that its selector
picks (before or after the change), or a change to one of its slices (or Endpoints),
queues the Service's key; one sync per key reads the watch cache, decides with
:mod:`.endpoints_decisions`, and writes only what differs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pykubelet.api.services import LABEL_MANAGED_BY, LABEL_SERVICE_NAME
from pykubelet.controlplane.controllers.activepods import meta, spec_selector
from pykubelet.controlplane.controllers.deletes import delete_unless_gone
from pykubelet.controlplane.controllers.endpoints_decisions import (
    CONTROLLER_NAME,
    MIRRORING_CONTROLLER_NAME,
    OVER_CAPACITY,
    SlicePlan,
    desired_endpoints,
    desired_slices,
    managed,
    mirrored,
    mirrored_slices,
    new_mirrored_slice,
    reconcile_slices,
    selector_selects,
    selects,
)
from pykubelet.controlplane.controllers.informer import (
    InformerController,
    entry_key,
    get_by_key,
    split_key,
)
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import ENDPOINT_SLICES, ENDPOINTS, PODS, SERVICES
from pykubelet.controlplane.registry.store import Context, GenericStore
from pykubelet.controlplane.storage.cacher import DELETED, Attrs, CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class _ServicePodsController(InformerController):
    """Services as the primary resource, pods (by selector) as the secondary one."""

    name = ""

    def __init__(self, cp: ControlPlane) -> None:
        self.registry = cp.registry
        self.services: GenericStore = self.registry.store(SERVICES)
        self.primary = self.services
        self.pods: GenericStore = self.registry.store(PODS)
        self.queue: WorkQueue = WorkQueue(self.name, self.sync)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix == SERVICES.storage_prefix:
            self.queue.add(entry_key(ev.entry))
        elif cache.prefix == PODS.storage_prefix:
            # the pod's labels (before and after) from the cache's attributes and each
            # Service's selector read once: no parse per pod event (ServiceSelectorCache)
            ns = ev.entry.attrs.namespace
            labels = [e.attrs.labels for e in (ev.entry, ev.prev) if e is not None]
            for entry in self.services.select(ns, None):
                selector = spec_selector(entry)
                if any(selector_selects(selector, lbl) for lbl in labels):
                    self.queue.add(entry_key(entry))
        else:
            self._on_owned(cache, ev)

    def _on_owned(self, cache: ResourceCache, ev: CachedEvent) -> None:
        """An event of what the controller writes."""

    async def sync(self, key: str) -> None:
        raise NotImplementedError

    def selected_pods(self, service: Obj) -> list[Obj]:
        ns = meta(service).get("namespace", "")
        return [p for p in (e.obj() for e in self.pods.select(ns, None)) if selects(service, p)]


class EndpointSliceController(_ServicePodsController):
    name = "endpointslice"

    def __init__(self, cp: ControlPlane) -> None:
        super().__init__(cp)
        self.slices: GenericStore = self.registry.store(ENDPOINT_SLICES)

    def _on_owned(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix != ENDPOINT_SLICES.storage_prefix:
            return
        labels = ev.entry.attrs.labels
        if labels.get(LABEL_MANAGED_BY) == CONTROLLER_NAME and labels.get(LABEL_SERVICE_NAME):
            self.queue.add(f"{ev.entry.attrs.namespace}/{labels[LABEL_SERVICE_NAME]}")

    async def sync(self, key: str) -> None:
        """syncService: the Service's slices made to say what its pods say."""
        ns, name = split_key(key)
        existing = _managed_slices(self.slices, ns, name, CONTROLLER_NAME)
        service = self.get_primary(key)
        if service is None or not managed(service) or meta(service).get("deletionTimestamp"):
            for s in existing:
                await delete_unless_gone(self.slices, ns, meta(s).get("name", ""))
            return
        plan = reconcile_slices(service, existing, desired_slices(service,
                                                                  self.selected_pods(service)))
        await _apply(self.slices, ns, plan)


class EndpointsController(_ServicePodsController):
    name = "endpoints"

    def __init__(self, cp: ControlPlane) -> None:
        super().__init__(cp)
        self.endpoints: GenericStore = self.registry.store(ENDPOINTS)

    def _on_owned(self, cache: ResourceCache, ev: CachedEvent) -> None:
        # onEndpointsDelete: Endpoints deleted under a Service are made again (a user's
        # Endpoints of a selector-less Service, or without a Service, are not touched)
        if cache.prefix == ENDPOINTS.storage_prefix and ev.type == DELETED:
            self.queue.add(entry_key(ev.entry))

    async def sync(self, key: str) -> None:
        """syncService: the Endpoints named as the Service, or none once it is gone."""
        ns, name = split_key(key)
        service = self.get_primary(key)
        current = self.endpoints.lookup(ns, name)
        if service is None:  # the Service is gone: so are its Endpoints
            if current is not None:
                await delete_unless_gone(self.endpoints, ns, name)
            return
        if not managed(service) or meta(service).get("deletionTimestamp"):
            return
        wanted = desired_endpoints(service, self.selected_pods(service))
        ctx = Context()
        if current is None:
            await self.endpoints.create(ctx, ns, wanted)
            return
        have = current.obj()
        annotations = {k: v for k, v in (meta(have).get("annotations") or {}).items()
                       if k != OVER_CAPACITY}
        annotations.update(meta(wanted).get("annotations") or {})
        if (have.get("subsets") or []) == (wanted.get("subsets") or []) and (
                meta(have).get("labels") or {}) == (meta(wanted).get("labels") or {}) and (
                meta(have).get("annotations") or {}) == annotations:
            return
        wanted["metadata"]["resourceVersion"] = meta(have).get("resourceVersion", "")
        wanted["metadata"]["annotations"] = annotations
        for fld in ("ownerReferences", "finalizers"):
            if meta(have).get(fld):
                wanted["metadata"][fld] = meta(have)[fld]
        await self.endpoints.update(ctx, ns, name, wanted)


class EndpointSliceMirroringController(InformerController):
    """pkg/controller/endpointslicemirroring: the Endpoints a user keeps for a selector-less
    Service mirrored into EndpointSlices (managed-by
    ``endpointslicemirroring-controller.k8s.io``, owned by the Endpoints), so what reads
    slices only (the service proxy) sees them. Keyed by the Endpoints' namespace/name."""

    def __init__(self, cp: ControlPlane) -> None:
        self.registry = cp.registry
        self.endpoints: GenericStore = self.registry.store(ENDPOINTS)
        self.primary = self.endpoints
        self.services: GenericStore = self.registry.store(SERVICES)
        self.slices: GenericStore = self.registry.store(ENDPOINT_SLICES)
        self.queue: WorkQueue = WorkQueue("endpointslicemirroring", self.sync)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix in (ENDPOINTS.storage_prefix, SERVICES.storage_prefix):
            self.queue.add(entry_key(ev.entry))
        elif cache.prefix == ENDPOINT_SLICES.storage_prefix:
            labels = ev.entry.attrs.labels
            if labels.get(LABEL_MANAGED_BY) == MIRRORING_CONTROLLER_NAME and labels.get(
                    LABEL_SERVICE_NAME):
                self.queue.add(f"{ev.entry.attrs.namespace}/{labels[LABEL_SERVICE_NAME]}")

    async def sync(self, key: str) -> None:
        ns, name = split_key(key)
        existing = _managed_slices(self.slices, ns, name, MIRRORING_CONTROLLER_NAME)
        endpoints = self.get_primary(key)
        if endpoints is None or not mirrored(endpoints, get_by_key(self.services, key)):
            for s in existing:
                await delete_unless_gone(self.slices, ns, meta(s).get("name", ""))
            return
        plan = reconcile_slices(endpoints, existing, mirrored_slices(endpoints),
                                make=new_mirrored_slice)
        await _apply(self.slices, ns, plan)


def _managed_slices(slices: GenericStore, ns: str, service_name: str, manager: str) -> list[Obj]:
    """The slices of a Service that `manager` (the managed-by label) keeps."""
    def ours(attrs: Attrs) -> bool:
        return (attrs.labels.get(LABEL_SERVICE_NAME) == service_name
                and attrs.labels.get(LABEL_MANAGED_BY) == manager)

    return [e.obj() for e in slices.select(ns, ours)]


async def _apply(slices: GenericStore, ns: str, plan: SlicePlan) -> None:
    """A reconciler's plan written: creates, then updates, then deletes (as upstream's)."""
    ctx = Context()
    for obj in plan.create:
        await slices.create(ctx, ns, obj)
    for obj in plan.update:
        await slices.update(ctx, ns, meta(obj)["name"], obj)
    for slice_name in plan.delete:
        await delete_unless_gone(slices, ns, slice_name)


async def run_endpointslice_controller(cp: ControlPlane) -> None:
    await EndpointSliceController(cp).run()


async def run_endpoints_controller(cp: ControlPlane) -> None:
    await EndpointsController(cp).run()


async def run_endpointslice_mirroring_controller(cp: ControlPlane) -> None:
    await EndpointSliceMirroringController(cp).run()
