"""pods/ephemeralcontainers on the in-process control plane: discovery, GET, the strategic
merge patch ``kubectl debug`` sends, PUT, and upstream's refusals (EphemeralContainersREST,
podEphemeralContainersStrategy)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Cluster

_SEQ = itertools.count()
SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


def debugger(name: str = "debugger-abcde", **extra: Any) -> dict[str, Any]:
    """What kubectl debug --image=... --target=c -- ls /proc puts in its patch."""
    return {"name": name, "image": "localhost/busybox:1.35", "command": ["ls", "/proc"],
            "resources": {}, "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent", "targetContainerName": "c", **extra}


@pytest.fixture
def pod(cluster: Cluster) -> Iterator[tuple[Cluster, str]]:
    ns = cluster.namespace(f"ephemeral-{next(_SEQ)}")
    code, body = cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "image": "localhost/busybox:1.35"}]}})
    assert code == 201, body
    try:
        yield cluster, f"/api/v1/namespaces/{ns}/pods/web"
    finally:
        cluster.admin("DELETE", f"/api/v1/namespaces/{ns}/pods/web?gracePeriodSeconds=0")
        cluster.admin("DELETE", f"/api/v1/namespaces/{ns}")


def test_discovery(cluster: Cluster) -> None:
    code, body = cluster.admin("GET", "/api/v1")
    assert code == 200
    (entry,) = [r for r in body["resources"] if r["name"] == "pods/ephemeralcontainers"]
    assert entry["kind"] == "Pod"
    assert entry["namespaced"] is True
    assert sorted(entry["verbs"]) == ["get", "patch", "update"]


def test_get_returns_the_pod(pod: tuple[Cluster, str]) -> None:
    cluster, path = pod
    code, body = cluster.admin("GET", f"{path}/ephemeralcontainers")
    assert code == 200, body
    assert body["kind"] == "Pod"
    assert body["metadata"]["name"] == "web"


def test_kubectl_debug_patch_adds_one_and_nothing_else(pod: tuple[Cluster, str]) -> None:
    cluster, path = pod
    patch = {"metadata": {"labels": {"a": "2"}},
             "spec": {"ephemeralContainers": [debugger()],
                      "activeDeadlineSeconds": 5}}
    code, body = cluster.admin("PATCH", f"{path}/ephemeralcontainers", patch, SMP)
    assert code == 200, body
    (ec,) = body["spec"]["ephemeralContainers"]
    assert ec["name"] == "debugger-abcde"
    assert ec["targetContainerName"] == "c"
    assert ec["terminationMessagePath"] == "/dev/termination-log"  # defaulted
    # everything else is the old pod's (dropNonEphemeralContainerUpdates)
    assert body["metadata"]["labels"] == {"a": "1"}
    assert "activeDeadlineSeconds" not in body["spec"]
    # a second one, as kubectl patches when one is there already
    second = {"spec": {"$setElementOrder/ephemeralContainers": [
        {"name": "debugger-abcde"}, {"name": "debugger-fghij"}],
        "ephemeralContainers": [debugger("debugger-fghij")]}}
    code, body = cluster.admin("PATCH", f"{path}/ephemeralcontainers", second, SMP)
    assert code == 200, body
    assert [e["name"] for e in body["spec"]["ephemeralContainers"]] == [
        "debugger-abcde", "debugger-fghij"]
    code, body = cluster.admin("GET", path)
    assert len(body["spec"]["ephemeralContainers"]) == 2


def test_put_may_not_remove_or_change(pod: tuple[Cluster, str]) -> None:
    cluster, path = pod
    code, body = cluster.admin("PATCH", f"{path}/ephemeralcontainers",
                               {"spec": {"ephemeralContainers": [debugger()]}}, SMP)
    assert code == 200, body
    body["spec"]["ephemeralContainers"] = []
    code, status = cluster.admin("PUT", f"{path}/ephemeralcontainers", body)
    assert code == 422, status
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'Pod "web" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
        'containers "debugger-abcde" may not be removed\n')
    body["spec"]["ephemeralContainers"] = [debugger(image="localhost/busybox:1.36")]
    code, status = cluster.admin("PUT", f"{path}/ephemeralcontainers", body)
    assert code == 422, status
    assert status["details"]["causes"][0]["field"] == "spec.ephemeralContainers"
    assert 'existing ephemeral containers "debugger-abcde" may not be changed' in (
        status["message"])


@pytest.mark.parametrize(("change", "message"), [
    ({"ports": [{"containerPort": 80}]},
     "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container"),
    ({"targetContainerName": "nope"},
     'spec.ephemeralContainers[0].targetContainerName: Not found: "nope"'),
    ({"name": "c"}, 'spec.ephemeralContainers[0].name: Duplicate value: "c"'),
])
def test_refusals(pod: tuple[Cluster, str], change: dict[str, Any], message: str) -> None:
    cluster, path = pod
    code, status = cluster.admin("PATCH", f"{path}/ephemeralcontainers",
                                 {"spec": {"ephemeralContainers": [debugger(**change)]}}, SMP)
    assert code == 422, status
    assert status["message"] == f'Pod "web" is invalid: {message}'


def test_pod_update_may_not_add_them(pod: tuple[Cluster, str]) -> None:
    cluster, path = pod
    code, status = cluster.admin("PATCH", path,
                                 {"spec": {"ephemeralContainers": [debugger()]}}, MERGE)
    assert code == 422, status
    assert "pod updates may not change fields other than" in status["message"]


def test_missing_pod_is_a_pod_not_found(cluster: Cluster) -> None:
    code, status = cluster.admin("PATCH", "/api/v1/namespaces/default/pods/nope/"
                                 "ephemeralcontainers",
                                 {"spec": {"ephemeralContainers": [debugger()]}}, SMP)
    assert code == 404, status
    assert status["message"] == 'pods "nope" not found'
    # kubectl debug tells "ephemeral containers are disabled" by an empty details.name
    assert status["details"]["name"] == "nope"
