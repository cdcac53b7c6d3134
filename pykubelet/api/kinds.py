"""Every kind the API server serves, with everything it does to one: the API server's door
into the object model.

    kind = kinds.by_kind("v1", "Pod")               # or kinds.by_resource("", "pods")
    pod = kind.decode(body)                          # strict; DecodeError names the field
    pod = kind.decode(body, unknown=warnings)        # fieldValidation=Warn/Ignore
    kind.set_defaults(pod)                           # as the API server's scheme defaulting
    kind.check(pod)                                  # raises ValidationError (422, causes)
    kind.check_update(new, old)                      # immutable fields, update rules
    kind.check_status_update(new, old)               # pods/status, nodes/status
    body = kind.encode(pod)                          # Go omitempty, apiVersion/kind set
    kind.patch_meta("spec", ...)                     # see pykubelet.api.machinery.openapi
    kind.openapi_schemas()                           # components.schemas for /openapi/v3

`Kind.validate`/`validate_update` return the FieldErrors without raising, for callers that
merge them with their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pykubelet.api import (
    apps,
    apps_statefulset,
    apps_statefulset_validation,
    apps_validation,
    batch,
    batch_validation,
    controllerrevision,
    daemonset,
    daemonset_validation,
    defaults,
    meta_validation,
    object_validation,
    objects,
    rbac,
    services,
    services_validation,
    validation,
)
from pykubelet.api.errors import DecodeError, FieldError, ValidationError
from pykubelet.api.machinery import codec, openapi
from pykubelet.api.machinery.codec import describe
from pykubelet.api.types import Pod

T = TypeVar("T")


def _same(obj: Any) -> Any:
    return obj


def _nothing(obj: Any) -> list[FieldError]:
    return []


def _nothing_update(new: Any, old: Any) -> list[FieldError]:
    return []


def _meta_update(new: Any, old: Any) -> list[FieldError]:
    return meta_validation.validate_object_meta_update(new.metadata, old.metadata)


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One served kind: its names, its class, and its rules."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    cls: type[T]
    set_defaults: Callable[[T], T] = _same
    validate: Callable[[T], list[FieldError]] = _nothing
    validate_update: Callable[[T, T], list[FieldError]] = _nothing_update
    # the status subresource's update rules (pods/status, nodes/status): by default the
    # metadata rules of an update
    validate_status_update: Callable[[T, T], list[FieldError]] = _meta_update

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def definition(self) -> str:
        """The upstream definition name (io.k8s.api.core.v1.Pod)."""
        return str(vars(self.cls)["__k8s__"])

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def decode(self, value: Any, *, unknown: list[str] | None = None) -> T:
        """Strictly decode one object; `apiVersion`/`kind`, when given, must be this kind's.
        With `unknown` (a list) unknown fields are collected there instead of raising."""
        if not isinstance(value, Mapping):
            raise DecodeError("", f"expected a {self.kind} object, got {describe(value)}")
        got = value.get("kind", self.kind)
        if got != self.kind:
            raise DecodeError("kind", f'expected "{self.kind}", got {got!r}')
        got = value.get("apiVersion", self.api_version)
        if got != self.api_version:
            raise DecodeError("apiVersion", f'expected "{self.api_version}", got {got!r}')
        obj: Any = codec.decode(self.cls, value, unknown=unknown)
        # apiVersion/kind are always this kind's once read (a body may leave them out)
        obj.api_version = self.api_version
        obj.kind = self.kind
        return obj  # type: ignore[no-any-return]

    def encode(self, obj: T) -> dict[str, Any]:
        encoded: dict[str, Any] = codec.encode(obj)
        return encoded

    def unknown_fields(self, value: Any) -> list[str]:
        return codec.unknown_fields(self.cls, value)

    def error(self, errors: list[FieldError], name: str) -> ValidationError:
        return ValidationError(errors, kind=self.kind, group=self.group, name=name)

    def check(self, obj: T) -> None:
        """Raise ValidationError (422 Invalid) when `obj` breaks a create's rules."""
        errs = self.validate(obj)
        if errs:
            raise self.error(errs, _name(obj))

    def check_update(self, new: T, old: T) -> None:
        errs = self.validate_update(new, old)
        if errs:
            raise self.error(errs, _name(new))

    def check_status_update(self, new: T, old: T) -> None:
        errs = self.validate_status_update(new, old)
        if errs:
            raise self.error(errs, _name(new))

    def patch_meta(self, *path: str) -> openapi.PatchMeta:
        """Patch metadata of the field at `path` (wire names, e.g. "spec", "containers")."""
        type_name = self.definition
        for wire in path[:-1]:
            sub = openapi.field_type(type_name, wire)
            if sub is None:
                raise KeyError(f"{'.'.join(path)}: no such object field in {self.kind}")
            type_name = sub
        return openapi.patch_meta(type_name, path[-1])

    def openapi_schemas(self) -> dict[str, Any]:
        """components.schemas for this kind (and its list, when upstream defines one)."""
        names = [self.definition]
        list_name = self.definition + "List"
        if list_name in codec.definitions():
            names.append(list_name)
        return openapi.component_schemas(names)

    def encode_list(
        self,
        items: list[T],
        *,
        resource_version: str = "",
        continue_token: str = "",
        remaining_item_count: int | None = None,
    ) -> dict[str, Any]:
        """The <Kind>List a list call answers with."""
        meta: dict[str, Any] = {"resourceVersion": resource_version}
        if continue_token:
            meta["continue"] = continue_token
        if remaining_item_count is not None:
            meta["remainingItemCount"] = remaining_item_count
        return {
            "apiVersion": self.api_version,
            "kind": self.list_kind,
            "metadata": meta,
            "items": [self.encode(item) for item in items],
        }


