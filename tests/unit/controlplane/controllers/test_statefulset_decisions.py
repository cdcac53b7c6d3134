"""The StatefulSet controller's decisions as tables (stateful_set_control_test.go's cases):
which ordinal is created, deleted or updated next under OrderedReady and Parallel, with
minReadySeconds, failed pods, rolling updates with a partition and OnDelete; the status
counts; the revisions chosen, named and trimmed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.api.apps_statefulset import POD_INDEX_LABEL, POD_NAME_LABEL, REVISION_LABEL
from pykubelet.controlplane.controllers import statefulset_decisions as sd

NOW = dt.datetime(2026, 12, 3, 12, 0, 0, tzinfo=dt.UTC)
Obj = dict[str, Any]


def sset(replicas: int = 3, policy: str = "OrderedReady", partition: int | None = 0,
         strategy: str = "RollingUpdate", min_ready: int = 0, image: str = "busybox",
         start: int | None = None) -> Obj:
    update: Obj = {"type": strategy}
    if partition is not None:
        update["rollingUpdate"] = {"partition": partition}
    spec: Obj = {"replicas": replicas, "serviceName": "svc", "podManagementPolicy": policy,
                 "updateStrategy": update, "minReadySeconds": min_ready,
                 "revisionHistoryLimit": 2,
                 "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}}
    if start is not None:
        spec["ordinals"] = {"start": start}
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 4},
            "spec": spec}


def pod(ordinal: int, state: str = "ready", rev: str = "A", ready_for: int = 60) -> Obj:
    """A pod of the set: ``state`` is ready, pending (Running, not Ready), failed,
    terminating (ready but being deleted)."""
    since = (NOW - dt.timedelta(seconds=ready_for)).strftime("%Y-%m-%dT%H:%M:%SZ")
    phase = {"ready": "Running", "pending": "Pending", "failed": "Failed",
             "terminating": "Running", "unready": "Running"}[state]
    cond = "True" if state in ("ready", "terminating") else "False"
    m: Obj = {"name": f"web-{ordinal}", "namespace": "ns",
              "labels": {"app": "web", POD_NAME_LABEL: f"web-{ordinal}",
                         POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: rev}}
    if state == "terminating":
        m["deletionTimestamp"] = since
    return {"metadata": m, "status": {"phase": phase, "conditions": [
        {"type": "Ready", "status": cond, "lastTransitionTime": since}]}}


def decide(s: Obj, pods: list[Obj], update: str = "A") -> sd.Plan:
    return sd.plan(s, pods, s, s, "A", update, 0, NOW)


def summary(p: sd.Plan) -> list[str]:
    return [f"{a.verb} {a.name}" + (f" ({a.why})" if a.why else "") for a in p.actions]


@pytest.mark.parametrize(("s", "pods", "want"), [
    # OrderedReady: one at a time, each waiting for its predecessor to be Running and Ready
    (sset(), [], ["create web-0"]),
    (sset(), [pod(0, "pending")], []),
    (sset(), [pod(0, "unready")], []),
    (sset(), [pod(0)], ["create web-1"]),
    (sset(), [pod(0), pod(1)], ["create web-2"]),
    (sset(), [pod(0), pod(1), pod(2)], []),
    (sset(), [pod(0), pod(2)], ["create web-1"]),
    # minReadySeconds: ready for 5 s of 10 is not yet available
    (sset(min_ready=10), [pod(0, ready_for=5)], []),
    (sset(min_ready=10), [pod(0, ready_for=30)], ["create web-1"]),
    # Parallel: every missing pod at once, whatever the others' state
    (sset(policy="Parallel"), [], ["create web-0", "create web-1", "create web-2"]),
    (sset(policy="Parallel"), [pod(1, "pending")], ["create web-0", "create web-2"]),
    # start ordinal
    (sset(replicas=2, start=5), [], ["create web-5"]),
    (sset(replicas=2, start=5), [pod(5)], ["create web-6"]),
])
def test_which_ordinal_is_created_next(s: Obj, pods: list[Obj], want: list[str]) -> None:
    assert summary(decide(s, pods)) == want


@pytest.mark.parametrize(("s", "pods", "want"), [
    # OrderedReady scales down from the highest ordinal, one at a time
    (sset(replicas=1), [pod(0), pod(1), pod(2)], ["delete web-2 (scale down)"]),
    (sset(replicas=1), [pod(0), pod(1)], ["delete web-1 (scale down)"]),
    (sset(replicas=0), [pod(0)], ["delete web-0 (scale down)"]),
    # a terminating condemned pod is waited for
    (sset(replicas=1), [pod(0), pod(1), pod(2, "terminating")], []),
    # halt: an unhealthy pod in range stops scale down
    (sset(replicas=1), [pod(0, "unready"), pod(1), pod(2)], []),
    # the first unhealthy pod may go; a healthy higher one goes first
    (sset(replicas=1), [pod(0), pod(1), pod(2, "unready")], ["delete web-2 (scale down)"]),
    (sset(replicas=1), [pod(0), pod(1, "unready"), pod(2)], ["delete web-2 (scale down)"]),
    # Parallel: all condemned at once
    (sset(replicas=1, policy="Parallel"), [pod(0), pod(1, "unready"), pod(2)],
     ["delete web-2 (scale down)", "delete web-1 (scale down)"]),
])
def test_scale_down_in_reverse_order(s: Obj, pods: list[Obj], want: list[str]) -> None:
    assert summary(decide(s, pods)) == want


@pytest.mark.parametrize(("s", "pods", "want"), [
    (sset(), [pod(0), pod(1, "failed"), pod(2)], ["delete web-1 (failed)"]),
    (sset(), [pod(0, "failed"), pod(1, "failed")], ["delete web-0 (failed)"]),
    (sset(policy="Parallel"), [pod(0, "failed"), pod(1, "failed"), pod(2)],
     ["delete web-0 (failed)", "delete web-1 (failed)"]),
])
def test_failed_pods_are_deleted_to_be_recreated(s: Obj, pods: list[Obj],
                                                 want: list[str]) -> None:
    assert summary(decide(s, pods)) == want


@pytest.mark.parametrize(("s", "pods", "want"), [
    # the highest ordinal not at the update revision goes first, one at a time
    (sset(), [pod(0), pod(1), pod(2)], ["delete web-2 (update)"]),
    (sset(), [pod(0), pod(1), pod(2, rev="B")], ["delete web-1 (update)"]),
    (sset(), [pod(0), pod(1), pod(2, "unready", rev="B")], []),
    (sset(), [pod(0), pod(1, rev="B"), pod(2, rev="B")], ["delete web-0 (update)"]),
    (sset(), [pod(0, rev="B"), pod(1, rev="B"), pod(2, rev="B")], []),
    # a partition keeps the ordinals below it at the current revision
    (sset(partition=2), [pod(0), pod(1), pod(2)], ["delete web-2 (update)"]),
    (sset(partition=2), [pod(0), pod(1), pod(2, rev="B")], []),
    (sset(partition=3), [pod(0), pod(1), pod(2)], []),
    # OnDelete: the user deletes, the controller recreates at the update revision
    (sset(strategy="OnDelete", partition=None), [pod(0), pod(1), pod(2)], []),
    # scaling comes before updating
    (sset(replicas=2), [pod(0), pod(1), pod(2)], ["delete web-2 (scale down)"]),
])
def test_rolling_update_order_and_partition(s: Obj, pods: list[Obj], want: list[str]) -> None:
    assert summary(decide(s, pods, update="B")) == want


def test_new_pod_identity_and_revision() -> None:
    p = decide(sset(), []).actions[0].pod
    assert p["metadata"]["name"] == "web-0"
    assert p["metadata"]["namespace"] == "ns"
    assert p["metadata"]["labels"] == {"app": "web", POD_NAME_LABEL: "web-0",
                                       POD_INDEX_LABEL: "0", REVISION_LABEL: "A"}
    assert p["spec"]["hostname"] == "web-0"
    assert p["spec"]["subdomain"] == "svc"
    ref = p["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
        "StatefulSet", "web", "u1", True)


@pytest.mark.parametrize(("partition", "ordinal", "want"), [
    (2, 0, "A"), (2, 1, "A"), (2, 2, "B"), (0, 0, "B"),
])
def test_new_pods_below_the_partition_are_at_the_current_revision(
        partition: int, ordinal: int, want: str) -> None:
    current, update = sset(partition=partition), sset(partition=partition, image="busybox:2")
    p = sd.new_versioned_pod(current, update, "A", "B", ordinal)
    assert p["metadata"]["labels"][REVISION_LABEL] == want
    image = p["spec"]["containers"][0]["image"]
    assert image == ("busybox" if want == "A" else "busybox:2")


def test_status_counts_and_completed_rolling_update() -> None:
    s = sset(min_ready=10)
    pods = [pod(0, rev="A"), pod(1, rev="B", ready_for=5), pod(2, "pending", rev="B")]
    st = decide(s, pods, update="B").status
    assert st == {"observedGeneration": 4, "currentRevision": "A", "updateRevision": "B",
                  "collisionCount": 0, "replicas": 3, "readyReplicas": 2,
                  "availableReplicas": 1, "currentReplicas": 1, "updatedReplicas": 2}
    sd.complete_rolling_update(s, st)
    assert st["currentRevision"] == "A"
    done = {"replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "currentReplicas": 0,
            "currentRevision": "A", "updateRevision": "B"}
    sd.complete_rolling_update(s, done)
    assert (done["currentRevision"], done["currentReplicas"]) == ("B", 3)
    assert sd.status_body(s, {"replicas": 0, "collisionCount": 0}) == {
        "replicas": 0, "collisionCount": 0, "availableReplicas": 0}


def rev(s: Obj, number: int, name: str | None = None) -> Obj:
    r = sd.new_revision(s, number, 0)
    if name:
        r["metadata"]["name"] = name
    return r


def test_revisions_chosen_reused_renumbered() -> None:
    a, b = sset(), sset(image="busybox:2")
    chosen = sd.choose_revisions(a, [])
    assert chosen.create
    assert chosen.update["revision"] == 1
    assert chosen.update["metadata"]["name"].startswith("web-")
    assert chosen.update["data"]["spec"]["template"]["$patch"] == "replace"
    assert chosen.update["metadata"]["labels"]["app"] == "web"
    hash_ = chosen.update["metadata"]["labels"]["controller.kubernetes.io/hash"]
    assert chosen.update["metadata"]["name"] == f"web-{hash_}"
    r1, r2 = rev(a, 1), rev(b, 2)
    chosen = sd.choose_revisions(b, [r1, r2])  # unchanged: the newest is reused
    assert (chosen.create, chosen.renumber, chosen.update is r2) == (False, None, True)
    chosen = sd.choose_revisions(a, [r1, r2])  # an undo: the older one becomes the newest
    assert (chosen.create, chosen.renumber, chosen.update is r1) == (False, 3, True)
    assert sd.apply_revision(b, r1)["spec"]["template"] == a["spec"]["template"]
    # the name is stable for the same template and moves with a collision count
    assert sd.new_revision(a, 1, 0)["metadata"]["name"] == r1["metadata"]["name"]
    assert sd.new_revision(a, 1, 1)["metadata"]["name"] != r1["metadata"]["name"]
    assert sd.new_revision(b, 1, 0)["metadata"]["name"] != r1["metadata"]["name"]


def test_history_beyond_the_limit_is_deleted_oldest_first_never_live() -> None:
    s = sset()  # revisionHistoryLimit 2
    revs = [rev(s, n, f"web-{n}") for n in range(1, 7)]
    pods = [pod(0, rev="web-2")]
    gone = sd.history_to_delete(s, pods, revs, "web-5", "web-6")
    # live: web-2 (a pod), web-5 (current), web-6 (update); history web-1, 3, 4 keeps 2
    assert [r["metadata"]["name"] for r in gone] == ["web-1"]


@pytest.mark.parametrize(("name", "want"), [
    ("web-0", ("web", 0)), ("my-db-12", ("my-db", 12)), ("web", ("", -1)),
    ("web-x", ("", -1)), ("web-99999999999", ("web", -1)),
])
def test_parent_and_ordinal(name: str, want: tuple[str, int]) -> None:
    assert sd.parent_and_ordinal({"metadata": {"name": name}}) == want


def test_claim_adopts_member_orphans_and_releases_non_matching() -> None:
    s = sset()

    def owned_by(p: Obj, uid: str) -> Obj:
        p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                             "name": "web", "uid": uid, "controller": True}]
        return p

    orphan, mine, theirs = pod(0), owned_by(pod(1), "u1"), owned_by(pod(2), "u2")
    relabelled = owned_by(pod(3), "u1")
    relabelled["metadata"]["labels"]["app"] = "other"
    stranger = pod(4)
    stranger["metadata"]["name"] = "db-4"  # the selector picks it, the name does not
    claim = sd.claim_pods(s, [orphan, mine, theirs, relabelled, stranger])
    assert [p["metadata"]["name"] for p in claim.owned] == ["web-0", "web-1"]
    assert [p["metadata"]["name"] for p in claim.adopt] == ["web-0"]
    assert [p["metadata"]["name"] for p in claim.release] == ["web-3"]
    deleting = sset()
    deleting["metadata"]["deletionTimestamp"] = "2026-12-03T12:00:00Z"
    claim = sd.claim_pods(deleting, [pod(0), owned_by(pod(1), "u1")])
    assert (claim.adopt, [p["metadata"]["name"] for p in claim.owned]) == ([], ["web-1"])


def with_max_unavailable(value: int | str, partition: int = 0) -> Obj:
    s = sset(replicas=4, partition=partition)
    s["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = value
    return s


@pytest.mark.parametrize(("s", "pods", "want"), [
    (with_max_unavailable(2), [pod(0), pod(1), pod(2), pod(3)],
     ["delete web-3 (update)", "delete web-2 (update)"]),
    (with_max_unavailable("50%"), [pod(0), pod(1), pod(2), pod(3)],
     ["delete web-3 (update)", "delete web-2 (update)"]),
    (with_max_unavailable("10%"), [pod(0), pod(1), pod(2), pod(3)],
     ["delete web-3 (update)"]),  # rounded up, at least one
    (with_max_unavailable(2), [pod(0), pod(1), pod(2), pod(3, "unready", rev="B")],
     ["delete web-2 (update)"]),
    (with_max_unavailable(2, partition=3), [pod(0), pod(1), pod(2), pod(3)],
     ["delete web-3 (update)"]),
])
def test_rolling_update_with_max_unavailable(s: Obj, pods: list[Obj], want: list[str]) -> None:
    # Parallel, so the unready pod does not halt the pass over the replicas first
    s["spec"]["podManagementPolicy"] = "Parallel"
    assert summary(decide(s, pods, update="B")) == want


def test_requeue_when_a_ready_pod_turns_available() -> None:
    assert sd.requeue_after(sset(), [pod(0, ready_for=1)], NOW) is None
    s = sset(min_ready=10)
    assert sd.requeue_after(s, [pod(0, ready_for=30)], NOW) is None
    assert sd.requeue_after(s, [pod(0, "pending")], NOW) is None
    wait = sd.requeue_after(s, [pod(0, ready_for=30), pod(1, ready_for=4),
                                pod(2, ready_for=7)], NOW)
    assert wait == pytest.approx(3.05)


def test_revision_data_is_what_kubectl_computes() -> None:
    """getStatefulSetPatch as Go's json.Marshal writes the typed set: the template's
    creationTimestamp null, each container's resources struct, keys sorted; kubectl's
    rollback compares those bytes with the revision's to skip an undo to the current
    template. Applying the revision gives the template back as it was."""
    s = sset()
    data = sd.revision_patch(s)
    template = data["spec"]["template"]
    assert list(template) == ["$patch", "metadata", "spec"]
    assert template["metadata"]["creationTimestamp"] is None
    assert all(c["resources"] == {} for c in template["spec"]["containers"])
    assert list(template["metadata"]) == sorted(template["metadata"])
    assert sd.apply_revision(s, {"data": data})["spec"]["template"] == s["spec"]["template"]
    assert "creationTimestamp" not in s["spec"]["template"].get("metadata", {})
