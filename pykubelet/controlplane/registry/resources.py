"""The resources this API serves: group, version, names, scope, verbs and subresources,
as discovery announces them and as request paths name them."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    group: str
    version: str
    resource: str  # plural, as in URLs
    kind: str
    namespaced: bool
    singular: str
    storage_prefix: str  # "/registry/pods/" (upstream's etcd key layout)
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[Subresource, ...] = field(default_factory=tuple)

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
    "", "v1", "pods", "Pod", True, "pod", "/registry/pods/", ("po",), ("all",),
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
    "", "v1", "nodes", "Node", False, "node", "/registry/minions/", ("no",),
    verbs=tuple(v for v in ALL_VERBS), subresources=(_status("Node"),),
)
NAMESPACES = ResourceInfo(
    "", "v1", "namespaces", "Namespace", False, "namespace", "/registry/namespaces/", ("ns",),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    subresources=(
        Subresource("finalize", "Namespace", ("update",)),
        _status("Namespace"),
    ),
)
EVENTS = ResourceInfo("", "v1", "events", "Event", True, "event", "/registry/events/", ("ev",))
CONFIGMAPS = ResourceInfo(
    "", "v1", "configmaps", "ConfigMap", True, "configmap", "/registry/configmaps/", ("cm",)
)
SECRETS = ResourceInfo("", "v1", "secrets", "Secret", True, "secret", "/registry/secrets/")
LEASES = ResourceInfo(
    "coordination.k8s.io", "v1", "leases", "Lease", True, "lease", "/registry/leases/"
)
PRIORITY_CLASSES = ResourceInfo(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, "priorityclass",
    "/registry/priorityclasses/", ("pc",),
)
PDBS = ResourceInfo(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True,
    "poddisruptionbudget", "/registry/poddisruptionbudgets/", ("pdb",),
    subresources=(_status("PodDisruptionBudget", "policy"),),
)

ALL: tuple[ResourceInfo, ...] = (
    PODS, NODES, NAMESPACES, EVENTS, CONFIGMAPS, SECRETS, LEASES, PRIORITY_CLASSES, PDBS,
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
