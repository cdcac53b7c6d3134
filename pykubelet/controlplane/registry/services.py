"""Services, Endpoints and EndpointSlices served (pkg/registry/core/service/storage,
endpoint, discovery/endpointslice).

A Service takes a ClusterIP from the service CIDR and node ports from their range before
it is written (upstream's beginCreate/beginUpdate and their transactions): the values a
user asks for are checked and taken, the missing ones chosen; a failed write gives them
back, a delete releases them. An update keeps what the Service already holds when the
body leaves it out (patchAllocatedValues: a ``kubectl apply`` of a manifest without
``clusterIP``), clears what a type change makes pointless (dropTypeDependentFields), and
takes or releases what the change needs.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.field import invalid
from pykubelet.api.services import (
    CLUSTER_IP_NONE,
    IP_FAMILY_IPV4,
    IP_FAMILY_IPV6,
    IP_FAMILY_POLICY_REQUIRE_DUAL_STACK,
    IP_FAMILY_POLICY_SINGLE_STACK,
    SERVICE_TYPE_EXTERNAL_NAME,
    SERVICE_TYPE_LOAD_BALANCER,
    SERVICE_TYPE_NODE_PORT,
    Service,
    ServiceSpec,
)
from pykubelet.api.services_validation import cluster_ips_errors, externally_accessible
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.allocations import Allocator, Owner
from pykubelet.controlplane.registry.allocators import (
    DEFAULT_SERVICE_CLUSTER_IP_RANGE,
    DEFAULT_SERVICE_NODE_PORT_RANGE,
    AllocatedError,
    FullError,
    IPRange,
    PortRange,
    ServiceAllocationError,
)
from pykubelet.controlplane.registry.resources import ENDPOINT_SLICES, ENDPOINTS, SERVICES
from pykubelet.controlplane.registry.strategy import Finish, Obj, Strategy
from pykubelet.controlplane.storage import Storage, StorageError

log = logging.getLogger(__name__)


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    return spec


def needs_cluster_ip(spec: Obj) -> bool:
    """A ClusterIP to allocate: not ExternalName, not headless."""
    return spec.get("type") != SERVICE_TYPE_EXTERNAL_NAME and (
        spec.get("clusterIP") != CLUSTER_IP_NONE)


def needs_node_ports(spec: Obj) -> bool:
    t = spec.get("type")
    return t == SERVICE_TYPE_NODE_PORT or (
        t == SERVICE_TYPE_LOAD_BALANCER and spec.get("allocateLoadBalancerNodePorts") is not False)


def _cluster_ip_of(spec: Obj) -> str:
    """The ClusterIP a Service holds in the range (none for headless/ExternalName)."""
    ip = spec.get("clusterIP") or ""
    return "" if ip == CLUSTER_IP_NONE else str(ip)


def _node_ports(spec: Obj) -> set[int]:
    return {int(p["nodePort"]) for p in spec.get("ports") or []
            if isinstance(p, dict) and isinstance(p.get("nodePort"), int) and p["nodePort"]}


# ---------------------------------------------------------------------------- normalising


def normalize_cluster_ips(new: Obj, old: Obj | None) -> None:
    """normalizeClusterIPs: keep clusterIP and clusterIPs in step for clients that write
    only the singular field."""
    spec = _spec(new)
    ip, ips = spec.get("clusterIP") or "", list(spec.get("clusterIPs") or [])
    if old is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    ospec = _spec(old)
    oip, oips = ospec.get("clusterIP") or "", list(ospec.get("clusterIPs") or [])
    if oips and not ips and oip == ip:
        spec["clusterIPs"] = ips = oips
    if oip != ip:
        if oip and not ip:
            spec.pop("clusterIPs", None)
        elif ip and not ips:
            spec["clusterIPs"] = [ip]
        elif ip and ips == oips:
            spec["clusterIPs"] = [ip, *ips[1:]]


def patch_allocated_values(new: Obj, old: Obj) -> None:
    """patchAllocatedValues: what the old Service holds and the new one still needs, when
    the body leaves it out."""
    spec, ospec = _spec(new), _spec(old)
    if needs_cluster_ip(ospec) and needs_cluster_ip(spec):
        if not spec.get("clusterIP") and ospec.get("clusterIP"):
            spec["clusterIP"] = ospec["clusterIP"]
        if not spec.get("clusterIPs") and ospec.get("clusterIPs"):
            spec["clusterIPs"] = list(ospec["clusterIPs"])
    if needs_node_ports(ospec) and needs_node_ports(spec):
        old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort")
                     for p in ospec.get("ports") or [] if isinstance(p, dict)}
        for p in spec.get("ports") or []:
            if isinstance(p, dict) and not p.get("nodePort"):
                held = old_ports.get((p.get("port"), p.get("protocol")))
                if held:
                    p["nodePort"] = held
    for fld in ("ipFamilies", "ipFamilyPolicy"):
        if fld not in spec and fld in ospec and needs_cluster_ip(spec):
            spec[fld] = copy.deepcopy(ospec[fld])


def drop_type_dependent_fields(new: Obj, old: Obj) -> None:
    """dropTypeDependentFields: what a type change leaves meaningless and the user did
    not change goes (the ClusterIP when turning ExternalName, node ports when turning
    ClusterIP, the external traffic policy when no longer reachable from outside)."""
    spec, ospec = _spec(new), _spec(old)
    if (needs_cluster_ip(ospec) and spec.get("type") == SERVICE_TYPE_EXTERNAL_NAME
            and spec.get("clusterIP") == ospec.get("clusterIP")
            and spec.get("clusterIPs") == ospec.get("clusterIPs")):
        for fld in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            spec.pop(fld, None)
    if needs_node_ports(ospec) and not needs_node_ports(spec) and (
            _node_ports(spec) == _node_ports(ospec)):
        for p in spec.get("ports") or []:
            if isinstance(p, dict):
                p.pop("nodePort", None)
    if not _externally_accessible(spec) and spec.get("externalTrafficPolicy") == ospec.get(
            "externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)


def _externally_accessible(spec: Obj) -> bool:
    return externally_accessible(Service(spec=ServiceSpec(
        type=str(spec.get("type") or ""), external_ips=list(spec.get("externalIPs") or []))))


def _invalid(obj: Obj, errs: list[FieldError]) -> errors.StatusError:
    name = str((obj.get("metadata") or {}).get("name", ""))
    return errors.invalid("Service", "", name, [errors.cause(e) for e in errs])


def init_ip_family_fields(obj: Obj) -> None:
    """initIPFamilyFields on a single-stack IPv4 cluster: ipFamilyPolicy SingleStack and
    ipFamilies [IPv4] unless said; dual stack and IPv6 are refused with upstream's words."""
    spec = _spec(obj)
    if spec.get("type") == SERVICE_TYPE_EXTERNAL_NAME:
        return
    typed_errs = cluster_ips_errors(SERVICES.model.decode(obj, unknown=[]))
    if typed_errs:
        raise _invalid(obj, typed_errs)
    errs: list[FieldError] = []
    policy = spec.get("ipFamilyPolicy")
    if policy == IP_FAMILY_POLICY_REQUIRE_DUAL_STACK:
        errs.append(invalid("spec.ipFamilyPolicy", policy,
                            "this cluster is not configured for dual-stack services"))
    for i, family in enumerate(spec.get("ipFamilies") or []):
        if family == IP_FAMILY_IPV6:
            errs.append(invalid(f"spec.ipFamilies[{i}]", family, "not configured on this cluster"))
    if len(spec.get("ipFamilies") or []) > 1 and policy in (None, IP_FAMILY_POLICY_SINGLE_STACK):
        errs.append(invalid("spec.ipFamilies", spec["ipFamilies"],
                            "when multiple IP families are specified, IP family policy must be "
                            "PreferDualStack or RequireDualStack"))
    if errs:
        raise _invalid(obj, errs)
    if policy is None:
        spec["ipFamilyPolicy"] = IP_FAMILY_POLICY_SINGLE_STACK
    if not spec.get("ipFamilies"):
        spec["ipFamilies"] = [IP_FAMILY_IPV4]


