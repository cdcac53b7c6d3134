"""ServiceAccounts and TokenRequest through the API of an in-process control plane: the
resource is served (discovery with short name sa and the token subresource, a Table of
NAME SECRETS AGE, upstream's validation), ``POST serviceaccounts/NAME/token`` issues a
JWT (defaults, the 10-minute minimum, binding to a pod), and the token authenticates as
the service account, judged by RBAC; deleting the account or the bound pod ends it."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Cluster

ISS = "https://kubernetes.default.svc.cluster.local"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def sa(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}


def payload(token: str) -> dict[str, Any]:
    p = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))


@pytest.fixture(scope="module")
def ns(cluster: Cluster) -> Iterator[str]:
    names = [cluster.namespace("team-a"), cluster.namespace("team-b")]
    try:
        yield names[0]
    finally:
        for n in names:
            cluster.admin("DELETE", f"/api/v1/namespaces/{n}")


def make_sa(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", sa(name))
    assert code == 201, body
    return body


def request_token(cluster: Cluster, ns: str, name: str, **spec: Any) -> tuple[int, Any]:
    return cluster.admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                          "spec": spec})


def test_discovery_names_serviceaccounts_and_their_token(cluster: Cluster) -> None:
    code, body = cluster.admin("GET", "/api/v1")
    assert code == 200
    found = {r["name"]: r for r in body["resources"]}
    assert found["serviceaccounts"]["shortNames"] == ["sa"]
    assert found["serviceaccounts"]["kind"] == "ServiceAccount"
    token = found["serviceaccounts/token"]
    assert (token["group"], token["version"], token["kind"], token["verbs"]) == (
        "authentication.k8s.io", "v1", "TokenRequest", ["create"])


def test_table_and_validation(cluster: Cluster, ns: str) -> None:
    make_sa(cluster, ns, "table-sa")
    code, table = cluster.admin("GET", f"/api/v1/namespaces/{ns}/serviceaccounts",
                                headers=TABLE)
    assert code == 200, table
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Secrets", "Age"]
    rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
    assert rows["table-sa"][1] == 0
    code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                               sa("Bad_Name"))
    assert code == 422, body
    assert body["message"].startswith('ServiceAccount "Bad_Name" is invalid: metadata.name')


def test_token_request_issues_upstreams_jwt(cluster: Cluster, ns: str) -> None:
    account = make_sa(cluster, ns, "issued")
    code, tr = request_token(cluster, ns, "issued")
    assert code == 201, tr
    assert (tr["kind"], tr["apiVersion"]) == ("TokenRequest", "authentication.k8s.io/v1")
    assert tr["spec"]["expirationSeconds"] == 3600
    assert tr["spec"]["audiences"] == [ISS]
    claims = payload(tr["status"]["token"])
    assert claims["sub"] == f"system:serviceaccount:{ns}:issued"
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["kubernetes.io"]["serviceaccount"] == {
        "name": "issued", "uid": account["metadata"]["uid"]}
    assert tr["status"]["expirationTimestamp"].endswith("Z")


def test_token_request_refusals(cluster: Cluster, ns: str) -> None:
    make_sa(cluster, ns, "refusals")
    code, body = request_token(cluster, ns, "refusals", expirationSeconds=60)
    assert code == 422, body
    assert body["message"] == ('TokenRequest.authentication.k8s.io "refusals" is invalid: '
                               "spec.expirationSeconds: Invalid value: 60: may not specify a "
                               "duration less than 10 minutes")
    code, body = request_token(cluster, ns, "nobody")
    assert code == 404, body
    assert body["message"] == 'serviceaccounts "nobody" not found'
    code, body = request_token(cluster, ns, "refusals",
                               boundObjectRef={"kind": "ConfigMap", "apiVersion": "v1",
                                               "name": "x"})
    assert code == 400, body
    assert body["message"] == ('cannot bind token for serviceaccount "refusals" to object '
                               'of kind "v1, Kind=ConfigMap"')


def test_the_token_acts_as_the_service_account_under_rbac(cluster: Cluster, ns: str) -> None:
    make_sa(cluster, ns, "reader")
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns
    code, body = cluster.admin("POST", rbac + "/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]})
    assert code == 201, body
    code, body = cluster.admin("POST", rbac + "/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}]})
    assert code == 201, body
    code, tr = request_token(cluster, ns, "reader", expirationSeconds=600)
    assert code == 201, tr
    as_reader = cluster.raw(tr["status"]["token"])
    code, body = as_reader("GET", f"/api/v1/namespaces/{ns}/pods")
    assert code == 200, body
    code, body = as_reader("GET", "/api/v1/namespaces/team-b/pods")
    assert code == 403, body
    assert body["message"] == (f'pods is forbidden: User "system:serviceaccount:{ns}:reader" '
                               'cannot list resource "pods" in API group "" in the namespace '
                               '"team-b"')
    code, body = cluster.admin("DELETE", f"/api/v1/namespaces/{ns}/serviceaccounts/reader")
    assert code == 200, body
    code, body = as_reader("GET", f"/api/v1/namespaces/{ns}/pods")
    assert code == 401, body
    assert (body["reason"], body["message"]) == ("Unauthorized", "Unauthorized")


def test_a_pod_bound_token_dies_with_the_pod(cluster: Cluster, ns: str) -> None:
    make_sa(cluster, ns, "runner")
    code, pod = cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound"},
        "spec": {"serviceAccountName": "runner",
                 "containers": [{"name": "c", "image": "busybox"}]}})
    assert code == 201, pod
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "bound"}
    code, tr = request_token(cluster, ns, "runner", boundObjectRef=ref)
    assert code == 201, tr
    claims = payload(tr["status"]["token"])
    assert claims["kubernetes.io"]["pod"] == {"name": "bound", "uid": pod["metadata"]["uid"]}
    code, body = request_token(cluster, ns, "runner",
                               boundObjectRef={**ref, "uid": "not-the-uid"})
    assert code == 409, body
    code, body = request_token(cluster, ns, "reader2",
                               boundObjectRef=ref)
    assert code == 404  # no such service account
    as_pod = cluster.raw(tr["status"]["token"])
    code, body = as_pod("GET", f"/api/v1/namespaces/{ns}/pods")
    assert code == 403, body  # authenticated; RBAC gives it nothing
    code, body = cluster.admin("DELETE", f"/api/v1/namespaces/{ns}/pods/bound",
                               {"gracePeriodSeconds": 0})
    assert code == 200, body
    code, body = as_pod("GET", f"/api/v1/namespaces/{ns}/pods")
    assert code == 401, body


def test_a_node_gets_tokens_only_for_its_own_pods(cluster: Cluster, ns: str) -> None:
    """The Node authorizer lets a node ask for the account of a pod bound to it, and
    NodeRestriction only for a token bound to that pod by UID."""
    node = cluster.node("sa-node")
    make_sa(cluster, ns, "on-node")
    make_sa(cluster, ns, "elsewhere")
    pods = {}
    for name, account, where in (("mine", "on-node", "sa-node"),
                                 ("theirs", "elsewhere", "other-node")):
        code, pods[name] = cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"serviceAccountName": account, "nodeName": where,
                     "containers": [{"name": "c", "image": "busybox"}]}})
        assert code == 201, pods[name]

    def ask(account: str, ref: dict[str, Any] | None) -> tuple[int, Any]:
        spec: dict[str, Any] = {"expirationSeconds": 3607}
        if ref is not None:
            spec["boundObjectRef"] = ref
        return node("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{account}/token",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                     "spec": spec})

    mine = {"apiVersion": "v1", "kind": "Pod", "name": "mine",
            "uid": pods["mine"]["metadata"]["uid"]}
    code, tr = ask("on-node", mine)
    assert code == 201, tr
    claims = payload(tr["status"]["token"])
    # the admission's 3607 s pod token: a year, with warnafter at 3607 s
    assert claims["kubernetes.io"]["warnafter"] - claims["iat"] == 3607
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600
    code, body = ask("on-node", None)
    assert code == 403, body
    assert body["message"] == ('serviceaccounts "on-node" is forbidden: node requested token '
                               "not bound to a pod")
    code, body = ask("on-node", {**mine, "uid": ""})
    assert code == 403, body
    assert body["message"].endswith("node requested token with a pod binding without a uid")
    code, body = ask("elsewhere", {"apiVersion": "v1", "kind": "Pod", "name": "theirs",
                                   "uid": pods["theirs"]["metadata"]["uid"]})
    assert code == 403, body
    assert body["message"].startswith('serviceaccounts "elsewhere" is forbidden: User '
                                      '"system:node:sa-node" cannot create resource '
                                      '"serviceaccounts/token"')
