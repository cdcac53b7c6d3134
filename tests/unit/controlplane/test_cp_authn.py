"""Authentication as kube-apiserver's filters do it: the bearer scheme in any case, an
invalid token refused even on public paths, the OpenAPI documents for authenticated
callers only, client certificates the cluster CA signed, and impersonation (``kubectl
--as``) as the authorizers allow the ``impersonate`` verb."""

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


def _grant(cluster: Any, name: str, user: str, rules: list[dict[str, Any]]) -> None:
    base = "/apis/rbac.authorization.k8s.io/v1"
    code, body = cluster.admin("POST", f"{base}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name}, "rules": rules})
    assert code == 201, body
    code, body = cluster.admin("POST", f"{base}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": user}]})
    assert code == 201, body


def _revoke(cluster: Any, name: str) -> None:
    base = "/apis/rbac.authorization.k8s.io/v1"
    cluster.admin("DELETE", f"{base}/clusterrolebindings/{name}")
    cluster.admin("DELETE", f"{base}/clusterroles/{name}")


def test_impersonation_is_what_rbac_grants(cluster: Any) -> None:
    """The impersonate verb on users, groups, serviceaccounts, userextras and uids, each
    checked by the authorizers (upstream's WithImpersonation), in upstream's words."""
    alice = cluster.cert_user("imp-alice")
    pods = "/api/v1/namespaces/default/pods"

    def forbidden(headers: dict[str, str]) -> str:
        code, body = alice("GET", pods, headers=headers)
        assert code == 403, body
        return str(body["message"])

    assert forbidden({"Impersonate-User": "bob"}) == (
        'users "bob" is forbidden: User "imp-alice" cannot impersonate resource "users" in '
        'API group "" at the cluster scope')
    try:
        _grant(cluster, "imp-alice-imp", "imp-alice", [
            {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
             "resourceNames": ["bob"]},
            {"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"],
             "resourceNames": ["imp-readers"]}])
        # bob himself may not list pods: the request is judged as bob
        assert forbidden({"Impersonate-User": "bob"}) == (
            'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in '
            'the namespace "default"')
        assert forbidden({"Impersonate-User": "carl"}).startswith(
            'users "carl" is forbidden: User "imp-alice" cannot impersonate')
        assert forbidden({"Impersonate-User": "bob", "Impersonate-Group": "system:masters"}
                         ) == ('groups "system:masters" is forbidden: User "imp-alice" cannot '
                               'impersonate resource "groups" in API group "" at the cluster '
                               "scope")
        assert forbidden({"Impersonate-User": "system:serviceaccount:default:ci"}) == (
            'serviceaccounts "ci" is forbidden: User "imp-alice" cannot impersonate resource '
            '"serviceaccounts" in API group "" in the namespace "default"')
        assert forbidden({"Impersonate-User": "bob", "Impersonate-Extra-Scopes": "view"}) == (
            'userextras.authentication.k8s.io "view" is forbidden: User "imp-alice" cannot '
            'impersonate resource "userextras/scopes" in API group "authentication.k8s.io" '
            "at the cluster scope")
        assert forbidden({"Impersonate-User": "bob", "Impersonate-Uid": "u-1"}) == (
            'uids.authentication.k8s.io "u-1" is forbidden: User "imp-alice" cannot '
            'impersonate resource "uids" in API group "authentication.k8s.io" at the cluster '
            "scope")
        code, body = alice("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                           {"apiVersion": "authentication.k8s.io/v1",
                            "kind": "SelfSubjectReview"},
                           headers={"Impersonate-User": "bob",
                                    "Impersonate-Group": "imp-readers"})
        assert code == 201, body
        assert body["status"]["userInfo"] == {
            "username": "bob", "groups": ["imp-readers", "system:authenticated"]}
    finally:
        _revoke(cluster, "imp-alice-imp")
