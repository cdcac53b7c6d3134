"""The rules a user holds, as pkg/registry/rbac/validation's rule resolver, and whether they
cover other rules (policy_comparator.go's Covers): what both the RBAC authorizer and the
escalation check on roles and bindings read.

A user's rules in a namespace are those of the ClusterRoleBindings that apply to them, then
of the namespace's RoleBindings (a Role of that namespace or a ClusterRole); a binding to
a missing role is an error beside the rules found (``clusterrole.rbac.authorization.k8s.io
"x" not found``). Subjects as appliesToUser: a User by name, a Group by membership, a
ServiceAccount as ``system:serviceaccount:<ns>:<name>`` (a RoleBinding's namespace when
the subject names none). The resolved rules are cached per (user, groups, namespace) and
dropped whenever a Role, ClusterRole or binding changes (the watch cache tells).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from pykubelet.api.machinery.field import go_quote
from pykubelet.controlplane.registry.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from pykubelet.controlplane.registry.store import Registry, User
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

Obj = dict[str, Any]
ALL = "*"
RBAC_GROUP = "rbac.authorization.k8s.io"
SA_PREFIX = "system:serviceaccount:"
_PREFIXES = frozenset(r.storage_prefix for r in (ROLES, CLUSTER_ROLES, ROLE_BINDINGS,
                                                  CLUSTER_ROLE_BINDINGS))


@dataclass(frozen=True)
class Rule:
    """A PolicyRule as sets, for matching many requests against it (``urls`` keep their
    order: they are prefixes)."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str]
    urls: tuple[str, ...]

    @classmethod
    def of(cls, rule: Obj) -> Rule:
        return cls(frozenset(rule.get("verbs") or ()), frozenset(rule.get("apiGroups") or ()),
                   frozenset(rule.get("resources") or ()),
                   frozenset(rule.get("resourceNames") or ()),
                   tuple(rule.get("nonResourceURLs") or ()))


def verb_matches(rule: Rule, verb: str) -> bool:
    return ALL in rule.verbs or verb in rule.verbs


def api_group_matches(rule: Rule, group: str) -> bool:
    return ALL in rule.api_groups or group in rule.api_groups


def resource_matches(rule: Rule, resource: str, subresource: str) -> bool:
    """ResourceMatches: ``*`` is everything, ``*/sub`` a subresource of any resource,
    ``res/*`` any subresource of one (never the resource itself)."""
    if ALL in rule.resources:
        return True
    combined = f"{resource}/{subresource}" if subresource else resource
    if combined in rule.resources:
        return True
    if subresource:
        return f"*/{subresource}" in rule.resources or f"{resource}/*" in rule.resources
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    return any(url_covers(url, path) for url in rule.urls)


def url_covers(owner: str, path: str) -> bool:
    """A rule's URL covers ``path``: ``*``, the same path, or a prefix ending in ``*``."""
    return owner in (ALL, path) or (owner.endswith(ALL) and path.startswith(owner.rstrip(ALL)))


def resource_allows(rule: Rule, verb: str, group: str, resource: str, subresource: str,
                    name: str) -> bool:
    """RuleAllows for a resource request."""
    return (verb_matches(rule, verb) and api_group_matches(rule, group)
            and resource_matches(rule, resource, subresource)
            and resource_name_matches(rule, name))


def applies_to(user: User, subject: Obj, namespace: str) -> bool:
    """appliesToUser: ``namespace`` is the RoleBinding's ("" for a ClusterRoleBinding)."""
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_ns = subject.get("namespace") or namespace
        return bool(sa_ns) and user.name == f"{SA_PREFIX}{sa_ns}:{name}"
    return False


def _applies(user: User, binding: Obj, namespace: str) -> bool:
    return any(applies_to(user, s, namespace) for s in binding.get("subjects") or ())


