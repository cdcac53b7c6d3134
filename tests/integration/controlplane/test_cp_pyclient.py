"""The official Python client (``kubernetes`` on PyPI) against a real control plane:
listing, creating, patching, watching, and resuming a watch after 410 Gone."""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, control_plane

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402


@pytest.fixture(scope="module")
def small_cache_cp(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
                   ) -> Iterator[ControlPlaneProcess]:
    """A control plane whose watch cache keeps only a few events (to reach 410 quickly)."""
    with control_plane(tmp_path_factory.mktemp("cp") / "root", request.param,
                       ["--default-watch-cache-size", "5"]) as proc:
        yield proc


def api_for(cp: ControlPlaneProcess) -> Any:
    warnings.simplefilter("ignore", DeprecationWarning)
    return config.new_client_from_config(str(cp.kubeconfig))


def pod_body(name: str = "", generate: str = "", labels: dict[str, str] | None = None
             ) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels or {}}
    if name:
        meta["name"] = name
    if generate:
        meta["generateName"] = generate
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_version_and_discovery(cp: ControlPlaneProcess) -> None:
    api = api_for(cp)
    info = client.VersionApi(api).get_code()
    assert info.git_version.startswith("v1.32.0")
    groups = client.ApisApi(api).get_api_versions()
    assert {g.name for g in groups.groups} == {"coordination.k8s.io", "scheduling.k8s.io",
                                               "policy", "apps", "batch", "discovery.k8s.io",
                                               "rbac.authorization.k8s.io", "apiextensions.k8s.io",
                                               "metrics.k8s.io"}
    core = client.CoreApi(api).get_api_versions()
    assert core.versions == ["v1"]
    res = client.CoreV1Api(api).get_api_resources()
    assert {"pods", "pods/status", "pods/log", "pods/binding", "nodes"} <= {
        r.name for r in res.resources}


def test_create_list_patch_delete(cp: ControlPlaneProcess, ns: str) -> None:
    v1 = client.CoreV1Api(api_for(cp))
    made = v1.create_namespaced_pod(ns, pod_body(generate="py-", labels={"a": "1"}))
    assert made.metadata.name.startswith("py-")
    assert len(made.metadata.name) == 8
    assert made.status.phase == "Pending"
    assert made.spec.priority == 0
    assert {t.key for t in made.spec.tolerations} == {"node.kubernetes.io/not-ready",
                                                      "node.kubernetes.io/unreachable"}
    listed = v1.list_namespaced_pod(ns, label_selector="a=1")
    assert [p.metadata.name for p in listed.items] == [made.metadata.name]
    assert int(listed.metadata.resource_version) >= int(made.metadata.resource_version)
    patched = v1.patch_namespaced_pod(made.metadata.name, ns,
                                      {"metadata": {"labels": {"b": "2"}}})
    assert patched.metadata.labels == {"a": "1", "b": "2"}
    json_patched = v1.patch_namespaced_pod(
        made.metadata.name, ns, [{"op": "remove", "path": "/metadata/labels/a"}])
    assert json_patched.metadata.labels == {"b": "2"}
    stale = {"metadata": {"labels": {"c": "3"}, "resourceVersion": made.metadata.resource_version}}
    with pytest.raises(client.ApiException) as exc:
        v1.patch_namespaced_pod(made.metadata.name, ns, stale)
    assert exc.value.status == 409
    v1.delete_namespaced_pod(made.metadata.name, ns)  # unbound: gone at once
    with pytest.raises(client.ApiException) as exc:
        v1.read_namespaced_pod(made.metadata.name, ns)
    assert exc.value.status == 404


def test_update_with_stale_resource_version_is_a_conflict(cp: ControlPlaneProcess,
                                                          ns: str) -> None:
    v1 = client.CoreV1Api(api_for(cp))
    cm = v1.create_namespaced_config_map(ns, {"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": "c1"}, "data": {"k": "v"}})
    first = client.ApiClient().sanitize_for_serialization(cm)
    v1.patch_namespaced_config_map("c1", ns, {"data": {"k": "v2"}})
    first["data"] = {"k": "mine"}
    with pytest.raises(client.ApiException) as exc:
        v1.replace_namespaced_config_map("c1", ns, first)
    assert exc.value.status == 409
    assert "the object has been modified" in exc.value.body


