"""NodeRestriction and the Node authorizer, against an in-process control plane with node
credentials from the real bootstrap flow (``POST /bootstrap/node`` with the join token):
what a node (and so anyone holding the join token) may create, change and read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

MIRROR = "kubernetes.io/config.mirror"


def node_object(name: str, labels: dict[str, str] | None = None,
                taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
            "spec": spec}


def mirror_pod(name: str, node: str, node_uid: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {MIRROR: "hash"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                                              "uid": node_uid, "controller": True}]},
            "spec": {"nodeName": node,
                     "containers": [{"name": "c", "image": "busybox"}], **spec}}


@pytest.fixture(scope="module")
def registered(cluster: Any) -> tuple[Any, str]:
    """Node ``nr1``, registered by itself: its client and its Node's UID."""
    n1 = cluster.node("nr1")
    code, body = n1("POST", "/api/v1/nodes", node_object("nr1"))
    assert code == 201, body
    return n1, body["metadata"]["uid"]


SECRET_REFS = {
    "envFrom": {"containers": [{"name": "c", "image": "busybox",
                                "envFrom": [{"secretRef": {"name": "s"}}]}]},
    "secretKeyRef": {"containers": [{"name": "c", "image": "busybox", "env": [
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]},
    "volume": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
    "projected": {"volumes": [{"name": "v", "projected": {"sources": [
        {"secret": {"name": "s"}}]}}]},
    "imagePullSecrets": {"imagePullSecrets": [{"name": "s"}]},
}


@pytest.mark.parametrize("how", sorted(SECRET_REFS))
def test_a_node_cannot_create_a_mirror_pod_that_references_a_secret(
        cluster: Any, registered: tuple[Any, str], how: str) -> None:
    n1, uid = registered
    ns = cluster.namespace(f"nr-secret-{how.lower()}")
    code, body = n1("POST", f"/api/v1/namespaces/{ns}/pods",
                    mirror_pod("m", "nr1", uid, **SECRET_REFS[how]))
    assert code == 403, body
    assert body["reason"] == "Forbidden"
    assert body["message"] == ('pods "m" is forbidden: node "nr1" can not create pods that '
                               "reference secrets")


@pytest.mark.parametrize(("spec", "what"), [
    ({"volumes": [{"name": "v", "configMap": {"name": "c"}}]}, "configmaps"),
    ({"containers": [{"name": "c", "image": "busybox", "env": [
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]}]},
     "configmaps"),
    ({"serviceAccountName": "default"}, "a service account"),
    ({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]},
     "persistentvolumeclaims"),
    ({"volumes": [{"name": "v", "projected": {"sources": [
        {"clusterTrustBundle": {"name": "b", "path": "b.pem"}}]}}]}, "clustertrustbundles"),
])
def test_a_node_cannot_create_a_mirror_pod_that_references_other_objects(
        cluster: Any, registered: tuple[Any, str], spec: dict[str, Any], what: str) -> None:
    n1, uid = registered
    code, body = n1("POST", "/api/v1/namespaces/default/pods", mirror_pod("m", "nr1", uid,
                                                                         **spec))
    assert code == 403, body
    assert body["message"] == (f'pods "m" is forbidden: node "nr1" can not create pods that '
                               f"reference {what}")


def test_a_mirror_pod_has_one_controller_reference_to_its_own_node(
        cluster: Any, registered: tuple[Any, str]) -> None:
    n1, uid = registered
    base = "/api/v1/namespaces/default/pods"
    pod = mirror_pod("owned", "nr1", uid)

    def refused(p: dict[str, Any]) -> str:
        code, body = n1("POST", base, p)
        assert code == 403, body
        return str(body["message"]).split(": ", 1)[1]

    none = copy.deepcopy(pod)
    del none["metadata"]["ownerReferences"]
    assert refused(none) == 'node "nr1" can only create pods with an owner reference set to ' \
                            "itself"
    two = copy.deepcopy(pod)
    two["metadata"]["ownerReferences"].append(dict(two["metadata"]["ownerReferences"][0]))
    assert refused(two) == 'node "nr1" can only create pods with a single owner reference ' \
                           "set to itself"
    other = copy.deepcopy(pod)
    other["metadata"]["ownerReferences"][0]["name"] = "nr2"
    assert refused(other) == 'node "nr1" can only create pods with an owner reference set ' \
                             "to itself"
    not_controller = copy.deepcopy(pod)
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    assert refused(not_controller) == 'node "nr1" can only create pods with a controller ' \
                                      "owner reference set to itself"
    blocking = copy.deepcopy(pod)
    blocking["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = True
    assert refused(blocking) == 'node "nr1" must not set blockOwnerDeletion on an owner ' \
                                "reference"
    bad_uid = copy.deepcopy(pod)
    bad_uid["metadata"]["ownerReferences"][0]["uid"] = "0000"
    assert refused(bad_uid) == f"node nr1 UID mismatch: expected 0000 got {uid}"
    code, body = n1("POST", base, pod)
    assert code == 201, body
    assert cluster.admin("DELETE", f"{base}/owned")[0] == 200


def test_a_node_reads_no_secret_through_its_own_mirror_pods(
        cluster: Any, registered: tuple[Any, str]) -> None:
    """A mirror pod naming a secret (made before this rule, or by the admin) is no
    relationship: only pods the cluster bound to the node are."""
    n1, uid = registered
    ns = cluster.namespace("nr-mirror-graph")
    code, _ = cluster.admin("POST", f"/api/v1/namespaces/{ns}/secrets",
                            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                             "stringData": {"k": "v"}})
    assert code == 201
    code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods",
                               mirror_pod("m", "nr1", uid, **SECRET_REFS["envFrom"]))
    assert code == 201, body
    code, body = n1("GET", f"/api/v1/namespaces/{ns}/secrets/s")
    assert code == 403, body
    assert "no relationship found between node 'nr1' and this object" in body["message"]
    # a pod bound to it by the cluster is a relationship
    plain = mirror_pod("p", "nr1", uid, **SECRET_REFS["envFrom"])
    del plain["metadata"]["annotations"], plain["metadata"]["ownerReferences"]
    assert cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", plain)[0] == 201
    code, body = n1("GET", f"/api/v1/namespaces/{ns}/secrets/s")
    assert code == 200, body
