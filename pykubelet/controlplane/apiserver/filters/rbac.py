"""The RBAC authorizer (plugin/pkg/auth/authorizer/rbac): a request is allowed when a rule
of a role bound to its user allows it, else RBAC has no opinion (and the request is 403).

Rules (rbac.go's RuleAllows): the verb matches (``*`` any); for a resource request the API
group, the resource (``*``, ``resource/subresource``, ``*/subresource``, ``resource/*``) and,
when the rule names any, the object's name; for a non-resource request the path (a trailing
``*`` matches a prefix). Subjects (appliesTo): a User by name, a Group by membership, a
ServiceAccount as ``system:serviceaccount:<ns>:<name>`` (a RoleBinding's namespace when the
subject names none). The rules a user holds in a namespace are those of the
ClusterRoleBindings that apply to them, then of the namespace's RoleBindings (a Role of the
namespace or a ClusterRole); a binding to a missing role is reported in the reason
(``RBAC: role.rbac.authorization.k8s.io "x" not found``), as upstream's visitor errors.

The compiled rules are cached per (user, groups, namespace) and dropped whenever a Role,
ClusterRole or binding changes (the watch cache tells), so a request costs a dict lookup
and a walk over that user's rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pykubelet.api.machinery.field import go_quote
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.registry.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from pykubelet.controlplane.registry.store import Registry, User


class _Resource(Protocol):
    """What the watch cache tells its listeners of the resource that changed (the HTTP
    layer does not import the storage layer; it only hears it through the registry)."""

    prefix: str

Obj = dict[str, Any]
ALL = "*"
RBAC_GROUP = "rbac.authorization.k8s.io"
SA_PREFIX = "system:serviceaccount:"
_PREFIXES = frozenset(r.storage_prefix for r in (ROLES, CLUSTER_ROLES, ROLE_BINDINGS,
                                                  CLUSTER_ROLE_BINDINGS))


@dataclass(frozen=True)
class Rule:
    """A PolicyRule as sets, for matching many requests against it."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str]
    non_resource_urls: tuple[str, ...]

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
    for url in rule.non_resource_urls:
        if url in (ALL, path) or (url.endswith(ALL) and path.startswith(url.rstrip(ALL))):
            return True
    return False


def rule_allows(info: RequestInfo, rule: Rule) -> bool:
    """RuleAllows."""
    if info.is_resource_request:
        return (verb_matches(rule, info.verb) and api_group_matches(rule, info.group)
                and resource_matches(rule, info.resource, info.subresource)
                and resource_name_matches(rule, info.name))
    return verb_matches(rule, info.verb) and non_resource_url_matches(rule, info.path)


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


class RBACAuthorizer:
    """Decides from the registry's RBAC objects, with the rules cached per subject."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._cache: dict[tuple[str, tuple[str, ...], str], tuple[list[Rule], list[str]]] = {}
        registry.cacher.listeners.append(self._on_event)

    def close(self) -> None:
        if self._on_event in self.registry.cacher.listeners:
            self.registry.cacher.listeners.remove(self._on_event)

    def _on_event(self, cache: _Resource, ev: object) -> None:
        if cache.prefix in _PREFIXES:
            self._cache.clear()

    def rules_for(self, user: User, namespace: str) -> tuple[list[Rule], list[str]]:
        """The rules ``user`` holds in ``namespace`` ("" : cluster-wide only) and the
        errors met resolving them (bindings to roles that do not exist)."""
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

    def _add(self, rules: list[Rule], errs: list[str], ref: Obj, namespace: str) -> None:
        """GetRoleReferenceRules: a ClusterRole's rules, or a Role's of the binding's
        namespace."""
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "ClusterRole":
            entry = self.registry.store(CLUSTER_ROLES).lookup("", name)
            what = "clusterrole"
        elif kind == "Role" and namespace:
            entry = self.registry.store(ROLES).lookup(namespace, name)
            what = "role"
        else:
            errs.append(f"unsupported role reference kind: {go_quote(str(kind or ''))}")
            return
        if entry is None:
            errs.append(f'{what}.{RBAC_GROUP} "{name}" not found')
            return
        rules.extend(Rule.of(r) for r in entry.obj().get("rules") or ())

    def authorize(self, user: User, info: RequestInfo) -> tuple[bool, str]:
        """(allowed, reason): the reason is ``RBAC: <errors>`` when resolving the user's
        roles failed somewhere and nothing allowed the request, else ""."""
        rules, errs = self.rules_for(user, info.namespace if info.is_resource_request else "")
        if allows(info, rules):
            return True, ""
        return False, f"RBAC: {_aggregate(errs)}" if errs else ""


def allows(info: RequestInfo, rules: Iterable[Rule]) -> bool:
    return any(rule_allows(info, r) for r in rules)


def _aggregate(errs: list[str]) -> str:
    """utilerrors.NewAggregate's message: one error alone, several in brackets."""
    return errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]"
