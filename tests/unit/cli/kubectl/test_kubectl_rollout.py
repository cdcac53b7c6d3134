"""rollout's pure parts as tables: the status viewers of the three kinds (kubectl's
polymorphichelpers/rollout_status.go, line for line), the revision a Deployment undo
goes back to, the patches restart/pause/resume send, and how failures are printed."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.api.revision_patch import template_patch
from pykubelet.cli.kubectl.describe import selector_string
from pykubelet.cli.kubectl.discovery import Mapping
from pykubelet.cli.kubectl.resources import Target
from pykubelet.cli.kubectl.revisions import (
    equal_ignore_hash,
    replicaset_for_revision,
    typed_view,
)
from pykubelet.cli.kubectl.rollout import failure_text, patch_for
from pykubelet.cli.kubectl.rollout_status import (
    RolloutError,
    daemonset_status,
    deployment_status,
    statefulset_status,
)
from pykubelet.client.rest import StatusError

Obj = dict[str, Any]


def deploy(gen: int = 1, observed: int = 1, replicas: int = 3, updated: int = 3,
           total: int = 3, available: int = 3, reason: str = "", revision: str = "2") -> Obj:
    conds = [{"type": "Progressing", "status": "True", "reason": reason}] if reason else []
    return {"metadata": {"name": "web", "generation": gen,
                         "annotations": {"deployment.kubernetes.io/revision": revision}},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "updatedReplicas": updated,
                       "replicas": total, "availableReplicas": available,
                       "conditions": conds}}


@pytest.mark.parametrize(("obj", "want"), [
    (deploy(gen=2, observed=1), ("Waiting for deployment spec update to be observed...\n",
                                 False)),
    (deploy(updated=1, total=3, available=1),
     ('Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been '
      "updated...\n", False)),
    (deploy(updated=3, total=4, available=3),
     ('Waiting for deployment "web" rollout to finish: 1 old replicas are pending '
      "termination...\n", False)),
    (deploy(available=1),
     ('Waiting for deployment "web" rollout to finish: 1 of 3 updated replicas are '
      "available...\n", False)),
    (deploy(), ('deployment "web" successfully rolled out\n', True)),
])
def test_deployment_status(obj: Obj, want: tuple[str, bool]) -> None:
    assert deployment_status(obj) == want


def test_deployment_status_errors() -> None:
    with pytest.raises(RolloutError, match='deployment "web" exceeded its progress deadline'):
        deployment_status(deploy(reason="ProgressDeadlineExceeded"))
    with pytest.raises(RolloutError, match=r"desired revision \(1\) is different from the "
                                           r"running revision \(2\)"):
        deployment_status(deploy(), revision=1)
    assert deployment_status(deploy(), revision=2)[1]


def ds(desired: int, updated: int, available: int, strategy: str = "RollingUpdate") -> Obj:
    return {"metadata": {"name": "agent", "generation": 1},
            "spec": {"updateStrategy": {"type": strategy}},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": desired,
                       "updatedNumberScheduled": updated, "numberAvailable": available}}


@pytest.mark.parametrize(("obj", "want"), [
    (ds(3, 1, 1), ('Waiting for daemon set "agent" rollout to finish: 1 out of 3 new pods '
                   "have been updated...\n", False)),
    (ds(3, 3, 2), ('Waiting for daemon set "agent" rollout to finish: 2 of 3 updated pods '
                   "are available...\n", False)),
    (ds(3, 3, 3), ('daemon set "agent" successfully rolled out\n', True)),
])
def test_daemonset_status(obj: Obj, want: tuple[str, bool]) -> None:
    assert daemonset_status(obj) == want


def test_daemonset_status_needs_rolling_update() -> None:
    with pytest.raises(RolloutError, match="only available for RollingUpdate strategy"):
        daemonset_status(ds(1, 1, 1, strategy="OnDelete"))


def sts(ready: int, updated: int, partition: int | None = None, current: str = "r1",
        update: str = "r1", observed: int = 1) -> Obj:
    strategy: Obj = {"type": "RollingUpdate"}
    if partition is not None:
        strategy["rollingUpdate"] = {"partition": partition}
    return {"metadata": {"name": "db", "generation": 1},
            "spec": {"replicas": 3, "updateStrategy": strategy},
            "status": {"observedGeneration": observed, "readyReplicas": ready,
                       "updatedReplicas": updated, "currentReplicas": 3,
                       "currentRevision": current, "updateRevision": update}}


@pytest.mark.parametrize(("obj", "want"), [
    (sts(3, 3, observed=0), ("Waiting for statefulset spec update to be observed...\n", False)),
    (sts(1, 1), ("Waiting for 2 pods to be ready...\n", False)),
    (sts(3, 1, partition=1), ("Waiting for partitioned roll out to finish: 1 out of 2 new "
                              "pods have been updated...\n", False)),
    (sts(3, 2, partition=1), ("partitioned roll out complete: 2 new pods have been "
                              "updated...\n", True)),
    (sts(3, 1, update="r2"), ("waiting for statefulset rolling update to complete 1 pods at "
                              "revision r2...\n", False)),
    (sts(3, 3), ("statefulset rolling update complete 3 pods at revision r1...\n", True)),
])
def test_statefulset_status(obj: Obj, want: tuple[str, bool]) -> None:
    assert statefulset_status(obj) == want


def rs(revision: str | None) -> Obj:
    ann = {"deployment.kubernetes.io/revision": revision} if revision is not None else {}
    return {"metadata": {"name": f"rs-{revision}", "annotations": ann}}


def test_undo_goes_back_to_the_previous_revision_or_the_one_asked() -> None:
    old = [rs("1"), rs("3"), rs(None)]
    assert replicaset_for_revision(old, rs("4"), 0, "web")["metadata"]["name"] == "rs-3"
    assert replicaset_for_revision(old, rs("4"), 1, "web")["metadata"]["name"] == "rs-1"
    with pytest.raises(RolloutError, match="unable to find specified revision 7 in history"):
        replicaset_for_revision(old, rs("4"), 7, "web")
    with pytest.raises(RolloutError, match='no rollout history found for deployment "web"'):
        replicaset_for_revision([], rs("1"), 0, "web")


def test_templates_compare_without_the_hash_label() -> None:
    a = {"metadata": {"labels": {"app": "w", "pod-template-hash": "abc"}}, "spec": {"x": 1}}
    b = {"metadata": {"labels": {"app": "w"}}, "spec": {"x": 1, "volumes": []}}
    assert equal_ignore_hash(a, b)
    assert not equal_ignore_hash(a, {"metadata": {"labels": {"app": "v"}}, "spec": {"x": 1}})


def target(kind: str, group: str = "apps") -> Target:
    return Target(Mapping(group, "v1", kind.lower() + "s", kind, True), "web", "ns")


@pytest.mark.parametrize(("sub", "kind", "spec", "want"), [
    ("pause", "Deployment", {}, {"spec": {"paused": True}}),
    ("resume", "Deployment", {"paused": True}, {"spec": {"paused": None}}),
    ("restart", "Deployment", {}, {"spec": {"template": {"metadata": {"annotations": {
        "kubectl.kubernetes.io/restartedAt": "NOW"}}}}}),
    ("restart", "DaemonSet", {"paused": True}, {"spec": {"template": {"metadata": {
        "annotations": {"kubectl.kubernetes.io/restartedAt": "NOW"}}}}}),
    ("restart", "StatefulSet", {"template": {"metadata": {"annotations": {
        "kubectl.kubernetes.io/restartedAt": "NOW"}}}}, {}),
])
def test_patches(sub: str, kind: str, spec: Obj, want: Obj) -> None:
    assert patch_for(sub, target(kind), {"spec": spec}, "NOW") == want


@pytest.mark.parametrize(("sub", "kind", "group", "spec", "message"), [
    ("pause", "Deployment", "apps", {"paused": True}, "is already paused"),
    ("resume", "Deployment", "apps", {}, "is not paused"),
    ("pause", "DaemonSet", "apps", {}, "pausing is not supported"),
    ("resume", "Job", "batch", {}, "resuming is not supported"),
    ("restart", "Job", "batch", {}, "restarting is not supported"),
    ("restart", "Deployment", "apps", {"paused": True},
     "can't restart paused deployment (run rollout resume first)"),
])
def test_patch_refusals(sub: str, kind: str, group: str, spec: Obj, message: str) -> None:
    with pytest.raises(RolloutError) as err:
        patch_for(sub, target(kind, group), {"spec": spec}, "NOW")
    assert str(err.value) == message


def test_failures_print_as_kubectls_aggregate() -> None:
    missing = StatusError({"reason": "NotFound", "message": 'deployments.apps "x" not found'},
                          404)
    assert failure_text(["boom"]) == "error: boom"
    assert failure_text(['error: jobs.batch "j" pausing is not supported']) == (
        'error: jobs.batch "j" pausing is not supported')
    assert failure_text([missing]) == 'Error from server (NotFound): deployments.apps "x" not found'
    assert failure_text([missing, "no rollout history found"]) == (
        'Error from server (NotFound): deployments.apps "x" not found\n'
        "no rollout history found")


def test_selector_string_is_label_selector_as_selector() -> None:
    sel = {"matchLabels": {"b": "2", "a": "1"},
           "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                {"key": "x", "operator": "DoesNotExist"}]}
    assert selector_string(sel) == "a=1,b=2,env in (dev,prod),!x"
    assert selector_string(None) == "<none>"
    assert selector_string({}) == ""


def test_typed_view_and_template_patch_write_what_go_writes() -> None:
    """A revision's object as kubectl's typed StatefulSet prints it, and the bytes its
    rollbacker compares: the template's creationTimestamp null and containers' resources
    written, zero omitempty fields dropped, the always-written ones kept at 0."""
    sts = {"spec": {"minReadySeconds": 0, "template": {
        "metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c"}]}}},
        "status": {"replicas": 2, "readyReplicas": 0, "currentRevision": "", "conditions": []}}
    view = typed_view("StatefulSet", sts)
    assert view["spec"] == {"template": {
        "metadata": {"labels": {"a": "1"}, "creationTimestamp": None},
        "spec": {"containers": [{"name": "c", "resources": {}}]}}}
    assert view["status"] == {"replicas": 2, "availableReplicas": 0}
    assert "creationTimestamp" not in sts["spec"]["template"]["metadata"]  # a copy
    ds = typed_view("DaemonSet", {"status": {"numberUnavailable": 0, "numberAvailable": 2}})
    assert ds["status"] == {"numberAvailable": 2, "currentNumberScheduled": 0,
                            "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                            "numberReady": 0}
    assert template_patch(sts) == {"spec": {"template": {
        "$patch": "replace", "metadata": {"labels": {"a": "1"}, "creationTimestamp": None},
        "spec": {"containers": [{"name": "c", "resources": {}}]}}}}


def test_struct_order_of_a_typed_statefulset() -> None:
    """-o json of a typed object: fields in declaration order, maps and unknown types
    sorted, lists item by item."""
    from pykubelet.cli.kubectl.struct_order import in_struct_order

    sts = {"status": {"replicas": 1, "observedGeneration": 2}, "apiVersion": "apps/v1",
           "spec": {"template": {"spec": {"containers": [
               {"imagePullPolicy": "Always", "name": "c", "image": "i",
                "livenessProbe": {"b": 1, "a": 2}}]}, "metadata": {"labels": {"z": "1", "a": "2"}}},
               "replicas": 1, "zzUnknown": True},
           "kind": "StatefulSet", "metadata": {"uid": "u", "name": "s"}}
    out = in_struct_order(sts, "StatefulSet")
    assert list(out) == ["kind", "apiVersion", "metadata", "spec", "status"]
    assert list(out["metadata"]) == ["name", "uid"]
    assert list(out["spec"]) == ["replicas", "template", "zzUnknown"]
    assert list(out["spec"]["template"]) == ["metadata", "spec"]
    assert list(out["spec"]["template"]["metadata"]["labels"]) == ["a", "z"]
    c = out["spec"]["template"]["spec"]["containers"][0]
    assert list(c) == ["name", "image", "livenessProbe", "imagePullPolicy"]
    assert list(c["livenessProbe"]) == ["a", "b"]
    assert list(out["status"]) == ["observedGeneration", "replicas"]
