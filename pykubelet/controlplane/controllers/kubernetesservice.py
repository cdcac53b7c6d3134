"""The ``kubernetes`` Service in ``default`` and its endpoints: every live API server
(pkg/controlplane/controller/kubernetesservice and the lease endpoint reconciler,
pkg/controlplane/reconcilers/lease.go). It runs in every API server, not only the leader.

Each API server keeps a short-lived record of itself under ``/registry/masterleases/<ip>``
(its address, port and when it last renewed), renewed every ``INTERVAL_S``; records older
than ``LEASE_TTL_S`` are gone (etcd would expire them; here the reconcilers delete them).
From the live records each server writes the ``kubernetes`` Endpoints and EndpointSlice
(only when they differ), so a control plane that stops leaves them within the TTL, and at
once when it stops cleanly (it removes its own record on the way out).

At start, before anything else, the ClusterIP and node port records are repaired from the
stored Services (upstream's repair controllers, run by the same bootstrap controller), and
again every ``REPAIR_INTERVAL_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from pykubelet.api.services import LABEL_SERVICE_NAME
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.endpoints_decisions import ip_order
from pykubelet.controlplane.registry.resources import ENDPOINT_SLICES, ENDPOINTS, SERVICES
from pykubelet.controlplane.registry.services import ServiceStrategy
from pykubelet.controlplane.registry.store import Context, GenericStore
from pykubelet.controlplane.storage import KeyExistsError, NotFoundError, StorageError

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

Obj = dict[str, Any]

NAME = "kubernetes"
NAMESPACE = "default"
LEASE_PREFIX = "/registry/masterleases/"
INTERVAL_S = 10.0  # upstream's EndpointInterval
LEASE_TTL_S = 15.0  # upstream's master lease TTL
REPAIR_INTERVAL_S = 180.0  # upstream's repair interval
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"


def service_body(cluster_ip: str, port: int) -> Obj:
    """The ``kubernetes`` Service: port 443 (https) to the API servers' port."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": cluster_ip, "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                "targetPort": port}]}}


