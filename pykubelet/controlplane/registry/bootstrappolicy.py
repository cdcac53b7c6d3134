"""The default roles and bindings every cluster has (plugin/pkg/auth/authorizer/rbac/
bootstrappolicy, as its testdata/cluster-roles.yaml and cluster-role-bindings.yaml list
them), for the API this server speaks and the controllers it runs, and their
reconciliation at start as kube-apiserver's rbac/bootstrap-roles post-start hook does
(``kubectl auth reconcile``): a missing object is created; an existing one whose
``rbac.authorization.kubernetes.io/autoupdate`` annotation is not ``"false"`` gets the rules
(or an aggregated role's selectors), subjects, labels and annotations it lacks, never
losing any; a binding whose roleRef changed is recreated.

``cluster-admin`` is bound to ``system:masters``; the admin identity is in that group, and
kube-apiserver's privileged-group authorizer allows it before RBAC is asked, so the binding
is what ``kubectl auth can-i --list`` and the bindings show rather than what lets it in.
"""

from __future__ import annotations

import logging
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.rbacrules import Rule, uncovered
from pykubelet.controlplane.registry.resources import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Registry

log = logging.getLogger(__name__)
Obj = dict[str, Any]

API_VERSION = "rbac.authorization.k8s.io/v1"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update",
              "watch"]
EVENTS = {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
          "verbs": ["create", "patch", "update"]}


def rule(verbs: list[str], groups: list[str], resources: list[str],
         names: list[str] | None = None) -> Obj:
    out: Obj = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        out["resourceNames"] = names
    return out


def urls(verbs: list[str], paths: list[str]) -> Obj:
    return {"nonResourceURLs": paths, "verbs": verbs}


def _role(name: str, rules: list[Obj] | None = None, aggregate_from: str = "",
          aggregate_to: str = "") -> Obj:
    labels = dict(BOOTSTRAP_LABEL)
    if aggregate_to:
        labels[AGGREGATE_TO + aggregate_to] = "true"
    out: Obj = {"apiVersion": API_VERSION, "kind": "ClusterRole",
                "metadata": {"name": name, "labels": labels,
                             "annotations": {AUTOUPDATE: "true"}},
                "rules": rules or []}
    if aggregate_from:
        out["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {AGGREGATE_TO + aggregate_from: "true"}}]}
    return out


def _aggregated_metrics_reader() -> Obj:
    """metrics-server's manifest ships this role so that ``view``, ``edit`` and ``admin``
    may read metrics.k8s.io (``kubectl top``); our metrics API is built in, so its role is
    part of the policy."""
    role = _role("system:aggregated-metrics-reader",
                 [rule(READ, ["metrics.k8s.io"], ["pods", "nodes"])], aggregate_to="view")
    for to in ("edit", "admin"):
        role["metadata"]["labels"][AGGREGATE_TO + to] = "true"
    return role


def node_rules() -> list[Obj]:
    """NodeRules(): what every node may do, as the Node authorizer's static rules and the
    ``system:node`` role (bound to nobody, as upstream's since 1.8); the Node authorizer
    narrows secrets, configmaps, volumes, service account tokens, leases, nodes and pods
    to the node's own before these are read."""
    return [
        rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews",
                                                    "subjectaccessreviews"]),
        rule(READ, [""], ["services"]),
        rule(["create", "get", "list", "watch"], [""], ["nodes"]),
        rule(["patch", "update"], [""], ["nodes/status"]),
        rule(["patch", "update"], [""], ["nodes"]),
        rule(["create", "patch", "update"], [""], ["events"]),
        rule(READ, [""], ["pods"]),
        rule(["create", "delete"], [""], ["pods"]),
        rule(["patch", "update"], [""], ["pods/status"]),
        rule(["create"], [""], ["pods/eviction"]),
        rule(READ, [""], ["configmaps", "secrets"]),
        rule(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
        rule(["get"], [""], ["endpoints"]),
        rule(["create", "get", "list", "watch"], ["certificates.k8s.io"],
             ["certificatesigningrequests"]),
        rule(["create", "delete", "get", "patch", "update"], ["coordination.k8s.io"],
             ["leases"]),
        rule(["get"], ["storage.k8s.io"], ["volumeattachments"]),
        rule(["create"], [""], ["serviceaccounts/token"]),
        rule(["get", "patch", "update"], [""], ["persistentvolumeclaims/status"]),
        rule(READ, ["storage.k8s.io"], ["csidrivers"]),
        rule(["create", "delete", "get", "patch", "update"], ["storage.k8s.io"], ["csinodes"]),
        rule(READ, ["node.k8s.io"], ["runtimeclasses"]),
    ]


