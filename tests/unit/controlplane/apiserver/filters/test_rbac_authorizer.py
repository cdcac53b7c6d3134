"""The RBAC authorizer (plugin/pkg/auth/authorizer/rbac): rule matching as rbac.go's
RuleAllows (verbs, API groups, resources with subresources and ``*`` forms, resourceNames,
nonResourceURLs with a trailing ``*``), subjects as appliesTo (User, Group,
ServiceAccount defaulted to the binding's namespace), the rules of ClusterRoleBindings
and the namespace's RoleBindings, cached per subject and dropped when RBAC objects change,
and the union with the node rules giving upstream's 403 message."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.filters.authorization import authorize
from pykubelet.controlplane.apiserver.filters.rbac import RBACAuthorizer, Rule, rule_allows
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo, parse_request_info
from pykubelet.controlplane.registry.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Registry, User

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io/v1"
ALICE = User("alice", ("devs", "system:authenticated"))


def req(method: str, path: str) -> RequestInfo:
    return parse_request_info(method, path)


def rule(**fields: Any) -> Rule:
    return Rule.of(fields)


# (rule, request, allowed): the cases of rbac_test.go's TestRuleMatches and friends
MATRIX = [
    (rule(verbs=["get"], apiGroups=[""], resources=["pods"]),
     req("GET", "/api/v1/namespaces/a/pods/p"), True),
    (rule(verbs=["get"], apiGroups=[""], resources=["pods"]),
     req("GET", "/api/v1/namespaces/a/pods"), False),  # list is not get
    (rule(verbs=["*"], apiGroups=[""], resources=["pods"]),
     req("DELETE", "/api/v1/namespaces/a/pods/p"), True),
    (rule(verbs=["get"], apiGroups=["apps"], resources=["pods"]),
     req("GET", "/api/v1/namespaces/a/pods/p"), False),  # another group
    (rule(verbs=["get"], apiGroups=["*"], resources=["*"]),
     req("GET", "/apis/apps/v1/namespaces/a/deployments/d"), True),
    (rule(verbs=["get"], apiGroups=[""], resources=["pods"]),
     req("GET", "/api/v1/namespaces/a/pods/p/log"), False),  # a subresource is not the resource
    (rule(verbs=["get"], apiGroups=[""], resources=["pods/log"]),
     req("GET", "/api/v1/namespaces/a/pods/p/log"), True),
    (rule(verbs=["get"], apiGroups=[""], resources=["*/log"]),
     req("GET", "/api/v1/namespaces/a/pods/p/log"), True),
    (rule(verbs=["get"], apiGroups=[""], resources=["pods/*"]),
     req("GET", "/api/v1/namespaces/a/pods/p/status"), True),
    (rule(verbs=["get"], apiGroups=[""], resources=["pods/*"]),
     req("GET", "/api/v1/namespaces/a/pods/p"), False),
    (rule(verbs=["get"], apiGroups=[""], resources=["pods"], resourceNames=["p"]),
     req("GET", "/api/v1/namespaces/a/pods/p"), True),
    (rule(verbs=["get"], apiGroups=[""], resources=["pods"], resourceNames=["q"]),
     req("GET", "/api/v1/namespaces/a/pods/p"), False),
    (rule(verbs=["list"], apiGroups=[""], resources=["pods"], resourceNames=["p"]),
     req("GET", "/api/v1/namespaces/a/pods"), False),  # a list names nothing
    (rule(verbs=["get"], nonResourceURLs=["/healthz"]), req("GET", "/healthz"), True),
    (rule(verbs=["get"], nonResourceURLs=["/healthz"]), req("GET", "/healthz/etcd"), False),
    (rule(verbs=["get"], nonResourceURLs=["/healthz*"]), req("GET", "/healthz/etcd"), True),
    (rule(verbs=["get"], nonResourceURLs=["*"]), req("GET", "/metrics"), True),
    (rule(verbs=["post"], nonResourceURLs=["/metrics"]), req("GET", "/metrics"), False),
    (rule(verbs=["get"], apiGroups=["*"], resources=["*"]), req("GET", "/metrics"), False),
]


@pytest.mark.parametrize(("r", "info", "allowed"), MATRIX)
def test_rule_allows(r: Rule, info: RequestInfo, allowed: bool) -> None:
    assert rule_allows(info, r) is allowed


def obj(kind: str, name: str, namespace: str = "", **fields: Any) -> Obj:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta, **fields}


async def setup(reg: Registry) -> None:
    ctx = Context()
    await reg.store(ROLES).create(ctx, "team-a", obj(
        "Role", "pod-reader", "team-a",
        rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]))
    await reg.store(ROLE_BINDINGS).create(ctx, "team-a", obj(
        "RoleBinding", "read", "team-a", roleRef={"kind": "Role", "name": "pod-reader"},
        subjects=[{"kind": "User", "name": "alice"},
                  {"kind": "ServiceAccount", "name": "reader"}]))
    await reg.store(CLUSTER_ROLES).create(ctx, "", obj(
        "ClusterRole", "node-lister",
        rules=[{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]))
    await reg.store(CLUSTER_ROLE_BINDINGS).create(ctx, "", obj(
        "ClusterRoleBinding", "devs-list-nodes",
        roleRef={"kind": "ClusterRole", "name": "node-lister"},
        subjects=[{"kind": "Group", "name": "devs"}]))


def run(test: Any) -> None:
    async def main() -> None:
        async with memory_registry(("default", "kube-system", "team-a", "team-b")) as reg:
            await setup(reg)
            await test(reg, RBACAuthorizer(reg))

    asyncio.run(main())


def denied_message(authz: RBACAuthorizer, user: User, method: str, path: str) -> str | None:
    """None when allowed, else the 403's message (the union with the node rules)."""
    try:
        authorize(user, req(method, path), "", lambda *_a: False, rbac=authz.authorize)
    except errors.StatusError as exc:
        if exc.code != 403:
            raise
        return str(exc.message)
    return None


