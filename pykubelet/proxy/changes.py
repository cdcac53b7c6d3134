"""kube-proxy's change trackers (pkg/proxy/servicechangetracker.go, endpointschangetracker.go)
for any proxier: the informers' handlers record which services changed and keep the
per-port maps current; a proxier's sync takes the changes (:meth:`take_changes`) and
writes full or partial. Shared by the iptables and the nftables proxier, which differ
only in what they write.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from pykubelet.proxy.serviceport import (
    EndpointInfo,
    ServicePortInfo,
    ServicePortName,
    endpoints_map,
    service_ports,
    slice_service,
)

Obj = Mapping[str, Any]
ServiceKey = tuple[str, str]


def _key(obj: Obj) -> ServiceKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


class ChangeTracker:
    """Services and EndpointSlices seen, per service port, and what changed since a sync."""

    def __init__(self, node_name: str = "") -> None:
        self.node_name = node_name
        self._mu = threading.Lock()
        self._services: dict[ServiceKey, Obj] = {}
        self._slices: dict[ServiceKey, dict[str, Obj]] = {}  # service -> slice name -> slice
        self._svc_ports: dict[ServiceKey, list[ServicePortInfo]] = {}
        self._endpoints: dict[ServiceKey, dict[ServicePortName, list[EndpointInfo]]] = {}
        self._changed: set[ServiceKey] = set()
        self._need_full = True
        self._services_synced = False
        self._slices_synced = False

    # -- change tracking (informer handlers: quick, no I/O) --

    def on_service(self, old: Obj | None, new: Obj | None) -> None:
        """OnServiceAdd/Update/Delete: ``old`` None for an add, ``new`` None for a delete."""
        obj = new if new is not None else old
        if obj is None:
            return
        key = _key(obj)
        with self._mu:
            if new is None:
                self._services.pop(key, None)
                self._svc_ports.pop(key, None)
            else:
                self._services[key] = new
                self._svc_ports[key] = service_ports(new)
            self._changed.add(key)

    def on_endpoint_slice(self, old: Obj | None, new: Obj | None) -> None:
        """OnEndpointSliceAdd/Update/Delete: the owning service's endpoints are rebuilt."""
        obj = new if new is not None else old
        if obj is None:
            return
        svc = slice_service(obj)
        if svc is None:
            return
        name = _key(obj)[1]
        with self._mu:
            slices = self._slices.setdefault(svc, {})
            if new is None:
                slices.pop(name, None)
            else:
                slices[name] = new
            if not slices:
                self._slices.pop(svc, None)
                self._endpoints.pop(svc, None)
            else:
                self._endpoints[svc] = endpoints_map(slices.values(), self.node_name)
            self._changed.add(svc)

    def set_services(self, services: list[Obj]) -> None:
        """OnServiceSynced with the full list (a relist replaces what was known)."""
        with self._mu:
            gone = set(self._services) - {_key(s) for s in services}
        for key in gone:
            self.on_service({"metadata": {"namespace": key[0], "name": key[1]}}, None)
        for s in services:
            self.on_service(None, s)
        with self._mu:
            self._services_synced = True

    def set_endpoint_slices(self, slices: list[Obj]) -> None:
        """OnEndpointSlicesSynced with the full list."""
        with self._mu:
            self._slices.clear()
            old = set(self._endpoints)
            self._endpoints.clear()
            self._changed |= old
        for es in slices:
            self.on_endpoint_slice(None, es)
        with self._mu:
            self._slices_synced = True

    @property
    def initialized(self) -> bool:
        return self._services_synced and self._slices_synced

    def force_full_sync(self) -> None:
        with self._mu:
            self._need_full = True

    def pending(self) -> bool:
        """Whether a sync would write anything new."""
        with self._mu:
            return self._need_full or bool(self._changed)

    def take_changes(self) -> tuple[bool, set[ServiceKey],
                                    dict[ServicePortName, ServicePortInfo],
                                    dict[ServicePortName, list[EndpointInfo]]]:
        """(partial, changed services, service ports, endpoints) for one sync; the changes
        are consumed (a failed sync calls :meth:`sync_failed` to get them back)."""
        with self._mu:
            partial = not self._need_full
            changed = set(self._changed)
            self._changed.clear()
            services = {p.name: p for ports in self._svc_ports.values() for p in ports}
            endpoints = {n: eps for by_port in self._endpoints.values()
                         for n, eps in by_port.items()}
        return partial, changed, services, endpoints

    def sync_failed(self, changed: set[ServiceKey]) -> None:
        """The changes taken are not in the kernel: only a full sync is safe now."""
        with self._mu:
            self._need_full = True
            self._changed |= changed

    def sync_succeeded(self) -> None:
        with self._mu:
            self._need_full = False