# the service proxy runs inside every node's agent with the node's credentials (kube-proxy
# has its own, system:kube-proxy, bound to system:node-proxier): what it reads beyond
# node_rules, granted to the nodes' group through RBAC rather than the Node authorizer
NODE_SERVICE_PROXY = "pykubelet:node-service-proxy"


def cluster_roles() -> list[Obj]:
    """ClusterRoles(): the roles the policy defines, by name."""
    return [
        _role("cluster-admin", [rule(["*"], ["*"], ["*"]), urls(["*"], ["*"])]),
        _role("admin", aggregate_from="admin"),
        _role("edit", aggregate_from="edit", aggregate_to="admin"),
        _role("view", aggregate_from="view", aggregate_to="edit"),
        _role("system:aggregate-to-admin", [
            rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
            rule(READ_WRITE, ["rbac.authorization.k8s.io"], ["rolebindings", "roles"]),
        ], aggregate_to="admin"),
        _role("system:aggregate-to-edit", [
            rule(READ, [""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
                              "secrets", "services/proxy"]),
            rule(["impersonate"], [""], ["serviceaccounts"]),
            rule(WRITE, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward",
                               "pods/proxy"]),
            rule(["create"], [""], ["pods/eviction"]),
            rule(WRITE, [""], ["configmaps", "events", "persistentvolumeclaims",
                               "replicationcontrollers", "replicationcontrollers/scale",
                               "secrets", "serviceaccounts", "services", "services/proxy"]),
            rule(["create"], [""], ["serviceaccounts/token"]),
            rule(WRITE, ["apps"], ["daemonsets", "deployments", "deployments/rollback",
                                   "deployments/scale", "replicasets", "replicasets/scale",
                                   "statefulsets", "statefulsets/scale"]),
            rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
            rule(WRITE, ["batch"], ["cronjobs", "jobs"]),
            rule(WRITE, ["extensions"], ["daemonsets", "deployments", "deployments/rollback",
                                         "deployments/scale", "ingresses", "networkpolicies",
                                         "replicasets", "replicasets/scale",
                                         "replicationcontrollers/scale"]),
            rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
            rule(WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
            rule(READ_WRITE, ["coordination.k8s.io"], ["leases"]),
        ], aggregate_to="edit"),
        _role("system:aggregate-to-view", [
            rule(READ, [""], ["configmaps", "endpoints", "persistentvolumeclaims",
                              "persistentvolumeclaims/status", "pods", "replicationcontrollers",
                              "replicationcontrollers/scale", "serviceaccounts", "services",
                              "services/status"]),
            rule(READ, [""], ["bindings", "events", "limitranges", "namespaces/status",
                              "pods/log", "pods/status", "replicationcontrollers/status",
                              "resourcequotas", "resourcequotas/status"]),
            rule(READ, [""], ["namespaces"]),
            rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
            rule(READ, ["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status",
                                  "deployments", "deployments/scale", "deployments/status",
                                  "replicasets", "replicasets/scale", "replicasets/status",
                                  "statefulsets", "statefulsets/scale", "statefulsets/status"]),
            rule(READ, ["autoscaling"], ["horizontalpodautoscalers",
                                         "horizontalpodautoscalers/status"]),
            rule(READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
            rule(READ, ["extensions"], ["daemonsets", "daemonsets/status", "deployments",
                                        "deployments/scale", "deployments/status", "ingresses",
                                        "ingresses/status", "networkpolicies", "replicasets",
                                        "replicasets/scale", "replicasets/status",
                                        "replicationcontrollers/scale"]),
            rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
            rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status",
                                               "networkpolicies"]),
        ], aggregate_to="view"),
        _aggregated_metrics_reader(),
        _role("system:discovery", [urls(["get"], [
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
            "/openapi/*", "/readyz", "/version", "/version/"])]),
        _role("system:basic-user", [
            rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews",
                                                        "selfsubjectrulesreviews"]),
            rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
        ]),
        _role("system:public-info-viewer", [urls(["get"], [
            "/healthz", "/livez", "/readyz", "/version", "/version/"])]),
        _role("system:monitoring", [urls(["get"], [
            "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis",
            "/readyz", "/readyz/*"])]),
        _role("system:kube-scheduler", [
            EVENTS,
            rule(["create"], ["coordination.k8s.io"], ["leases"]),
            rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
            rule(READ, [""], ["nodes"]),
            rule(["delete", "get", "list", "watch"], [""], ["pods"]),
            rule(["create"], [""], ["bindings", "pods/binding"]),
            rule(["patch", "update"], [""], ["pods/status"]),
            rule(READ, [""], ["replicationcontrollers", "services"]),
            rule(READ, ["apps", "extensions"], ["replicasets"]),
            rule(READ, ["apps"], ["statefulsets"]),
            rule(READ, ["policy"], ["poddisruptionbudgets"]),
            rule(READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
            rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
            rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            rule(READ, [""], ["namespaces"]),
        ]),
        _role("system:kube-controller-manager", [
            EVENTS,
            rule(["create"], ["coordination.k8s.io"], ["leases"]),
            rule(["get", "update"], ["coordination.k8s.io"], ["leases"],
                 ["kube-controller-manager"]),
            rule(["create"], [""], ["secrets", "serviceaccounts"]),
            rule(["delete"], [""], ["secrets"]),
            rule(["get"], [""], ["configmaps", "namespaces", "secrets", "serviceaccounts"]),
            rule(["update"], [""], ["secrets", "serviceaccounts"]),
            rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
            rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            rule(["list", "watch"], ["*"], ["*"]),
            rule(["create"], [""], ["serviceaccounts/token"]),
        ]),
        _role("system:node-proxier", [
            rule(["list", "watch"], [""], ["endpoints", "services"]),
            rule(READ, [""], ["nodes"]),
            EVENTS,
            rule(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
        ]),
        _role("system:kube-dns", [rule(["list", "watch"], [""], ["endpoints", "services"])]),
        _role("system:node", node_rules()),
        _role(NODE_SERVICE_PROXY, [
            rule(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"])]),
    ]


def _binding(role: str, subjects: list[Obj]) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": dict(BOOTSTRAP_LABEL),
                         "annotations": {AUTOUPDATE: "true"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role},
            "subjects": subjects}


def _group(name: str) -> Obj:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}


def _user(name: str) -> Obj:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


def cluster_role_bindings() -> list[Obj]:
    """ClusterRoleBindings(): who holds the default roles."""
    return [
        _binding("cluster-admin", [_group("system:masters")]),
        _binding("system:basic-user", [_group("system:authenticated")]),
        _binding("system:discovery", [_group("system:authenticated")]),
        _binding("system:public-info-viewer", [_group("system:authenticated"),
                                               _group("system:unauthenticated")]),
        _binding("system:monitoring", [_group("system:monitoring")]),
        _binding("system:kube-scheduler", [_user("system:kube-scheduler")]),
        _binding("system:kube-controller-manager", [_user("system:kube-controller-manager")]),
        _binding("system:node-proxier", [_user("system:kube-proxy")]),
        _binding("system:kube-dns", [{"kind": "ServiceAccount", "name": "kube-dns",
                                      "namespace": "kube-system"}]),
        _binding("system:node", []),
        _binding(NODE_SERVICE_PROXY, [_group("system:nodes")]),
    ]


# --------------------------------------------------------------------------- reconcile


def _merge_meta(existing: Obj, expected: Obj) -> bool:
    """Missing labels and annotations added (existing values win); True if any was."""
    changed = False
    meta, want = existing.setdefault("metadata", {}), expected["metadata"]
    for key in ("labels", "annotations"):
        have = meta.setdefault(key, {})
        for k, v in want.get(key, {}).items():
            if k not in have:
                have[k] = v
                changed = True
    return changed


def _reconcile_start(existing: Obj, expected: Obj) -> tuple[Obj, bool] | None:
    """None when the object opted out of reconciling (autoupdate "false"); else a copy of it
    (metadata, labels and annotations its own) with the expected labels and annotations it
    lacks, and whether it lacked any."""
    if ((existing.get("metadata") or {}).get("annotations") or {}).get(AUTOUPDATE) == "false":
        return None
    out = {**existing, "metadata": dict(existing.get("metadata") or {})}
    for key in ("labels", "annotations"):
        out["metadata"][key] = dict(out["metadata"].get(key) or {})
    return out, _merge_meta(out, expected)


def reconciled_role(existing: Obj, expected: Obj) -> Obj | None:
    """computeReconciledRole without removing anything: the role with what it lacks, or
    None when it lacks nothing or opted out (autoupdate "false")."""
    start = _reconcile_start(existing, expected)
    if start is None:
        return None
    out, changed = start
    if expected.get("aggregationRule") is not None:
        have = (out.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
        want = expected["aggregationRule"]["clusterRoleSelectors"]
        missing = [s for s in want if s not in have]
        if missing or out.get("aggregationRule") is None:
            out["aggregationRule"] = {"clusterRoleSelectors": [*have, *missing]}
            changed = True
    else:
        missing_rules = uncovered([Rule.of(r) for r in out.get("rules") or []],
                                  expected["rules"])
        if missing_rules:
            out["rules"] = [*(out.get("rules") or []), *missing_rules]
            changed = True
    return out if changed else None


def reconciled_binding(existing: Obj, expected: Obj) -> Obj | None:
    """computeReconciledRoleBinding without removing subjects."""
    start = _reconcile_start(existing, expected)
    if start is None:
        return None
    out, changed = start
    have = list(out.get("subjects") or [])
    missing = [s for s in expected["subjects"] if s not in have]
    if missing:
        out["subjects"] = [*have, *missing]
        changed = True
    if out.get("roleRef") != expected["roleRef"]:
        out["roleRef"] = expected["roleRef"]
        changed = True
    return out if changed else None


async def reconcile(registry: Registry) -> None:
    """Create the missing default ClusterRoles and ClusterRoleBindings, complete the
    existing ones (the rbac/bootstrap-roles post-start hook)."""
    ctx = Context()
    for store, objects, merge in (
            (registry.store(CLUSTER_ROLES), cluster_roles(), reconciled_role),
            (registry.store(CLUSTER_ROLE_BINDINGS), cluster_role_bindings(),
             reconciled_binding)):
        for expected in objects:
            name = expected["metadata"]["name"]
            entry = store.lookup("", name)
            try:
                if entry is None:
                    await store.create(ctx, "", expected)
                    continue
                existing = entry.obj()
                updated = merge(existing, expected)
                if updated is None:
                    continue
                if updated.get("roleRef") != existing.get("roleRef"):  # immutable: recreate
                    await store.delete(ctx, "", name, DeleteOptions())
                    updated["metadata"].pop("resourceVersion", None)
                    updated["metadata"].pop("uid", None)
                    await store.create(ctx, "", updated)
                else:
                    await store.update(ctx, "", name, updated)
                log.info("rbac: reconciled %s %s", expected["kind"], name)
            except errors.StatusError as exc:  # another API server did it meanwhile
                if exc.code not in (409,):
                    raise
