"""The API server's checks on the kinds beside the Pod (pkg/apis/core/validation,
coordination, scheduling and policy validation), on create and on update, with upstream's
messages. Each returns a list of FieldErrors; kinds.py raises them as one ValidationError.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
from collections.abc import Callable, Mapping

from pykubelet.api.machinery import codec
from pykubelet.api.machinery.codec import camel
from pykubelet.api.machinery.field import (
    ErrorType,
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from pykubelet.api.machinery.validation import (
    is_config_map_key,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_label_name,
)
from pykubelet.api.meta_validation import (
    FIELD_IMMUTABLE,
    validate_immutable,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
    validate_positive_int_or_percent,
)
from pykubelet.api.objects import (
    PREEMPTION_POLICIES,
    Binding,
    ConfigMap,
    DeleteOptions,
    Event,
    Eviction,
    Lease,
    Namespace,
    Node,
    PodDisruptionBudget,
    PriorityClass,
    Secret,
    ServiceAccount,
)
from pykubelet.api.types import TAINT_EFFECTS, ObjectMeta, Taint

MAX_SECRET_SIZE = 1 << 20  # ConfigMap and Secret data, 1 MiB
STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000
UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
_IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
_ONCE = 'node updates may not change {} except from "" to valid'
_NOT_A_FINALIZER = "name is neither a standard finalizer name nor is it fully qualified"
_BOTH_SET = "minAvailable and maxUnavailable cannot be both set"

# --------------------------------------------------------------------------- Node


def validate_taints(taints: list[Taint], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(taints):
        p = f"{path}[{i}]"
        errs += validate_label_name(t.key, f"{p}.key")
        problems = is_valid_label_value(t.value)
        if problems:
            errs.append(invalid(f"{p}.value", t.value, ";".join(problems)))
        if not t.effect:
            errs.append(required(f"{p}.effect"))
        elif t.effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{p}.effect", t.effect, TAINT_EFFECTS))
        if (t.key, t.effect) in seen:
            errs.append(
                FieldError(
                    ErrorType.DUPLICATE,
                    p,
                    codec.encode(t),
                    "taints must be unique by key and effect pair",
                )
            )
            continue
        seen.add((t.key, t.effect))
    return errs


def _cidr_errors(cidrs: list[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    families = []
    for i, cidr in enumerate(cidrs):
        try:
            families.append(ipaddress.ip_network(cidr, strict=False).version)
        except ValueError as exc:
            errs.append(invalid(f"{path}[{i}]", cidr, str(exc)))
    if len(cidrs) > 2 or (len(families) == 2 and families[0] == families[1]):
        errs.append(
            invalid(path, ",".join(cidrs), "may specify no more than one CIDR for each IP family")
        )
    return errs


def node_errors(node: Node) -> list[FieldError]:
    meta = validate_object_meta(node.metadata, namespaced=False, name_fn=name_is_dns_subdomain)
    return meta + _node_body(node)


def _node_body(node: Node) -> list[FieldError]:
    errs = validate_taints(node.spec.taints, "spec.taints")
    errs += _cidr_errors(node.spec.pod_cidrs, "spec.podCIDRs")
    for kind in ("capacity", "allocatable"):
        for name, q in getattr(node.status, kind).items():
            if q.exact < 0:
                errs.append(
                    invalid(f"status.{kind}.{name}", q.text, "must be greater than or equal to 0")
                )
    return errs


def node_update_errors(new: Node, old: Node) -> list[FieldError]:
    errs = validate_object_meta_update(new.metadata, old.metadata) + _node_body(new)
    if old.spec.pod_cidrs and new.spec.pod_cidrs != old.spec.pod_cidrs:
        errs.append(
            forbidden("spec.podCIDRs", _ONCE.format("podCIDR"))
        )
    if old.spec.provider_id and new.spec.provider_id != old.spec.provider_id:
        errs.append(
            forbidden("spec.providerID", _ONCE.format("providerID"))
        )
    return errs


# --------------------------------------------------------------------------- Namespace


def namespace_errors(ns: Namespace) -> list[FieldError]:
    errs = validate_object_meta(ns.metadata, namespaced=False, name_fn=name_is_dns_label)
    for f in ns.spec.finalizers:
        errs += _finalizer_name(f, "spec.finalizers")
    return errs


def _finalizer_name(name: str, path: str) -> list[FieldError]:
    errs = [invalid(path, name, m) for m in is_qualified_name(name)]
    if not errs and "/" not in name and name not in STANDARD_FINALIZERS:
        errs.append(
            invalid(path, name, _NOT_A_FINALIZER)
        )
    return errs


def namespace_update_errors(new: Namespace, old: Namespace) -> list[FieldError]:
    return validate_object_meta_update(new.metadata, old.metadata)


# --------------------------------------------------------------------------- Event

_LIMITS = {"reportingInstance": 128, "action": 128, "reason": 128, "message": 1024}


def event_errors(ev: Event) -> list[FieldError]:
    """ValidateEventCreate for a core/v1 request."""
    errs = _namespaced_subdomain_meta(ev.metadata)
    ns = ev.metadata.namespace
    involved_ns = ev.involved_object.namespace
    mismatch = invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    if ev.event_time is None:
        if (not involved_ns and ns not in ("", "default")) or (involved_ns and ns != involved_ns):
            errs.append(mismatch)
    else:
        if not involved_ns and ns not in ("default", "kube-system"):
            errs.append(mismatch)
        if not ev.reporting_component:
            errs.append(required("reportingComponent"))
        errs += [invalid("reportingComponent", ev.reporting_component, m)
                 for m in is_qualified_name(ev.reporting_component)]
        for name, value in (
            ("reportingInstance", ev.reporting_instance),
            ("action", ev.action),
            ("reason", ev.reason),
        ):
            if not value:
                errs.append(required(name))
        for name, value in (
            ("reportingInstance", ev.reporting_instance),
            ("action", ev.action),
            ("reason", ev.reason),
            ("message", ev.message),
        ):
            if len(value) > _LIMITS[name]:
                errs.append(invalid(name, "", f"can have at most {_LIMITS[name]} characters"))
    errs += [invalid("namespace", ns, m) for m in is_dns1123_subdomain(ns)]
    return errs


def event_update_errors(new: Event, old: Event) -> list[FieldError]:
    """A core/v1 update: only the metadata rules (the events.k8s.io API checks more)."""
    return validate_object_meta_update(new.metadata, old.metadata)


# --------------------------------------------------------------------------- ConfigMap, Secret


def _decoded_len(value: str) -> int:
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return len(value)


def _keyed_data(
    path: str, data: Mapping[str, str], size: Callable[[str], int]
) -> tuple[list[FieldError], int]:
    """A ConfigMap's or Secret's data field: each key checked by IsConfigMapKey, and the
    total size of the values (what MaxSecretSize bounds)."""
    errs = [invalid(f"{path}[{key}]", key, m) for key in data for m in is_config_map_key(key)]
    return errs, sum(size(value) for value in data.values())


def _utf8_len(value: str) -> int:
    return len(value.encode())


def _namespaced_subdomain_meta(metadata: ObjectMeta) -> list[FieldError]:
    """ValidateObjectMeta of a namespaced object whose name is a DNS subdomain."""
    return validate_object_meta(metadata, namespaced=True, name_fn=name_is_dns_subdomain)


def config_map_errors(cm: ConfigMap) -> list[FieldError]:
    return _namespaced_subdomain_meta(cm.metadata) + _config_map_body(cm)


def _config_map_body(cm: ConfigMap) -> list[FieldError]:
    errs, total = _keyed_data("data", cm.data, _utf8_len)
    errs += [invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
             for key in cm.data if key in cm.binary_data]
    binary_errs, binary_total = _keyed_data("binaryData", cm.binary_data, _decoded_len)
    errs += binary_errs
    total += binary_total
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("", "", MAX_SECRET_SIZE))
    return errs


def config_map_update_errors(new: ConfigMap, old: ConfigMap) -> list[FieldError]:
    errs = validate_object_meta_update(new.metadata, old.metadata)
    errs += _immutable_data(new, old, ("data", "binary_data"))
    return errs + _config_map_body(new)


def _immutable_data(
    new: ConfigMap | Secret, old: ConfigMap | Secret, attrs: tuple[str, ...]
) -> list[FieldError]:
    """Once `immutable` is set it stays set, and the data may not change."""
    if not old.immutable:
        return []
    errs = [] if new.immutable else [forbidden("immutable", _IMMUTABLE_WHEN_SET)]
    for attr in attrs:
        if getattr(new, attr) != getattr(old, attr):
            errs.append(forbidden(camel(attr), _IMMUTABLE_WHEN_SET))
    return errs


def service_account_errors(sa: ServiceAccount) -> list[FieldError]:
    """ValidateServiceAccount: the metadata, the name a DNS subdomain."""
    return _namespaced_subdomain_meta(sa.metadata)


def service_account_update_errors(new: ServiceAccount, old: ServiceAccount) -> list[FieldError]:
    return validate_object_meta_update(new.metadata, old.metadata) + service_account_errors(new)


def secret_errors(secret: Secret) -> list[FieldError]:
    return _namespaced_subdomain_meta(secret.metadata) + _secret_body(secret)


def _secret_body(secret: Secret) -> list[FieldError]:
    errs, total = _keyed_data("data", secret.data, _decoded_len)
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("data", "", MAX_SECRET_SIZE))
    data = secret.data
    kind = secret.type
    if kind == "kubernetes.io/service-account-token":
        if not secret.metadata.annotations.get("kubernetes.io/service-account.name"):
            errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif kind == "kubernetes.io/dockercfg":
        errs += _json_key(data, ".dockercfg")
    elif kind == "kubernetes.io/dockerconfigjson":
        errs += _json_key(data, ".dockerconfigjson")
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs += [required("data[username]"), required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.key", "tls.crt"):
            if key not in data:
                errs.append(required(f"data[{key}]"))
    return errs


def _json_key(data: dict[str, str], key: str) -> list[FieldError]:
    if not data.get(key):
        return [required(f"data[{key}]")]
    try:
        json.loads(base64.b64decode(data[key]))
    except (ValueError, binascii.Error) as exc:
        return [invalid(f"data[{key}]", "<secret contents redacted>", str(exc))]
    return []


def secret_update_errors(new: Secret, old: Secret) -> list[FieldError]:
    errs = validate_object_meta_update(new.metadata, old.metadata)
    errs += validate_immutable(new.type, old.type, "type")
    errs += _immutable_data(new, old, ("data",))
    return errs + _secret_body(new)


# --------------------------------------------------------------------------- Binding, Eviction


def binding_errors(binding: Binding) -> list[FieldError]:
    """ValidatePodBinding: the target is a Node, by name."""
    errs: list[FieldError] = []
    if binding.target.kind and binding.target.kind != "Node":
        errs.append(not_supported("target.kind", binding.target.kind, ("Node", "<empty>")))
    if not binding.target.name:
        errs.append(required("target.name"))
    return errs


def delete_options_errors(opts: DeleteOptions, path: str = "") -> list[FieldError]:
    """ValidateDeleteOptions."""
    p = f"{path}." if path else ""
    errs: list[FieldError] = []
    if opts.orphan_dependents is not None and opts.propagation_policy is not None:
        errs.append(
            invalid(
                f"{p}propagationPolicy",
                opts.propagation_policy,
                "orphanDependents and deletionPropagation cannot be both set",
            )
        )
    if opts.propagation_policy is not None and opts.propagation_policy not in PROPAGATION_POLICIES:
        errs.append(
            not_supported(
                f"{p}propagationPolicy", opts.propagation_policy, (*PROPAGATION_POLICIES, "nil")
            )
        )
    if any(v != "All" for v in opts.dry_run):
        errs.append(not_supported(f"{p}dryRun", opts.dry_run, ("All",)))
    return errs


def eviction_errors(ev: Eviction) -> list[FieldError]:
    if ev.delete_options is None:
        return []
    return delete_options_errors(ev.delete_options, "deleteOptions")


def no_update_errors(new: object, old: object) -> list[FieldError]:
    return []


# --------------------------------------------------------------------------- Lease


def lease_errors(lease: Lease) -> list[FieldError]:
    meta = _namespaced_subdomain_meta(lease.metadata)
    return meta + _lease_body(lease)


def _lease_body(lease: Lease) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = lease.spec
    if spec.lease_duration_seconds is not None and spec.lease_duration_seconds <= 0:
        errs.append(
            invalid(
                "spec.leaseDurationSeconds", spec.lease_duration_seconds, "must be greater than 0"
            )
        )
    if spec.lease_transitions is not None and spec.lease_transitions < 0:
        errs.append(
            invalid(
                "spec.leaseTransitions",
                spec.lease_transitions,
                "must be greater than or equal to 0",
            )
        )
    if spec.strategy is not None and spec.strategy not in ("OldestEmulationVersion",):
        errs.append(not_supported("spec.strategy", spec.strategy, ("OldestEmulationVersion",)))
    if spec.preferred_holder and not spec.strategy:
        errs.append(
            forbidden(
                "spec.preferredHolder", "preferredHolder is only allowed when strategy is set"
            )
        )
    return errs


def lease_update_errors(new: Lease, old: Lease) -> list[FieldError]:
    return validate_object_meta_update(new.metadata, old.metadata) + _lease_body(new)


# --------------------------------------------------------------------------- PriorityClass


def priority_class_errors(pc: PriorityClass) -> list[FieldError]:
    errs = validate_object_meta(pc.metadata, namespaced=False, name_fn=name_is_dns_subdomain)
    name = pc.metadata.name
    if name.startswith("system-"):
        problem = ""
        if name not in SYSTEM_PRIORITY_CLASSES:
            problem = f"{name} is not a known system priority class"
        elif pc.value != SYSTEM_PRIORITY_CLASSES[name]:
            problem = f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
        elif pc.global_default:
            problem = f"globalDefault of {name} PriorityClass must be false"
        if problem:
            errs.append(
                forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use "
                    f"only. error: {problem}",
                )
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is "
                f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    if pc.preemption_policy is not None and pc.preemption_policy not in PREEMPTION_POLICIES:
        errs.append(not_supported("preemptionPolicy", pc.preemption_policy, PREEMPTION_POLICIES))
    return errs


def priority_class_update_errors(new: PriorityClass, old: PriorityClass) -> list[FieldError]:
    errs = validate_object_meta_update(new.metadata, old.metadata)
    if new.value != old.value:
        errs.append(forbidden("value", "may not be changed in an update."))
    errs += validate_immutable(new.preemption_policy, old.preemption_policy, "preemptionPolicy")
    return errs


# --------------------------------------------------------------------------- PodDisruptionBudget


def pdb_errors(pdb: PodDisruptionBudget) -> list[FieldError]:
    errs = _namespaced_subdomain_meta(pdb.metadata)
    return errs + _pdb_spec_errors(pdb)


def _pdb_spec_errors(pdb: PodDisruptionBudget) -> list[FieldError]:
    spec = pdb.spec
    errs: list[FieldError] = []
    if spec.min_available is not None and spec.max_unavailable is not None:
        errs.append(
            invalid("spec", codec.encode(spec), _BOTH_SET)
        )
    if spec.min_available is not None:
        errs += validate_positive_int_or_percent(spec.min_available, "spec.minAvailable")
    if spec.max_unavailable is not None:
        errs += validate_positive_int_or_percent(spec.max_unavailable, "spec.maxUnavailable")
    errs += validate_label_selector(spec.selector, "spec.selector")
    policy = spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(
            not_supported(
                "spec.unhealthyPodEvictionPolicy", policy, UNHEALTHY_POD_EVICTION_POLICIES
            )
        )
    return errs


def pdb_update_errors(new: PodDisruptionBudget, old: PodDisruptionBudget) -> list[FieldError]:
    return validate_object_meta_update(new.metadata, old.metadata) + _pdb_spec_errors(new)


__all__ = [
    "FIELD_IMMUTABLE",
    "binding_errors",
    "config_map_errors",
    "config_map_update_errors",
    "delete_options_errors",
    "event_errors",
    "event_update_errors",
    "eviction_errors",
    "lease_errors",
    "lease_update_errors",
    "namespace_errors",
    "namespace_update_errors",
    "no_update_errors",
    "node_errors",
    "node_update_errors",
    "pdb_errors",
    "pdb_update_errors",
    "priority_class_errors",
    "priority_class_update_errors",
    "secret_errors",
    "secret_update_errors",
    "validate_taints",
]