# ---------------------------------------------------------------------------- allocating


class _Txn:
    """What one write took (undone when it fails) and what it gives back (released when it
    succeeds): upstream's metaAllocatorTxn."""

    def __init__(self, allocator: Allocator, dry_run: bool) -> None:
        self.allocator = allocator
        self.dry_run = dry_run
        self.taken_ips: list[str] = []
        self.taken_ports: list[int] = []
        self.release_ips: list[str] = []
        self.release_ports: list[int] = []

    async def finish(self, ok: bool) -> None:
        if self.dry_run:
            return
        if ok:
            await self.allocator.release_all(self.release_ips, self.release_ports)
        else:
            await self.allocator.release_all(self.taken_ips, self.taken_ports)

    async def revert(self) -> None:
        await self.finish(False)

    async def cluster_ip(self, obj: Obj, owner: Owner) -> None:
        """allocClusterIPs: the asked-for address, or the next free one."""
        spec = _spec(obj)
        ip = spec.get("clusterIP") or ""
        if not ip:
            try:
                ip = await self.allocator.allocate_next_ip(owner, self.dry_run)
            except ServiceAllocationError as exc:
                raise errors.internal(f"failed to allocate a serviceIP: {exc}") from None
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
        else:
            try:
                await self.allocator.allocate_ip(owner, ip, self.dry_run)
            except ServiceAllocationError as exc:
                raise _invalid(obj, [invalid("spec.clusterIPs", list(spec.get("clusterIPs")
                                                                     or [ip]),
                                             f"failed to allocate IP {ip}: {exc}")]) from None
        self.taken_ips.append(ip)

    async def node_ports(self, obj: Obj, owner: Owner, held: set[int]) -> None:
        """initNodePorts/updateNodePorts: each port's asked-for node port, or the one the
        same port number already has, or the next free one; ``held``: what the Service
        already holds (not taken again)."""
        spec = _spec(obj)
        by_port: dict[Any, int] = {}
        mine = set(held)
        for i, p in enumerate(spec.get("ports") or []):
            if not isinstance(p, dict):
                continue
            node_port = p.get("nodePort") or 0
            if node_port:
                if node_port not in mine:
                    try:
                        await self.allocator.allocate_port(owner, node_port, self.dry_run)
                    except ServiceAllocationError as exc:
                        raise _invalid(obj, [invalid(f"spec.ports[{i}].nodePort", node_port,
                                                     str(exc))]) from None
                    self.taken_ports.append(node_port)
                    mine.add(node_port)
            elif p.get("port") in by_port:
                node_port = p["nodePort"] = by_port[p.get("port")]
            else:
                try:
                    node_port = await self.allocator.allocate_next_port(owner, self.dry_run)
                except FullError as exc:
                    raise errors.internal(f"failed to allocate a nodePort: {exc}") from None
                except AllocatedError as exc:
                    raise errors.internal(f"failed to allocate a nodePort: {exc}") from None
                p["nodePort"] = node_port
                self.taken_ports.append(node_port)
                mine.add(node_port)
            by_port[p.get("port")] = node_port


