"""The access reviews through the API (pkg/registry/authorization, authentication): a
SelfSubjectAccessReview answers for the caller (the admin, or whom it impersonates), a
SubjectAccessReview for a named user, a bad spec is 422 with upstream's words, the reviews
are create-only, SelfSubjectReview says who the caller is."""

from __future__ import annotations

from typing import Any

AUTHZ = "/apis/authorization.k8s.io/v1"
AS_CAROL = {"Impersonate-User": "carol"}


def ssar(verb: str, resource: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "resource": resource,
                                            "namespace": namespace}}}


def test_self_subject_access_review(api: Any) -> None:
    r = api.call("POST", f"{AUTHZ}/selfsubjectaccessreviews", ssar("delete", "nodes", ""))
    assert r.status == 201, r.body
    assert r.json()["status"] == {"allowed": True}
    r = api.call("POST", f"{AUTHZ}/selfsubjectaccessreviews", ssar("list", "pods"),
                 headers=AS_CAROL)
    assert (r.status, r.json()["status"]) == (201, {"allowed": False})
    # everyone may ask about the discovery paths (system:discovery)
    body = {"spec": {"nonResourceAttributes": {"path": "/apis", "verb": "get"}}}
    r = api.call("POST", f"{AUTHZ}/selfsubjectaccessreviews", body, headers=AS_CAROL)
    assert r.json()["status"] == {"allowed": True}


def test_bad_reviews(api: Any) -> None:
    r = api.call("POST", f"{AUTHZ}/selfsubjectaccessreviews", {"spec": {}})
    assert r.status == 422, r.body
    assert r.json()["details"]["causes"][0]["message"] == (
        "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes "
        "must be specified")
    r = api.call("POST", f"{AUTHZ}/subjectaccessreviews",
                 {"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert r.status == 422, r.body
    assert r.json()["details"]["causes"][0]["field"] == "spec.user"
    assert api.call("GET", f"{AUTHZ}/selfsubjectaccessreviews").status == 405
    # a SubjectAccessReview is for those who may create one: not carol
    r = api.call("POST", f"{AUTHZ}/subjectaccessreviews",
                 {"spec": {"user": "x", "nonResourceAttributes": {"path": "/", "verb": "get"}}},
                 headers=AS_CAROL)
    assert r.status == 403, r.body


def test_subject_access_review_and_whoami(api: Any) -> None:
    r = api.call("POST", f"{AUTHZ}/subjectaccessreviews", {"spec": {
        "user": "dave", "groups": ["system:masters"],
        "resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": "x"}}})
    assert (r.status, r.json()["status"]) == (201, {"allowed": True})
    r = api.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                 {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                 headers=AS_CAROL)
    assert r.status == 201, r.body
    assert r.json()["status"]["userInfo"] == {"username": "carol",
                                              "groups": ["system:authenticated"]}