def _name(obj: Any) -> str:
    meta = getattr(obj, "metadata", None)
    return str(getattr(meta, "name", ""))


POD: Kind[Pod] = Kind(
    "", "v1", "Pod", "pods", True, Pod,
    set_defaults=defaults.set_defaults_pod,
    validate=validation.pod_errors,
    validate_update=validation.pod_update_errors,
    validate_status_update=validation.pod_status_update_errors,
)
NODE: Kind[objects.Node] = Kind(
    "", "v1", "Node", "nodes", False, objects.Node,
    set_defaults=defaults.set_defaults_node,
    validate=object_validation.node_errors,
    validate_update=object_validation.node_update_errors,
)
NAMESPACE: Kind[objects.Namespace] = Kind(
    "", "v1", "Namespace", "namespaces", False, objects.Namespace,
    set_defaults=defaults.set_defaults_namespace,
    validate=object_validation.namespace_errors,
    validate_update=object_validation.namespace_update_errors,
)
EVENT: Kind[objects.Event] = Kind(
    "", "v1", "Event", "events", True, objects.Event,
    validate=object_validation.event_errors,
    validate_update=object_validation.event_update_errors,
)
CONFIG_MAP: Kind[objects.ConfigMap] = Kind(
    "", "v1", "ConfigMap", "configmaps", True, objects.ConfigMap,
    validate=object_validation.config_map_errors,
    validate_update=object_validation.config_map_update_errors,
)
SECRET: Kind[objects.Secret] = Kind(
    "", "v1", "Secret", "secrets", True, objects.Secret,
    set_defaults=defaults.set_defaults_secret,
    validate=object_validation.secret_errors,
    validate_update=object_validation.secret_update_errors,
)
SERVICE_ACCOUNT: Kind[objects.ServiceAccount] = Kind(
    "", "v1", "ServiceAccount", "serviceaccounts", True, objects.ServiceAccount,
    validate=object_validation.service_account_errors,
    validate_update=object_validation.service_account_update_errors,
)
BINDING: Kind[objects.Binding] = Kind(
    "", "v1", "Binding", "bindings", True, objects.Binding,
    validate=object_validation.binding_errors,
)
LEASE: Kind[objects.Lease] = Kind(
    "coordination.k8s.io", "v1", "Lease", "leases", True, objects.Lease,
    validate=object_validation.lease_errors,
    validate_update=object_validation.lease_update_errors,
)
PRIORITY_CLASS: Kind[objects.PriorityClass] = Kind(
    "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, objects.PriorityClass,
    set_defaults=defaults.set_defaults_priority_class,
    validate=object_validation.priority_class_errors,
    validate_update=object_validation.priority_class_update_errors,
)
POD_DISRUPTION_BUDGET: Kind[objects.PodDisruptionBudget] = Kind(
    "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True,
    objects.PodDisruptionBudget,
    validate=object_validation.pdb_errors,
    validate_update=object_validation.pdb_update_errors,
)
EVICTION: Kind[objects.Eviction] = Kind(
    "policy", "v1", "Eviction", "evictions", True, objects.Eviction,
    validate=object_validation.eviction_errors,
)
REPLICA_SET: Kind[apps.ReplicaSet] = Kind(
    "apps", "v1", "ReplicaSet", "replicasets", True, apps.ReplicaSet,
    set_defaults=apps_validation.set_defaults_replica_set,
    validate=apps_validation.replica_set_errors,
    validate_update=apps_validation.replica_set_update_errors,
    validate_status_update=apps_validation.replica_set_status_update_errors,
)
DEPLOYMENT: Kind[apps.Deployment] = Kind(
    "apps", "v1", "Deployment", "deployments", True, apps.Deployment,
    set_defaults=apps_validation.set_defaults_deployment,
    validate=apps_validation.deployment_errors,
    validate_update=apps_validation.deployment_update_errors,
    validate_status_update=apps_validation.deployment_status_update_errors,
)
STATEFUL_SET: Kind[apps_statefulset.StatefulSet] = Kind(
    "apps", "v1", "StatefulSet", "statefulsets", True, apps_statefulset.StatefulSet,
    set_defaults=apps_statefulset_validation.set_defaults_stateful_set,
    validate=apps_statefulset_validation.stateful_set_errors,
    validate_update=apps_statefulset_validation.stateful_set_update_errors,
    validate_status_update=apps_statefulset_validation.stateful_set_status_update_errors,
)
JOB: Kind[batch.Job] = Kind(
    "batch", "v1", "Job", "jobs", True, batch.Job,
    set_defaults=batch_validation.set_defaults_job,
    validate=batch_validation.job_errors,
    validate_update=batch_validation.job_update_errors,
)
CRON_JOB: Kind[batch.CronJob] = Kind(
    "batch", "v1", "CronJob", "cronjobs", True, batch.CronJob,
    set_defaults=batch_validation.set_defaults_cron_job,
    validate=batch_validation.cron_job_errors,
    validate_update=batch_validation.cron_job_update_errors,
)
CONTROLLER_REVISION: Kind[controllerrevision.ControllerRevision] = Kind(
    "apps", "v1", "ControllerRevision", "controllerrevisions", True,
    controllerrevision.ControllerRevision,
    set_defaults=controllerrevision.set_defaults_controller_revision,
    validate=controllerrevision.controller_revision_errors,
    validate_update=controllerrevision.controller_revision_update_errors,
)
DAEMON_SET: Kind[daemonset.DaemonSet] = Kind(
    "apps", "v1", "DaemonSet", "daemonsets", True, daemonset.DaemonSet,
    set_defaults=daemonset_validation.set_defaults_daemon_set,
    validate=daemonset_validation.daemon_set_errors,
    validate_update=daemonset_validation.daemon_set_update_errors,
    validate_status_update=daemonset_validation.daemon_set_status_update_errors,
)
# rbac.authorization.k8s.io/v1: what the RBAC authorizer reads
ROLE: Kind[rbac.Role] = Kind(
    rbac.GROUP, "v1", "Role", "roles", True, rbac.Role,
    set_defaults=rbac.set_defaults_role,
    validate=rbac.role_errors, validate_update=rbac.role_update_errors,
)
CLUSTER_ROLE: Kind[rbac.ClusterRole] = Kind(
    rbac.GROUP, "v1", "ClusterRole", "clusterroles", False, rbac.ClusterRole,
    validate=rbac.cluster_role_errors, validate_update=rbac.cluster_role_update_errors,
)
ROLE_BINDING: Kind[rbac.RoleBinding] = Kind(
    rbac.GROUP, "v1", "RoleBinding", "rolebindings", True, rbac.RoleBinding,
    set_defaults=rbac.set_defaults_role_binding,
    validate=rbac.role_binding_errors, validate_update=rbac.role_binding_update_errors,
)
CLUSTER_ROLE_BINDING: Kind[rbac.ClusterRoleBinding] = Kind(
    rbac.GROUP, "v1", "ClusterRoleBinding", "clusterrolebindings", False,
    rbac.ClusterRoleBinding,
    set_defaults=rbac.set_defaults_cluster_role_binding,
    validate=rbac.cluster_role_binding_errors,
    validate_update=rbac.cluster_role_binding_update_errors,
)

