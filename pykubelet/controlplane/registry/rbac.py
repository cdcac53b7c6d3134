"""rbac.authorization.k8s.io/v1 storage (pkg/registry/rbac): plain objects with no status
and no generation; the object model holds their rules (names, rules, roleRef, subjects)."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from pykubelet.controlplane.registry.strategy import Strategy


class RoleStrategy(Strategy):
    info = ROLES


class ClusterRoleStrategy(Strategy):
    info = CLUSTER_ROLES


class RoleBindingStrategy(Strategy):
    info = ROLE_BINDINGS


class ClusterRoleBindingStrategy(Strategy):
    info = CLUSTER_ROLE_BINDINGS
