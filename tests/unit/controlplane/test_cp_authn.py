"""Authentication as kube-apiserver's filters do it: the bearer scheme in any case, an
invalid token refused even on public paths, the OpenAPI documents for authenticated
callers only, client certificates the cluster CA signed, and impersonation (``kubectl
--as``) honoured for the admin alone."""

from __future__ import annotations

from typing import Any

import pytest


def test_an_admin_acts_as_the_user_it_impersonates(cluster: Any) -> None:
    admin = cluster.admin
    as_node = {"Impersonate-User": "system:node:imp1", "Impersonate-Group": "system:nodes"}
    code, body = admin("GET", "/api/v1/namespaces/default/secrets", headers=as_node)
    assert code == 403, body
    assert body["message"].startswith('secrets is forbidden: User "system:node:imp1" cannot '
                                      'list resource "secrets"')
    # NodeRestriction applies to the impersonated node too
    code, body = admin("POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "imp-other"}},
        headers=as_node)
    assert code == 403, body
    assert body["message"] == ('nodes "imp-other" is forbidden: node "imp1" is not allowed '
                               'to modify node "imp-other"')
    code, body = admin("GET", "/api/v1/pods", headers={"Impersonate-User": "jane"})
    assert code == 403, body
    assert 'User "jane" cannot list resource "pods"' in body["message"]
    code, body = admin("GET", "/api/v1/pods", headers={"Impersonate-User": "jane",
                                                       "Impersonate-Group": "system:masters"})
    assert code == 200, body
    code, body = admin("GET", "/api/v1/pods", headers={"Impersonate-Group": "system:masters"})
    assert code == 500, body
    assert "without impersonating a user" in body["message"]


@pytest.mark.parametrize(("headers", "what"), [
    ({"Impersonate-User": "system:admin"}, 'users "system:admin"'),
    ({"Impersonate-User": "x", "Impersonate-Group": "system:masters"}, 'users "x"'),
    ({"Impersonate-User": "x", "Impersonate-Uid": "1"}, 'users "x"'),
])
def test_nobody_else_may_impersonate(cluster: Any, headers: dict[str, str], what: str) -> None:
    node = cluster.node("imp2")
    code, body = node("GET", "/api/v1/namespaces/default/secrets", headers=headers)
    assert code == 403, body
    assert body["message"] == (f'{what} is forbidden: User "system:node:imp2" cannot '
                               'impersonate resource "users" in API group "" at the cluster '
                               "scope")


def test_an_invalid_token_is_refused_on_public_paths_too(cluster: Any) -> None:
    bad = cluster.raw("not-a-token")
    for path in ("/version", "/healthz", "/readyz", "/livez"):
        code, body = bad("GET", path)
        assert code == 401, (path, body)
        assert cluster.raw("")("GET", path)[0] == 200  # no token: public
    assert cluster.admin("GET", "/version")[0] == 200


def test_the_bearer_scheme_is_case_insensitive(cluster: Any) -> None:
    token = cluster.tokens.admin
    for scheme in ("bearer", "BEARER", "Bearer"):
        code, body = cluster.admin("GET", "/api/v1/namespaces",
                                   headers={"Authorization": f"{scheme} {token}"})
        assert code == 200, (scheme, body)


def test_openapi_documents_need_authentication(cluster: Any) -> None:
    anonymous = cluster.raw("")
    for path in ("/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1"):
        code, body = anonymous("GET", path)
        assert code == 401, (path, body)
        assert cluster.admin("GET", path)[0] == 200


def test_a_client_certificate_is_its_cn_in_its_o_groups(cluster: Any) -> None:
    carol = cluster.cert_user("cert-carol", "devs")
    code, body = carol("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                       {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert code == 201, body
    assert body["status"]["userInfo"] == {"username": "cert-carol",
                                          "groups": ["devs", "system:authenticated"]}
    code, body = carol("GET", "/api/v1/namespaces/default/pods")
    assert code == 403, body
    assert body["message"] == ('pods is forbidden: User "cert-carol" cannot list resource '
                               '"pods" in API group "" in the namespace "default"')
    admin = cluster.cert_user("cert-admin", "system:masters")
    assert admin("GET", "/api/v1/namespaces/default/pods")[0] == 200

