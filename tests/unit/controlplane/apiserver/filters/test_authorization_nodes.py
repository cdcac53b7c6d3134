"""Node credentials are identities (``system:node:NAME`` in ``system:nodes``) judged by the
Node authorizer ported from upstream (the graph of pods bound to the node, its own lease
and Node, the static NodeRules) and RBAC, no longer by fixed scopes: what a node may read
and write, and the reasons it is refused, in upstream's words (issue 21)."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.controlplane.apiserver.filters.authorization import decide
from pykubelet.controlplane.apiserver.requestinfo import parse_request_info
from pykubelet.controlplane.registry import podrefs
from pykubelet.controlplane.registry.store import User

NODE = "na1"
OTHER = "na2"
USER = f'User "system:node:{NODE}"'


def pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}],
                     **spec}}


@pytest.fixture(scope="module")
def graph(cluster: Any) -> tuple[Any, str]:
    """Node na1's client and a namespace where a pod on na1 uses secret ``mine``,
    configmap ``mine-cm``, claim ``mine-claim`` and service account ``mine-sa``, and a pod
    on na2 uses ``theirs``, ``theirs-cm``, ``theirs-claim`` and ``theirs-sa``."""
    n = cluster.node(NODE)
    ns = cluster.namespace("na-graph")
    for who, node in (("mine", NODE), ("theirs", OTHER)):
        code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/secrets", {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": who},
            "stringData": {"k": "v"}})
        assert code == 201, body
        code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": f"{who}-sa"}})
        assert code == 201, body  # ServiceAccount admission refuses a pod naming none
        code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", pod(
            f"{who}-pod", node, serviceAccountName=f"{who}-sa",
            volumes=[{"name": "s", "secret": {"secretName": who}},
                     {"name": "c", "configMap": {"name": f"{who}-cm"}},
                     {"name": "p", "persistentVolumeClaim": {"claimName": f"{who}-claim"}}]))
        assert code == 201, body
    return n, ns


def forbidden(n: Any, method: str, path: str, body: Any = None) -> str:
    code, answer = n(method, path, body)
    assert code == 403, (path, answer)
    return str(answer["message"])


def test_secrets_only_of_its_own_pods(graph: tuple[Any, str]) -> None:
    n, ns = graph
    code, body = n("GET", f"/api/v1/namespaces/{ns}/secrets/mine")
    assert code == 200, body
    assert forbidden(n, "GET", f"/api/v1/namespaces/{ns}/secrets/theirs") == (
        f'secrets "theirs" is forbidden: {USER} cannot get resource "secrets" in API group "" '
        f"in the namespace \"{ns}\": no relationship found between node '{NODE}' and this "
        "object")
    assert forbidden(n, "GET", f"/api/v1/namespaces/{ns}/secrets").endswith(
        ": No Object name found")
    assert forbidden(n, "DELETE", f"/api/v1/namespaces/{ns}/secrets/mine").endswith(
        ": can only read resources of this type")
    assert forbidden(n, "GET", "/api/v1/secrets").endswith(
        ": can only read namespaced object of this type")
    assert forbidden(n, "GET", f"/api/v1/namespaces/{ns}/configmaps/theirs-cm").endswith(
        f"no relationship found between node '{NODE}' and this object")
    # a list pinned to one name is a read of that one
    code, body = n("GET", f"/api/v1/namespaces/{ns}/secrets?fieldSelector=metadata.name%3Dmine")
    assert code == 200, body


def test_claims_and_tokens_of_its_own_pods() -> None:
    """Persistent volume claims and service account tokens (the sa branch serves those;
    here the decision alone), by the pods' graph."""
    user = User(f"system:node:{NODE}", ("system:nodes", "system:authenticated"))
    pods = {"mine-pod": pod("mine-pod", NODE, serviceAccountName="mine-sa", volumes=[
        {"name": "p", "persistentVolumeClaim": {"claimName": "mine-claim"}},
        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])}

    def referenced(node: str, resource: str, namespace: str, name: str) -> bool:
        return any(p["spec"]["nodeName"] == node and name in podrefs.references(p, resource)
                   for p in pods.values())

    def decision(method: str, path: str) -> tuple[bool, str]:
        return decide(user, parse_request_info(method, path), "", referenced)

    claims = "/api/v1/namespaces/ns/persistentvolumeclaims"
    assert decision("GET", f"{claims}/mine-claim") == (True, "")
    assert decision("GET", f"{claims}/mine-pod-e") == (True, "")  # the ephemeral volume's
    assert decision("GET", f"{claims}/theirs-claim") == (
        False, f"no relationship found between node '{NODE}' and this object")
    assert decision("GET", claims) == (False, "can only get individual resources of this type")
    assert decision("PUT", f"{claims}/mine-claim/status") == (True, "")
    assert decision("GET", f"{claims}/mine-claim/status") == (
        False, "can only get/update/patch this type")
    sas = "/api/v1/namespaces/ns/serviceaccounts"
    assert decision("POST", f"{sas}/mine-sa/token") == (True, "")
    assert decision("POST", f"{sas}/default/token") == (
        False, f"no relationship found between node '{NODE}' and this object")
    assert decision("GET", f"{sas}/mine-sa") == (
        False, "can only create tokens for individual service accounts")
    assert decision("PUT", f"{sas}/mine-sa") == (
        False, "can only create tokens for individual service accounts")


