"""apps/v1 Deployments served and rolled out (issue 19, item 2), on an in-process control
plane with the ReplicaSet and Deployment controllers started here alone; pods are made
Ready through pods/status (no node runs them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Cluster
from cp_wait import wait_for

from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane.controllers.deployment import DeploymentController
from pykubelet.controlplane.controllers.replicaset import ReplicaSetController

DEPLOY = "/apis/apps/v1/namespaces/{ns}/deployments"
MERGE = "application/merge-patch+json"


def deploy_body(name: str, replicas: int = 3, image: str = "busybox:1",
                strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}}}
    if strategy is not None:
        body["spec"]["strategy"] = strategy
    return body




@pytest.fixture(scope="module")
def controllers(cluster: Cluster) -> Iterator[None]:
    cp = cluster.cp
    tasks: list[asyncio.Task[None]] = []

    async def start() -> None:
        loop = asyncio.get_running_loop()
        tasks.append(loop.create_task(ReplicaSetController(cp).run()))
        tasks.append(loop.create_task(DeploymentController(cp).run()))

    asyncio.run_coroutine_threadsafe(start(), cp.loop).result(10)
    try:
        yield
    finally:
        async def stop() -> None:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(stop(), cp.loop).result(10)


def ready_all(cluster: Cluster, ns: str) -> None:
    """Every live pod of the namespace Running and Ready (what a node would report)."""
    _, pods = cluster.admin("GET", f"/api/v1/namespaces/{ns}/pods")
    for pod in pods["items"]:
        if pod["metadata"].get("deletionTimestamp") or pod.get("status", {}).get(
                "phase") == "Running":
            continue
        pod["status"] = {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(now())}]}
        cluster.admin("PUT", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/status",
                      pod)


def get(cluster: Cluster, path: str) -> dict[str, Any]:
    code, body = cluster.admin("GET", path)
    assert code == 200, body
    return body


def rss_of(cluster: Cluster, ns: str) -> list[dict[str, Any]]:
    return get(cluster, f"/apis/apps/v1/namespaces/{ns}/replicasets")["items"]


def rolled_out(cluster: Cluster, ns: str, name: str) -> dict[str, Any] | None:
    d = get(cluster, DEPLOY.format(ns=ns) + f"/{name}")
    st = d.get("status") or {}
    conds = {c["type"]: c for c in st.get("conditions") or []}
    want = d["spec"]["replicas"]
    if (st.get("observedGeneration") == d["metadata"]["generation"]
            and st.get("updatedReplicas") == want and st.get("availableReplicas") == want
            and st.get("replicas") == want
            and conds.get("Progressing", {}).get("reason") == "NewReplicaSetAvailable"):
        return d
    return None


def test_defaults_and_bad_deployment(cluster: Cluster) -> None:
    ns = cluster.namespace("deploy-api")
    body = deploy_body("web")
    del body["spec"]["replicas"]
    code, got = cluster.admin("POST", DEPLOY.format(ns=ns) + "?dryRun=All", body)
    assert code == 201, got
    assert got["spec"]["replicas"] == 1
    assert got["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": "25%", "maxSurge": "25%"}}
    assert got["spec"]["revisionHistoryLimit"] == 10
    assert got["spec"]["progressDeadlineSeconds"] == 600
    bad = deploy_body("bad")
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    bad["spec"]["strategy"] = {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}
    code, got = cluster.admin("POST", DEPLOY.format(ns=ns), bad)
    assert code == 422, got
    fields = [c["field"] for c in got["details"]["causes"]]
    assert fields == ["spec.template.metadata.labels", "spec.strategy.rollingUpdate"]
    assert got["message"].startswith('Deployment.apps "bad" is invalid: [spec.template.'
                                     'metadata.labels: Invalid value: ')
    code, _ = cluster.admin("GET", DEPLOY.format(ns=ns) + "/bad")
    assert code == 404
    zero = deploy_body("zero", strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 0, "maxUnavailable": "0%"}})
    code, got = cluster.admin("POST", DEPLOY.format(ns=ns), zero)
    assert code == 422, got
    assert got["details"]["causes"][0]["field"] == "spec.strategy.rollingUpdate.maxUnavailable"
    assert got["details"]["causes"][0]["message"].endswith("may not be 0 when `maxSurge` is 0")


def test_rollout_update_undo_and_history(cluster: Cluster, controllers: None) -> None:
    ns = cluster.namespace("deploy-roll")
    code, d = cluster.admin("POST", DEPLOY.format(ns=ns), deploy_body("web", 3))
    assert code == 201, d
    d = wait_for(lambda: rolled_out(cluster, ns, "web"), tick=lambda: ready_all(cluster, ns))
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    conds = {c["type"]: c for c in d["status"]["conditions"]}
    assert (conds["Available"]["status"], conds["Available"]["reason"]) == (
        "True", "MinimumReplicasAvailable")
    (rs1,) = rss_of(cluster, ns)
    h = rs1["metadata"]["labels"]["pod-template-hash"]
    assert rs1["metadata"]["name"] == f"web-{h}"
    assert rs1["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": h}
    assert rs1["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert rs1["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
    assert conds["Progressing"]["message"] == f'ReplicaSet "web-{h}" has successfully progressed.'

    # a new image: a new ReplicaSet at revision 2, the old one at 0
    code, got = cluster.admin("PATCH", DEPLOY.format(ns=ns) + "/web", {"spec": {"template": {
        "spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}},
        "application/strategic-merge-patch+json")
    assert code == 200, got
    d = wait_for(lambda: rolled_out(cluster, ns, "web"), tick=lambda: ready_all(cluster, ns))
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    by_name = {rs["metadata"]["name"]: rs for rs in rss_of(cluster, ns)}
    assert len(by_name) == 2
    assert by_name[rs1["metadata"]["name"]]["spec"]["replicas"] == 0
    (rs2,) = [rs for n, rs in by_name.items() if n != rs1["metadata"]["name"]]
    assert rs2["spec"]["replicas"] == 3
    assert rs2["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"

    # undo as kubectl does it: the old template back; the old ReplicaSet becomes revision 3
    code, got = cluster.admin("PATCH", DEPLOY.format(ns=ns) + "/web", [
        {"op": "replace", "path": "/spec/template", "value": d["spec"]["template"] | {
            "spec": {**d["spec"]["template"]["spec"], "containers": [
                {**d["spec"]["template"]["spec"]["containers"][0], "image": "busybox:1"}]}}}],
        "application/json-patch+json")
    assert code == 200, got
    d = wait_for(lambda: rolled_out(cluster, ns, "web"), tick=lambda: ready_all(cluster, ns))
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    by_name = {rs["metadata"]["name"]: rs for rs in rss_of(cluster, ns)}
    assert len(by_name) == 2
    back = by_name[rs1["metadata"]["name"]]
    assert back["spec"]["replicas"] == 3
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    _, events = cluster.admin("GET", f"/api/v1/namespaces/{ns}/events")
    msgs = [e["message"] for e in events["items"] if e["reason"] == "ScalingReplicaSet"]
    assert f"Scaled up replica set web-{h} from 0 to 3" in msgs
    assert any(m.startswith(f"Scaled down replica set web-{h} from 3 to ") for m in msgs)


def test_annotations_reach_the_current_replica_set(cluster: Cluster, controllers: None) -> None:
    """copyDeploymentAnnotationsToReplicaSet runs on every sync: a change-cause annotated
    after the rollout reaches the current ReplicaSet (what `rollout history` prints),
    without the annotations a Deployment never copies."""
    ns = cluster.namespace("deploy-annot")
    code, d = cluster.admin("POST", DEPLOY.format(ns=ns), deploy_body("web", 1))
    assert code == 201, d
    wait_for(lambda: rolled_out(cluster, ns, "web"), tick=lambda: ready_all(cluster, ns))
    code, got = cluster.admin("PATCH", DEPLOY.format(ns=ns) + "/web", {"metadata": {
        "annotations": {"kubernetes.io/change-cause": "kubectl set image web c=busybox:1",
                        "kubectl.kubernetes.io/last-applied-configuration": "{}"}}}, MERGE)
    assert code == 200, got

    def annotated() -> dict[str, str] | None:
        (rs,) = rss_of(cluster, ns)
        got = rs["metadata"].get("annotations") or {}
        return got if "kubernetes.io/change-cause" in got else None

    annotations = wait_for(annotated)
    assert annotations["kubernetes.io/change-cause"] == "kubectl set image web c=busybox:1"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in annotations
    assert annotations["deployment.kubernetes.io/revision"] == "1"


def test_scale_pause_and_recreate(cluster: Cluster, controllers: None) -> None:
    ns = cluster.namespace("deploy-scale")
    code, d = cluster.admin("POST", DEPLOY.format(ns=ns),
                            deploy_body("db", 2, strategy={"type": "Recreate"}))
    assert code == 201, d
    wait_for(lambda: rolled_out(cluster, ns, "db"), tick=lambda: ready_all(cluster, ns))
    code, got = cluster.admin("PATCH", DEPLOY.format(ns=ns) + "/db/scale",
                              {"spec": {"replicas": 4}}, MERGE)
    assert code == 200, got
    wait_for(lambda: rolled_out(cluster, ns, "db"), tick=lambda: ready_all(cluster, ns))
    (rs,) = rss_of(cluster, ns)
    assert rs["spec"]["replicas"] == 4
    # paused: a template change makes no new ReplicaSet, Progressing says paused
    code, got = cluster.admin("PATCH", DEPLOY.format(ns=ns) + "/db", {"spec": {"paused": True}},
                              MERGE)
    assert code == 200, got
    code, got = cluster.admin("PATCH", DEPLOY.format(ns=ns) + "/db", {"spec": {"template": {
        "metadata": {"annotations": {"x": "y"}}}}}, MERGE)
    assert code == 200, got

    def paused() -> bool:
        d = get(cluster, DEPLOY.format(ns=ns) + "/db")
        conds = {c["type"]: c for c in d["status"].get("conditions") or []}
        return conds.get("Progressing", {}).get("reason") == "DeploymentPaused"

    wait_for(paused)
    assert len(rss_of(cluster, ns)) == 1
    # resumed: Recreate takes the old pods to 0 first, then the new ReplicaSet up
    code, got = cluster.admin("PATCH", DEPLOY.format(ns=ns) + "/db", {"spec": {"paused": False}},
                              MERGE)
    assert code == 200, got
    wait_for(lambda: len(rss_of(cluster, ns)) == 2, tick=lambda: ready_all(cluster, ns))
    d = wait_for(lambda: rolled_out(cluster, ns, "db"), tick=lambda: ready_all(cluster, ns))
    sizes = sorted(rs["spec"]["replicas"] for rs in rss_of(cluster, ns))
    assert sizes == [0, 4]


def test_table_columns(cluster: Cluster) -> None:
    ns = cluster.namespace("deploy-table")
    code, got = cluster.admin("POST", DEPLOY.format(ns=ns), deploy_body("web", 0))
    assert code == 201, got
    code, table = cluster.admin("GET", DEPLOY.format(ns=ns), headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert code == 200, table
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0), ("Ready", 0), ("Up-to-date", 0), ("Available", 0), ("Age", 0),
        ("Containers", 1), ("Images", 1), ("Selector", 1)]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["web", "0/0", 0, 0]
    assert cells[5:] == ["c", "busybox:1", "app=web"]
