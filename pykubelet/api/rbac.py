"""rbac.authorization.k8s.io/v1: Roles, ClusterRoles, RoleBindings, ClusterRoleBindings, the
objects the RBAC authorizer reads to answer "may this user do this".

Defaults as pkg/apis/rbac/v1/defaults.go (a binding's ``roleRef.apiGroup`` and a User or
Group subject's ``apiGroup`` are the RBAC group when left out), rules as
pkg/apis/rbac/validation: names are path segments only (minimalNameRequirements), a rule has
verbs and either resources (with apiGroups) or non-resource URLs (cluster roles only), a
RoleBinding refers to a Role or ClusterRole and a ClusterRoleBinding to a ClusterRole, the
roleRef never changes, subjects are a User, Group or ServiceAccount.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykubelet.api.errors import FieldError
from pykubelet.api.machinery.field import (
    child,
    go_quote,
    index,
    invalid,
    not_supported,
    required,
)
from pykubelet.api.machinery.validation import is_dns1123_subdomain
from pykubelet.api.meta_validation import validate_object_meta, validate_object_meta_update
from pykubelet.api.types import KEEP, LabelSelector, Model, ObjectMeta

GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"
USER_KIND = "User"
GROUP_KIND = "Group"
SERVICE_ACCOUNT_KIND = "ServiceAccount"
SUBJECT_KINDS = (SERVICE_ACCOUNT_KIND, USER_KIND, GROUP_KIND)
_V1 = "io.k8s.api.rbac.v1."


@dataclass(kw_only=True)
class PolicyRule(Model):
    __k8s__ = _V1 + "PolicyRule"

    verbs: list[str] = field(default_factory=list, metadata=KEEP)
    api_groups: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    resource_names: list[str] = field(default_factory=list)
    non_resource_urls: list[str] = field(default_factory=list,
                                         metadata={"json": "nonResourceURLs"})


@dataclass(kw_only=True)
class AggregationRule(Model):
    __k8s__ = _V1 + "AggregationRule"

    cluster_role_selectors: list[LabelSelector] = field(default_factory=list)


@dataclass(kw_only=True)
class Role(Model):
    __k8s__ = _V1 + "Role"

    api_version: str = field(default=API_VERSION, metadata=KEEP)
    kind: str = field(default="Role", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    rules: list[PolicyRule] = field(default_factory=list, metadata=KEEP)


@dataclass(kw_only=True)
class ClusterRole(Model):
    __k8s__ = _V1 + "ClusterRole"

    api_version: str = field(default=API_VERSION, metadata=KEEP)
    kind: str = field(default="ClusterRole", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    rules: list[PolicyRule] = field(default_factory=list, metadata=KEEP)
    aggregation_rule: AggregationRule | None = None


@dataclass(kw_only=True)
class RoleRef(Model):
    __k8s__ = _V1 + "RoleRef"

    api_group: str = field(default="", metadata=KEEP)
    kind: str = field(default="", metadata=KEEP)
    name: str = field(default="", metadata=KEEP)


@dataclass(kw_only=True)
class Subject(Model):
    __k8s__ = _V1 + "Subject"

    kind: str = field(default="", metadata=KEEP)
    api_group: str = ""
    name: str = field(default="", metadata=KEEP)
    namespace: str = ""


@dataclass(kw_only=True)
class RoleBinding(Model):
    __k8s__ = _V1 + "RoleBinding"

    api_version: str = field(default=API_VERSION, metadata=KEEP)
    kind: str = field(default="RoleBinding", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    subjects: list[Subject] = field(default_factory=list)
    role_ref: RoleRef = field(default_factory=RoleRef, metadata=KEEP)


@dataclass(kw_only=True)
class ClusterRoleBinding(Model):
    __k8s__ = _V1 + "ClusterRoleBinding"

    api_version: str = field(default=API_VERSION, metadata=KEEP)
    kind: str = field(default="ClusterRoleBinding", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta, metadata=KEEP)
    subjects: list[Subject] = field(default_factory=list)
    role_ref: RoleRef = field(default_factory=RoleRef, metadata=KEEP)


# --------------------------------------------------------------------------- defaults


def _default_subjects(subjects: list[Subject]) -> None:
    """SetDefaults_Subject: a User or Group is of the RBAC group, a ServiceAccount of none."""
    for s in subjects:
        if not s.api_group and s.kind in (USER_KIND, GROUP_KIND):
            s.api_group = GROUP


def set_defaults_role(role: Role) -> Role:
    if role.metadata.namespace == "":
        role.metadata.namespace = "default"
    return role


def set_defaults_role_binding(rb: RoleBinding) -> RoleBinding:
    """SetDefaults_RoleBinding and SetDefaults_Subject."""
    if rb.metadata.namespace == "":
        rb.metadata.namespace = "default"
    if not rb.role_ref.api_group:
        rb.role_ref.api_group = GROUP
    _default_subjects(rb.subjects)
    return rb


def set_defaults_cluster_role_binding(crb: ClusterRoleBinding) -> ClusterRoleBinding:
    """SetDefaults_ClusterRoleBinding and SetDefaults_Subject."""
    if not crb.role_ref.api_group:
        crb.role_ref.api_group = GROUP
    _default_subjects(crb.subjects)
    return crb


# --------------------------------------------------------------------------- validation


def minimal_name_requirements(name: str, prefix: bool = False) -> list[str]:
    """path.IsValidPathSegmentName: role and binding names only have to fit in a URL."""
    errs = []
    if name in (".", ".."):
        errs.append(f"may not be '{name}'")
    for bad in ("/", "%"):
        if bad in name:
            errs.append(f"may not contain '{bad}'")
    return errs


def _policy_rule_errors(rule: PolicyRule, namespaced: bool, path: str) -> list[FieldError]:
    """validatePolicyRule."""
    errs: list[FieldError] = []
    if not rule.verbs:
        errs.append(required(child(path, "verbs"), "verbs must contain at least one value"))
    if rule.non_resource_urls:
        urls = child(path, "nonResourceURLs")
        if namespaced:
            errs.append(invalid(urls, rule.non_resource_urls,
                                "namespaced rules cannot apply to non-resource URLs"))
        if rule.api_groups or rule.resources or rule.resource_names:
            errs.append(invalid(urls, rule.non_resource_urls,
                                "rules cannot apply to both regular resources and "
                                "non-resource URLs"))
        return errs
    if not rule.api_groups:
        errs.append(required(child(path, "apiGroups"),
                             "resource rules must supply at least one api group"))
    if not rule.resources:
        errs.append(required(child(path, "resources"),
                             "resource rules must supply at least one resource"))
    if rule.resource_names and len(rule.resources) > 1:
        errs.append(required(child(path, "resourceNames"),
                             "resource names cannot apply to multiple resources"))
    return errs


def _rules_errors(rules: list[PolicyRule], namespaced: bool) -> list[FieldError]:
    return [e for i, rule in enumerate(rules)
            for e in _policy_rule_errors(rule, namespaced, index("rules", i))]


def role_errors(role: Role) -> list[FieldError]:
    """ValidateRole."""
    return (validate_object_meta(role.metadata, namespaced=True,
                                 name_fn=minimal_name_requirements)
            + _rules_errors(role.rules, True))


def role_update_errors(new: Role, old: Role) -> list[FieldError]:
    return role_errors(new) + validate_object_meta_update(new.metadata, old.metadata)


def cluster_role_errors(role: ClusterRole) -> list[FieldError]:
    """ValidateClusterRole."""
    return (validate_object_meta(role.metadata, namespaced=False,
                                 name_fn=minimal_name_requirements)
            + _rules_errors(role.rules, False))


def cluster_role_update_errors(new: ClusterRole, old: ClusterRole) -> list[FieldError]:
    return cluster_role_errors(new) + validate_object_meta_update(new.metadata, old.metadata)


def _subject_errors(subject: Subject, namespaced: bool, path: str) -> list[FieldError]:
    """validateRoleBindingSubject."""
    errs: list[FieldError] = []
    name = child(path, "name")
    if not subject.name:
        errs.append(required(name))
    if subject.kind == SERVICE_ACCOUNT_KIND:
        if subject.name:
            errs += [invalid(name, subject.name, m) for m in is_dns1123_subdomain(subject.name)]
        if subject.api_group:
            errs.append(not_supported(child(path, "apiGroup"), subject.api_group, [""]))
        if not namespaced and not subject.namespace:
            errs.append(required(child(path, "namespace")))
    elif subject.kind in (USER_KIND, GROUP_KIND):
        if not subject.name:
            errs.append(invalid(name, subject.name,
                                f"{subject.kind.lower()} name cannot be empty"))
        if subject.api_group != GROUP:
            errs.append(not_supported(child(path, "apiGroup"), subject.api_group, [GROUP]))
    else:
        errs.append(not_supported(child(path, "kind"), subject.kind, SUBJECT_KINDS))
    return errs


def _binding_errors(meta: ObjectMeta, ref: RoleRef, subjects: list[Subject],
                    namespaced: bool) -> list[FieldError]:
    """ValidateRoleBinding / ValidateClusterRoleBinding."""
    errs = validate_object_meta(meta, namespaced=namespaced, name_fn=minimal_name_requirements)
    if ref.api_group != GROUP:
        errs.append(not_supported("roleRef.apiGroup", ref.api_group, [GROUP]))
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if ref.kind not in kinds:
        errs.append(not_supported("roleRef.kind", ref.kind, kinds))
    if not ref.name:
        errs.append(required("roleRef.name"))
    else:
        errs += [invalid("roleRef.name", ref.name, m)
                 for m in minimal_name_requirements(ref.name)]
    for i, subject in enumerate(subjects):
        errs += _subject_errors(subject, namespaced, index("subjects", i))
    return errs


def _role_ref_update_errors(new: RoleRef, old: RoleRef) -> list[FieldError]:
    if new == old:
        return []
    return [invalid("roleRef", _GoRoleRef(new), "cannot change roleRef")]


class _GoRoleRef:
    """The roleRef as ErrorBody prints a struct (``%#v``)."""

    def __init__(self, ref: RoleRef) -> None:
        self.ref = ref

    def __str__(self) -> str:
        r = self.ref
        return (f"rbac.RoleRef{{APIGroup:{go_quote(r.api_group)}, Kind:{go_quote(r.kind)}, "
                f"Name:{go_quote(r.name)}}}")


def role_binding_errors(rb: RoleBinding) -> list[FieldError]:
    return _binding_errors(rb.metadata, rb.role_ref, rb.subjects, True)


def role_binding_update_errors(new: RoleBinding, old: RoleBinding) -> list[FieldError]:
    """ValidateRoleBindingUpdate: the roleRef never changes (delete and recreate)."""
    return (role_binding_errors(new) + validate_object_meta_update(new.metadata, old.metadata)
            + _role_ref_update_errors(new.role_ref, old.role_ref))


def cluster_role_binding_errors(crb: ClusterRoleBinding) -> list[FieldError]:
    return _binding_errors(crb.metadata, crb.role_ref, crb.subjects, False)


def cluster_role_binding_update_errors(new: ClusterRoleBinding, old: ClusterRoleBinding
                                       ) -> list[FieldError]:
    return (cluster_role_binding_errors(new)
            + validate_object_meta_update(new.metadata, old.metadata)
            + _role_ref_update_errors(new.role_ref, old.role_ref))
