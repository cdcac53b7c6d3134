"""The StatefulSet controller (started here alone on an in-process control plane): OnDelete
updates only the pods a user deletes, an orphan pod of the set is adopted rather than
recreated (one of another name is not), minReadySeconds holds back the next ordinal, and
the history is trimmed to revisionHistoryLimit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Cluster
from cp_wait import wait_for

from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane.controllers.statefulset import StatefulSetController

STS = "/apis/apps/v1/namespaces/{ns}/statefulsets"
PODS = "/api/v1/namespaces/{ns}/pods"


def sts_body(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                     **spec}}


@pytest.fixture(scope="module")
def controller(cluster: Cluster) -> Iterator[StatefulSetController]:
    loop = cluster.cp.loop
    assert isinstance(loop, asyncio.AbstractEventLoop)
    holder: dict[str, Any] = {}

    async def start() -> None:
        ssc = StatefulSetController(cluster.cp.registry)
        holder["ssc"] = ssc
        holder["task"] = asyncio.get_running_loop().create_task(ssc.run())

    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield holder["ssc"]
    finally:
        async def stop() -> None:
            holder["task"].cancel()
            try:
                await holder["task"]
            except asyncio.CancelledError:
                pass
        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)


def pods(cluster: Cluster, ns: str) -> dict[str, dict[str, Any]]:
    code, body = cluster.admin("GET", PODS.format(ns=ns))
    assert code == 200, body
    return {p["metadata"]["name"]: p for p in body["items"]
            if not p["metadata"].get("deletionTimestamp")}


def make_ready(cluster: Cluster, ns: str, name: str) -> None:
    pod = pods(cluster, ns)[name]
    pod["status"] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(now())}]}
    code, got = cluster.admin("PUT", PODS.format(ns=ns) + f"/{name}/status", pod)
    assert code == 200, got


def status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    code, got = cluster.admin("GET", STS.format(ns=ns) + f"/{name}")
    assert code == 200, got
    return got.get("status") or {}  # type: ignore[no-any-return]


def still(check: Any, seconds: float = 1.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not check():
            return False
        time.sleep(0.1)
    return True


def image_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["image"])


def test_on_delete_updates_only_deleted_pods(cluster: Cluster,
                                             controller: StatefulSetController) -> None:
    ns = cluster.namespace("sts-ondelete-ctl")
    code, got = cluster.admin("POST", STS.format(ns=ns),
                              sts_body("web", 2, updateStrategy={"type": "OnDelete"}))
    assert code == 201, got
    wait_for(lambda: "web-0" in pods(cluster, ns))
    make_ready(cluster, ns, "web-0")
    wait_for(lambda: "web-1" in pods(cluster, ns))
    make_ready(cluster, ns, "web-1")
    first = wait_for(lambda: status(cluster, ns, "web").get("readyReplicas") == 2
                     and status(cluster, ns, "web")["currentRevision"])
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c",
                                                            "image": "busybox:2"}]}}}}
    code, got = cluster.admin("PATCH", STS.format(ns=ns) + "/web", patch,
                              "application/merge-patch+json")
    assert code == 200, got
    update = wait_for(lambda: (u := status(cluster, ns, "web").get("updateRevision")) != first
                      and u)
    assert still(lambda: {n: image_of(p) for n, p in pods(cluster, ns).items()} == {
        "web-0": "busybox", "web-1": "busybox"})
    uid = pods(cluster, ns)["web-1"]["metadata"]["uid"]
    code, got = cluster.admin("DELETE", PODS.format(ns=ns) + "/web-1")
    assert code == 200, got
    new = wait_for(lambda: (p := pods(cluster, ns).get("web-1")) is not None
                   and p["metadata"]["uid"] != uid and p)
    assert image_of(new) == "busybox:2"
    assert new["metadata"]["labels"]["controller-revision-hash"] == update
    make_ready(cluster, ns, "web-1")
    st = wait_for(lambda: (s := status(cluster, ns, "web")).get("updatedReplicas") == 1
                  and s.get("readyReplicas") == 2 and s)
    assert (st["currentRevision"], st["currentReplicas"]) == (first, 1)
    assert image_of(pods(cluster, ns)["web-0"]) == "busybox"


def test_orphan_member_is_adopted_not_recreated(cluster: Cluster,
                                                controller: StatefulSetController) -> None:
    ns = cluster.namespace("sts-adopt")
    for name in ("db-0", "other-0"):
        code, got = cluster.admin("POST", PODS.format(ns=ns), {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "db"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        assert code == 201, got
    uid = pods(cluster, ns)["db-0"]["metadata"]["uid"]
    code, sts = cluster.admin("POST", STS.format(ns=ns), sts_body("db", 1))
    assert code == 201, sts
    adopted = wait_for(lambda: (p := pods(cluster, ns)["db-0"])["metadata"].get(
        "ownerReferences") and p)
    assert adopted["metadata"]["uid"] == uid
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]
    # once Running and Ready (OrderedReady checks in order), it gets the identity labels;
    # then, as upstream's rolling update does, a member without the update revision's
    # controller-revision-hash is replaced: read whichever db-0 is there
    make_ready(cluster, ns, "db-0")
    wait_for(lambda: (p := pods(cluster, ns).get("db-0")) is not None and p["metadata"][
        "labels"].get("statefulset.kubernetes.io/pod-name") == "db-0")
    assert "ownerReferences" not in pods(cluster, ns)["other-0"]["metadata"]


def test_min_ready_seconds_holds_back_the_next_ordinal(
        cluster: Cluster, controller: StatefulSetController) -> None:
    ns = cluster.namespace("sts-minready")
    code, got = cluster.admin("POST", STS.format(ns=ns), sts_body("web", 2, minReadySeconds=2))
    assert code == 201, got
    wait_for(lambda: "web-0" in pods(cluster, ns))
    make_ready(cluster, ns, "web-0")
    st = wait_for(lambda: (s := status(cluster, ns, "web")).get("readyReplicas") == 1 and s)
    assert st["availableReplicas"] == 0
    assert still(lambda: set(pods(cluster, ns)) == {"web-0"}, 1.0)
    wait_for(lambda: "web-1" in pods(cluster, ns), timeout=5)
    wait_for(lambda: status(cluster, ns, "web")["availableReplicas"] == 1)


def test_history_is_trimmed_to_the_limit(cluster: Cluster,
                                         controller: StatefulSetController) -> None:
    ns = cluster.namespace("sts-history")
    code, got = cluster.admin("POST", STS.format(ns=ns), sts_body("web", 0,
                                                                  revisionHistoryLimit=1))
    assert code == 201, got
    for tag in ("2", "3", "4"):
        before = wait_for(lambda: status(cluster, ns, "web").get("updateRevision"))
        patch = {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": f"busybox:{tag}"}]}}}}
        code, got = cluster.admin("PATCH", STS.format(ns=ns) + "/web", patch,
                                  "application/merge-patch+json")
        assert code == 200, got
        wait_for(lambda b=before: status(cluster, ns, "web").get("updateRevision") != b)

    def revisions() -> list[dict[str, Any]]:
        code, body = cluster.admin("GET", f"/apis/apps/v1/namespaces/{ns}/controllerrevisions")
        assert code == 200, body
        return body["items"]  # type: ignore[no-any-return]

    # the live revision and one of history
    items = wait_for(lambda: len(r := revisions()) == 2 and r)
    assert sorted(r["revision"] for r in items) == [3, 4]
    st = status(cluster, ns, "web")
    assert st["currentRevision"] == st["updateRevision"]
    assert st["observedGeneration"] == 4