def _owner(obj: Obj) -> Owner:
    meta = obj.get("metadata") or {}
    return Owner(str(meta.get("namespace", "")), str(meta.get("name", "")),
                 str(meta.get("uid", "")))


class ServiceStrategy(Strategy):
    info = SERVICES
    has_status = True

    def __init__(self, ip_range: str = DEFAULT_SERVICE_CLUSTER_IP_RANGE,
                 node_port_range: str = DEFAULT_SERVICE_NODE_PORT_RANGE) -> None:
        self.ip_range = IPRange(ip_range)
        _ = self.ip_range.network  # a bad CIDR is refused here (ValueError), not at first use
        self.port_range = PortRange.parse(node_port_range)
        self._allocators: dict[int, Allocator] = {}

    def allocator(self, storage: Storage) -> Allocator:
        found = self._allocators.get(id(storage))
        if found is None:
            found = self._allocators[id(storage)] = Allocator(storage, self.ip_range,
                                                              self.port_range)
        return found

    async def begin_create(self, storage: Storage, obj: Obj, dry_run: bool) -> Finish | None:
        normalize_cluster_ips(obj, None)
        spec = _spec(obj)
        if not isinstance(spec.get("ports"), list | type(None)) or not isinstance(
                spec.get("type", ""), str):
            return None  # decoding already refused it
        init_ip_family_fields(obj)
        txn = _Txn(self.allocator(storage), dry_run)
        owner = _owner(obj)
        try:
            if needs_cluster_ip(spec):
                await txn.cluster_ip(obj, owner)
            if needs_node_ports(spec):
                await txn.node_ports(obj, owner, set())
        except BaseException:
            await txn.revert()
            raise
        return txn.finish

    async def begin_update(self, storage: Storage, new: Obj, old: Obj,
                           dry_run: bool) -> Finish | None:
        normalize_cluster_ips(new, old)
        patch_allocated_values(new, old)
        drop_type_dependent_fields(new, old)
        spec, ospec = _spec(new), _spec(old)
        txn = _Txn(self.allocator(storage), dry_run)
        owner = _owner(old)
        try:
            if needs_cluster_ip(spec) and not needs_cluster_ip(ospec):
                init_ip_family_fields(new)
                await txn.cluster_ip(new, owner)
            elif needs_cluster_ip(ospec) and not needs_cluster_ip(spec) and (
                    _cluster_ip_of(ospec)):
                txn.release_ips.append(_cluster_ip_of(ospec))
            held = _node_ports(ospec)
            if needs_node_ports(spec):
                await txn.node_ports(new, owner, held)
            txn.release_ports.extend(held - _node_ports(spec))
        except BaseException:
            await txn.revert()
            raise
        return txn.finish

    async def after_delete(self, storage: Storage, obj: Obj) -> None:
        """Release what the deleted Service held; a store failure here leaves the records
        to the repair pass (the Service is gone already: the delete succeeded)."""
        spec = _spec(obj)
        ips = [ip for ip in [_cluster_ip_of(spec)] if ip]
        try:
            await self.allocator(storage).release_all(ips, _node_ports(spec))
        except StorageError as exc:
            log.warning("service %s/%s deleted; its allocations are left to repair: %s",
                        (obj.get("metadata") or {}).get("namespace", ""),
                        (obj.get("metadata") or {}).get("name", ""), exc)

    def prepare_for_create(self, obj: Obj, typed: Any = None) -> None:
        super().prepare_for_create(obj, typed)
        obj["status"] = {"loadBalancer": {}}


class EndpointsStrategy(Strategy):
    info = ENDPOINTS


class EndpointSliceStrategy(Strategy):
    info = ENDPOINT_SLICES