def endpoints_body(ips: list[str], port: int) -> Obj:
    body: Obj = {"apiVersion": "v1", "kind": "Endpoints",
                 "metadata": {"name": NAME, "namespace": NAMESPACE,
                              "labels": {SKIP_MIRROR: "true"}}}
    if ips:
        body["subsets"] = [{"addresses": [{"ip": ip} for ip in ips],
                            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
    return body


def slice_body(ips: list[str], port: int) -> Obj:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {LABEL_SERVICE_NAME: NAME}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}


def live_servers(records: list[tuple[str, bytes]], now: float,
                 ttl: float = LEASE_TTL_S) -> tuple[list[str], list[str]]:
    """(live IPs sorted, expired record keys) from the lease records."""
    live: set[str] = set()
    expired: list[str] = []
    for key, value in records:
        try:
            rec = orjson.loads(value)
            renewed = float(rec["renewTime"])
            ip = str(rec["ip"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            expired.append(key)
            continue
        if now - renewed > ttl:
            expired.append(key)
        else:
            live.add(ip)
    return sorted(live, key=ip_order), expired


class KubernetesService:
    """One API server's part: its lease, the Service, the endpoints. A subclass keeps
    another selectorless Service of live servers the same way (kube-dns's, in kubedns)."""

    name = NAME
    namespace = NAMESPACE
    lease_prefix = LEASE_PREFIX
    repairs = True  # the allocations' repair runs with the kubernetes Service only

    def __init__(self, cp: ControlPlane, clock: Callable[[], float] = time.time) -> None:
        self.cp = cp
        self.storage = cp.registry.storage
        self.clock = clock
        strategy = cp.registry.store(SERVICES).strategy
        assert isinstance(strategy, ServiceStrategy)
        self.strategy = strategy

    @property
    def ip(self) -> str:
        return self.cp.advertise_address()

    @property
    def port(self) -> int:
        return self.cp.port

    def wanted_service(self) -> Obj:
        return service_body(self.strategy.ip_range.first(), self.port)

    def wanted_endpoints(self, ips: list[str]) -> Obj:
        return endpoints_body(ips, self.port)

    def wanted_slice(self, ips: list[str]) -> Obj:
        return slice_body(ips, self.port)

    async def repair(self) -> None:
        created, released = await self.strategy.allocator(self.storage).repair()
        if created or released:
            log.info("service allocations repaired: %d recorded, %d released", created,
                     released)

    async def renew(self) -> None:
        """Write this server's lease record (create or overwrite)."""
        key = self.lease_prefix + self.ip
        value = orjson.dumps({"ip": self.ip, "port": self.port, "renewTime": self.clock()})
        cur = await self.storage.get(key)
        try:
            if cur is None:
                await self.storage.create(key, value)
            else:
                await self.storage.update(key, value, cur.mod_revision)
        except (KeyExistsError, StorageError) as exc:  # another writer: next round
            log.debug("master lease %s: %s", key, exc)

    async def remove_lease(self) -> None:
        with contextlib.suppress(NotFoundError, StorageError):
            await self.storage.delete(self.lease_prefix + self.ip)

    async def _current_or_create(self, store: GenericStore, wanted: Obj) -> Obj | None:
        """The stored object, or None once `wanted` is created (by us or, a 409, by a peer
        server meanwhile): what is left to do is only ever an update of what is there."""
        entry = store.lookup(self.namespace, self.name)
        if entry is not None:
            return entry.obj()
        try:
            await store.create(Context(), self.namespace, wanted)
        except errors.StatusError as exc:
            if exc.code != 409:
                raise
        return None

    async def ensure_service(self) -> None:
        """CreateOrUpdateMasterServiceIfNeeded."""
        store = self.cp.registry.store(SERVICES)
        wanted = self.wanted_service()
        have = await self._current_or_create(store, wanted)
        if have is None:
            return
        ports = (have.get("spec") or {}).get("ports") or []
        if [(p.get("port"), p.get("targetPort")) for p in ports] != \
                [(p["port"], p["targetPort"]) for p in wanted["spec"]["ports"]]:
            def mutate(obj: Obj) -> Obj:
                obj["spec"]["ports"] = wanted["spec"]["ports"]
                return obj
            await store.guaranteed_update(self.namespace, self.name, mutate)

    async def reconcile(self) -> None:
        """The Endpoints and EndpointSlice list every live API server."""
        items, _ = await self.storage.list_prefix(self.lease_prefix)
        ips, expired = live_servers([(kv.key, kv.value) for kv in items], self.clock())
        for key in expired:
            with contextlib.suppress(NotFoundError, StorageError):
                await self.storage.delete(key)
        await self._write(ENDPOINTS, self.wanted_endpoints(ips), ("subsets",))
        await self._write(ENDPOINT_SLICES, self.wanted_slice(ips),
                          ("endpoints", "ports", "addressType"))

    async def _write(self, info: Any, wanted: Obj, fields: tuple[str, ...]) -> None:
        store = self.cp.registry.store(info)
        have = await self._current_or_create(store, wanted)
        if have is None:
            return
        if all(have.get(f) == wanted.get(f) for f in fields) and (
                (have.get("metadata") or {}).get("labels") == wanted["metadata"]["labels"]):
            return

        def mutate(obj: Obj) -> Obj:
            for f in fields:
                if f in wanted:
                    obj[f] = wanted[f]
                else:
                    obj.pop(f, None)
            obj.setdefault("metadata", {})["labels"] = wanted["metadata"]["labels"]
            return obj

        await store.guaranteed_update(self.namespace, self.name, mutate)

    async def run(self) -> None:
        if self.repairs:
            await self.repair()
        last_repair = self.clock()
        try:
            while True:
                try:
                    await self.ensure_service()
                    await self.renew()
                    await self.reconcile()
                    if self.repairs and self.clock() - last_repair >= REPAIR_INTERVAL_S:
                        await self.repair()
                        last_repair = self.clock()
                except errors.StatusError as exc:
                    log.warning("%s service: %s", self.name, exc.message)
                await asyncio.sleep(INTERVAL_S)
        finally:  # a clean stop leaves the endpoints at once (RemoveEndpoints)
            with contextlib.suppress(Exception):
                await self.remove_lease()
                await self.reconcile()


async def run_kubernetes_service(cp: ControlPlane) -> None:
    await KubernetesService(cp).run()
