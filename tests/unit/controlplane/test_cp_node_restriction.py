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


MERGE = "application/merge-patch+json"


def test_a_node_registers_only_itself_with_labels_a_kubelet_may_set(cluster: Any) -> None:
    n7 = cluster.node("nr7")
    code, body = n7("POST", "/api/v1/nodes", node_object("nr7-other"))
    assert code == 403, body
    assert body["message"] == ('nodes "nr7-other" is forbidden: node "nr7" is not allowed to '
                               'modify node "nr7-other"')
    for label in ("node-role.kubernetes.io/control-plane", "node-restriction.kubernetes.io/x",
                  "kubernetes.io/role"):
        code, body = n7("POST", "/api/v1/nodes", node_object("nr7", {label: ""}))
        assert code == 403, body
        assert body["message"] == (f'nodes "nr7" is forbidden: node "nr7" is not allowed to '
                                   f"set the following labels: {label}")
    allowed = {"kubernetes.io/hostname": "nr7", "node.kubernetes.io/instance-type": "vm",
               "topology.kubernetes.io/zone": "z1", "example.com/team": "a"}
    code, body = n7("POST", "/api/v1/nodes", node_object("nr7", allowed))
    assert code == 201, body
    assert cluster.admin("DELETE", "/api/v1/nodes/nr7")[0] == 200


def test_a_node_changes_neither_its_taints_nor_restricted_labels(cluster: Any) -> None:
    n8 = cluster.node("nr8")
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    code, body = n8("POST", "/api/v1/nodes", node_object("nr8", taints=[taint]))
    assert code == 201, body  # registering with taints is the node's own choice
    try:
        admin_taint = {"key": "admin", "effect": "NoExecute"}
        code, body = cluster.admin("PATCH", "/api/v1/nodes/nr8",
                                   {"spec": {"taints": [taint, admin_taint]}}, ctype=MERGE)
        assert code == 200, body
        code, body = n8("PATCH", "/api/v1/nodes/nr8", {"spec": {"taints": [taint]}},
                        ctype=MERGE)
        assert code == 403, body
        assert body["message"] == ('nodes "nr8" is forbidden: node "nr8" is not allowed to '
                                   "modify taints")
        code, body = n8("PATCH", "/api/v1/nodes/nr8", {"metadata": {"labels": {
            "node-role.kubernetes.io/worker": "", "node-restriction.kubernetes.io/x": "y"}}},
            ctype=MERGE)
        assert code == 403, body
        assert body["message"] == ('nodes "nr8" is forbidden: is not allowed to modify labels: '
                                   "node-restriction.kubernetes.io/x, "
                                   "node-role.kubernetes.io/worker")
        # an admin's restricted label stays when the node rewrites its own
        code, body = cluster.admin("PATCH", "/api/v1/nodes/nr8", {"metadata": {"labels": {
            "node-role.kubernetes.io/control-plane": ""}}}, ctype=MERGE)
        assert code == 200, body
        code, body = n8("PATCH", "/api/v1/nodes/nr8", {"metadata": {"labels": {
            "example.com/rack": "r1"}}}, ctype=MERGE)
        assert code == 200, body
        code, body = n8("PATCH", "/api/v1/nodes/nr8", {"metadata": {"labels": {
            "node-role.kubernetes.io/control-plane": None}}}, ctype=MERGE)
        assert code == 403, body
        code, body = n8("PATCH", "/api/v1/nodes/nr8/status", {"status": {"phase": "Running"}},
                        ctype=MERGE)
        assert code == 200, body
        assert body["spec"]["taints"] == [taint, admin_taint]
    finally:
        cluster.admin("DELETE", "/api/v1/nodes/nr8")


