"""The EndpointSlice and Endpoints controllers' decisions as tables (issue 20, item 3):
conditions ready/serving/terminating, named target ports, which pods count, slices of at
most 100 endpoints per port set, the placeholder, reuse of existing slices, and the legacy
Endpoints' ready and not-ready addresses."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.controlplane.controllers.endpoints_decisions import (
    SliceContent,
    desired_endpoints,
    desired_slices,
    mirrored,
    mirrored_slices,
    new_mirrored_slice,
    new_slice,
    pod_to_endpoint,
    reconcile_slices,
    should_be_in_endpoints,
    truncate_subsets,
)

Obj = dict[str, Any]


def service(**spec: Any) -> Obj:
    spec.setdefault("selector", {"app": "web"})
    spec.setdefault("ports", [{"name": "http", "port": 80, "targetPort": "http",
                               "protocol": "TCP"}])
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid",
                         "labels": {"team": "a"}}, "spec": spec}


def pod(name: str, ip: str = "10.244.1.5", ready: bool = True, *, labels: Obj | None = None,
        deleting: bool = False, phase: str = "Running", port_name: str = "http",
        node: str = "n1") -> Obj:
    meta: Obj = {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                 "labels": labels if labels is not None else {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    return {"metadata": meta,
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "ports": [{"name": port_name, "containerPort": 8080}]}]},
            "status": {"phase": phase, "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


@pytest.mark.parametrize(("kw", "publish", "conditions"), [
    ({}, False, {"ready": True, "serving": True, "terminating": False}),
    ({"ready": False}, False, {"ready": False, "serving": False, "terminating": False}),
    ({"deleting": True}, False, {"ready": False, "serving": True, "terminating": True}),
    ({"deleting": True, "ready": False}, False,
     {"ready": False, "serving": False, "terminating": True}),
    ({"ready": False}, True, {"ready": True, "serving": False, "terminating": False}),
])
def test_endpoint_conditions(kw: Obj, publish: bool, conditions: Obj) -> None:
    ep = pod_to_endpoint(pod("a", **kw), service(publishNotReadyAddresses=publish))
    assert ep["conditions"] == conditions
    assert ep["addresses"] == ["10.244.1.5"]
    assert ep["nodeName"] == "n1"
    assert ep["targetRef"] == {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "uid-a"}


@pytest.mark.parametrize(("p", "terminating_ok", "expected"), [
    (pod("a"), True, True),
    (pod("a", ip=""), True, False),
    (pod("a", phase="Succeeded"), True, False),
    (pod("a", phase="Failed"), True, False),
    (pod("a", deleting=True), True, True),
    (pod("a", deleting=True), False, False),
])
def test_which_pods_count(p: Obj, terminating_ok: bool, expected: bool) -> None:
    assert should_be_in_endpoints(p, terminating_ok) is expected


def test_slices_group_by_resolved_ports_and_split_at_the_limit() -> None:
    svc = service()
    pods = [pod(f"p{i:03}", ip=f"10.244.1.{i}") for i in range(1, 6)]
    pods.append(pod("other-port", ip="10.244.2.1", port_name="web"))  # http not found
    pods.append(pod("not-selected", ip="10.244.2.2", labels={"app": "db"}))
    got = desired_slices(svc, pods, max_per_slice=2)
    with_port = [s for s in got if s.ports]
    assert [len(s.endpoints) for s in with_port] == [2, 2, 1]
    assert with_port[0].ports == [{"name": "http", "protocol": "TCP", "port": 8080}]
    without = [s for s in got if not s.ports]
    assert [e["targetRef"]["name"] for s in without for e in s.endpoints] == ["other-port"]
    assert "10.244.2.2" not in [a for s in got for e in s.endpoints for a in e["addresses"]]


def test_numeric_target_port_and_placeholder() -> None:
    svc = service(ports=[{"port": 80, "targetPort": 9376, "protocol": "UDP", "name": ""}])
    got = desired_slices(svc, [pod("a")])
    assert got[0].ports == [{"name": "", "protocol": "UDP", "port": 9376}]
    assert desired_slices(svc, []) == [SliceContent([], [])]


def test_new_slice_labels_and_owner() -> None:
    svc = service(clusterIP="None")
    obj = new_slice(svc, desired_slices(svc, [pod("a")])[0])
    assert obj["metadata"]["generateName"] == "web-"
    assert obj["metadata"]["labels"] == {
        "team": "a", "service.kubernetes.io/headless": "",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
    ref = obj["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
        "Service", "web", "svc-uid", True)
    assert obj["addressType"] == "IPv4"


def test_reconcile_reuses_updates_only_what_differs_and_deletes_leftovers() -> None:
    svc = service()
    wanted = desired_slices(svc, [pod("a"), pod("b", ip="10.244.1.6")])
    current = new_slice(svc, wanted[0])
    current["metadata"]["name"] = "web-abcde"
    plan = reconcile_slices(svc, [current], wanted)
    assert (plan.create, plan.update, plan.delete) == ([], [], [])
    stale = {**current, "metadata": {**current["metadata"], "name": "web-zzzzz"}}
    changed = desired_slices(svc, [pod("a")])
    plan = reconcile_slices(svc, [current, stale], changed)
    assert [u["metadata"]["name"] for u in plan.update] == ["web-abcde"]
    assert [e["targetRef"]["name"] for e in plan.update[0]["endpoints"]] == ["a"]
    assert plan.delete == ["web-zzzzz"]
    assert plan.create == []


def test_legacy_endpoints_ready_and_not_ready() -> None:
    svc = service(ports=[{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                         {"name": "raw", "port": 81, "targetPort": 81, "protocol": "TCP"}])
    pods = [pod("b", ip="10.244.1.10"), pod("a", ip="10.244.1.9"),
            pod("c", ip="10.244.1.11", ready=False), pod("gone", ip="10.244.1.12", deleting=True),
            pod("named-miss", ip="10.244.1.13", port_name="web")]
    ep = desired_endpoints(svc, pods)
    assert ep["metadata"] == {"name": "web", "namespace": "ns", "labels": {"team": "a"}}
    by_ports = {tuple(p["port"] for p in s["ports"]): s for s in ep["subsets"]}
    full = by_ports[(8080, 81)]
    assert [a["ip"] for a in full["addresses"]] == ["10.244.1.9", "10.244.1.10"]
    assert [a["ip"] for a in full["notReadyAddresses"]] == ["10.244.1.11"]
    assert full["addresses"][0]["targetRef"]["name"] == "a"
    assert [a["ip"] for a in by_ports[(81,)]["addresses"]] == ["10.244.1.13"]
    assert "10.244.1.12" not in str(ep)  # terminating: out unless publishNotReadyAddresses
    assert "subsets" not in desired_endpoints(svc, [])


def test_headless_without_ports_lists_addresses() -> None:
    svc = service(clusterIP="None", ports=[])
    ep = desired_endpoints(svc, [pod("a")])
    assert ep["subsets"] == [{"addresses": [{"ip": "10.244.1.5", "nodeName": "n1",
                                             "targetRef": {"kind": "Pod", "namespace": "ns",
                                                           "name": "a", "uid": "uid-a"}}]}]
    assert ep["metadata"]["labels"]["service.kubernetes.io/headless"] == ""


def test_legacy_endpoints_are_cut_at_capacity_ready_first() -> None:
    def addrs(n: int, base: int) -> list[Obj]:
        return [{"ip": f"10.0.{base}.{i}"} for i in range(n)]

    subsets = [{"addresses": addrs(3, 1), "notReadyAddresses": addrs(4, 2)},
               {"addresses": addrs(1, 3), "notReadyAddresses": addrs(2, 4)}]
    assert truncate_subsets(subsets, capacity=7) is True
    # 4 ready fit; the 3 places left go to not-ready addresses in proportion (4:2, rounded up)
    assert [len(s.get("addresses", [])) for s in subsets] == [3, 1]
    assert [len(s.get("notReadyAddresses", [])) for s in subsets] == [2, 1]
    many = [{"addresses": addrs(6, 1), "notReadyAddresses": addrs(2, 2)},
            {"addresses": addrs(2, 3)}]
    assert truncate_subsets(many, capacity=4) is True
    assert [len(s.get("addresses", [])) for s in many] == [3, 1]
    assert all("notReadyAddresses" not in s for s in many)
    assert truncate_subsets([{"addresses": addrs(2, 1)}], capacity=2) is False
    svc = service()
    pods = [pod(f"p{i:04}", ip=f"10.244.{i // 250}.{i % 250 + 1}") for i in range(1001)]
    ep = desired_endpoints(svc, pods)
    assert ep["metadata"]["annotations"] == {"endpoints.kubernetes.io/over-capacity":
                                             "truncated"}
    assert sum(len(s["addresses"]) for s in ep["subsets"]) == 1000


def test_mirroring_of_a_users_endpoints() -> None:
    ep = {"metadata": {"name": "db", "namespace": "ns", "uid": "ep-uid",
                       "labels": {"team": "a"},
                       "annotations": {"note": "x", "kubectl.kubernetes.io/last-applied-"
                                       "configuration": "{}"}},
          "subsets": [{"addresses": [{"ip": "192.0.2.1", "hostname": "db-0",
                                      "nodeName": "n1"}],
                       "notReadyAddresses": [{"ip": "192.0.2.2"}, {"ip": "2001:db8::1"}],
                       "ports": [{"name": "pg", "port": 5432}]}]}
    selectorless = {"metadata": {"name": "db"}, "spec": {"ports": [{"port": 5432}]}}
    assert mirrored(ep, selectorless)
    assert not mirrored(ep, None)  # no Service
    assert not mirrored(ep, service())  # the EndpointSlice controller's Service
    skip = {**ep, "metadata": {**ep["metadata"], "labels": {
        "endpointslice.kubernetes.io/skip-mirror": "true"}}}
    assert not mirrored(skip, selectorless)
    [content] = mirrored_slices(ep)
    assert content.ports == [{"name": "pg", "port": 5432, "protocol": "TCP"}]
    assert content.endpoints == [
        {"addresses": ["192.0.2.1"], "conditions": {"ready": True}, "hostname": "db-0",
         "nodeName": "n1"},
        {"addresses": ["192.0.2.2"], "conditions": {"ready": False}}]
    obj = new_mirrored_slice(ep, content)
    assert obj["metadata"]["labels"] == {
        "team": "a", "kubernetes.io/service-name": "db",
        "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}
    assert obj["metadata"]["annotations"] == {"note": "x"}
    assert obj["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
    assert mirrored_slices({"metadata": ep["metadata"]}) == []
