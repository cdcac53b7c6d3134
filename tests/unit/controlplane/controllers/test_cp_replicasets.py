"""apps/v1 ReplicaSets served and acted on (issue 19, item 1): the API's defaults, the
422s of a bad ReplicaSet with nothing written, the immutable selector, the scale
subresource, the Table columns, and the ReplicaSet controller (started here alone on an
in-process control plane) creating, adopting, releasing and deleting pods."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import Cluster
from cp_wait import wait_for

from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane.controllers.replicaset import ReplicaSetController

RS = "/apis/apps/v1/namespaces/{ns}/replicasets"


def rs_body(name: str, replicas: int = 2, labels: dict[str, str] | None = None,
            selector: dict[str, str] | None = None) -> dict[str, Any]:
    labels = labels if labels is not None else {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": selector if selector is not None else labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}




@pytest.fixture(scope="module")
def controller(cluster: Cluster) -> Iterator[ReplicaSetController]:
    cp = cluster.cp
    holder: dict[str, Any] = {}

    async def start() -> None:
        rsc = ReplicaSetController(cp)
        holder["rsc"] = rsc
        holder["task"] = asyncio.get_running_loop().create_task(rsc.run())

    asyncio.run_coroutine_threadsafe(start(), cluster_loop(cluster)).result(10)
    try:
        yield holder["rsc"]
    finally:
        async def stop() -> None:
            holder["task"].cancel()
            try:
                await holder["task"]
            except asyncio.CancelledError:
                pass
        asyncio.run_coroutine_threadsafe(stop(), cluster_loop(cluster)).result(10)


def cluster_loop(cluster: Cluster) -> asyncio.AbstractEventLoop:
    loop = cluster.cp.loop
    assert isinstance(loop, asyncio.AbstractEventLoop)
    return loop


def pods_of(cluster: Cluster, ns: str, selector: str) -> list[dict[str, Any]]:
    code, body = cluster.admin("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")
    assert code == 200, body
    return [p for p in body["items"] if not p["metadata"].get("deletionTimestamp")]


# ---------------------------------------------------------------------------- the API


def test_create_defaults_and_discovery(cluster: Cluster) -> None:
    ns = cluster.namespace("rs-api")
    body = rs_body("web")
    del body["spec"]["replicas"]
    code, got = cluster.admin("POST", RS.format(ns=ns), body)
    assert code == 201, got
    assert got["spec"]["replicas"] == 1
    assert got["metadata"]["generation"] == 1
    assert got["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    code, disc = cluster.admin("GET", "/apis/apps/v1")
    assert code == 200
    rs = next(r for r in disc["resources"] if r["name"] == "replicasets")
    assert rs["shortNames"] == ["rs"]
    assert rs["categories"] == ["all"]
    assert {r["name"] for r in disc["resources"]} >= {"replicasets/status",
                                                     "replicasets/scale"}


@pytest.mark.parametrize(("mutate", "field", "message"), [
    (lambda b: b["spec"]["template"]["metadata"].update(labels={"app": "other"}),
     "spec.template.metadata.labels",
     'Invalid value: {"app": "other"}: `selector` does not match template `labels`'),
    (lambda b: b["spec"].pop("selector"), "spec.selector", "Required value"),
    (lambda b: b["spec"].update(replicas=-1), "spec.replicas",
     "Invalid value: -1: must be greater than or equal to 0"),
    (lambda b: b["spec"]["template"]["spec"].update(restartPolicy="Never"),
     "spec.template.spec.restartPolicy", 'Unsupported value: "Never"'),
    (lambda b: b["spec"]["template"]["spec"]["containers"][0].pop("image"),
     "spec.template.spec.containers[0].image", "Required value"),
])
def test_bad_replica_set_is_422_naming_the_field_and_not_written(
        cluster: Cluster, mutate: Callable[[dict[str, Any]], Any], field: str,
        message: str) -> None:
    ns = cluster.namespace(f"rs-bad-{abs(hash(field)) % 10000}")
    body = rs_body("bad")
    mutate(body)
    code, got = cluster.admin("POST", RS.format(ns=ns), body)
    assert code == 422, got
    assert got["details"]["kind"] == "ReplicaSet"
    assert got["details"]["group"] == "apps"
    causes = {c["field"]: c["message"] for c in got["details"]["causes"]}
    assert field in causes, causes
    assert causes[field].startswith(message), causes[field]
    code, _ = cluster.admin("GET", RS.format(ns=ns) + "/bad")
    assert code == 404


def test_selector_is_immutable(cluster: Cluster) -> None:
    ns = cluster.namespace("rs-immutable")
    code, got = cluster.admin("POST", RS.format(ns=ns), rs_body("web", 0))
    assert code == 201, got
    patch = {"spec": {"selector": {"matchLabels": {"app": "web", "x": "y"}},
                      "template": {"metadata": {"labels": {"app": "web", "x": "y"}}}}}
    code, got = cluster.admin("PATCH", RS.format(ns=ns) + "/web", patch,
                              "application/merge-patch+json")
    assert code == 422, got
    assert [c["field"] for c in got["details"]["causes"]] == ["spec.selector"]
    assert "field is immutable" in got["details"]["causes"][0]["message"]


def test_scale_subresource(cluster: Cluster) -> None:
    ns = cluster.namespace("rs-scale")
    code, got = cluster.admin("POST", RS.format(ns=ns), rs_body("web", 0))
    assert code == 201, got
    code, scale = cluster.admin("GET", RS.format(ns=ns) + "/web/scale")
    assert code == 200, scale
    assert scale["kind"] == "Scale"
    assert scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 0}
    assert scale["status"] == {"replicas": 0, "selector": "app=web"}
    code, scale = cluster.admin("PATCH", RS.format(ns=ns) + "/web/scale",
                                {"spec": {"replicas": 0}}, "application/merge-patch+json")
    assert code == 200, scale
    code, bad = cluster.admin("PUT", RS.format(ns=ns) + "/web/scale",
                              {**scale, "spec": {"replicas": -2}})
    assert code == 422, bad
    assert bad["details"]["causes"][0]["field"] == "spec.replicas"
    stale = {**scale, "metadata": {**scale["metadata"], "resourceVersion": "1"}}
    code, bad = cluster.admin("PUT", RS.format(ns=ns) + "/web/scale", stale)
    assert code == 409, bad
    code, got = cluster.admin("GET", RS.format(ns=ns) + "/web")
    assert got["spec"]["replicas"] == 0
    assert got["metadata"]["generation"] == 1


def test_table_columns(cluster: Cluster) -> None:
    ns = cluster.namespace("rs-table")
    code, got = cluster.admin("POST", RS.format(ns=ns), rs_body("web", 0))
    assert code == 201, got
    code, table = cluster.admin("GET", RS.format(ns=ns), headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert code == 200, table
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0), ("Desired", 0), ("Current", 0), ("Ready", 0), ("Age", 0),
        ("Containers", 1), ("Images", 1), ("Selector", 1)]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["web", 0, 0, 0]
    assert cells[5:] == ["c", "busybox", "app=web"]


# ---------------------------------------------------------------------------- the controller


def test_controller_creates_scales_and_counts(cluster: Cluster,
                                              controller: ReplicaSetController) -> None:
    ns = cluster.namespace("rs-ctl")
    code, rs = cluster.admin("POST", RS.format(ns=ns), rs_body("web", 3))
    assert code == 201, rs
    pods = wait_for(lambda: (p := pods_of(cluster, ns, "app=web")) and len(p) == 3 and p)
    for pod in pods:
        ref = pod["metadata"]["ownerReferences"]
        assert ref == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                        "uid": rs["metadata"]["uid"], "controller": True,
                        "blockOwnerDeletion": True}]
        assert pod["metadata"]["generateName"] == "web-"
    # one pod Ready: the status counts it
    pod = pods[0]
    pod["status"] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(now())}]}
    code, got = cluster.admin("PUT", f"/api/v1/namespaces/{ns}/pods/"
                              f"{pod['metadata']['name']}/status", pod)
    assert code == 200, got

    def status() -> dict[str, Any] | None:
        _, obj = cluster.admin("GET", RS.format(ns=ns) + "/web")
        st = obj.get("status") or {}
        return st if st.get("readyReplicas") == 1 else None

    st = wait_for(status)
    assert st == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 1,
                  "availableReplicas": 1, "observedGeneration": 1}
    # scale down to 1: the two unready pods go, the ready one stays
    code, got = cluster.admin("PATCH", RS.format(ns=ns) + "/web/scale",
                              {"spec": {"replicas": 1}}, "application/merge-patch+json")
    assert code == 200, got
    left = wait_for(lambda: (p := pods_of(cluster, ns, "app=web")) and len(p) == 1 and p)
    assert left[0]["metadata"]["name"] == pod["metadata"]["name"]
    code, events = cluster.admin("GET", f"/api/v1/namespaces/{ns}/events")
    reasons = [(e["reason"], e["message"].split(":")[0]) for e in events["items"]]
    assert ("SuccessfulCreate", "Created pod") in reasons
    assert ("SuccessfulDelete", "Deleted pod") in reasons


def test_controller_adopts_orphans_and_releases_relabelled_pods(
        cluster: Cluster, controller: ReplicaSetController) -> None:
    ns = cluster.namespace("rs-adopt")
    orphan = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "orphan", "labels": {"app": "db"}},
              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    code, got = cluster.admin("POST", f"/api/v1/namespaces/{ns}/pods", orphan)
    assert code == 201, got
    code, rs = cluster.admin("POST", RS.format(ns=ns), rs_body("db", 1))
    assert code == 201, rs

    def adopted() -> dict[str, Any] | None:
        _, pod = cluster.admin("GET", f"/api/v1/namespaces/{ns}/pods/orphan")
        refs = pod["metadata"].get("ownerReferences") or []
        return pod if refs and refs[0]["uid"] == rs["metadata"]["uid"] else None

    wait_for(adopted)
    time.sleep(0.3)
    assert [p["metadata"]["name"] for p in pods_of(cluster, ns, "app=db")] == ["orphan"]
    # relabelled out of the selector: released, and a replacement made
    code, got = cluster.admin("PATCH", f"/api/v1/namespaces/{ns}/pods/orphan",
                              {"metadata": {"labels": {"app": "gone"}}},
                              "application/merge-patch+json")
    assert code == 200, got

    def released() -> bool:
        _, pod = cluster.admin("GET", f"/api/v1/namespaces/{ns}/pods/orphan")
        return not pod["metadata"].get("ownerReferences")

    wait_for(released)
    new = wait_for(lambda: (p := pods_of(cluster, ns, "app=db")) and len(p) == 1 and p)
    assert new[0]["metadata"]["name"] != "orphan"