def test_paginated_list(cp: ControlPlaneProcess, ns: str) -> None:
    v1 = client.CoreV1Api(api_for(cp))
    for i in range(7):
        v1.create_namespaced_config_map(ns, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": f"p{i}"}})
    seen: list[str] = []
    page = v1.list_namespaced_config_map(ns, limit=3)
    rv = page.metadata.resource_version
    while True:
        seen += [c.metadata.name for c in page.items]
        if not page.metadata._continue:
            break
        assert page.metadata.resource_version == rv  # one consistent snapshot
        page = v1.list_namespaced_config_map(ns, limit=3, _continue=page.metadata._continue)
    # every namespace also holds kube-root-ca.crt (the root CA publisher), listed first
    assert seen == ["kube-root-ca.crt", *(f"p{i}" for i in range(7))]


def test_watch_from_a_resource_version_sees_every_change(cp: ControlPlaneProcess,
                                                         ns: str) -> None:
    v1 = client.CoreV1Api(api_for(cp))
    start = v1.list_namespaced_pod(ns).metadata.resource_version
    got: list[tuple[str, str, dict[str, str]]] = []

    def consume() -> None:
        w = watch.Watch()
        for ev in w.stream(v1.list_namespaced_pod, ns, resource_version=start,
                           timeout_seconds=5):
            meta = ev["object"].metadata
            got.append((ev["type"], meta.name, meta.labels or {}))
            if ev["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)
    v1.create_namespaced_pod(ns, pod_body(name="wp"))
    v1.patch_namespaced_pod("wp", ns, {"metadata": {"labels": {"x": "y"}}})
    v1.delete_namespaced_pod("wp", ns)
    t.join(10)
    # (the scheduler may also write the pod's PodScheduled condition: no nodes here)
    assert got[0] == ("ADDED", "wp", {})
    assert ("MODIFIED", "wp", {"x": "y"}) in got
    assert got[-1] == ("DELETED", "wp", {"x": "y"})
    assert {t for t, _, _ in got} == {"ADDED", "MODIFIED", "DELETED"}


def test_watch_bookmarks_when_asked(cp: ControlPlaneProcess, ns: str) -> None:
    v1 = client.CoreV1Api(api_for(cp))
    rv = v1.list_namespaced_pod(ns).metadata.resource_version
    resp = v1.list_namespaced_pod(ns, watch=True, allow_watch_bookmarks=True,
                                  resource_version=rv, timeout_seconds=1,
                                  _preload_content=False)
    body = resp.read().decode()
    events = [line for line in body.splitlines() if line]
    assert events, "a watch that asked for bookmarks gets one before it ends"
    assert all('"type":"BOOKMARK"' in e for e in events)


def test_watch_resumes_after_410_by_listing_again(small_cache_cp: ControlPlaneProcess
                                                  ) -> None:
    v1 = client.CoreV1Api(api_for(small_cache_cp))
    old_rv = v1.list_namespaced_config_map("default").metadata.resource_version
    for i in range(12):  # more events than the cache holds
        v1.create_namespaced_config_map("default", {"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": f"old{i}"}})
    with pytest.raises(client.ApiException) as exc:
        for _ in watch.Watch().stream(v1.list_namespaced_config_map, "default",
                                      resource_version=old_rv):
            pass
    assert exc.value.status == 410
    assert "Expired" in str(exc.value.reason)
    # the documented recovery: list again, watch from the list's resourceVersion
    fresh = v1.list_namespaced_config_map("default")
    assert len([c for c in fresh.items if c.metadata.name != "kube-root-ca.crt"]) == 12
    got: list[str] = []

    def consume() -> None:
        w = watch.Watch()
        for ev in w.stream(v1.list_namespaced_config_map, "default",
                           resource_version=fresh.metadata.resource_version,
                           timeout_seconds=5):
            got.append(ev["object"].metadata.name)
            w.stop()

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)
    v1.create_namespaced_config_map("default", {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "after"}})
    t.join(10)
    assert got == ["after"]


def test_read_nodes_events_and_leases(cp: ControlPlaneProcess) -> None:
    api = api_for(cp)
    assert client.CoreV1Api(api).list_node().items is not None
    assert client.CoreV1Api(api).list_event_for_all_namespaces().items is not None
    leases = client.CoordinationV1Api(api).list_namespaced_lease("kube-node-lease")
    assert leases.items is not None
    pcs = client.SchedulingV1Api(api).list_priority_class()
    assert {p.metadata.name for p in pcs.items} >= {"system-node-critical",
                                                     "system-cluster-critical"}