def test_subjects_and_scopes() -> None:
    async def test(reg: Registry, authz: RBACAuthorizer) -> None:
        sa = User("system:serviceaccount:team-a:reader", ("system:serviceaccounts",))
        other_sa = User("system:serviceaccount:team-b:reader", ())
        for user in (ALICE, sa):
            assert denied_message(authz, user, "GET", "/api/v1/namespaces/team-a/pods") is None
        assert denied_message(authz, ALICE, "GET", "/api/v1/nodes") is None  # via the group
        assert denied_message(authz, other_sa, "GET",
                              "/api/v1/namespaces/team-a/pods") is not None
        assert denied_message(authz, ALICE, "GET", "/api/v1/namespaces/team-b/pods") == (
            'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in '
            'the namespace "team-b"')
        assert denied_message(authz, ALICE, "DELETE", "/api/v1/namespaces/team-a/pods/p") == (
            'pods "p" is forbidden: User "alice" cannot delete resource "pods" in API group '
            '"" in the namespace "team-a"')
        assert denied_message(authz, ALICE, "GET", "/api/v1/nodes/n1") == (
            'nodes "n1" is forbidden: User "alice" cannot get resource "nodes" in API group '
            '"" at the cluster scope')
        assert denied_message(authz, sa, "GET", "/apis/apps/v1/namespaces/team-a/deployments"
                              ) == (
            'deployments.apps is forbidden: User "system:serviceaccount:team-a:reader" cannot '
            'list resource "deployments" in API group "apps" in the namespace "team-a"')

    run(test)


def test_cache_follows_rbac_changes_and_missing_roles_are_reasons() -> None:
    async def test(reg: Registry, authz: RBACAuthorizer) -> None:
        pods_b = "/api/v1/namespaces/team-b/pods"
        assert denied_message(authz, ALICE, "GET", pods_b) is not None  # cached now
        await reg.store(ROLE_BINDINGS).create(Context(), "team-b", obj(
            "RoleBinding", "read", "team-b", roleRef={"kind": "ClusterRole", "name": "view2"},
            subjects=[{"kind": "User", "name": "alice"}]))
        # the binding's role does not exist yet: the reason says so, as upstream's
        assert denied_message(authz, ALICE, "GET", pods_b) == (
            'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in '
            'the namespace "team-b": RBAC: clusterrole.rbac.authorization.k8s.io "view2" not '
            "found")
        await reg.store(CLUSTER_ROLES).create(Context(), "", obj(
            "ClusterRole", "view2",
            rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]))
        assert denied_message(authz, ALICE, "GET", pods_b) is None
        await reg.store(ROLE_BINDINGS).delete(Context(), "team-b", "read", DeleteOptions())
        assert denied_message(authz, ALICE, "GET", pods_b) is not None

    run(test)


def test_node_reasons_stay_and_rbac_may_add_to_the_node_rules() -> None:
    async def test(reg: Registry, authz: RBACAuthorizer) -> None:
        node = User("system:node:n1", ("system:nodes", "system:authenticated"))
        secret = "/api/v1/namespaces/team-a/secrets/s"
        assert denied_message(authz, node, "GET", secret) == (
            'secrets "s" is forbidden: User "system:node:n1" cannot get resource "secrets" in '
            "API group \"\" in the namespace \"team-a\": no relationship found between node "
            "'n1' and this object")
        await reg.store(CLUSTER_ROLE_BINDINGS).create(Context(), "", obj(
            "ClusterRoleBinding", "nodes-list-nodes",
            roleRef={"kind": "ClusterRole", "name": "node-lister"},
            subjects=[{"kind": "Group", "name": "system:nodes",
                       "apiGroup": "rbac.authorization.k8s.io"}]))
        assert denied_message(authz, node, "GET", "/api/v1/nodes") is None

    run(test)
