"""rbac.authorization.k8s.io/v1 storage (pkg/registry/rbac): plain objects with no status
and no generation; the object model holds their rules (names, rules, roleRef, subjects);
the escalation check (:func:`rbac_escalation`, an admission plugin here) refuses a role or
binding granting more than its writer holds."""

from __future__ import annotations

from pykubelet.api import rbac
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.rbacrules import escalation, resolver_of
from pykubelet.controlplane.registry.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from pykubelet.controlplane.registry.store import Context, GenericStore, Obj
from pykubelet.controlplane.registry.strategy import Strategy


class RoleStrategy(Strategy):
    info = ROLES


class ClusterRoleStrategy(Strategy):
    info = CLUSTER_ROLES


class RoleBindingStrategy(Strategy):
    info = ROLE_BINDINGS


class ClusterRoleBindingStrategy(Strategy):
    info = CLUSTER_ROLE_BINDINGS


# --------------------------------------------------------------------------- escalation

# a ClusterRole's aggregationRule can gather anything: setting one needs everything
FULL_AUTHORITY: list[Obj] = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                             {"verbs": ["*"], "nonResourceURLs": ["*"]}]
_ROLE_KINDS = {ROLES.resource: ROLES, CLUSTER_ROLES.resource: CLUSTER_ROLES}
_BINDING_KINDS = {ROLE_BINDINGS.resource: ROLE_BINDINGS,
                  CLUSTER_ROLE_BINDINGS.resource: CLUSTER_ROLE_BINDINGS}


def _significant(obj: Obj) -> Obj:
    """What grants anything (and what aggregation selects on): an update that changes none
    of it changes no permission (upstream lets GC-only changes through unchecked)."""
    meta = obj.get("metadata") or {}
    return {k: obj.get(k) for k in ("rules", "aggregationRule", "roleRef", "subjects")} | {
        "labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {}}


def _refused(store: GenericStore, name: str, why: str) -> errors.StatusError:
    """errors.NewForbidden(groupResource, name, err)."""
    info = store.info
    return errors.StatusError(
        403, errors.FORBIDDEN,
        f'{info.resource}.{info.group} "{name}" is forbidden: {why}',
        {"name": name, "group": info.group, "kind": info.resource})


async def rbac_escalation(op: str, store: GenericStore, obj: Obj, old: Obj | None,
                          ctx: Context) -> None:
    """Escalation prevention (pkg/registry/rbac/{role,clusterrole,rolebinding,
    clusterrolebinding}/policybased): a role is written only by who holds every permission
    in it or may ``escalate`` roles; a binding only by who may ``bind`` its role or holds
    every permission in it. system:masters (and the control plane itself) always may."""
    resource = store.info.resource
    if op not in ("CREATE", "UPDATE") or (resource not in _ROLE_KINDS
                                          and resource not in _BINDING_KINDS):
        return
    user = ctx.user
    if user.is_admin:  # EscalationAllowed
        return
    if old is not None and _significant(obj) == _significant(old):
        return
    meta = obj.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    resolver = resolver_of(store.registry)
    if resource in _ROLE_KINDS:
        if resolver.allows(user, "escalate", rbac.GROUP, resource, namespace,
                           name if op == "UPDATE" else ""):
            return
        if obj.get("aggregationRule") is not None and escalation(
                resolver, user, namespace, FULL_AUTHORITY):
            raise _refused(store, name, "must have cluster-admin privileges to use the "
                                        "aggregationRule")
        why = escalation(resolver, user, namespace, list(obj.get("rules") or ()))
    else:
        ref = obj.get("roleRef") or {}
        role_resource = "roles" if ref.get("kind") == "Role" else "clusterroles"
        if resolver.allows(user, "bind", rbac.GROUP, role_resource, namespace,
                           str(ref.get("name", ""))):
            return
        rules, err = resolver.role_rules(ref, namespace)
        why = err or escalation(resolver, user, namespace, rules)
    if why:
        raise _refused(store, name, why)
