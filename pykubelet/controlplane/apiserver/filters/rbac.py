"""The RBAC authorizer (plugin/pkg/auth/authorizer/rbac): a request is allowed when a rule
of a role bound to its user allows it, else RBAC has no opinion (and the request is 403).

Rules (rbac.go's RuleAllows): the verb matches (``*`` any); for a resource request the API
group, the resource (``*``, ``resource/subresource``, ``*/subresource``, ``resource/*``) and,
when the rule names any, the object's name; for a non-resource request the path (a trailing
``*`` matches a prefix). The user's rules come from the registry's rule resolver
(:mod:`pykubelet.controlplane.registry.rbacrules`), cached per subject, so a request costs
a dict lookup and a walk over that user's rules; a binding to a missing role is the reason
(``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found``), as upstream's visitor
errors.
"""

from __future__ import annotations

from collections.abc import Iterable

from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.registry.rbacrules import (
    Rule,
    non_resource_url_matches,
    resolver_of,
    resource_allows,
    verb_matches,
)
from pykubelet.controlplane.registry.store import Registry, User

__all__ = ["RBACAuthorizer", "Rule", "allows", "rule_allows"]


def rule_allows(info: RequestInfo, rule: Rule) -> bool:
    """RuleAllows."""
    if info.is_resource_request:
        return resource_allows(rule, info.verb, info.group, info.resource, info.subresource,
                               info.name)
    return verb_matches(rule, info.verb) and non_resource_url_matches(rule, info.path)


def allows(info: RequestInfo, rules: Iterable[Rule]) -> bool:
    return any(rule_allows(info, r) for r in rules)


class RBACAuthorizer:
    """Decides from the registry's RBAC objects, through its rule resolver."""

    def __init__(self, registry: Registry) -> None:
        self.resolver = resolver_of(registry)

    def authorize(self, user: User, info: RequestInfo) -> tuple[bool, str]:
        """(allowed, reason): the reason is ``RBAC: <errors>`` when resolving the user's
        roles failed somewhere and nothing allowed the request, else ""."""
        rules, errs = self.resolver.rules_for(
            user, info.namespace if info.is_resource_request else "")
        if allows(info, rules):
            return True, ""
        return False, f"RBAC: {_aggregate(errs)}" if errs else ""


def _aggregate(errs: list[str]) -> str:
    """utilerrors.NewAggregate's message: one error alone, several in brackets."""
    return errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]"
