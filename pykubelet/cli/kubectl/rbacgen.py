"""The RBAC objects ``pykubectl create role|clusterrole|rolebinding|clusterrolebinding``
make from flags, as kubectl's generators do (pkg/cmd/create/create_role.go,
create_clusterrole.go, create_rolebinding.go, create_clusterrolebinding.go): verbs and
names deduplicated, ``resource[.group][/subresource]`` mapped through discovery (short
names expanded, the group found), one rule per API group in group order, then one for the
non-resource URLs; kubectl's checks and their words; objects in the Go structs' field
order (kubectl prints its typed object)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"
RESOURCE_VERBS = ("*", "get", "delete", "list", "create", "update", "patch", "watch", "proxy",
                  "deletecollection", "use", "bind", "escalate", "impersonate")
NON_RESOURCE_VERBS = ("*", "get", "post", "put", "delete", "patch", "head", "options")
# verbs that only apply to some (group, resource)s
SPECIAL_VERBS: dict[str, tuple[tuple[str, str], ...]] = {
    "use": (("policy", "podsecuritypolicies"), ("extensions", "podsecuritypolicies")),
    "bind": ((GROUP, "roles"), (GROUP, "clusterroles")),
    "escalate": ((GROUP, "roles"), (GROUP, "clusterroles")),
    "impersonate": (("", "users"), ("", "serviceaccounts"), ("", "groups"),
                    ("authentication.k8s.io", "userextras")),
}
# a word of --resource -> (group, resource), or None when the server has no such type
Mapper = Callable[[str, str], tuple[str, str] | None]


def _unique(values: list[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _slice(values: list[str]) -> list[str]:
    """A cobra string slice: repeated flags, each comma-separated."""
    return [part for v in values for part in v.split(",")]


def _verbs(values: list[str]) -> list[str]:
    verbs = _unique(_slice(values))
    return ["*"] if "*" in verbs else verbs


def _resources(values: list[str]) -> list[tuple[str, str, str]]:
    """(resource, group, subresource) of each --resource; ``*`` alone replaces them all."""
    out: list[tuple[str, str, str]] = []
    for r in _slice(values):
        head, _, sub = r.partition("/")
        resource, _, group = head.partition(".")
        if resource == "*" and "." not in head and "/" not in r:
            return [("*", "", "")]
        out.append((resource, group, sub))
    return out


def _check_resources(resources: list[tuple[str, str, str]], verbs: list[str],
                     mapper: Mapper) -> None:
    """validateResource."""
    for resource, group, _ in resources:
        if not resource:
            raise CommandError("error: resource must be specified if apiGroup/subresource "
                               "specified")
        if resource == "*":
            return
        found = mapper(resource, group)
        g, res = found if found is not None else (group, resource)
        special = False
        for v in verbs:
            allowed = SPECIAL_VERBS.get(v)
            if allowed is not None:
                if (g, res) not in allowed:
                    raise CommandError(f"error: can not perform '{v}' on '{res}' in group "
                                       f"'{g}'")
                special = True
        if found is None and not special:
            word = f"{resource}.{group}" if group else resource
            # the RESTMapper's error, which kubectl prints as it is (no "error: ")
            raise CommandError(f'the server doesn\'t have a resource type "{word}"')


def _rules(verbs: list[str], resources: list[tuple[str, str, str]], names: list[str],
           urls: list[str], mapper: Mapper) -> list[Obj]:
    """generateResourcePolicyRules."""
    by_group: dict[str, list[str]] = {}
    for resource, group, sub in resources:
        found = mapper(resource, group) if resource != "*" else None
        g, res = found if found is not None else (group, resource)
        if sub:
            res = f"{res}/{sub}"
        if res not in by_group.setdefault(g, []):
            by_group[g].append(res)
    rules: list[Obj] = []
    for g in sorted(by_group):
        rule: Obj = {"verbs": verbs, "apiGroups": [g], "resources": by_group[g]}
        if names:
            rule["resourceNames"] = names
        rules.append(rule)
    if urls:
        rules.append({"verbs": verbs, "nonResourceURLs": urls})
    return rules


def _meta(name: str, namespace: str) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["creationTimestamp"] = None
    return meta


def _warn_verbs(verbs: list[str]) -> None:
    for v in verbs:
        if v not in RESOURCE_VERBS:
            print(f"Warning: '{v}' is not a standard resource verb", file=sys.stderr)


def role(name: str, namespace: str, verbs: list[str], resources: list[str],
         names: list[str], mapper: Mapper) -> Obj:
    """kubectl create role."""
    vs, rs = _verbs(verbs), _resources(resources)
    if not vs:
        raise CommandError("error: at least one verb must be specified")
    _warn_verbs(vs)
    if not rs:
        raise CommandError("error: at least one resource must be specified")
    _check_resources(rs, vs, mapper)
    return {"kind": "Role", "apiVersion": API_VERSION, "metadata": _meta(name, namespace),
            "rules": _rules(vs, rs, _unique(names), [], mapper)}


def cluster_role(name: str, verbs: list[str], resources: list[str], names: list[str],
                 urls: list[str], aggregation: list[str], mapper: Mapper) -> Obj:
    """kubectl create clusterrole."""
    vs, rs, us = _verbs(verbs), _resources(resources), _unique(_slice(urls))
    selector = _aggregation(aggregation)
    obj: Obj = {"kind": "ClusterRole", "apiVersion": API_VERSION,
                "metadata": _meta(name, "")}
    if selector:
        if us or vs or rs or names:
            raise CommandError("error: aggregation rule must be specified without "
                               "nonResourceURLs, verbs, resources or resourceNames")
        obj["rules"] = None
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": selector}]}
        return obj
    if not vs:
        raise CommandError("error: at least one verb must be specified")
    if not rs and not us:
        raise CommandError("error: one of resource or nonResourceURL must be specified")
    if rs:
        _warn_verbs(vs)
        _check_resources(rs, vs, mapper)
    if us:
        for v in vs:
            if v not in NON_RESOURCE_VERBS:
                raise CommandError(f"error: invalid verb: '{v}' for nonResourceURL")
        for url in us:
            if url == "*":
                continue
            if not url.startswith("/"):
                raise CommandError("error: nonResourceURL should start with /")
            if "*" in url[:-1]:
                raise CommandError("error: nonResourceURL only supports wildcard matches when "
                                   "'*' is at the end")
    obj["rules"] = _rules(vs, rs, _unique(names), us, mapper)
    return obj


def _aggregation(values: list[str]) -> dict[str, str]:
    """--aggregation-rule: a cobra map of key=value pairs, comma-separated."""
    out: dict[str, str] = {}
    for pair in _slice(values):
        key, sep, value = pair.partition("=")
        if not sep:
            raise CommandError(f'error: invalid argument "{",".join(values)}" for '
                               '"--aggregation-rule" flag: ' + f"{pair} must be formatted as "
                               "key=value")
        out[key] = value
    return out


def binding(kind: str, name: str, namespace: str, role_name: str, cluster_role_name: str,
            users: list[str], groups: list[str], service_accounts: list[str]) -> Obj:
    """kubectl create rolebinding (``kind`` RoleBinding) or clusterrolebinding."""
    if kind == "RoleBinding" and bool(role_name) == bool(cluster_role_name):
        raise CommandError("error: exactly one of clusterrole or role must be specified")
    ref_kind, ref = ("Role", role_name) if role_name else ("ClusterRole", cluster_role_name)
    subjects: list[Obj] = [{"kind": "User", "apiGroup": GROUP, "name": u} for u in users]
    subjects += [{"kind": "Group", "apiGroup": GROUP, "name": g} for g in groups]
    for sa in service_accounts:
        ns, sep, sa_name = sa.partition(":")
        if not sep or not ns or not sa_name or ":" in sa_name:
            raise CommandError("error: serviceaccount must be <namespace>:<name>")
        subjects.append({"kind": "ServiceAccount", "name": sa_name, "namespace": ns})
    obj: Obj = {"kind": kind, "apiVersion": API_VERSION,
                "metadata": _meta(name, namespace if kind == "RoleBinding" else "")}
    if subjects:
        obj["subjects"] = subjects
    obj["roleRef"] = {"apiGroup": GROUP, "kind": ref_kind, "name": ref}
    return obj
