"""The DaemonSet controller's decisions as tables (pkg/controller/daemon): which nodes run
a daemon pod, what manage creates and deletes, what a rolling update picks, the status
counts, the history kept; no server."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.controlplane.controllers import daemonset_decisions as dd

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
LONG_AGO = "2026-01-01T11:00:00Z"
HASH = "newhash"


def node(name: str, labels: dict[str, str] | None = None,
         taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    n: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "spec": {}}
    if taints:
        n["spec"]["taints"] = taints
    return n


def ds(**pod_spec: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "busybox"}], **pod_spec}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "d", "namespace": "ns", "uid": "u-d", "generation": 2},
            "spec": {"selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}}, "spec": spec},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                         "maxUnavailable": 1, "maxSurge": 0}},
                     "revisionHistoryLimit": 10}}


def surge_ds(max_surge: int | str = 1) -> dict[str, Any]:
    d = ds()
    d["spec"]["updateStrategy"]["rollingUpdate"] = {"maxUnavailable": 0, "maxSurge": max_surge}
    return d


def pod(name: str, node_name: str, hash_: str = HASH, ready: bool = True,
        phase: str = "Running", created: str = LONG_AGO, bound: bool = True,
        deleting: bool = False) -> dict[str, Any]:
    p: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created,
                     "labels": {"app": "d", dd.CONTROLLER_REVISION_HASH: hash_}},
        "spec": {"nodeName": node_name} if bound else {
            "affinity": dd.replace_node_name_affinity(None, node_name)},
        "status": {"phase": phase, "conditions": [
            {"type": "Ready", "status": "True" if ready else "False",
             "lastTransitionTime": LONG_AGO}]}}
    if deleting:
        p["metadata"]["deletionTimestamp"] = LONG_AGO
    return p


def taint(key: str, effect: str) -> dict[str, Any]:
    return {"key": key, "effect": effect}


@pytest.mark.parametrize(("the_node", "the_ds", "want"), [
    (node("n1"), ds(), (True, True)),
    (node("n1", {"disk": "ssd"}), ds(nodeSelector={"disk": "ssd"}), (True, True)),
    (node("n1", {"disk": "hdd"}), ds(nodeSelector={"disk": "ssd"}), (False, False)),
    (node("n1", {"zone": "a"}), ds(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}),
     (True, True)),
    (node("n1", {"zone": "a"}), ds(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}}),
     (False, False)),
    (node("n1"), ds(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In",
                              "values": ["n2"]}]}]}}}), (False, False)),
    (node("n1"), ds(nodeName="n2"), (False, False)),
    (node("n1"), ds(nodeName="n1"), (True, True)),
    # an untolerated NoSchedule taint: no new pod, the one there stays
    (node("n1", taints=[taint("dedicated", "NoSchedule")]), ds(), (False, True)),
    # an untolerated NoExecute taint: neither
    (node("n1", taints=[taint("dedicated", "NoExecute")]), ds(), (False, False)),
    (node("n1", taints=[taint("dedicated", "NoExecute")]),
     ds(tolerations=[{"key": "dedicated", "operator": "Exists"}]), (True, True)),
    (node("n1", taints=[taint("dedicated", "PreferNoSchedule")]), ds(), (True, True)),
    # the tolerations every daemon pod gets
    (node("n1", taints=[taint("node.kubernetes.io/unschedulable", "NoSchedule")]), ds(),
     (True, True)),
    (node("n1", taints=[taint("node.kubernetes.io/not-ready", "NoExecute")]), ds(),
     (True, True)),
    (node("n1", taints=[taint("node.kubernetes.io/unreachable", "NoExecute")]), ds(),
     (True, True)),
    (node("n1", taints=[taint("node.kubernetes.io/disk-pressure", "NoSchedule"),
                        taint("node.kubernetes.io/memory-pressure", "NoSchedule"),
                        taint("node.kubernetes.io/pid-pressure", "NoSchedule")]), ds(),
     (True, True)),
    # network-unavailable is tolerated by host-network pods only
    (node("n1", taints=[taint("node.kubernetes.io/network-unavailable", "NoSchedule")]),
     ds(), (False, True)),
    (node("n1", taints=[taint("node.kubernetes.io/network-unavailable", "NoSchedule")]),
     ds(hostNetwork=True), (True, True)),
])
def test_node_should_run_daemon_pod(the_node: dict[str, Any], the_ds: dict[str, Any],
                                    want: tuple[bool, bool]) -> None:
    assert dd.node_should_run_daemon_pod(the_node, the_ds) == want


def test_daemon_pod_tolerations_added_once_in_upstreams_order() -> None:
    spec: dict[str, Any] = {"tolerations": [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 5}, {"key": "mine", "operator": "Exists"}]}
    dd.add_daemon_pod_tolerations(spec)
    dd.add_daemon_pod_tolerations(spec)
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
        {"key": "mine", "operator": "Exists"},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists",
         "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists",
         "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists",
         "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
         "effect": "NoSchedule"}]


def test_pod_for_node_is_placed_through_the_scheduler() -> None:
    d = ds(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
            "matchExpressions": [{"key": "x", "operator": "Exists"}]}}]}})
    template = dd.create_pod_template(d["spec"]["template"], 3, HASH)
    p = dd.pod_for_node(d, template, "n2")
    assert "nodeName" not in p["spec"]
    na = p["spec"]["affinity"]["nodeAffinity"]
    assert na["requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    assert na["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 1
    assert p["metadata"]["generateName"] == "d-"
    assert p["metadata"]["labels"] == {"app": "d", "pod-template-generation": "3",
                                       "controller-revision-hash": HASH}
    assert p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert len(p["spec"]["tolerations"]) == 6
    assert dd.target_node_name(p) == "n2"
    assert dd.target_node_name({"spec": {"nodeName": "n9", "affinity": na}}) == "n9"
    assert dd.target_node_name({"spec": {}}) is None
    # the DaemonSet's own template is left as it was
    assert "tolerations" not in d["spec"]["template"]["spec"]


def test_get_patch_replaces_the_template() -> None:
    d = ds()
    patch = dd.get_patch(d)
    template = d["spec"]["template"]
    assert patch == {"spec": {"template": {
        "$patch": "replace", "metadata": {**template["metadata"], "creationTimestamp": None},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {}}]}}}}
    # keys in Go's order (sorted), as json.Marshal of a decoded map writes them
    assert list(patch["spec"]["template"]) == ["$patch", "metadata", "spec"]
    assert list(patch["spec"]["template"]["metadata"]) == ["creationTimestamp", "labels"]
    assert dd.revision_matches(d, {"data": patch})
    d2 = ds(hostNetwork=True)
    assert not dd.revision_matches(d2, {"data": patch})


def _names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_manage_creates_deletes_and_reports_failed_pods() -> None:
    nodes = [node("a"), node("b"), node("c", taints=[taint("dedicated", "NoExecute")]),
             node("d"), node("e")]
    by_node = {
        "a": [pod("a-1", "a")],
        "c": [pod("c-1", "c")],  # the node no longer wants it
        "d": [pod("d-old", "d", created="2026-01-01T10:00:00Z"), pod("d-new", "d")],
        "e": [pod("e-failed", "e", phase="Failed"), pod("e-done", "e", phase="Succeeded")],
        "gone": [pod("gone-1", "gone", bound=False), pod("gone-2", "gone")],
    }
    plan = dd.manage_plan(ds(), nodes, by_node, HASH, NOW)
    assert plan.create_on == ["b"]
    assert _names(plan.delete) == ["c-1", "d-new", "e-done", "gone-1"]
    assert [(n, p["metadata"]["name"]) for n, p in plan.failed] == [("e", "e-failed")]


def test_manage_with_surge_keeps_an_old_ready_pod_until_the_new_is_available() -> None:
    d = surge_ds()
    old, new_unready = pod("old", "a", hash_="old"), pod("new", "a", ready=False,
                                                         created="2026-01-01T11:30:00Z")
    plan = dd.manage_plan(d, [node("a")], {"a": [old, new_unready]}, HASH, NOW)
    assert (plan.create_on, plan.delete) == ([], [])
    new_ready = pod("new", "a", created="2026-01-01T11:30:00Z")
    plan = dd.manage_plan(d, [node("a")], {"a": [old, new_ready]}, HASH, NOW)
    assert _names(plan.delete) == ["old"]


NODES3 = [node("a"), node("b"), node("c")]


@pytest.mark.parametrize(("by_node", "deleted"), [
    # all old and available: maxUnavailable 1 takes one
    ({"a": [pod("a", "a", "old")], "b": [pod("b", "b", "old")], "c": [pod("c", "c", "old")]},
     ["a"]),
    # a new pod not yet available already uses the budget
    ({"a": [pod("a", "a", ready=False)], "b": [pod("b", "b", "old")],
      "c": [pod("c", "c", "old")]}, []),
    # a node with no pod counts as unavailable
    ({"b": [pod("b", "b", "old")], "c": [pod("c", "c", "old")]}, []),
    # an unavailable old pod is replaced whatever the budget
    ({"a": [pod("a", "a", "old", ready=False)], "b": [pod("b", "b", "old", ready=False)],
      "c": [pod("c", "c", "old")]}, ["a", "b"]),
    # all updated: nothing
    ({"a": [pod("a", "a")], "b": [pod("b", "b")], "c": [pod("c", "c")]}, []),
])
def test_rolling_update_without_surge(by_node: dict[str, list[dict[str, Any]]],
                                      deleted: list[str]) -> None:
    plan = dd.rolling_update_plan(ds(), NODES3, by_node, HASH, NOW)
    assert _names(plan.delete) == deleted
    assert plan.create_on == []


def test_rolling_update_max_unavailable_percent_rounds_up() -> None:
    d = ds()
    d["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = "50%"
    by_node = {n: [pod(n, n, "old")] for n in "abc"}
    assert _names(dd.rolling_update_plan(d, NODES3, by_node, HASH, NOW).delete) == ["a", "b"]


@pytest.mark.parametrize(("by_node", "created", "deleted"), [
    # all old and available: maxSurge 1 adds one new pod beside an old one
    ({"a": [pod("a", "a", "old")], "b": [pod("b", "b", "old")], "c": [pod("c", "c", "old")]},
     ["a"], []),
    # a surged node whose new pod is available loses its old one; the next surges
    ({"a": [pod("a-old", "a", "old"), pod("a-new", "a")], "b": [pod("b", "b", "old")],
      "c": [pod("c", "c", "old")]}, ["b"], ["a-old"]),
    # a surged pod not yet available holds the budget
    ({"a": [pod("a-old", "a", "old"), pod("a-new", "a", ready=False)],
      "b": [pod("b", "b", "old")], "c": [pod("c", "c", "old")]}, [], []),
    # an unavailable old pod gets its new pod at once
    ({"a": [pod("a-old", "a", "old"), pod("a-new", "a", ready=False)],
      "b": [pod("b", "b", "old", ready=False)], "c": [pod("c", "c", "old")]}, ["b"], []),
])
def test_rolling_update_with_surge(by_node: dict[str, list[dict[str, Any]]],
                                   created: list[str], deleted: list[str]) -> None:
    plan = dd.rolling_update_plan(surge_ds(), NODES3, by_node, HASH, NOW)
    assert plan.create_on == created
    assert _names(plan.delete) == deleted


def test_status_counts() -> None:
    nodes = [node("a"), node("b"), node("c"), node("x", {"no": "pe"}),
             node("t", taints=[taint("dedicated", "NoSchedule")])]
    d = ds(nodeSelector={}, affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "no", "operator": "DoesNotExist"}]}]}}})
    d["spec"]["minReadySeconds"] = 30
    just_ready = pod("b", "b", "old")
    just_ready["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T11:59:50Z"
    by_node = {"a": [pod("a", "a")], "b": [just_ready], "x": [pod("x", "x")],
               "t": [pod("t", "t", ready=False)]}
    counts = dd.calculate_status(d, nodes, by_node, HASH, NOW)
    assert counts == {"desiredNumberScheduled": 3, "currentNumberScheduled": 2,
                      "numberMisscheduled": 2, "numberReady": 2, "updatedNumberScheduled": 1,
                      "numberAvailable": 1, "numberUnavailable": 2}
    assert dd.requeue_for_min_ready(d, counts) == 30.0
    status = dd.next_status(d, counts, True)
    assert status is not None
    assert status["observedGeneration"] == 2
    d["status"] = status
    assert dd.next_status(d, counts, True) is None
    d["metadata"]["generation"] = 3
    assert dd.next_status(d, counts, False) == status  # counts kept, generation not raised


def test_histories_to_delete_keeps_the_limit_and_live_ones() -> None:
    """Two of four go, oldest first, but not h1: a pod still runs that template."""
    d = ds()
    d["spec"]["revisionHistoryLimit"] = 2
    old = [{"metadata": {"name": f"d-{i}", "labels": {dd.CONTROLLER_REVISION_HASH: f"h{i}"}},
            "revision": i} for i in (3, 1, 2, 4)]
    by_node = {"a": [pod("a", "a", "h1")]}
    assert [c["metadata"]["name"] for c in dd.histories_to_delete(d, old, by_node)] == [
        "d-2", "d-3"]
    d["spec"]["revisionHistoryLimit"] = 10
    assert dd.histories_to_delete(d, old, by_node) == []


def test_failed_pods_backoff_doubles() -> None:
    b = dd.FailedPodsBackoff(initial=1.0, cap=4.0)
    assert not b.in_backoff_since_update("k", NOW)
    b.next("k", NOW)
    assert b.in_backoff_since_update("k", NOW + dt.timedelta(seconds=0.5))
    assert not b.in_backoff_since_update("k", NOW + dt.timedelta(seconds=1.5))
    b.next("k", NOW + dt.timedelta(seconds=1.5))
    assert b.get("k") == 2.0
    for _ in range(5):
        b.next("k", NOW + dt.timedelta(seconds=2))
    assert b.get("k") == 4.0


@pytest.mark.parametrize(("labels", "want"), [
    ({dd.CONTROLLER_REVISION_HASH: HASH}, True),
    ({dd.CONTROLLER_REVISION_HASH: "old"}, False),
    # the template generation alone never makes a pod current (upstream compares it with
    # a printed pointer)
    ({dd.CONTROLLER_REVISION_HASH: "old", dd.TEMPLATE_GENERATION_LABEL: "2"}, False),
    ({}, False),
])
def test_is_pod_updated_by_hash(labels: dict[str, str], want: bool) -> None:
    assert dd.is_pod_updated({"metadata": {"labels": labels}}, HASH) is want
    assert dd.is_pod_updated({"metadata": {"labels": labels}}, "") is False
