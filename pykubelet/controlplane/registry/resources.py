"""The resources this API serves, each declared once: the object model's kind
(``pykubelet.api.kinds``: group, version, kind, plural, scope, the rules of its objects)
with what serving it adds (singular, short names, categories, verbs, subresources, the
store's key prefix), as discovery announces them and as request paths name them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykubelet.api import kinds
from pykubelet.api.kinds import Kind

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "patch", "update")
ALL_VERBS = tuple(sorted((*READ, *WRITE, "deletecollection")))


@dataclass(frozen=True)
class Subresource:
    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = "v1"


@dataclass(frozen=True)
class ResourceInfo:
    model: Kind[Any]  # the object model's kind: names, scope, decoding and validation
    singular: str
    storage_prefix: str  # "/registry/pods/" (upstream's etcd key layout)
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[Subresource, ...] = field(default_factory=tuple)

    @property
    def group(self) -> str:
        return self.model.group

    @property
    def version(self) -> str:
        return self.model.version

    @property
    def resource(self) -> str:
        """The plural, as in URLs."""
        return self.model.plural

    @property
    def kind(self) -> str:
        return self.model.kind

    @property
    def namespaced(self) -> bool:
        return self.model.namespaced

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def key(self, namespace: str, name: str) -> str:
        return f"{self.storage_prefix}{namespace}/{name}" if self.namespaced else (
            f"{self.storage_prefix}{name}")

    def subresource(self, name: str) -> Subresource | None:
        for s in self.subresources:
            if s.name == name:
                return s
        return None


def _status(kind: str, group: str = "", version: str = "v1") -> Subresource:
    return Subresource("status", kind, ("get", "patch", "update"), group, version)


PODS = ResourceInfo(
    kinds.POD, "pod", "/registry/pods/", ("po",), ("all",),
    subresources=(
        Subresource("attach", "PodAttachOptions", ("create", "get")),
        Subresource("binding", "Binding", ("create",)),
        Subresource("ephemeralcontainers", "Pod", ("get", "patch", "update")),
        Subresource("eviction", "Eviction", ("create",), "policy", "v1"),
        Subresource("exec", "PodExecOptions", ("create", "get")),
        Subresource("log", "Pod", ("get",)),
        Subresource("portforward", "PodPortForwardOptions", ("create", "get")),
        # ours: the scheduler's last decision for the pod (why it is where it is, or Pending)
        Subresource("scheduling", "PodSchedulingDecision", ("get",), "scheduling.pykube.io",
                    "v1alpha1"),
        _status("Pod"),
    ),
)
NODES = ResourceInfo(
    kinds.NODE, "node", "/registry/minions/", ("no",), subresources=(_status("Node"),),
)
NAMESPACES = ResourceInfo(
    kinds.NAMESPACE, "namespace", "/registry/namespaces/", ("ns",),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    subresources=(
        Subresource("finalize", "Namespace", ("update",)),
        _status("Namespace"),
    ),
)
EVENTS = ResourceInfo(kinds.EVENT, "event", "/registry/events/", ("ev",))
CONFIGMAPS = ResourceInfo(kinds.CONFIG_MAP, "configmap", "/registry/configmaps/", ("cm",))
SECRETS = ResourceInfo(kinds.SECRET, "secret", "/registry/secrets/")
# pkg/registry/core/serviceaccount: tokens are TokenRequests against a ServiceAccount
SERVICE_ACCOUNTS = ResourceInfo(
    kinds.SERVICE_ACCOUNT, "serviceaccount", "/registry/serviceaccounts/", ("sa",),
    subresources=(Subresource("token", "TokenRequest", ("create",), "authentication.k8s.io"),),
)
LEASES = ResourceInfo(kinds.LEASE, "lease", "/registry/leases/")
PRIORITY_CLASSES = ResourceInfo(
    kinds.PRIORITY_CLASS, "priorityclass", "/registry/priorityclasses/", ("pc",),
)
PDBS = ResourceInfo(
    kinds.POD_DISRUPTION_BUDGET, "poddisruptionbudget", "/registry/poddisruptionbudgets/",
    ("pdb",), subresources=(_status("PodDisruptionBudget", "policy"),),
)
JOBS = ResourceInfo(
    kinds.JOB, "job", "/registry/jobs/", (), ("all",),
    subresources=(_status("Job", "batch"),),
)
CRONJOBS = ResourceInfo(
    kinds.CRON_JOB, "cronjob", "/registry/cronjobs/", ("cj",), ("all",),
    subresources=(_status("CronJob", "batch"),),
)

def _scale() -> Subresource:
    return Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1")


REPLICA_SETS = ResourceInfo(
    kinds.REPLICA_SET, "replicaset", "/registry/replicasets/", ("rs",), ("all",),
    subresources=(_scale(), _status("ReplicaSet", "apps")),
)
DEPLOYMENTS = ResourceInfo(
    kinds.DEPLOYMENT, "deployment", "/registry/deployments/", ("deploy",), ("all",),
    subresources=(_scale(), _status("Deployment", "apps")),
)
STATEFUL_SETS = ResourceInfo(
    kinds.STATEFUL_SET, "statefulset", "/registry/statefulsets/", ("sts",), ("all",),
    subresources=(_scale(), _status("StatefulSet", "apps")),
)
# apps/v1 ControllerRevisions: the DaemonSet and StatefulSet controllers' history
CONTROLLER_REVISIONS = ResourceInfo(
    kinds.CONTROLLER_REVISION, "controllerrevision", "/registry/controllerrevisions/",
)
DAEMON_SETS = ResourceInfo(
    kinds.DAEMON_SET, "daemonset", "/registry/daemonsets/", ("ds",), ("all",),
    subresources=(_status("DaemonSet", "apps"),),
)
SERVICES = ResourceInfo(
    kinds.SERVICE, "service", "/registry/services/specs/", ("svc",), ("all",),
    subresources=(_status("Service"),),
)
ENDPOINTS = ResourceInfo(kinds.ENDPOINTS, "endpoints", "/registry/services/endpoints/", ("ep",))
ENDPOINT_SLICES = ResourceInfo(
    kinds.ENDPOINT_SLICE, "endpointslice", "/registry/endpointslices/",
)
# rbac.authorization.k8s.io/v1 (pkg/registry/rbac), stored under upstream's etcd keys
ROLES = ResourceInfo(kinds.ROLE, "role", "/registry/roles/")
CLUSTER_ROLES = ResourceInfo(kinds.CLUSTER_ROLE, "clusterrole", "/registry/clusterroles/")
ROLE_BINDINGS = ResourceInfo(kinds.ROLE_BINDING, "rolebinding", "/registry/rolebindings/")
CLUSTER_ROLE_BINDINGS = ResourceInfo(
    kinds.CLUSTER_ROLE_BINDING, "clusterrolebinding", "/registry/clusterrolebindings/",
)

ALL: tuple[ResourceInfo, ...] = (
    PODS, NODES, NAMESPACES, EVENTS, CONFIGMAPS, SECRETS, SERVICE_ACCOUNTS, LEASES,
    PRIORITY_CLASSES, PDBS,
    REPLICA_SETS, DEPLOYMENTS, JOBS, CRONJOBS,
    STATEFUL_SETS, CONTROLLER_REVISIONS, DAEMON_SETS,
    SERVICES, ENDPOINTS, ENDPOINT_SLICES,
    ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS,
)


def group_versions() -> list[tuple[str, str]]:
    """The (group, version) pairs served, core first, in a stable order."""
    seen: list[tuple[str, str]] = []
    for r in ALL:
        gv = (r.group, r.version)
        if gv not in seen:
            seen.append(gv)
    return seen


def lookup(group: str, version: str, resource: str) -> ResourceInfo | None:
    for r in ALL:
        if r.group == group and r.version == version and r.resource == resource:
            return r
    return None
