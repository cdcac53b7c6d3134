"""The Job controller claims pods as upstream's getPodsForJob (PodControllerRefManager's
ClaimPods with the job-tracking finalizer): an orphan its selector picks is adopted (the
Job as controller, the finalizer added) and counted instead of a new pod being made; a pod
it controls whose labels no longer match is released (reference and finalizer dropped);
pods with another controller, or not matching, are left alone; an orphan's creation
queues the Jobs that select it. Over the in-process registry, one sync at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cp_wait import wait_for

from pykubelet.api.batch import JOB_TRACKING_FINALIZER
from pykubelet.controlplane.controllers.job import JobController

NS = "default"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
PODS = f"/api/v1/namespaces/{NS}/pods"
LABELS = {"app": "adopt-me"}


def manual_job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"manualSelector": True, "selector": {"matchLabels": LABELS},
                     "completions": 1, "parallelism": 1,
                     "template": {"metadata": {"labels": LABELS}, "spec": {
                         "containers": [{"name": "c", "image": "busybox"}],
                         "restartPolicy": "Never"}}}}


def pod(name: str, labels: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels, **meta},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     "restartPolicy": "Never"}}


def pods_by_name(api: Any) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in api.call("GET", PODS).json()["items"]}


class Keys:
    """A stand-in work queue: the keys the informer handler queued."""

    def __init__(self) -> None:
        self.added: list[str] = []

    def add(self, key: str) -> None:
        self.added.append(key)


@pytest.fixture
def ctl(api: Any) -> Iterator[JobController]:
    async def make() -> JobController:
        return JobController(api.cp.registry)

    controller: JobController = api._run(make())
    try:
        yield controller
    finally:  # finalizers off, then everything deleted
        for p in api.call("GET", PODS).json()["items"]:
            name = p["metadata"]["name"]
            api.call("PATCH", f"{PODS}/{name}", {"metadata": {"finalizers": None}},
                     content_type="application/merge-patch+json")
            api.call("DELETE", f"{PODS}/{name}?gracePeriodSeconds=0")
        for j in api.call("GET", JOBS).json()["items"]:
            api.call("DELETE", f"{JOBS}/{j['metadata']['name']}?propagationPolicy=Background")


def test_orphan_matching_the_selector_is_adopted_and_counted(api: Any,
                                                            ctl: JobController) -> None:
    other_owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "someone",
                    "uid": "0b5e7a4e-0000-4000-8000-000000000001", "controller": True}]
    for body in (pod("stray", LABELS), pod("unrelated", {"app": "other"}),
                 pod("taken", LABELS, ownerReferences=other_owner)):
        r = api.call("POST", PODS, body)
        assert r.status == 201, r.body
    r = api.call("POST", JOBS, manual_job("adopter"))
    assert r.status == 201, r.body
    job_uid = r.json()["metadata"]["uid"]

    api._run(ctl.sync(f"{NS}/adopter"))

    pods = pods_by_name(api)
    assert sorted(pods) == ["stray", "taken", "unrelated"]  # no new pod: stray fills it
    stray = pods["stray"]["metadata"]
    assert stray["ownerReferences"] == [{
        "apiVersion": "batch/v1", "kind": "Job", "name": "adopter", "uid": job_uid,
        "controller": True, "blockOwnerDeletion": True}]
    assert stray["finalizers"] == [JOB_TRACKING_FINALIZER]
    assert "ownerReferences" not in pods["unrelated"]["metadata"]
    assert pods["taken"]["metadata"]["ownerReferences"] == other_owner
    assert not pods["taken"]["metadata"].get("finalizers")
    assert api.call("GET", f"{JOBS}/adopter").json()["status"]["active"] == 1


def test_controlled_pod_no_longer_matching_is_released(api: Any, ctl: JobController) -> None:
    r = api.call("POST", JOBS, manual_job("releaser"))
    assert r.status == 201, r.body
    api._run(ctl.sync(f"{NS}/releaser"))
    [made] = pods_by_name(api).values()
    assert made["metadata"]["finalizers"] == [JOB_TRACKING_FINALIZER]
    name = made["metadata"]["name"]
    r = api.call("PATCH", f"{PODS}/{name}", {"metadata": {"labels": {"app": "gone"}}},
                 content_type="application/merge-patch+json")
    assert r.status == 200, r.body

    api._run(ctl.sync(f"{NS}/releaser"))

    pods = pods_by_name(api)
    released = pods[name]["metadata"]
    assert "ownerReferences" not in released
    assert not released.get("finalizers")
    assert len(pods) == 2  # a replacement made for the released one


def test_orphan_pod_created_queues_the_jobs_selecting_it(api: Any,
                                                        ctl: JobController) -> None:
    r = api.call("POST", JOBS, manual_job("watcher"))
    assert r.status == 201, r.body
    keys = Keys()
    ctl.queue = keys  # type: ignore[assignment]
    api._run(_start(ctl))
    try:
        wait_for(lambda: f"{NS}/watcher" in keys.added)  # the initial list
        keys.added.clear()
        assert api.call("POST", PODS, pod("other", {"app": "other"})).status == 201
        assert api.call("POST", PODS, pod("orphan", LABELS)).status == 201
        wait_for(lambda: keys.added)
        assert keys.added == [f"{NS}/watcher"]  # for the orphan it selects only
    finally:
        api._run(_stop(ctl))


async def _start(ctl: JobController) -> None:
    ctl.start()


async def _stop(ctl: JobController) -> None:
    ctl.stop()


def test_orphan_pod_with_the_tracking_finalizer_has_it_removed(api: Any,
                                                              ctl: JobController) -> None:
    """syncOrphanPod: a pod left with the job-tracking finalizer and no Job to count it
    (its Job deleted with --cascade=orphan: the collector dropped the reference) has the
    finalizer removed, or its deletion would hang; one a live Job controls, or another
    kind of controller owns, keeps it. Its appearance queues it for that."""
    r = api.call("POST", JOBS, manual_job("live"))
    assert r.status == 201, r.body
    live = r.json()
    live_ref = [{"apiVersion": "batch/v1", "kind": "Job", "name": "live",
                 "uid": live["metadata"]["uid"], "controller": True}]
    rs_ref = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
               "uid": "0b5e7a4e-0000-4000-8000-000000000002", "controller": True}]
    fin = [JOB_TRACKING_FINALIZER]
    keys = Keys()
    ctl.orphans = keys  # type: ignore[assignment]
    api._run(_start(ctl))
    try:
        for body in (pod("left", {"app": "x"}, finalizers=fin),
                     pod("owned", LABELS, finalizers=fin, ownerReferences=live_ref),
                     pod("other", {"app": "x"}, finalizers=fin, ownerReferences=rs_ref)):
            r = api.call("POST", PODS, body)
            assert r.status == 201, r.body
        wait_for(lambda: f"{NS}/left" in keys.added)
    finally:
        api._run(_stop(ctl))
    for name in ("left", "owned", "other"):
        api._run(ctl.sync_orphan_pod(f"{NS}/{name}"))
    pods = pods_by_name(api)
    assert not pods["left"]["metadata"].get("finalizers")
    assert pods["owned"]["metadata"]["finalizers"] == fin
    assert pods["other"]["metadata"]["finalizers"] == fin
    api._run(ctl.sync_orphan_pod(f"{NS}/gone"))  # a pod already gone: nothing to do
