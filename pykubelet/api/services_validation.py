"""Service, Endpoints and EndpointSlice defaults and validation, as pkg/apis/core/v1/defaults.go
(SetDefaults_Service), pkg/apis/discovery/v1/defaults.go and pkg/apis/core/validation
(ValidateService, ValidateServiceUpdate, ValidateEndpoints) and pkg/apis/discovery/validation
(ValidateEndpointSlice) say them, with upstream's messages.

What needs the API server's configuration or storage (the ClusterIP and NodePort allocators,
ipFamilies/ipFamilyPolicy, keeping allocated values over an update that leaves them out) is
the registry's (pykubelet.controlplane.registry.services), as upstream's REST layer does it.
"""

from __future__ import annotations

import ipaddress

from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.field import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
)
from pykubelet.api.machinery.validation import (
    name_is_dns1035_label,
    name_is_dns_subdomain,
    validate_dns_label,
    validate_dns_subdomain,
    validate_labels,
)
from pykubelet.api.meta_validation import (
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from pykubelet.api.services import (
    ADDRESS_TYPE_FQDN,
    ADDRESS_TYPE_IPV4,
    ADDRESS_TYPE_IPV6,
    ADDRESS_TYPES,
    AFFINITY_CLIENT_IP,
    AFFINITY_NONE,
    CLUSTER_IP_NONE,
    DEFAULT_CLIENT_IP_TIMEOUT_SECONDS,
    IP_FAMILY_IPV4,
    IP_FAMILY_IPV6,
    IP_FAMILY_POLICIES,
    MAX_ENDPOINTS_PER_SLICE,
    PROTOCOL_TCP,
    PROTOCOLS,
    SERVICE_TYPE_CLUSTER_IP,
    SERVICE_TYPE_EXTERNAL_NAME,
    SERVICE_TYPE_LOAD_BALANCER,
    SERVICE_TYPE_NODE_PORT,
    SERVICE_TYPES,
    SESSION_AFFINITIES,
    TRAFFIC_POLICIES,
    TRAFFIC_POLICY_CLUSTER,
    ClientIPConfig,
    EndpointAddress,
    Endpoints,
    EndpointSlice,
    Service,
    ServicePort,
    SessionAffinityConfig,
)
from pykubelet.api.validation import validate_port_num_or_name

IP_FAMILIES = (IP_FAMILY_IPV4, IP_FAMILY_IPV6)
MAX_CLIENT_IP_TIMEOUT_SECONDS = 86400
VALID_IP_ERROR = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
MAX_ADDRESSES = 100  # per endpoint of a slice
MAX_SLICE_PORTS = 100


# --------------------------------------------------------------------------- helpers


def is_headless(svc: Service) -> bool:
    """isHeadlessService: ``clusterIP: None``."""
    return svc.spec.cluster_ip == CLUSTER_IP_NONE


def externally_accessible(svc: Service) -> bool:
    """apiservice.ExternallyAccessible: NodePort, LoadBalancer, or external IPs."""
    t = svc.spec.type
    return t in (SERVICE_TYPE_LOAD_BALANCER, SERVICE_TYPE_NODE_PORT) or (
        t == SERVICE_TYPE_CLUSTER_IP and bool(svc.spec.external_ips))


def _parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def validate_ip(value: str, path: str) -> list[FieldError]:
    """validation.IsValidIP."""
    return [] if _parse_ip(value) is not None else [invalid(path, value, VALID_IP_ERROR)]


# --------------------------------------------------------------------------- defaults


def set_defaults_service(svc: Service) -> Service:
    """SetDefaults_Service: session affinity None (ClientIP: a 3 h timeout), type
    ClusterIP, each port TCP with targetPort = port, externalTrafficPolicy Cluster for what
    is reachable from outside, internalTrafficPolicy Cluster."""
    spec = svc.spec
    if svc.metadata.namespace == "":
        svc.metadata.namespace = "default"
    if spec.session_affinity == "":
        spec.session_affinity = AFFINITY_NONE
    if spec.session_affinity == AFFINITY_NONE:
        spec.session_affinity_config = None
    if spec.session_affinity == AFFINITY_CLIENT_IP:
        cfg = spec.session_affinity_config
        if cfg is None or cfg.client_ip is None or cfg.client_ip.timeout_seconds is None:
            spec.session_affinity_config = SessionAffinityConfig(
                client_ip=ClientIPConfig(timeout_seconds=DEFAULT_CLIENT_IP_TIMEOUT_SECONDS))
    if spec.type == "":
        spec.type = SERVICE_TYPE_CLUSTER_IP
    for port in spec.ports:
        if port.protocol == "":
            port.protocol = PROTOCOL_TCP
        if port.target_port in (None, 0, ""):
            port.target_port = port.port
    if externally_accessible(svc) and spec.external_traffic_policy == "":
        spec.external_traffic_policy = TRAFFIC_POLICY_CLUSTER
    if spec.internal_traffic_policy is None and spec.type in (
            SERVICE_TYPE_NODE_PORT, SERVICE_TYPE_LOAD_BALANCER, SERVICE_TYPE_CLUSTER_IP):
        spec.internal_traffic_policy = TRAFFIC_POLICY_CLUSTER
    if spec.type == SERVICE_TYPE_LOAD_BALANCER and spec.allocate_load_balancer_node_ports is None:
        spec.allocate_load_balancer_node_ports = True
    return svc


def set_defaults_endpoints(ep: Endpoints) -> Endpoints:
    """SetDefaults_Endpoints: each port's protocol TCP."""
    if ep.metadata.namespace == "":
        ep.metadata.namespace = "default"
    for subset in ep.subsets:
        for port in subset.ports:
            if port.protocol == "":
                port.protocol = PROTOCOL_TCP
    return ep


def set_defaults_endpoint_slice(es: EndpointSlice) -> EndpointSlice:
    """SetDefaults_EndpointPort: a port's name "" and protocol TCP when unset."""
    if es.metadata.namespace == "":
        es.metadata.namespace = "default"
    for port in es.ports:
        if port.name is None:
            port.name = ""
        if port.protocol is None:
            port.protocol = PROTOCOL_TCP
    return es


# --------------------------------------------------------------------------- Service


def _service_port_errors(sp: ServicePort, require_name: bool, names: set[str],
                         path: str) -> list[FieldError]:
    """validateServicePort."""
    errs: list[FieldError] = []
    if require_name and not sp.name:
        errs.append(required(f"{path}.name"))
    elif sp.name:
        errs += validate_dns_label(sp.name, f"{path}.name")
        if sp.name in names:
            errs.append(duplicate(f"{path}.name", sp.name))
        names.add(sp.name)
    if not 1 <= sp.port <= 65535:
        errs.append(invalid(f"{path}.port", sp.port, "must be between 1 and 65535, inclusive"))
    if not sp.protocol:
        errs.append(required(f"{path}.protocol"))
    elif sp.protocol not in PROTOCOLS:
        errs.append(not_supported(f"{path}.protocol", sp.protocol, PROTOCOLS))
    if sp.target_port is not None:
        errs += validate_port_num_or_name(sp.target_port, f"{path}.targetPort")
    return errs


def _client_ip_config_errors(cfg: SessionAffinityConfig | None, path: str) -> list[FieldError]:
    """validateClientIPAffinityConfig."""
    if cfg is None:
        return [required(path, "when session affinity type is ClientIP")]
    if cfg.client_ip is None:
        return [required(f"{path}.clientIP", "when session affinity type is ClientIP")]
    timeout = cfg.client_ip.timeout_seconds
    if timeout is None:
        return [required(f"{path}.clientIP.timeoutSeconds",
                         "when session affinity type is ClientIP")]
    if not 0 < timeout <= MAX_CLIENT_IP_TIMEOUT_SECONDS:
        return [invalid(f"{path}.clientIP.timeoutSeconds", timeout,
                        f"must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT_SECONDS}")]
    return []


def cluster_ips_errors(svc: Service) -> list[FieldError]:
    """ValidateServiceClusterIPsRelatedFields (single stack: one address)."""
    spec = svc.spec
    if spec.type == SERVICE_TYPE_EXTERNAL_NAME:
        return []
    errs: list[FieldError] = []
    path = "spec.clusterIPs"
    if spec.cluster_ip:
        if not spec.cluster_ips:
            errs.append(required(path))
        elif spec.cluster_ips[0] != spec.cluster_ip:
            errs.append(invalid(path, spec.cluster_ips, "first value must match `clusterIP`"))
    elif spec.cluster_ips:
        errs.append(invalid(path, spec.cluster_ips,
                            "must be empty when `clusterIP` is not specified"))
    seen: set[str] = set()
    for i, family in enumerate(spec.ip_families):
        if family not in IP_FAMILIES:
            errs.append(not_supported(f"spec.ipFamilies[{i}]", family, IP_FAMILIES))
        if family in seen:
            errs.append(duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.ip_family_policy
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errs.append(not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    bad = False
    for i, ip in enumerate(spec.cluster_ips):
        if i == 0 and ip == CLUSTER_IP_NONE:
            if len(spec.cluster_ips) > 1:
                bad = True
                errs.append(invalid(path, spec.cluster_ips,
                                    "'None' must be the first and only value"))
            continue
        found = validate_ip(ip, f"{path}[{i}]")
        bad = bad or bool(found)
        errs += found
    if len(spec.cluster_ips) > 2:
        errs.append(invalid(path, spec.cluster_ips, "may only hold up to 2 values"))
    if bad:
        return errs
    if len(spec.cluster_ips) > 1:
        versions = {_version(ip) for ip in spec.cluster_ips}
        if len(versions) != len(spec.cluster_ips):
            errs.append(invalid(path, spec.cluster_ips,
                                "may specify no more than one IP for each IP family"))
    if not is_headless(svc):
        for i, ip in enumerate(spec.cluster_ips[:len(spec.ip_families)]):
            family = spec.ip_families[i]
            if family == IP_FAMILY_IPV4 and _version(ip) == 6:
                errs.append(invalid(f"{path}[{i}]", ip, f"expected an IPv4 value as indicated "
                                    f"by `ipFamilies[{i}]`"))
            if family == IP_FAMILY_IPV6 and _version(ip) == 4:
                errs.append(invalid(f"{path}[{i}]", ip, f"expected an IPv6 value as indicated "
                                    f"by `ipFamilies[{i}]`"))
    return errs


def _version(ip: str) -> int:
    parsed = _parse_ip(ip)
    return parsed.version if parsed is not None else 0


def _traffic_policy_errors(svc: Service) -> list[FieldError]:
    """validateServiceExternalTrafficPolicy and validateServiceInternalTrafficFieldsValue."""
    spec = svc.spec
    errs: list[FieldError] = []
    etp = spec.external_traffic_policy
    if not externally_accessible(svc):
        if etp:
            errs.append(invalid("spec.externalTrafficPolicy", etp,
                                "may only be set for externally-accessible services"))
    elif not etp:
        errs.append(required("spec.externalTrafficPolicy"))
    elif etp not in TRAFFIC_POLICIES:
        errs.append(not_supported("spec.externalTrafficPolicy", etp, TRAFFIC_POLICIES))
    if spec.health_check_node_port and not (
            spec.type == SERVICE_TYPE_LOAD_BALANCER and etp == "Local"):
        errs.append(invalid("spec.healthCheckNodePort", spec.health_check_node_port,
                            "may only be set when `type` is 'LoadBalancer' and "
                            "`externalTrafficPolicy` is 'Local'"))
    itp = spec.internal_traffic_policy
    if itp is None:
        if spec.type in (SERVICE_TYPE_NODE_PORT, SERVICE_TYPE_LOAD_BALANCER,
                         SERVICE_TYPE_CLUSTER_IP):
            errs.append(required("spec.internalTrafficPolicy"))
    elif itp not in TRAFFIC_POLICIES:
        errs.append(not_supported("spec.internalTrafficPolicy", itp, TRAFFIC_POLICIES))
    return errs


def _type_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    errs: list[FieldError] = []
    if spec.type == SERVICE_TYPE_LOAD_BALANCER:
        for i, port in enumerate(spec.ports):
            if port.port == 10250:
                errs.append(invalid(f"spec.ports[{i}]", port.port,
                                    "may not expose port 10250 externally since it is used "
                                    "by kubelet"))
    elif spec.type == SERVICE_TYPE_EXTERNAL_NAME:
        if spec.cluster_ips:
            errs.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.ip_families:
            errs.append(forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.ip_family_policy is not None:
            errs.append(forbidden("spec.ipFamilyPolicy",
                                  "may not be set for ExternalName services"))
        cname = spec.external_name.removesuffix(".")
        if cname:
            errs += validate_dns_subdomain(cname, "spec.externalName")
        else:
            errs.append(required("spec.externalName"))
    return errs


def service_errors(svc: Service) -> list[FieldError]:
    """ValidateService."""
    spec = svc.spec
    errs = validate_object_meta(svc.metadata, namespaced=True, name_fn=name_is_dns1035_label)
    if not spec.ports and not is_headless(svc) and spec.type != SERVICE_TYPE_EXTERNAL_NAME:
        errs.append(required("spec.ports"))
    errs += _type_errors(svc)
    names: set[str] = set()
    for i, port in enumerate(spec.ports):
        errs += _service_port_errors(port, len(spec.ports) > 1, names, f"spec.ports[{i}]")
    errs += validate_labels(spec.selector, "spec.selector")
    if not spec.session_affinity:
        errs.append(required("spec.sessionAffinity"))
    elif spec.session_affinity not in SESSION_AFFINITIES:
        errs.append(not_supported("spec.sessionAffinity", spec.session_affinity,
                                  SESSION_AFFINITIES))
    if spec.session_affinity == AFFINITY_CLIENT_IP:
        errs += _client_ip_config_errors(spec.session_affinity_config,
                                         "spec.sessionAffinityConfig")
    elif spec.session_affinity == AFFINITY_NONE and spec.session_affinity_config is not None:
        errs.append(forbidden("spec.sessionAffinityConfig",
                              "must not be set when session affinity is None"))
    errs += cluster_ips_errors(svc)
    for i, ip in enumerate(spec.external_ips):
        errs += validate_ip(ip, f"spec.externalIPs[{i}]")
    if not spec.type:
        errs.append(required("spec.type"))
    elif spec.type not in SERVICE_TYPES:
        errs.append(not_supported("spec.type", spec.type, SERVICE_TYPES))
    if spec.type == SERVICE_TYPE_CLUSTER_IP:
        for i, port in enumerate(spec.ports):
            if port.node_port:
                errs.append(forbidden(f"spec.ports[{i}].nodePort",
                                      "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(spec.ports):
        if not port.node_port:
            continue
        if (port.protocol, port.node_port) in node_ports:
            errs.append(duplicate(f"spec.ports[{i}].nodePort", port.node_port))
        node_ports.add((port.protocol, port.node_port))
    ports: set[tuple[str, int]] = set()
    for i, port in enumerate(spec.ports):
        if (port.protocol, port.port) in ports:
            errs.append(duplicate(f"spec.ports[{i}]", {"port": port.port,
                                                       "protocol": port.protocol,
                                                       "targetPort": 0}))
        ports.add((port.protocol, port.port))
    errs += _traffic_policy_errors(svc)
    return errs


def _cluster_ips_update_errors(new: Service, old: Service) -> list[FieldError]:
    """validateUpgradeDowngradeClusterIPs: the primary address never changes (unless the
    Service turns into or out of ExternalName)."""
    if SERVICE_TYPE_EXTERNAL_NAME in (new.spec.type, old.spec.type):
        return []
    if is_headless(new) and is_headless(old):
        return []
    new_ips, old_ips = new.spec.cluster_ips, old.spec.cluster_ips
    path = "spec.clusterIPs"
    errs: list[FieldError] = []
    if len(old_ips) == len(new_ips):
        for i, ip in enumerate(old_ips):
            if ip != new_ips[i]:
                errs.append(invalid(f"{path}[{i}]", new_ips, "may not change once set"))
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            errs.append(invalid(f"{path}[0]", new_ips, "primary clusterIP can not be unset"))
        elif new_ips[0] != old_ips[0]:
            errs.append(invalid(f"{path}[0]", new_ips, "may not change once set"))
    elif old_ips and new_ips[0] != old_ips[0]:
        errs.append(invalid(f"{path}[0]", new_ips, "may not change once set"))
    return errs


def service_update_errors(new: Service, old: Service) -> list[FieldError]:
    """ValidateServiceUpdate."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    errs += _cluster_ips_update_errors(new, old)
    return errs + service_errors(new)


# --------------------------------------------------------------------------- Endpoints


def _endpoint_address_errors(addr: EndpointAddress, path: str) -> list[FieldError]:
    """validateEndpointAddress."""
    errs = validate_ip(addr.ip, f"{path}.ip")
    if addr.hostname:
        errs += validate_dns_label(addr.hostname, f"{path}.hostname")
    if addr.node_name is not None:
        errs += [invalid(f"{path}.nodeName", addr.node_name, m)
                 for m in name_is_dns_subdomain(addr.node_name, False)]
    return errs


def endpoints_errors(ep: Endpoints) -> list[FieldError]:
    """ValidateEndpoints (ValidateEndpointsCreate)."""
    errs = validate_object_meta(ep.metadata, namespaced=True, name_fn=name_is_dns_subdomain)
    for i, ss in enumerate(ep.subsets):
        path = f"subsets[{i}]"
        if not ss.addresses and not ss.not_ready_addresses:
            errs.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
        for j, addr in enumerate(ss.addresses):
            errs += _endpoint_address_errors(addr, f"{path}.addresses[{j}]")
        for j, addr in enumerate(ss.not_ready_addresses):
            errs += _endpoint_address_errors(addr, f"{path}.notReadyAddresses[{j}]")
        for j, port in enumerate(ss.ports):
            ppath = f"{path}.ports[{j}]"
            if len(ss.ports) > 1 and not port.name:
                errs.append(required(f"{ppath}.name"))
            elif port.name:
                errs += validate_dns_label(port.name, f"{ppath}.name")
            if not 1 <= port.port <= 65535:
                errs.append(invalid(f"{ppath}.port", port.port,
                                    "must be between 1 and 65535, inclusive"))
            if not port.protocol:
                errs.append(required(f"{ppath}.protocol"))
            elif port.protocol not in PROTOCOLS:
                errs.append(not_supported(f"{ppath}.protocol", port.protocol, PROTOCOLS))
    return errs


def endpoints_update_errors(new: Endpoints, old: Endpoints) -> list[FieldError]:
    return validate_object_meta_update(new.metadata, old.metadata) + endpoints_errors(new)


# --------------------------------------------------------------------------- EndpointSlice


def _slice_address_errors(address: str, address_type: str, path: str) -> list[FieldError]:
    parsed = _parse_ip(address)
    if address_type == ADDRESS_TYPE_IPV4 and (parsed is None or parsed.version != 4):
        return [invalid(path, address, "must be a valid IPv4 address")]
    if address_type == ADDRESS_TYPE_IPV6 and (parsed is None or parsed.version != 6):
        return [invalid(path, address, "must be a valid IPv6 address")]
    if address_type == ADDRESS_TYPE_FQDN:
        return validate_dns_subdomain(address, path)
    return []


def endpoint_slice_errors(es: EndpointSlice) -> list[FieldError]:
    """ValidateEndpointSlice."""
    errs = validate_object_meta(es.metadata, namespaced=True, name_fn=name_is_dns_subdomain)
    if not es.address_type:
        errs.append(required("addressType"))
    elif es.address_type not in ADDRESS_TYPES:
        errs.append(not_supported("addressType", es.address_type, ADDRESS_TYPES))
    if len(es.endpoints) > MAX_ENDPOINTS_PER_SLICE:
        errs.append(too_many("endpoints", len(es.endpoints), MAX_ENDPOINTS_PER_SLICE))
    for i, ep in enumerate(es.endpoints):
        path = f"endpoints[{i}]"
        if not ep.addresses:
            errs.append(required(f"{path}.addresses", "must contain at least 1 address"))
        elif len(ep.addresses) > MAX_ADDRESSES:
            errs.append(too_many(f"{path}.addresses", len(ep.addresses), MAX_ADDRESSES))
        for j, address in enumerate(ep.addresses):
            errs += _slice_address_errors(address, es.address_type, f"{path}.addresses[{j}]")
        if ep.node_name is not None:
            errs += [invalid(f"{path}.nodeName", ep.node_name, m)
                     for m in name_is_dns_subdomain(ep.node_name, False)]
        if ep.hostname is not None:
            errs += validate_dns_label(ep.hostname, f"{path}.hostname")
    if len(es.ports) > MAX_SLICE_PORTS:
        errs.append(too_many("ports", len(es.ports), MAX_SLICE_PORTS))
    names: set[str] = set()
    for i, port in enumerate(es.ports):
        path = f"ports[{i}]"
        name = port.name or ""
        if name:
            errs += validate_dns_label(name, f"{path}.name")
        if name in names:
            errs.append(duplicate(f"{path}.name", name))
        names.add(name)
        if port.protocol is None:
            errs.append(required(f"{path}.protocol"))
        elif port.protocol not in PROTOCOLS:
            errs.append(not_supported(f"{path}.protocol", port.protocol, PROTOCOLS))
        if port.port is not None and not 1 <= port.port <= 65535:
            errs.append(invalid(f"{path}.port", port.port,
                                "must be between 1 and 65535, inclusive"))
    return errs


def endpoint_slice_update_errors(new: EndpointSlice, old: EndpointSlice) -> list[FieldError]:
    errs = validate_object_meta_update(new.metadata, old.metadata)
    errs += validate_immutable(new.address_type, old.address_type, "addressType")
    return errs + endpoint_slice_errors(new)
