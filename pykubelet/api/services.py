"""core/v1 Service and Endpoints, discovery.k8s.io/v1 EndpointSlice: a stable address for a
set of pods and the lists of where they are (k8s.io/api core/v1 types.go, discovery/v1).

Same rules as types.py: snake_case attributes, camelCase on the wire, Go's omitempty on the
way out (``keep`` where upstream's JSON tag has none), each class naming its upstream type.
Fields we do not model (load balancer status, topology hints, ...) are still decoded,
checked against upstream's schema and kept (the ``unmodelled`` bucket).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykubelet.api.objects import ObjectReference
from pykubelet.api.types import KEEP, IntOrString, Model, ObjectMeta, wire

_CORE = "io.k8s.api.core.v1."
_DISCOVERY = "io.k8s.api.discovery.v1."

# ServiceType
SERVICE_TYPE_CLUSTER_IP = "ClusterIP"
SERVICE_TYPE_NODE_PORT = "NodePort"
SERVICE_TYPE_LOAD_BALANCER = "LoadBalancer"
SERVICE_TYPE_EXTERNAL_NAME = "ExternalName"
SERVICE_TYPES = (SERVICE_TYPE_CLUSTER_IP, SERVICE_TYPE_EXTERNAL_NAME, SERVICE_TYPE_NODE_PORT,
                 SERVICE_TYPE_LOAD_BALANCER)
CLUSTER_IP_NONE = "None"  # a headless Service

PROTOCOL_TCP = "TCP"
PROTOCOL_UDP = "UDP"
PROTOCOL_SCTP = "SCTP"
PROTOCOLS = (PROTOCOL_SCTP, PROTOCOL_TCP, PROTOCOL_UDP)

AFFINITY_NONE = "None"
AFFINITY_CLIENT_IP = "ClientIP"
SESSION_AFFINITIES = (AFFINITY_CLIENT_IP, AFFINITY_NONE)
DEFAULT_CLIENT_IP_TIMEOUT_SECONDS = 10800  # 3 hours (core/v1 DefaultClientIPServiceAffinitySeconds)

TRAFFIC_POLICY_CLUSTER = "Cluster"
TRAFFIC_POLICY_LOCAL = "Local"
TRAFFIC_POLICIES = (TRAFFIC_POLICY_CLUSTER, TRAFFIC_POLICY_LOCAL)

IP_FAMILY_IPV4 = "IPv4"
IP_FAMILY_IPV6 = "IPv6"
IP_FAMILY_POLICY_SINGLE_STACK = "SingleStack"
IP_FAMILY_POLICY_PREFER_DUAL_STACK = "PreferDualStack"
IP_FAMILY_POLICY_REQUIRE_DUAL_STACK = "RequireDualStack"
IP_FAMILY_POLICIES = (IP_FAMILY_POLICY_PREFER_DUAL_STACK, IP_FAMILY_POLICY_REQUIRE_DUAL_STACK,
                      IP_FAMILY_POLICY_SINGLE_STACK)

# discovery/v1 AddressType
ADDRESS_TYPE_IPV4 = "IPv4"
ADDRESS_TYPE_IPV6 = "IPv6"
ADDRESS_TYPE_FQDN = "FQDN"
ADDRESS_TYPES = (ADDRESS_TYPE_FQDN, ADDRESS_TYPE_IPV4, ADDRESS_TYPE_IPV6)
# the labels an EndpointSlice's owner and manager are found by (discovery/v1 well_known_labels)
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
MAX_ENDPOINTS_PER_SLICE = 1000  # validation's limit (the controller writes at most 100)


# --------------------------------------------------------------------------- Service


@dataclass(kw_only=True)
class ServicePort(Model):
    __k8s__ = _CORE + "ServicePort"

    name: str = ""
    protocol: str = ""
    app_protocol: str | None = None
    port: int = field(default=0, metadata=KEEP)
    target_port: IntOrString | None = None
    node_port: int = 0


@dataclass(kw_only=True)
class ClientIPConfig(Model):
    __k8s__ = _CORE + "ClientIPConfig"

    timeout_seconds: int | None = None


@dataclass(kw_only=True)
class SessionAffinityConfig(Model):
    __k8s__ = _CORE + "SessionAffinityConfig"

    client_ip: ClientIPConfig | None = field(default=None, metadata=wire("clientIP"))


@dataclass(kw_only=True)
class ServiceSpec(Model):
    __k8s__ = _CORE + "ServiceSpec"

    ports: list[ServicePort] = field(default_factory=list)
    selector: dict[str, str] = field(default_factory=dict)
    cluster_ip: str = field(default="", metadata=wire("clusterIP"))
    cluster_ips: list[str] = field(default_factory=list, metadata=wire("clusterIPs"))
    type: str = ""
    external_ips: list[str] = field(default_factory=list, metadata=wire("externalIPs"))
    session_affinity: str = ""
    external_name: str = ""
    external_traffic_policy: str = ""
    health_check_node_port: int = 0
    publish_not_ready_addresses: bool = False
    session_affinity_config: SessionAffinityConfig | None = None
    ip_families: list[str] = field(default_factory=list)
    ip_family_policy: str | None = None
    allocate_load_balancer_node_ports: bool | None = None
    internal_traffic_policy: str | None = None


@dataclass(kw_only=True)
class ServiceStatus(Model):
    __k8s__ = _CORE + "ServiceStatus"


@dataclass(kw_only=True)
class Service(Model):
    __k8s__ = _CORE + "Service"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Service", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    spec: ServiceSpec = field(default_factory=ServiceSpec, metadata=KEEP)
    status: ServiceStatus = field(default_factory=ServiceStatus, metadata=KEEP)


# --------------------------------------------------------------------------- Endpoints


@dataclass(kw_only=True)
class EndpointAddress(Model):
    __k8s__ = _CORE + "EndpointAddress"

    ip: str = field(default="", metadata=wire("ip", keep=True))
    hostname: str = ""
    node_name: str | None = None
    target_ref: ObjectReference | None = None


@dataclass(kw_only=True)
class EndpointPort(Model):
    """core/v1 EndpointPort (the legacy Endpoints' port)."""

    __k8s__ = _CORE + "EndpointPort"

    name: str = ""
    port: int = field(default=0, metadata=KEEP)
    protocol: str = ""
    app_protocol: str | None = None


@dataclass(kw_only=True)
class EndpointSubset(Model):
    __k8s__ = _CORE + "EndpointSubset"

    addresses: list[EndpointAddress] = field(default_factory=list)
    not_ready_addresses: list[EndpointAddress] = field(default_factory=list)
    ports: list[EndpointPort] = field(default_factory=list)


@dataclass(kw_only=True)
class Endpoints(Model):
    __k8s__ = _CORE + "Endpoints"

    api_version: str = field(default="v1", metadata=KEEP)
    kind: str = field(default="Endpoints", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    subsets: list[EndpointSubset] = field(default_factory=list)


# --------------------------------------------------------------------------- EndpointSlice


@dataclass(kw_only=True)
class EndpointConditions(Model):
    __k8s__ = _DISCOVERY + "EndpointConditions"

    ready: bool | None = None
    serving: bool | None = None
    terminating: bool | None = None


@dataclass(kw_only=True)
class Endpoint(Model):
    __k8s__ = _DISCOVERY + "Endpoint"

    addresses: list[str] = field(default_factory=list, metadata=KEEP)
    conditions: EndpointConditions = field(default_factory=EndpointConditions, metadata=KEEP)
    hostname: str | None = None
    target_ref: ObjectReference | None = None
    node_name: str | None = None
    zone: str | None = None


@dataclass(kw_only=True)
class SlicePort(Model):
    """discovery/v1 EndpointPort (every field a pointer upstream)."""

    __k8s__ = _DISCOVERY + "EndpointPort"

    name: str | None = None
    protocol: str | None = None
    port: int | None = None
    app_protocol: str | None = None


@dataclass(kw_only=True)
class EndpointSlice(Model):
    __k8s__ = _DISCOVERY + "EndpointSlice"

    api_version: str = field(default="discovery.k8s.io/v1", metadata=KEEP)
    kind: str = field(default="EndpointSlice", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    address_type: str = field(default="", metadata=KEEP)
    endpoints: list[Endpoint] = field(default_factory=list, metadata=KEEP)
    ports: list[SlicePort] = field(default_factory=list, metadata=KEEP)