def test_pod_status_writes_are_the_pods_node_and_change_no_labels(cluster: Any) -> None:
    n9, other = cluster.node("nr9"), cluster.node("nr9-other")
    ns = cluster.namespace("nr-pod-status")
    code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "a"}},
        "spec": {"nodeName": "nr9", "containers": [{"name": "c", "image": "busybox"}]}})
    assert code == 201, body
    path = f"/api/v1/namespaces/{ns}/pods/p/status"
    code, body = other("PATCH", path, {"status": {"phase": "Running"}}, ctype=MERGE)
    assert code == 403, body
    assert body["message"] == ('pods "p" is forbidden: node "nr9-other" can only update pod '
                               "status for pods with spec.nodeName set to itself")
    code, body = n9("PATCH", path, {"metadata": {"labels": {"app": "b"}},
                                    "status": {"phase": "Running"}}, ctype=MERGE)
    assert code == 403, body
    assert body["message"] == ('pods "p" is forbidden: node "nr9" cannot update labels '
                               "through pod status")
    code, body = n9("PATCH", path, {"status": {"phase": "Running"}}, ctype=MERGE)
    assert code == 200, body
    assert body["metadata"]["labels"] == {"app": "a"}


def test_a_node_reads_only_its_own_pods_and_node(cluster: Any) -> None:
    """AuthorizeNodeWithSelectors (on by default in 1.32): pods listed or watched only
    with ``spec.nodeName=<itself>``, single pods only those bound to it, Nodes only its
    own."""
    n = cluster.node("sel1")
    ns = cluster.namespace("nr-selectors")
    for name, node in (("mine", "sel1"), ("theirs", "sel-other")):
        code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox",
                                                        "env": [{"name": "K", "value": "v"}]}]}})
        assert code == 201, body
    user = 'User "system:node:sel1"'
    code, body = n("GET", "/api/v1/pods")
    assert code == 403, body
    assert body["message"] == (f'pods is forbidden: {user} cannot list resource "pods" in API '
                               'group "" at the cluster scope: can only list/watch pods with '
                               "spec.nodeName field selector")
    for query in ("?watch=true", "?fieldSelector=spec.nodeName%3Dsel-other",
                  "?fieldSelector=spec.nodeName%21%3Dsel1", "?labelSelector=a%3Db"):
        code, body = n("GET", f"/api/v1/namespaces/{ns}/pods{query}")
        assert code == 403, (query, body)
    code, body = n("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dsel1")
    assert code == 200, body
    assert [p["metadata"]["name"] for p in body["items"]] == ["mine"]
    code, body = n("GET", f"/api/v1/namespaces/{ns}/pods/theirs")
    assert code == 403, body
    assert body["message"].endswith(": no relationship found between node 'sel1' and this "
                                    "object")
    assert n("GET", f"/api/v1/namespaces/{ns}/pods/mine")[0] == 200
    assert n("GET", f"/api/v1/namespaces/{ns}/pods/gone")[0] == 403
    code, body = n("GET", "/api/v1/nodes")
    assert code == 403, body
    assert body["message"] == (f'nodes is forbidden: {user} cannot list resource "nodes" in '
                               'API group "" at the cluster scope: node \'sel1\' cannot read '
                               "all nodes, only its own Node object")
    code, body = n("GET", "/api/v1/nodes/sel-other")
    assert code == 403, body
    assert body["message"].endswith(": node 'sel1' cannot read 'sel-other', only its own Node "
                                    "object")
    assert n("GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dsel-other")[0] == 403
    assert n("GET", "/api/v1/nodes/sel1")[0] == 404  # its own, not registered yet
    code, body = n("GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dsel1")
    assert code == 200, body
    assert body["items"] == []


def test_the_control_plane_labels_its_own_node_which_keeps_the_label(cluster: Any) -> None:
    """kubeadm's mark-control-plane: the node-role label is set with the control plane's
    authority (pykubelet run's embedded one), and the node's own writes keep it."""
    import asyncio

    n = cluster.node("nr-cp")
    code, body = n("POST", "/api/v1/nodes", node_object("nr-cp"))
    assert code == 201, body
    try:
        role = "node-role.kubernetes.io/control-plane"
        asyncio.run_coroutine_threadsafe(cluster.cp.label_node("nr-cp", {role: ""}),
                                         cluster.cp.loop).result(10)
        code, body = n("GET", "/api/v1/nodes/nr-cp")
        assert body["metadata"]["labels"][role] == ""
        code, body = n("PATCH", "/api/v1/nodes/nr-cp", {"metadata": {"labels": {
            "example.com/x": "y"}}}, ctype=MERGE)
        assert code == 200, body
        assert body["metadata"]["labels"][role] == ""
    finally:
        cluster.admin("DELETE", "/api/v1/nodes/nr-cp")
