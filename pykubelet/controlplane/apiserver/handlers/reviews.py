"""Access reviews (pkg/registry/authorization, pkg/registry/authentication): create-only
resources that store nothing and answer a question about the caller or a named user.

- authorization.k8s.io/v1 SelfSubjectAccessReview: may I do this (``kubectl auth can-i``);
  SubjectAccessReview: may this user do this; SelfSubjectRulesReview: what may I do in a
  namespace (``kubectl auth can-i --list``), incomplete for a node (the node authorizer
  cannot list its rules);
- authentication.k8s.io/v1 SelfSubjectReview: who am I (``kubectl auth whoami``).

Each is decided by the same authorizers as requests (system:masters, the node rules,
RBAC) and answered 201 with the spec and its status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.apiserver.responses import json_response
from pykubelet.controlplane.registry.rbacrules import RuleResolver
from pykubelet.controlplane.registry.store import User

Obj = dict[str, Any]
Decide = Callable[[User, RequestInfo], tuple[bool, str]]
AUTHZ = "authorization.k8s.io"
AUTHN = "authentication.k8s.io"
# (group, resource) -> kind of the create-only review resources
REVIEWS = {
    (AUTHZ, "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
    (AUTHZ, "subjectaccessreviews"): "SubjectAccessReview",
    (AUTHZ, "selfsubjectrulesreviews"): "SelfSubjectRulesReview",
    (AUTHN, "selfsubjectreviews"): "SelfSubjectReview",
}


def _invalid(kind: str, group: str, field: str, value: Any, detail: str) -> errors.StatusError:
    shown = "null" if value is None else f'"{value}"' if isinstance(value, str) else value
    message = f"{field}: Invalid value: {shown}: {detail}"
    return errors.StatusError(
        422, errors.INVALID, f"{kind}.{group} \"\" is invalid: {message}",
        {"group": group, "kind": kind, "causes": [
            {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {detail}",
             "field": field}]})


def attributes(spec: Obj, kind: str) -> RequestInfo:
    """The request a review asks about (authorizationutil.ResourceAttributesFrom and
    NonResourceAttributesFrom); exactly one of the two must be given."""
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (res is None) == (non is None):
        raise _invalid(kind, AUTHZ, "spec.resourceAttributes", None,
                       "exactly one of nonResourceAttributes or resourceAttributes must be "
                       "specified")
    if isinstance(non, dict):
        return RequestInfo(False, str(non.get("path", "")), verb=str(non.get("verb", "")))
    if not isinstance(res, dict):
        raise errors.bad_request("spec.resourceAttributes: expected an object")
    return RequestInfo(True, "", verb=str(res.get("verb", "")), group=str(res.get("group", "")),
                       version=str(res.get("version", "")),
                       namespace=str(res.get("namespace", "")),
                       resource=str(res.get("resource", "")),
                       subresource=str(res.get("subresource", "")),
                       name=str(res.get("name", "")))


def _answer(body: Obj, kind: str, group: str, status: Obj) -> web.Response:
    out = {"kind": kind, "apiVersion": f"{group}/v1",
           "metadata": {**(body.get("metadata") or {}), "creationTimestamp": None}}
    if "spec" in body or kind != "SelfSubjectReview":
        out["spec"] = body.get("spec") or {}
    out["status"] = status
    return json_response(out, status=201)


def _access_status(allowed: bool, reason: str) -> Obj:
    status: Obj = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


def self_subject_access_review(user: User, body: Obj, decide: Decide) -> web.Response:
    kind = "SelfSubjectAccessReview"
    info = attributes(body.get("spec") or {}, kind)
    return _answer(body, kind, AUTHZ, _access_status(*decide(user, info)))


def subject_access_review(body: Obj, decide: Decide) -> web.Response:
    """The named user (with its groups) asked about; one of user or groups is needed."""
    kind = "SubjectAccessReview"
    spec = body.get("spec") or {}
    info = attributes(spec, kind)
    name, groups = str(spec.get("user") or ""), [str(g) for g in spec.get("groups") or []]
    if not name and not groups:
        raise _invalid(kind, AUTHZ, "spec.user", "",
                       "at least one of user or group must be specified")
    return _answer(body, kind, AUTHZ, _access_status(*decide(User(name, tuple(groups)), info)))


def self_subject_rules_review(user: User, body: Obj, resolver: RuleResolver) -> web.Response:
    """RulesFor over the union: everything for system:masters, nothing and incomplete for
    a node, else the RBAC rules of the namespace."""
    kind = "SelfSubjectRulesReview"
    namespace = str((body.get("spec") or {}).get("namespace") or "")
    if not namespace:
        raise errors.bad_request("no namespace on request")
    resource_rules: list[Obj] = []
    non_resource_rules: list[Obj] = []
    incomplete = False
    error = ""
    if user.is_admin:
        resource_rules.append({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
        non_resource_rules.append({"verbs": ["*"], "nonResourceURLs": ["*"]})
    if user.node is not None:
        incomplete = True
        error = "node authorizer does not support user rule resolution"
    rules, errs = resolver.rules_for(user, namespace)
    for r in rules:
        if r.urls:
            non_resource_rules.append({"verbs": sorted(r.verbs), "nonResourceURLs":
                                       list(r.urls)})
        else:
            entry: Obj = {"verbs": sorted(r.verbs), "apiGroups": sorted(r.api_groups),
                          "resources": sorted(r.resources)}
            if r.resource_names:
                entry["resourceNames"] = sorted(r.resource_names)
            resource_rules.append(entry)
    if errs:
        incomplete = True
        error = "; ".join([e for e in (error, *errs) if e])
    status: Obj = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                   "incomplete": incomplete}
    if error:
        status["evaluationError"] = error
    return _answer(body, kind, AUTHZ, status)


def self_subject_review(user: User, body: Obj) -> web.Response:
    """Who the request's user is (after impersonation), as the authenticator found them."""
    info: Obj = {"username": user.name}
    if user.groups:
        info["groups"] = list(user.groups)
    return _answer(body, "SelfSubjectReview", AUTHN, {"userInfo": info})
