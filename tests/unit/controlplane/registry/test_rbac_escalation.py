"""Escalation prevention on roles and bindings (pkg/registry/rbac/*/policybased): a user
writes a role only holding every permission in it (or with ``escalate``), a binding only
holding the role's permissions (or with ``bind``); refused with upstream's 403 and
nothing written; system:masters always may. Coverage as policy_comparator.go (subresource
``*/x`` forms, URL prefixes, resourceNames) and the missing rules compacted and written as
CompactString."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.rbacrules import Rule, compact, compact_string, uncovered
from pykubelet.controlplane.registry.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from pykubelet.controlplane.registry.store import Context, Registry, User

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io/v1"
ALICE = User("alice", ("system:authenticated",))
NS = "team-a"
MANAGE_RBAC = {"apiGroups": ["rbac.authorization.k8s.io"],
               "resources": ["roles", "rolebindings"], "verbs": ["create", "update"]}
READ_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}


@pytest.mark.parametrize(("owner", "wanted", "missing"), [
    ([READ_PODS], [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}], []),
    ([READ_PODS], [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]}],
     [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}]),
    ([{"apiGroups": ["*"], "resources": ["*/log"], "verbs": ["get"]}],
     [{"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}], []),
    ([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]}],
     [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
     [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
    ([{"nonResourceURLs": ["/logs/*"], "verbs": ["get"]}],
     [{"nonResourceURLs": ["/logs/a", "/metrics"], "verbs": ["get"]}],
     [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
])
def test_covers(owner: list[Obj], wanted: list[Obj], missing: list[Obj]) -> None:
    assert uncovered([Rule.of(r) for r in owner], wanted) == missing


def test_compact_string() -> None:
    rules = compact([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
                     {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}])
    assert [compact_string(r) for r in rules] == [
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}']


def obj(kind: str, name: str, namespace: str = "", **fields: Any) -> Obj:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta, **fields}


async def grant(reg: Registry, name: str, rules: list[Obj]) -> None:
    """alice holds ``rules`` in team-a through a Role and a RoleBinding (written by the
    control plane, which may)."""
    await reg.store(ROLES).create(Context(), NS, obj("Role", name, NS, rules=rules))
    await reg.store(ROLE_BINDINGS).create(Context(), NS, obj(
        "RoleBinding", name, NS, roleRef={"kind": "Role", "name": name},
        subjects=[{"kind": "User", "name": "alice"}]))


def run(test: Any) -> None:
    async def main() -> None:
        async with memory_registry(("default", "kube-system", NS)) as reg:
            await grant(reg, "rbac-manager", [MANAGE_RBAC, READ_PODS])
            await reg.store(CLUSTER_ROLES).create(Context(), "", obj(
                "ClusterRole", "secret-reader",
                rules=[{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]))
            await test(reg)

    asyncio.run(main())


async def refused(coro: Any) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as exc:
        await coro
    assert exc.value.code == 403
    return exc.value


def test_role_granting_more_than_held_is_refused() -> None:
    async def test(reg: Registry) -> None:
        as_alice = Context(user=ALICE)
        roles = reg.store(ROLES)
        await roles.create(as_alice, NS, obj("Role", "ok", NS, rules=[
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]))
        exc = await refused(roles.create(as_alice, NS, obj("Role", "more", NS, rules=[
            READ_PODS, {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}])))
        assert exc.message == (
            'roles.rbac.authorization.k8s.io "more" is forbidden: user "alice" '
            '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
            'currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}')
        assert exc.details == {"name": "more", "group": "rbac.authorization.k8s.io",
                               "kind": "roles"}
        assert roles.lookup(NS, "more") is None
        ok = roles.get(NS, "ok").obj()
        ok["rules"] = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
        await refused(roles.update(as_alice, NS, "ok", ok))
        # the control plane (system:masters) may
        await roles.create(Context(), NS, obj("Role", "more", NS, rules=[
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]))
        # with escalate on roles, alice may too
        await grant(reg, "escalator", [{"apiGroups": ["rbac.authorization.k8s.io"],
                                         "resources": ["roles"], "verbs": ["escalate"]}])
        await roles.create(as_alice, NS, obj("Role", "most", NS, rules=[
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]))

    run(test)


def test_binding_to_a_role_not_held_is_refused() -> None:
    async def test(reg: Registry) -> None:
        as_alice = Context(user=ALICE)
        rbs = reg.store(ROLE_BINDINGS)

        def binding(name: str, role: str) -> Obj:
            return obj("RoleBinding", name, NS, roleRef={"kind": "ClusterRole", "name": role},
                       subjects=[{"kind": "User", "name": "alice"}])

        exc = await refused(rbs.create(as_alice, NS, binding("steal", "secret-reader")))
        assert exc.message.startswith(
            'rolebindings.rbac.authorization.k8s.io "steal" is forbidden: user "alice" '
            '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
            "currently held:\n")
        assert rbs.lookup(NS, "steal") is None
        # a missing role: upstream's GetRoleReferenceRules error
        exc = await refused(rbs.create(as_alice, NS, binding("ghost", "nope")))
        assert exc.message == ('rolebindings.rbac.authorization.k8s.io "ghost" is forbidden: '
                               'clusterrole.rbac.authorization.k8s.io "nope" not found')
        # bind on that role lets alice through
        await grant(reg, "binder", [{"apiGroups": ["rbac.authorization.k8s.io"],
                                     "resources": ["clusterroles"], "verbs": ["bind"],
                                     "resourceNames": ["secret-reader"]}])
        await rbs.create(as_alice, NS, binding("steal", "secret-reader"))
        # a ClusterRoleBinding: no namespace rules count
        exc = await refused(reg.store(CLUSTER_ROLE_BINDINGS).create(as_alice, "", obj(
            "ClusterRoleBinding", "wide", roleRef={"kind": "ClusterRole",
                                                   "name": "secret-reader"})))
        assert exc.details["kind"] == "clusterrolebindings"

    run(test)


def test_aggregation_rule_needs_everything() -> None:
    async def test(reg: Registry) -> None:
        await reg.store(CLUSTER_ROLES).create(Context(), "", obj(
            "ClusterRole", "cr-writer", rules=[{"apiGroups": ["rbac.authorization.k8s.io"],
                                                "resources": ["clusterroles"],
                                                "verbs": ["create"]}]))
        await reg.store(CLUSTER_ROLE_BINDINGS).create(Context(), "", obj(
            "ClusterRoleBinding", "cr-writer", roleRef={"kind": "ClusterRole",
                                                        "name": "cr-writer"},
            subjects=[{"kind": "User", "name": "alice"}]))
        exc = await refused(reg.store(CLUSTER_ROLES).create(Context(user=ALICE), "", obj(
            "ClusterRole", "gather", aggregationRule={"clusterRoleSelectors": [
                {"matchLabels": {"x": "y"}}]})))
        assert exc.message == ('clusterroles.rbac.authorization.k8s.io "gather" is forbidden: '
                               "must have cluster-admin privileges to use the aggregationRule")

    run(test)
