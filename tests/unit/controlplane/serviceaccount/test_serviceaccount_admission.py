"""The ServiceAccount admission plugin through the API: a pod runs as ``default`` unless it
names an account, which must exist (403 in upstream's words); its containers and init
containers mount the kube-api-access-XXXXX projected volume (token 3607 s, kube-root-ca.crt's
ca.crt, the namespace) read-only at the well-known path, unless automount is off on the pod
or the account, or a container mounts that path itself; mirror pods are left alone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Cluster

MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


@pytest.fixture(scope="module")
def ns(cluster: Cluster) -> Iterator[str]:
    name = cluster.namespace("sa-admission")
    try:
        yield name
    finally:
        cluster.admin("DELETE", f"/api/v1/namespaces/{name}")


def create(cluster: Cluster, ns: str, body: dict[str, Any]) -> tuple[int, Any]:
    return cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", body)


def test_default_account_and_the_projected_volume(cluster: Cluster, ns: str) -> None:
    code, made = create(cluster, ns, pod("plain", initContainers=[
        {"name": "init", "image": "busybox"}]))
    assert code == 201, made
    spec = made["spec"]
    assert spec["serviceAccountName"] == "default"
    [volume] = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt",
                                                              "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    want = [{"name": volume["name"], "readOnly": True, "mountPath": MOUNT}]
    assert spec["containers"][0]["volumeMounts"] == want
    assert spec["initContainers"][0]["volumeMounts"] == want
    code, _ = cluster.admin("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
    assert code == 200


def test_a_missing_account_is_refused(cluster: Cluster, ns: str) -> None:
    code, body = create(cluster, ns, pod("lost", serviceAccountName="nobody"))
    assert code == 403, body
    assert body["message"] == ('pods "lost" is forbidden: error looking up service account '
                               f'{ns}/nobody: serviceaccount "nobody" not found')


def test_automount_off_on_the_pod_or_the_account(cluster: Cluster, ns: str) -> None:
    code, made = create(cluster, ns, pod("no-mount", automountServiceAccountToken=False))
    assert code == 201, made
    assert "volumes" not in made["spec"]
    code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "quiet"},
        "automountServiceAccountToken": False})
    assert code == 201, body
    code, made = create(cluster, ns, pod("quiet-pod", serviceAccountName="quiet"))
    assert code == 201, made
    assert "volumes" not in made["spec"]
    # the pod's word wins over the account's
    code, made = create(cluster, ns, pod("loud-pod", serviceAccountName="quiet",
                                         automountServiceAccountToken=True))
    assert code == 201, made
    assert made["spec"]["volumes"][0]["name"].startswith("kube-api-access-")


def test_a_container_mounting_the_path_itself_keeps_its_mount(cluster: Cluster,
                                                              ns: str) -> None:
    mine = {"name": "own", "mountPath": MOUNT}
    code, made = create(cluster, ns, pod("own-mount", volumes=[{"name": "own", "emptyDir": {}}],
                                         containers=[{"name": "c", "image": "busybox",
                                                      "volumeMounts": [mine]}]))
    assert code == 201, made
    assert made["spec"]["containers"][0]["volumeMounts"] == [mine]
    assert [v["name"] for v in made["spec"]["volumes"]] == ["own"]