SERVICE: Kind[services.Service] = Kind(
    "", "v1", "Service", "services", True, services.Service,
    set_defaults=services_validation.set_defaults_service,
    validate=services_validation.service_errors,
    validate_update=services_validation.service_update_errors,
)
ENDPOINTS: Kind[services.Endpoints] = Kind(
    "", "v1", "Endpoints", "endpoints", True, services.Endpoints,
    set_defaults=services_validation.set_defaults_endpoints,
    validate=services_validation.endpoints_errors,
    validate_update=services_validation.endpoints_update_errors,
)
ENDPOINT_SLICE: Kind[services.EndpointSlice] = Kind(
    "discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True, services.EndpointSlice,
    set_defaults=services_validation.set_defaults_endpoint_slice,
    validate=services_validation.endpoint_slice_errors,
    validate_update=services_validation.endpoint_slice_update_errors,
)

KINDS: tuple[Kind[Any], ...] = (
    POD, NODE, NAMESPACE, EVENT, CONFIG_MAP, SECRET, SERVICE_ACCOUNT, BINDING, LEASE,
    PRIORITY_CLASS,
    POD_DISRUPTION_BUDGET, EVICTION, REPLICA_SET, DEPLOYMENT, JOB, CRON_JOB,
    STATEFUL_SET, CONTROLLER_REVISION, DAEMON_SET, SERVICE, ENDPOINTS, ENDPOINT_SLICE,
    ROLE, CLUSTER_ROLE, ROLE_BINDING, CLUSTER_ROLE_BINDING,
)
_BY_KIND = {(k.api_version, k.kind): k for k in KINDS}
_BY_RESOURCE = {(k.group, k.plural): k for k in KINDS}


