"""Table columns of RBAC bindings, as printers.go's roleBindingsColumnDefinitions and
clusterRoleBindingsColumnDefinitions with printRoleBinding/printClusterRoleBinding: NAME
ROLE AGE, and (wide) USERS GROUPS SERVICEACCOUNTS as rbac.SubjectsStrings writes them.
Roles and ClusterRoles have no printer upstream: they get the default NAME CREATED AT."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Printer = tuple[list[Obj], Callable[[Obj, dt.datetime], list[Any]]]

# rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"], which printers.go describes ROLE with
ROLE_REF_DESC = ("RoleRef can reference a Role in the current namespace or a ClusterRole in "
                 "the global namespace. If the RoleRef cannot be resolved, the Authorizer "
                 "must return an error.")


def subjects_strings(subjects: list[Obj]) -> tuple[list[str], list[str], list[str]]:
    """rbac.SubjectsStrings: user names, group names, ``namespace/name`` of service
    accounts."""
    users: list[str] = []
    groups: list[str] = []
    sas: list[str] = []
    for s in subjects:
        kind, name = s.get("kind"), str(s.get("name", ""))
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            sas.append(f"{s.get('namespace', '')}/{name}")
    return users, groups, sas


def binding_printer(col: Callable[..., Obj], name: Obj, age: Obj,
                    age_of: Callable[[str | None, dt.datetime], str]) -> Printer:
    columns = [
        name,
        col("Role", desc=ROLE_REF_DESC),
        age,
        col("Users", desc="Users in the roleBinding", priority=1),
        col("Groups", desc="Groups in the roleBinding", priority=1),
        col("ServiceAccounts", desc="ServiceAccounts in the roleBinding", priority=1),
    ]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        meta = obj.get("metadata") or {}
        ref = obj.get("roleRef") or {}
        users, groups, sas = subjects_strings(obj.get("subjects") or [])
        return [meta.get("name", ""), f"{ref.get('kind', '')}/{ref.get('name', '')}",
                age_of(meta.get("creationTimestamp"), now),
                ", ".join(users), ", ".join(groups), ", ".join(sas)]

    return columns, cells