class RuleResolver:
    """The rules users hold, from the registry's RBAC objects, cached."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._cache: dict[tuple[str, tuple[str, ...], str], tuple[list[Rule], list[str]]] = {}
        registry.cacher.listeners.append(self._on_event)

    def close(self) -> None:
        if self._on_event in self.registry.cacher.listeners:
            self.registry.cacher.listeners.remove(self._on_event)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix in _PREFIXES:
            self._cache.clear()

    def rules_for(self, user: User, namespace: str) -> tuple[list[Rule], list[str]]:
        """RulesFor: the rules ``user`` holds in ``namespace`` ("": cluster-wide only)
        and the errors met resolving them."""
        key = (user.name, user.groups, namespace)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._resolve(user, namespace)
        return hit

    def _resolve(self, user: User, namespace: str) -> tuple[list[Rule], list[str]]:
        rules: list[Rule] = []
        errs: list[str] = []
        for b in self.registry.store(CLUSTER_ROLE_BINDINGS).select(None, None):
            crb = b.obj()
            if _applies(user, crb, ""):
                self._add(rules, errs, crb.get("roleRef") or {}, "")
        if namespace:
            for b in self.registry.store(ROLE_BINDINGS).select(namespace, None):
                rb = b.obj()
                if _applies(user, rb, namespace):
                    self._add(rules, errs, rb.get("roleRef") or {}, namespace)
        return rules, errs

    def role_rules(self, ref: Obj, namespace: str) -> tuple[list[Obj], str]:
        """GetRoleReferenceRules: a ClusterRole's rules, or a Role's of ``namespace``, and
        the error when there is no such role."""
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "ClusterRole":
            entry = self.registry.store(CLUSTER_ROLES).lookup("", name)
            what = "clusterrole"
        elif kind == "Role" and namespace:
            entry = self.registry.store(ROLES).lookup(namespace, name)
            what = "role"
        else:
            return [], f"unsupported role reference kind: {go_quote(str(kind or ''))}"
        if entry is None:
            return [], f'{what}.{RBAC_GROUP} "{name}" not found'
        return list(entry.obj().get("rules") or ()), ""

    def _add(self, rules: list[Rule], errs: list[str], ref: Obj, namespace: str) -> None:
        found, err = self.role_rules(ref, namespace)
        if err:
            errs.append(err)
        rules.extend(Rule.of(r) for r in found)

    def allows(self, user: User, verb: str, group: str, resource: str, namespace: str,
               name: str) -> bool:
        """Whether RBAC (or system:masters) lets ``user`` use ``verb`` on a resource, as
        the authorizer asked for ``escalate`` and ``bind``."""
        if user.is_admin:
            return True
        rules, _ = self.rules_for(user, namespace)
        return any(resource_allows(r, verb, group, resource, "", name) for r in rules)


_RESOLVERS: weakref.WeakKeyDictionary[Registry, RuleResolver] = weakref.WeakKeyDictionary()


def resolver_of(registry: Registry) -> RuleResolver:
    """The one resolver (and cache) of a registry, for the authorizer and the registry."""
    found = _RESOLVERS.get(registry)
    if found is None:
        found = _RESOLVERS[registry] = RuleResolver(registry)
    return found


# --------------------------------------------------------------------------- coverage


def breakdown(rule: Obj) -> list[Obj]:
    """BreakdownRule: one rule per group, resource, verb (and name), or per URL and verb."""
    out: list[Obj] = []
    verbs = rule.get("verbs") or []
    names = rule.get("resourceNames") or []
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            for verb in verbs:
                base = {"verbs": [verb], "apiGroups": [group], "resources": [resource]}
                if names:
                    out += [{**base, "resourceNames": [n]} for n in names]
                else:
                    out.append(base)
    for url in rule.get("nonResourceURLs") or []:
        out += [{"verbs": [verb], "nonResourceURLs": [url]} for verb in verbs]
    return out


def _resources_cover(owner: frozenset[str], wanted: list[str]) -> bool:
    """resourceCoversAll."""
    if ALL in owner or all(r in owner for r in wanted):
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path or f"*/{path.split('/', 1)[1]}" not in owner:
            return False
    return True


def rule_covers(owner: Rule, sub: Obj) -> bool:
    """ruleCovers: ``owner`` grants everything the simple rule ``sub`` does."""
    verbs = sub.get("verbs") or []
    groups = sub.get("apiGroups") or []
    names = sub.get("resourceNames") or []
    return ((ALL in owner.verbs or all(v in owner.verbs for v in verbs))
            and (ALL in owner.api_groups or all(g in owner.api_groups for g in groups))
            and _resources_cover(owner.resources, sub.get("resources") or [])
            and all(any(url_covers(o, u) for o in owner.urls)
                    for u in sub.get("nonResourceURLs") or [])
            and (not owner.resource_names
                 or (bool(names) and all(n in owner.resource_names for n in names))))


def uncovered(owner: list[Rule], rules: list[Obj]) -> list[Obj]:
    """Covers' second value: the simple rules of ``rules`` no owner rule covers."""
    return [sub for r in rules for sub in breakdown(r)
            if not any(rule_covers(o, sub) for o in owner)]


def compact(rules: list[Obj]) -> list[Obj]:
    """CompactRules: simple rules of one group and resource (at most one name) that differ
    only by verb, merged."""
    out: list[Obj] = []
    simple: dict[tuple[str, str, str | None], Obj] = {}
    for r in rules:
        keys = set(r) - {"verbs", "apiGroups", "resources", "resourceNames"}
        groups, resources = r.get("apiGroups") or [], r.get("resources") or []
        names = r.get("resourceNames") or []
        if keys or len(groups) != 1 or len(resources) != 1 or len(names) > 1:
            out.append(r)
            continue
        key = (groups[0], resources[0], names[0] if names else None)
        if key in simple:
            simple[key]["verbs"] = [*simple[key]["verbs"], *(r.get("verbs") or [])]
        else:
            simple[key] = {**r, "verbs": list(r.get("verbs") or [])}
    return out + list(simple.values())


def _go_strings(values: list[str]) -> str:
    """%q of a []string: ["a" "b"]."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: Obj) -> str:
    """rbacv1helpers.CompactString."""
    parts = [f"{label}:{_go_strings(rule[key])}" for label, key in (
        ("APIGroups", "apiGroups"), ("Resources", "resources"),
        ("NonResourceURLs", "nonResourceURLs"), ("ResourceNames", "resourceNames"),
        ("Verbs", "verbs")) if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def escalation(resolver: RuleResolver, user: User, namespace: str, rules: list[Obj]
               ) -> str:
    """ConfirmNoEscalation's error ("" when ``user`` holds every rule of ``rules`` in
    ``namespace``)."""
    owner, errs = resolver.rules_for(user, namespace)
    missing = uncovered(owner, rules)
    if not missing:
        return ""
    described = sorted({compact_string(r) for r in compact(missing)})
    msg = (f"user {go_quote(user.name)} (groups={_go_strings(list(user.groups))}) is "
           "attempting to grant RBAC permissions not currently held:\n" + "\n".join(described))
    if errs:
        msg += f"; resolution errors: [{', '.join(errs)}]"
    return msg