def by_kind(api_version: str, kind: str) -> Kind[Any]:
    """The served kind named by a body's apiVersion and kind (KeyError if none)."""
    return _BY_KIND[(api_version, kind)]


def by_resource(group: str, plural: str) -> Kind[Any]:
    """The served kind behind /api(s)/<group>/<version>/<plural> (KeyError if none)."""
    return _BY_RESOURCE[(group, plural)]


def decode_any(value: Any, *, unknown: list[str] | None = None) -> Any:
    """Decode an object of any served kind, chosen by its apiVersion and kind."""
    if not isinstance(value, Mapping):
        raise DecodeError("", f"expected an object, got {describe(value)}")
    api_version, kind = value.get("apiVersion"), value.get("kind")
    if not isinstance(kind, str) or not kind:
        raise DecodeError("kind", "Required value")
    if not isinstance(api_version, str) or not api_version:
        raise DecodeError("apiVersion", "Required value")
    found = _BY_KIND.get((api_version, kind))
    if found is None:
        raise DecodeError("kind", f"no kind {kind!r} is served in {api_version!r}")
    return found.decode(value, unknown=unknown)


def decode_delete_options(value: Any, *, unknown: list[str] | None = None) -> objects.DeleteOptions:
    """A DELETE's body (meta/v1 DeleteOptions; any apiVersion of meta, as clients send it)."""
    if value is None:
        return objects.DeleteOptions()
    return codec.decode(objects.DeleteOptions, value, unknown=unknown)
