"""The bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy): every default
role against a matrix of requests, as upstream's roles answer them (aggregated admin/edit/
view filled by the aggregation controller), and the reconciliation at start: missing
objects created, missing rules, selectors and subjects added, nothing removed, an
``autoupdate: "false"`` object left alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane.apiserver.filters.rbac import RBACAuthorizer
from pykubelet.controlplane.apiserver.requestinfo import parse_request_info
from pykubelet.controlplane.controllers.clusterroleaggregation import aggregated_rules
from pykubelet.controlplane.registry import bootstrappolicy as bp
from pykubelet.controlplane.registry.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
)
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Registry, User

Obj = dict[str, Any]
NS = "team-a"

# (role, method, path, allowed): upstream's roles for these requests
MATRIX = [
    ("view", "GET", f"/api/v1/namespaces/{NS}/pods", True),
    ("view", "GET", f"/api/v1/namespaces/{NS}/pods/p/log", True),
    ("view", "GET", f"/api/v1/namespaces/{NS}/secrets", False),
    ("view", "POST", f"/api/v1/namespaces/{NS}/pods", False),
    ("view", "GET", f"/apis/apps/v1/namespaces/{NS}/controllerrevisions", True),
    ("view", "GET", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles", False),
    # metrics-server's system:aggregated-metrics-reader: kubectl top for view, edit, admin
    ("view", "GET", f"/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods", True),
    ("view", "DELETE", f"/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods/p", False),
    ("edit", "GET", f"/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods/p", True),
    ("admin", "GET", f"/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods", True),
    ("edit", "POST", f"/apis/apps/v1/namespaces/{NS}/deployments", True),
    ("edit", "GET", f"/api/v1/namespaces/{NS}/secrets/s", True),
    ("edit", "PUT", f"/apis/apps/v1/namespaces/{NS}/deployments/d/scale", True),
    ("edit", "POST", f"/api/v1/namespaces/{NS}/pods/p/eviction", True),
    ("edit", "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles", False),
    ("edit", "PUT", f"/apis/apps/v1/namespaces/{NS}/deployments/d/status", False),
    ("admin", "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings", True),
    ("admin", "DELETE", f"/api/v1/namespaces/{NS}/pods/p", True),
    ("admin", "PUT", f"/api/v1/namespaces/{NS}/resourcequotas/q", False),
    ("cluster-admin", "DELETE", "/api/v1/nodes/n1", True),
    ("cluster-admin", "GET", "/metrics", True),
    ("system:discovery", "GET", "/apis/apps/v1", True),
    ("system:discovery", "GET", "/metrics", False),
    ("system:public-info-viewer", "GET", "/version", True),
    ("system:public-info-viewer", "GET", "/api", False),
    ("system:monitoring", "GET", "/metrics", True),
    ("system:kube-scheduler", "POST", f"/api/v1/namespaces/{NS}/pods/p/binding", True),
    ("system:kube-scheduler", "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/"
                                     "leases/kube-scheduler", True),
    ("system:kube-scheduler", "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/"
                                     "leases/kube-controller-manager", False),
    ("system:kube-scheduler", "DELETE", "/api/v1/nodes/n1", False),
    ("system:kube-controller-manager", "GET", "/apis/apps/v1/replicasets", True),
    ("system:kube-controller-manager", "DELETE", f"/api/v1/namespaces/{NS}/pods/p", False),
    ("system:node-proxier", "GET", "/api/v1/nodes/n1", True),
    ("system:node-proxier", "GET", f"/api/v1/namespaces/{NS}/secrets", False),
]


def run(test: Any) -> None:
    async def main() -> None:
        async with memory_registry(("default", "kube-system", NS)) as reg:
            await bp.reconcile(reg)
            await test(reg)

    asyncio.run(main())


async def fill_aggregates(reg: Registry) -> None:
    """What the aggregation controller does, once (view before edit before admin)."""
    store = reg.store(CLUSTER_ROLES)
    for name in ("view", "edit", "admin"):
        role = store.get("", name).obj()
        role["rules"] = aggregated_rules(role, (e.obj() for e in store.select(None, None)))
        await store.update(Context(), "", name, role)


def test_roles_against_requests() -> None:
    async def test(reg: Registry) -> None:
        await fill_aggregates(reg)
        authz = RBACAuthorizer(reg)
        got = []
        for role, method, path, _ in MATRIX:
            user = User(f"u-{role}", ("system:authenticated",))
            binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": f"b-{role.replace(':', '-')}", "namespace": NS},
                       "roleRef": {"kind": "ClusterRole", "name": role},
                       "subjects": [{"kind": "User", "name": user.name}]}
            if path.startswith(f"/api/v1/namespaces/{NS}") or f"/namespaces/{NS}/" in path:
                if reg.store(ROLE_BINDINGS).lookup(NS, binding["metadata"]["name"]) is None:
                    await reg.store(ROLE_BINDINGS).create(Context(), NS, binding)
            else:
                binding["kind"] = "ClusterRoleBinding"
                del binding["metadata"]["namespace"]
                if reg.store(CLUSTER_ROLE_BINDINGS).lookup("", binding["metadata"]["name"]
                                                           ) is None:
                    await reg.store(CLUSTER_ROLE_BINDINGS).create(Context(), "", binding)
            # the role alone: discovery and public info come to everyone from their own
            # bindings, so those rows ask as a user in no group
            if role in ("system:discovery", "system:public-info-viewer"):
                user = User(user.name, ())
            allowed, _ = authz.authorize(user, parse_request_info(method, path))
            got.append((role, method, path, allowed))
        assert got == MATRIX

    run(test)


def test_every_authenticated_user_discovers_and_reviews_itself() -> None:
    async def test(reg: Registry) -> None:
        authz = RBACAuthorizer(reg)
        anyone = User("someone", ("system:authenticated",))
        for method, path, allowed in [
            ("GET", "/apis", True), ("GET", "/version", True), ("GET", "/healthz", True),
            ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", True),
            ("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", True),
            ("GET", "/metrics", False), ("GET", "/api/v1/namespaces/default/pods", False),
        ]:
            assert authz.authorize(anyone, parse_request_info(method, path))[0] is allowed, path
        assert authz.authorize(User("admin", ("system:masters",)),
                               parse_request_info("DELETE", "/api/v1/nodes/n"))[0]

    run(test)


@pytest.mark.parametrize("autoupdate", ["true", "false"])
def test_reconcile_adds_never_removes(autoupdate: str) -> None:
    async def test(reg: Registry) -> None:
        roles = reg.store(CLUSTER_ROLES)
        crbs = reg.store(CLUSTER_ROLE_BINDINGS)
        extra = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}
        role = roles.get("", "system:node-proxier").obj()
        role["metadata"]["annotations"][bp.AUTOUPDATE] = autoupdate
        role["rules"] = [extra]
        await roles.update(Context(), "", "system:node-proxier", role)
        view = roles.get("", "view").obj()
        view["metadata"]["annotations"][bp.AUTOUPDATE] = autoupdate
        view["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"mine": "y"}}]}
        await roles.update(Context(), "", "view", view)
        crb = crbs.get("", "cluster-admin").obj()
        crb["metadata"]["annotations"][bp.AUTOUPDATE] = autoupdate
        crb["subjects"] = [{"kind": "User", "name": "root",
                            "apiGroup": "rbac.authorization.k8s.io"}]
        await crbs.update(Context(), "", "cluster-admin", crb)
        await crbs.delete(Context(), "", "system:discovery", DeleteOptions())

        await bp.reconcile(reg)  # the next start

        rules = roles.get("", "system:node-proxier").obj()["rules"]
        selectors = roles.get("", "view").obj()["aggregationRule"]["clusterRoleSelectors"]
        subjects = crbs.get("", "cluster-admin").obj()["subjects"]
        assert rules[0] == extra
        assert selectors[0] == {"matchLabels": {"mine": "y"}}
        assert subjects[0]["name"] == "root"
        if autoupdate == "true":
            assert len(rules) > 1
            assert {"apiGroups": [""], "resources": ["nodes"],
                                       "verbs": ["get"]} in rules
            assert {"matchLabels": {bp.AGGREGATE_TO + "view": "true"}} in selectors
            assert {"kind": "Group", "name": "system:masters",
                    "apiGroup": "rbac.authorization.k8s.io"} in subjects
        else:
            assert (len(rules), len(selectors), len(subjects)) == (1, 1, 1)
        assert crbs.lookup("", "system:discovery") is not None  # missing: created again

    run(test)


def test_default_objects_carry_upstream_metadata() -> None:
    async def test(reg: Registry) -> None:
        for store, name in ((reg.store(CLUSTER_ROLES), "cluster-admin"),
                            (reg.store(CLUSTER_ROLE_BINDINGS), "cluster-admin")):
            meta = store.get("", name).obj()["metadata"]
            assert meta["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
            assert meta["annotations"][bp.AUTOUPDATE] == "true"
        admin = reg.store(CLUSTER_ROLE_BINDINGS).get("", "cluster-admin").obj()
        assert admin["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io",
                                      "kind": "Group", "name": "system:masters"}]

    run(test)