def test_only_its_own_lease(cluster: Any, graph: tuple[Any, str]) -> None:
    n, _ = graph
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    code, body = n("POST", leases, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": NODE},
        "spec": {"holderIdentity": NODE, "leaseDurationSeconds": 40}})
    assert code == 201, body
    assert n("GET", f"{leases}/{NODE}")[0] == 200
    code, body = cluster.admin("POST", leases, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": OTHER},
        "spec": {"holderIdentity": OTHER, "leaseDurationSeconds": 40}})
    assert code == 201, body
    assert forbidden(n, "GET", f"{leases}/{OTHER}") == (
        f'leases.coordination.k8s.io "{OTHER}" is forbidden: {USER} cannot get resource '
        '"leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": '
        "can only access node lease with the same name as the requesting node")
    assert forbidden(n, "DELETE", f"{leases}/{OTHER}").endswith(
        "can only access node lease with the same name as the requesting node")
    assert forbidden(n, "GET", leases).endswith(
        ": can only get, create, update, patch, or delete a node lease")
    assert forbidden(n, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
                     "kube-scheduler").endswith(
        ': can only access leases in the "kube-node-lease" system namespace')


def test_what_the_fixed_scopes_allowed_and_upstream_does_not(graph: tuple[Any, str]) -> None:
    """Namespaces, priority classes and reading events are none of a node's business in
    NodeRules; writing events, reading services and the service proxy's EndpointSlices
    (granted to system:nodes through RBAC) are."""
    n, ns = graph
    assert forbidden(n, "GET", "/api/v1/namespaces") == (
        f'namespaces is forbidden: {USER} cannot list resource "namespaces" in API group "" '
        "at the cluster scope")
    assert forbidden(n, "GET", "/apis/scheduling.k8s.io/v1/priorityclasses").startswith(
        f'priorityclasses.scheduling.k8s.io is forbidden: {USER} cannot list')
    assert forbidden(n, "GET", f"/api/v1/namespaces/{ns}/events").startswith(
        f'events is forbidden: {USER} cannot list resource "events"')
    assert n("GET", "/api/v1/services")[0] == 200
    assert n("GET", "/apis/discovery.k8s.io/v1/endpointslices")[0] == 200
    assert forbidden(n, "GET", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/x"
                     ).startswith("endpointslices.discovery.k8s.io \"x\" is forbidden")


def test_cannot_modify_another_node_or_its_pods(cluster: Any, graph: tuple[Any, str]) -> None:
    n, ns = graph
    code, body = cluster.admin("POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": OTHER}})
    assert code == 201, body
    merge = {"Content-Type": "application/merge-patch+json"}
    code, body = n("PATCH", f"/api/v1/nodes/{OTHER}", ctype=merge["Content-Type"],
                   body={"metadata": {"labels": {"x": "y"}}})
    assert code == 403, body
    assert body["message"] == (f'nodes "{OTHER}" is forbidden: node "{NODE}" is not allowed '
                               f'to modify node "{OTHER}"')
    code, body = n("PATCH", f"/api/v1/namespaces/{ns}/pods/theirs-pod/status",
                   ctype=merge["Content-Type"], body={"status": {"phase": "Failed"}})
    assert code == 403, body
    assert body["message"] == (f'pods "theirs-pod" is forbidden: node "{NODE}" can only '
                               "update pod status for pods with spec.nodeName set to itself")
    code, body = n("DELETE", f"/api/v1/namespaces/{ns}/pods/theirs-pod")
    assert code == 403, body
    assert body["message"] == (f'pods "theirs-pod" is forbidden: node "{NODE}" can only '
                               "delete pods with spec.nodeName set to itself")


def test_the_system_node_role_is_upstreams(cluster: Any) -> None:
    """system:node holds NodeRules and is bound to nobody (the Node authorizer applies the
    rules), as upstream's since 1.8."""
    base = "/apis/rbac.authorization.k8s.io/v1"
    code, role = cluster.admin("GET", f"{base}/clusterroles/system:node")
    assert code == 200, role
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "verbs": ["create", "delete", "get", "patch", "update"]} in role["rules"]
    code, binding = cluster.admin("GET", f"{base}/clusterrolebindings/system:node")
    assert code == 200, binding
    assert not binding.get("subjects")
