"""The audit policy (``--audit-policy-file``, audit.k8s.io/v1 Policy) and its checker
(staging/src/k8s.io/apiserver/pkg/audit/policy/checker.go): the first rule matching a
request gives its level and the stages to omit (the policy's omitStages added); no rule
matching is level None. Secrets and tokens are never recorded above Metadata whatever
the policy says (their bodies hold credentials)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.registry.store import User

NONE, METADATA, REQUEST, REQUEST_RESPONSE = "None", "Metadata", "Request", "RequestResponse"
LEVELS = (NONE, METADATA, REQUEST, REQUEST_RESPONSE)
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
GROUP_VERSIONS = ("audit.k8s.io/v1",)
# (group, resource, subresource) whose bodies carry credentials: Metadata at most
CREDENTIALS = frozenset({("", "secrets", ""), ("", "serviceaccounts", "token"),
                         ("authentication.k8s.io", "tokenreviews", "")})
_RULE_KEYS = frozenset({"level", "users", "userGroups", "verbs", "resources", "namespaces",
                        "nonResourceURLs", "omitStages", "omitManagedFields"})
_GR_KEYS = frozenset({"group", "resources", "resourceNames"})


class PolicyError(ValueError):
    """A policy file that cannot be used; the message names the field."""


@dataclass(frozen=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyRule:
    level: str
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: tuple[str, ...] = ()


@dataclass(frozen=True)
class Policy:
    rules: tuple[PolicyRule, ...] = ()
    omit_stages: tuple[str, ...] = ()

    def level_and_stages(self, user: User | None, info: RequestInfo
                         ) -> tuple[str, frozenset[str]]:
        """LevelAndStages: the level of the first matching rule and the stages it and the
        policy omit; (None, the policy's) when no rule matches."""
        for rule in self.rules:
            if rule_matches(rule, user, info):
                level = rule.level
                if level in (REQUEST, REQUEST_RESPONSE) and info.is_resource_request and (
                        (info.group, info.resource, info.subresource) in CREDENTIALS):
                    level = METADATA
                return level, frozenset((*self.omit_stages, *rule.omit_stages))
        return NONE, frozenset(self.omit_stages)


def rule_matches(r: PolicyRule, user: User | None, info: RequestInfo) -> bool:
    """ruleMatches."""
    if r.users and (user is None or user.name not in r.users):
        return False
    if r.user_groups and (user is None or not any(g in r.user_groups for g in user.groups)):
        return False
    if r.verbs and info.verb not in r.verbs:
        return False
    if r.namespaces or r.resources:
        return _matches_resource(r, info)
    if r.non_resource_urls:
        return not info.is_resource_request and any(
            _path_matches(info.path, spec) for spec in r.non_resource_urls)
    return True


def _path_matches(path: str, spec: str) -> bool:
    return spec in ("*", path) or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


def _matches_resource(r: PolicyRule, info: RequestInfo) -> bool:
    """ruleMatchesResource: non-namespaced resources are the namespace ""."""
    if not info.is_resource_request:
        return False
    if r.namespaces and info.namespace not in r.namespaces:
        return False
    if not r.resources:
        return True
    resource, sub = info.resource, info.subresource
    combined = f"{resource}/{sub}" if sub else resource
    for gr in r.resources:
        if gr.group != info.group:
            continue
        if not gr.resources:
            return True
        if gr.resource_names and info.name not in gr.resource_names:
            continue
        for res in gr.resources:
            if res in (combined, "*"):
                return True
            if sub and res.startswith("*/") and sub == res[2:]:
                return True
            if res.endswith("/*") and resource == res[:-2]:
                return True
    return False


# -- the file --------------------------------------------------------------------------
def load_policy(path: Path) -> Policy:
    """LoadPolicyFromFile: YAML or JSON, audit.k8s.io/v1 Policy, strictly decoded."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise PolicyError(f"failed to read file path {path!r}: {exc}") from None
    return decode_policy(data, str(path))


def decode_policy(data: Any, where: str = "policy") -> Policy:
    if not isinstance(data, dict):
        raise PolicyError(f"{where}: expected a Policy object")
    if data.get("apiVersion") not in GROUP_VERSIONS or data.get("kind") != "Policy":
        raise PolicyError(f"{where}: expected apiVersion audit.k8s.io/v1 and kind Policy, got "
                          f"{data.get('apiVersion')!r} {data.get('kind')!r}")
    unknown = set(data) - {"apiVersion", "kind", "metadata", "rules", "omitStages",
                           "omitManagedFields"}
    if unknown:
        raise PolicyError(f'{where}: unknown field "{sorted(unknown)[0]}"')
    rules = data.get("rules") or []
    if not isinstance(rules, list):
        raise PolicyError(f"{where}: rules: expected a list")
    if not rules:  # upstream refuses a policy with no rules
        raise PolicyError(f"loaded illegal policy with 0 rules from file {where}")
    omit = _stages(data.get("omitStages"), "omitStages")
    return Policy(tuple(_rule(r, f"rules[{i}]") for i, r in enumerate(rules)), omit)


def _strings(v: Any, what: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise PolicyError(f"{what}: expected a list of strings")
    return tuple(v)


def _stages(v: Any, what: str) -> tuple[str, ...]:
    stages = _strings(v, what)
    for i, s in enumerate(stages):
        if s not in STAGES:
            raise PolicyError(f'{what}[{i}]: Unsupported value: "{s}": supported values: '
                              + ", ".join(f'"{x}"' for x in STAGES))
    return stages


def _rule(r: Any, where: str) -> PolicyRule:
    if not isinstance(r, dict):
        raise PolicyError(f"{where}: expected an object")
    unknown = set(r) - _RULE_KEYS
    if unknown:
        raise PolicyError(f'{where}: unknown field "{sorted(unknown)[0]}"')
    level = r.get("level")
    if level not in LEVELS:
        raise PolicyError(f'{where}.level: Unsupported value: "{level}": supported values: '
                          + ", ".join(f'"{x}"' for x in LEVELS))
    urls = _strings(r.get("nonResourceURLs"), f"{where}.nonResourceURLs")
    resources = []
    for i, gr in enumerate(r.get("resources") or []):
        if not isinstance(gr, dict) or set(gr) - _GR_KEYS:
            raise PolicyError(f"{where}.resources[{i}]: expected group, resources, "
                              "resourceNames")
        resources.append(GroupResources(
            str(gr.get("group") or ""), _strings(gr.get("resources"),
                                                  f"{where}.resources[{i}].resources"),
            _strings(gr.get("resourceNames"), f"{where}.resources[{i}].resourceNames")))
    namespaces = _strings(r.get("namespaces"), f"{where}.namespaces")
    if urls and (resources or namespaces):  # validateNonResourceURLs
        raise PolicyError(f"{where}.nonResourceURLs: Invalid value: rules cannot apply to "
                          "both regular resources and non-resource URLs")
    return PolicyRule(level, _strings(r.get("users"), f"{where}.users"),
                      _strings(r.get("userGroups"), f"{where}.userGroups"),
                      _strings(r.get("verbs"), f"{where}.verbs"), tuple(resources), namespaces,
                      urls, _stages(r.get("omitStages"), f"{where}.omitStages"))

