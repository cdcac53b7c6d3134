"""pykubectl dashboard's pure layer: what the proxy lets through, the Host/Origin checks,
the per-node sums of requests, pod cards, the watch cursor's resume rules and the decision
table (the browser test in tests/integration/controlplane/test_dashboard.py draws them)."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.cli.kubectl.dashboard.reflector import WatchCursor
from pykubelet.cli.kubectl.dashboard.rules import (
    Refused,
    accepted_hosts,
    check_origin,
    check_proxy_request,
    host_name,
)
from pykubelet.cli.kubectl.dashboard.view import ClusterView, decision_table, pod_requests

Obj = dict[str, Any]


# ---------------------------------------------------------------------------- proxy rules
@pytest.mark.parametrize("path", [
    "/api/v1/nodes", "/api/v1/nodes/n1", "/api/v1/pods", "/api/v1/events",
    "/api/v1/namespaces", "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/pods/web-1", "/api/v1/namespaces/default/pods/web-1/log",
    "/api/v1/namespaces/default/pods/web-1/scheduling", "/api/v1/namespaces/kube-system/events",
])
def test_the_reads_the_page_needs_pass(path: str) -> None:
    check_proxy_request("GET", path, ["watch", "resourceVersion", "fieldSelector",
                                      "tailLines"])


@pytest.mark.parametrize(("method", "path", "code"), [
    ("POST", "/api/v1/namespaces/default/pods", 405),
    ("DELETE", "/api/v1/namespaces/default/pods/web-1", 405),
    ("PATCH", "/api/v1/nodes/n1", 405),
    ("PUT", "/api/v1/nodes/n1", 405),
    ("GET", "/api/v1/namespaces/default/secrets", 403),
    ("GET", "/api/v1/namespaces/default/secrets/token", 403),
    ("GET", "/api/v1/secrets", 403),
    ("GET", "/api/v1/namespaces/default/configmaps", 403),
    ("GET", "/api/v1/namespaces/default/pods/web-1/exec", 403),
    ("GET", "/api/v1/namespaces/default/pods/web-1/attach", 403),
    ("GET", "/api/v1/namespaces/default/pods/web-1/portforward", 403),
    ("GET", "/api/v1/nodes/n1/proxy", 403),
    ("GET", "/api/v1/nodes/n1/proxy/configz", 403),
    ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", 403),
    ("GET", "/api/v1/namespaces/default/pods/../secrets", 403),
    ("GET", "/api/v1/namespaces/default/pods/%2e%2e/secrets", 403),
    ("GET", "/api/v1//nodes", 403),
])
def test_writes_and_other_reads_are_refused(method: str, path: str, code: int) -> None:
    with pytest.raises(Refused) as exc:
        check_proxy_request(method, path, [])
    assert exc.value.code == code


def test_unknown_query_parameters_are_refused() -> None:
    with pytest.raises(Refused) as exc:
        check_proxy_request("GET", "/api/v1/pods", ["watch", "dryRun"])
    assert exc.value.code == 400
    assert "dryRun" in str(exc.value)


def test_host_names() -> None:
    assert host_name("127.0.0.1:8001") == "127.0.0.1"
    assert host_name("LOCALHOST:8001") == "localhost"
    assert host_name("[::1]:8001") == "[::1]"
    assert host_name("localhost") == "localhost"
    assert accepted_hosts("127.0.0.1") == ("localhost", "127.0.0.1", "[::1]")
    assert accepted_hosts("10.0.0.5")[-1] == "10.0.0.5"
    assert accepted_hosts("::1") == ("localhost", "127.0.0.1", "[::1]")
    assert accepted_hosts("0.0.0.0") == ("localhost", "127.0.0.1", "[::1]")


def test_host_and_origin_are_checked_as_kubectl_proxy_does() -> None:
    hosts = accepted_hosts("127.0.0.1")
    check_origin({"Host": "127.0.0.1:8001"}, hosts)
    check_origin({"Host": "localhost:8001", "Origin": "http://localhost:8001",
                  "Sec-Fetch-Site": "same-origin"}, hosts)
    refused = [
        {"Host": "evil.example:8001"},  # DNS rebinding: the attacker's name for 127.0.0.1
        {"Host": "127.0.0.1.evil.example"},
        {"Host": ""},
        {"Host": "127.0.0.1:8001", "Origin": "http://evil.example"},
        {"Host": "127.0.0.1:8001", "Origin": "null"},
        {"Host": "127.0.0.1:8001", "Origin": "http://127.0.0.1:9999"},
        {"Host": "127.0.0.1:8001", "Sec-Fetch-Site": "cross-site"},
    ]
    for headers in refused:
        with pytest.raises(Refused) as exc:
            check_origin(headers, hosts)
        assert exc.value.code == 403, headers


# ---------------------------------------------------------------------------- aggregation
def node(name: str, cpu: str = "4", memory: str = "8Gi", ready: str = "True",
         taints: list[Obj] | None = None) -> Obj:
    return {"metadata": {"name": name, "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def pod(name: str, node_name: str = "", cpu: str = "100m", memory: str = "64Mi",
        phase: str = "Running", ns: str = "default", **spec: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node_name, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                **spec},
            "status": {"phase": phase, "containerStatuses": [{"restartCount": 2}]}}


def test_pod_requests_as_the_scheduler_counts_them() -> None:
    assert pod_requests(pod("a", cpu="250m", memory="1Gi")) == (250, 2**30)
    # an init container bigger than the containers sets the request
    p = pod("b", cpu="100m", initContainers=[
        {"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Mi"}}}])
    assert pod_requests(p) == (2000, 64 * 2**20)
    # a sidecar (restartPolicy Always) adds to the containers; overhead adds
    p = pod("c", cpu="100m", initContainers=[
        {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}}],
        overhead={"cpu": "10m", "memory": "1Mi"})
    assert pod_requests(p) == (160, 65 * 2**20)
    assert pod_requests({"spec": {"containers": [{"name": "c"}]}}) == (0, 0)


def test_requests_follow_pods_between_nodes_and_ended_pods_hold_nothing() -> None:
    v = ClusterView()
    v.replace("Node", [node("n1"), node("n2", cpu="2")])
    d = v.apply("Pod", "ADDED", pod("a", "", cpu="500m"))
    assert d.pods[0]["node"] == ""
    assert d.nodes == []
    d = v.apply("Pod", "MODIFIED", pod("a", "n1", cpu="500m"))
    assert [n["name"] for n in d.nodes] == ["n1"]
    assert d.nodes[0]["cpu"] == {"allocatable": 4000, "requested": 500}
    assert d.nodes[0]["pods"]["requested"] == 1
    v.apply("Pod", "ADDED", pod("b", "n1", cpu="1", memory="1Gi"))
    assert v.node_summary("n1")["memory"] == {"allocatable": 8 * 2**30,
                                              "requested": 64 * 2**20 + 2**30}
    # a status change that moves nothing redraws the card, no node
    d = v.apply("Pod", "MODIFIED", pod("b", "n1", cpu="1", memory="1Gi"))
    assert d.nodes == []
    assert d.pods[0]["restarts"] == 2
    d = v.apply("Pod", "MODIFIED", pod("b", "n1", cpu="1", memory="1Gi", phase="Succeeded"))
    assert d.nodes[0]["cpu"]["requested"] == 500
    d = v.apply("Pod", "DELETED", pod("a", "n1", cpu="500m"))
    assert d.deleted_pods == ["default/a"]
    assert d.nodes[0]["cpu"]["requested"] == 0
    assert d.nodes[0]["pods"]["requested"] == 0
    snap = v.snapshot()
    assert [n["name"] for n in snap["nodes"]] == ["n1", "n2"]
    assert [p["key"] for p in snap["pods"]] == ["default/b"]


def test_node_summary_and_relist() -> None:
    v = ClusterView()
    v.replace("Pod", [pod("a", "n1", cpu="1")])
    d = v.apply("Node", "ADDED", node("n1", ready="False", taints=[
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}]))
    s = d.nodes[0]
    assert s["ready"] == "False"
    assert s["roles"] == ["control-plane"]
    assert s["taints"] == ["node.kubernetes.io/not-ready:NoSchedule", "dedicated=gpu:NoExecute"]
    assert s["cpu"]["requested"] == 1000
    v.replace("Pod", [])  # a relist after 410 Gone: the pod went meanwhile
    assert v.node_summary("n1")["cpu"]["requested"] == 0
    assert v.apply("Node", "DELETED", node("n1")).deleted_nodes == ["n1"]


def test_pod_cards_say_kubectls_status() -> None:
    v = ClusterView()
    p = pod("w", "n1", phase="Pending")
    p["status"]["containerStatuses"] = [{"restartCount": 3, "state": {
        "waiting": {"reason": "CrashLoopBackOff"}}}]
    card = v.apply("Pod", "ADDED", p).pods[0]
    assert card == {"key": "default/w", "namespace": "default", "name": "w", "node": "n1",
                    "phase": "Pending", "status": "CrashLoopBackOff", "restarts": 3,
                    "cpu": 100, "memory": 64 * 2**20, "created": ""}
    q = pod("x", "", phase="Pending")
    q["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                  "reason": "Unschedulable"}]
    assert v.apply("Pod", "ADDED", q).pods[0]["status"] == "Unschedulable"


def test_events_make_a_bounded_timeline() -> None:
    v = ClusterView()
    for i in range(70):
        v.apply("Event", "ADDED", {"metadata": {"name": f"e{i}", "namespace": "default"},
                                   "type": "Warning", "reason": "FailedScheduling",
                                   "message": "0/2 nodes are available",
                                   "involvedObject": {"kind": "Pod", "name": "x"},
                                   "lastTimestamp": f"2026-01-01T00:00:{i % 60:02d}Z"})
    assert len(v.snapshot()["events"]) == 60
    assert v.snapshot()["events"][-1]["key"] == "default/e69"


# ---------------------------------------------------------------------------- watch cursor
def test_cursor_resumes_from_the_last_resource_version_and_relists_only_on_gone() -> None:
    c = WatchCursor()
    assert c.rv == ""  # list first
    items = c.listed({"metadata": {"resourceVersion": "10"}, "items": [{"a": 1}]})
    assert items == [{"a": 1}]
    assert c.watch_params()["resourceVersion"] == "10"
    assert c.on_line({"type": "ADDED", "object": {"metadata": {"resourceVersion": "12"}}}) \
        == ("ADDED", {"metadata": {"resourceVersion": "12"}})
    assert c.on_line({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}}) \
        is None
    assert c.watch_params() == {"watch": "1", "resourceVersion": "20",
                                "allowWatchBookmarks": "true", "timeoutSeconds": "290"}
    # another error keeps the place
    assert c.on_line({"type": "ERROR", "object": {"code": 500}}) is None
    assert c.rv == "20"
    # 410 Gone: the history is compacted, list again
    assert c.on_line({"type": "ERROR", "object": {"code": 410}}) is None
    assert c.rv == ""


# ---------------------------------------------------------------------------- decisions
def test_decision_table_of_a_pending_pod_names_the_rejecting_plugin_per_node() -> None:
    doc = {"decision": {"pod": "default/big", "node": None, "message": "0/2 nodes ...",
                        "filtered": {
                            "n1": {"plugin": "NodeResourcesFit", "code": "Unschedulable",
                                   "reason": "Insufficient cpu"},
                            "n2": {"plugin": "TaintToleration",
                                   "code": "UnschedulableAndUnresolvable",
                                   "reason": "node(s) had untolerated taint"}},
                        "evaluatedNodes": 2, "feasibleNodes": 0}}
    t = decision_table(doc, ["n1", "n2"])
    assert t["recorded"]
    assert t["node"] is None
    assert t["plugins"] == []
    rows = {r["node"]: r for r in t["rows"]}
    assert rows["n1"]["verdict"] == "rejected"
    assert rows["n1"]["plugin"] == "NodeResourcesFit"
    assert rows["n2"]["plugin"] == "TaintToleration"
    assert rows["n2"]["reason"].endswith("(preemption cannot help)")
    assert not any(r["winner"] for r in t["rows"])


def test_decision_table_of_a_placed_pod_has_scores_and_the_winner_first() -> None:
    doc = {"decision": {"pod": "default/web", "node": "n2", "filtered": {
        "n3": {"plugin": "NodeUnschedulable", "code": "UnschedulableAndUnresolvable",
               "reason": "node(s) were unschedulable"}},
        "scores": {"n1": {"NodeResourcesFit": 40, "TaintToleration": 100, "total": 240},
                   "n2": {"NodeResourcesFit": 90, "TaintToleration": 100, "total": 390}},
        "evaluatedNodes": 3, "feasibleNodes": 2}}
    t = decision_table(doc, ["n1", "n2", "n3"])
    assert t["plugins"] == ["NodeResourcesFit", "TaintToleration"]
    assert [r["node"] for r in t["rows"]] == ["n2", "n1", "n3"]
    assert t["rows"][0]["winner"]
    assert t["rows"][0]["total"] == 390
    assert t["rows"][1]["scores"] == {"NodeResourcesFit": 40, "TaintToleration": 100}
    assert t["rows"][2]["verdict"] == "rejected"
    assert decision_table(None, ["n1"]) == {"recorded": False, "rows": [], "plugins": []}
