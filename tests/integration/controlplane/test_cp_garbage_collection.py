"""The garbage collector through a real control plane: the real kubectl's
``delete --cascade=background|foreground|orphan`` and the official Python client's
``propagation_policy``, over ConfigMaps and Pods that name owners in
``metadata.ownerReferences``."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for

CP_BACKENDS = ("sqlite",)


def create(cp: ControlPlaneProcess, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    out = cp.kubectl("-n", ns, "create", "-o", "json", "-f", "-", input=json.dumps(body))
    created: dict[str, Any] = json.loads(out.stdout)
    return created


def cm(name: str, *owners: dict[str, Any], finalizers: list[str] | None = None
       ) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owners:
        meta["ownerReferences"] = list(owners)
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def pod(name: str, *owners: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "ownerReferences": list(owners)},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def ref(owner: dict[str, Any], block: bool = False) -> dict[str, Any]:
    r = {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
         "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    if block:
        r["blockOwnerDeletion"] = True
    return r


def get(cp: ControlPlaneProcess, ns: str, what: str) -> dict[str, Any] | None:
    res = cp.kubectl("-n", ns, "get", what, "-o", "json", check=False)
    if res.returncode != 0:
        assert "NotFound" in res.stderr, res.stderr
        return None
    found: dict[str, Any] = json.loads(res.stdout)
    return found


def test_kubectl_delete_background(cp: ControlPlaneProcess, ns: str) -> None:
    owner = create(cp, ns, cm("owner"))
    create(cp, ns, cm("dep", ref(owner)))
    create(cp, ns, pod("dep-pod", ref(owner)))
    out = cp.kubectl("-n", ns, "delete", "configmap", "owner")
    assert out.stdout.strip() == 'configmap "owner" deleted'
    wait_for(lambda: get(cp, ns, "configmap/dep") is None and get(cp, ns, "pod/dep-pod") is None,
             what="the owner's dependents collected")


def test_kubectl_delete_foreground(cp: ControlPlaneProcess, ns: str) -> None:
    owner = create(cp, ns, cm("owner"))
    create(cp, ns, cm("blocker", ref(owner, block=True)))
    create(cp, ns, cm("held", ref(owner, block=True), finalizers=["example.com/hold"]))
    cp.kubectl("-n", ns, "delete", "configmap", "owner", "--cascade=foreground", "--wait=false")
    wait_for(lambda: get(cp, ns, "configmap/blocker") is None, what="blocker deleted")
    wait_for(lambda: ((get(cp, ns, "configmap/held") or {}).get("metadata") or {}).get(
        "deletionTimestamp") is not None, what="held being deleted")
    still = get(cp, ns, "configmap/owner")
    assert still is not None  # waits for "held"
    assert still["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert still["metadata"]["deletionTimestamp"]
    cp.kubectl("-n", ns, "patch", "configmap", "held", "--type=json",
               "-p", '[{"op": "remove", "path": "/metadata/finalizers"}]')
    wait_for(lambda: get(cp, ns, "configmap/owner") is None, what="the owner gone at last")


def test_kubectl_delete_orphan(cp: ControlPlaneProcess, ns: str) -> None:
    owner = create(cp, ns, cm("owner"))
    create(cp, ns, cm("dep", ref(owner)))
    create(cp, ns, pod("dep-pod", ref(owner)))
    cp.kubectl("-n", ns, "delete", "configmap", "owner", "--cascade=orphan")
    wait_for(lambda: get(cp, ns, "configmap/owner") is None, what="the owner gone")
    for what in ("configmap/dep", "pod/dep-pod"):
        kept = get(cp, ns, what)
        assert kept is not None, what
        assert "ownerReferences" not in kept["metadata"], kept["metadata"]


def test_dangling_owner_collected(cp: ControlPlaneProcess, ns: str) -> None:
    create(cp, ns, cm("orphaned", {"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody",
                                   "uid": "8a1c7f5e-0000-4000-8000-000000000000"}))
    wait_for(lambda: get(cp, ns, "configmap/orphaned") is None, what="dangling collected")


kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config  # noqa: E402


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
def test_pyclient_policy(cp: ControlPlaneProcess, ns: str, policy: str
                                          ) -> None:
    warnings.simplefilter("ignore", DeprecationWarning)
    v1 = client.CoreV1Api(config.new_client_from_config(str(cp.kubeconfig)))
    owner = v1.create_namespaced_config_map(ns, cm("owner")).to_dict()
    owner_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                 "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
    v1.create_namespaced_config_map(ns, cm("dep", owner_ref))
    answer = v1.delete_namespaced_config_map("owner", ns, propagation_policy=policy)
    if policy in ("Foreground", "Orphan"):  # marked, answered with the object itself
        # (the client reads a V1Status; an object body comes back as a plain dict)
        marked = answer if isinstance(answer, dict) else answer.to_dict()
        assert marked["metadata"]["finalizers"] == [
            "foregroundDeletion" if policy == "Foreground" else "orphan"]
        assert marked["metadata"]["deletionTimestamp"]
    wait_for(lambda: get(cp, ns, "configmap/owner") is None, what="the owner gone")
    dep = get(cp, ns, "configmap/dep")
    if policy == "Orphan":
        assert dep is not None
        assert "ownerReferences" not in dep["metadata"]
    else:
        wait_for(lambda: get(cp, ns, "configmap/dep") is None, what="the dependent gone")
