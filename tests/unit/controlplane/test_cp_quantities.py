"""Quantities through the API (issue 24 item 6): a pod's or a node's "1e6000000" is read
at once (before, 3.8 s of the loop per request), as upstream's bounded Quantity, and what
is stored is the capped value, never six million digits waiting for the next reader."""

from __future__ import annotations

from cp_live import LiveAPI

HUGE = "1e6000000"
MAX = "9223372036854775807"


def test_pod_with_a_huge_cpu_is_answered_at_once(api: LiveAPI) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"},
           "spec": {"containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": HUGE},
                                                  "limits": {"cpu": HUGE}}}]}}
    reply = api.call("POST", "/api/v1/namespaces/default/pods", pod)
    try:
        assert reply.seconds < 1
        assert reply.status == 201, reply.body[:300]
        res = reply.json()["spec"]["containers"][0]["resources"]
        assert res["requests"]["cpu"] == MAX
    finally:
        api.call("DELETE", "/api/v1/namespaces/default/pods/huge?gracePeriodSeconds=0")


def test_node_status_cannot_hold_a_huge_quantity(api: LiveAPI) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-q"}}
    token = api.node_token("node-q")
    assert api.call("POST", "/api/v1/nodes", node, token=token).status == 201
    try:
        patch = {"status": {"capacity": {"cpu": HUGE, "memory": "1e-6000000"},
                            "allocatable": {"cpu": HUGE}}}
        reply = api.call("PATCH", "/api/v1/nodes/node-q/status", patch, token=token,
                         content_type="application/merge-patch+json")
        assert reply.seconds < 1
        assert reply.status == 200, reply.body[:300]
        status = api.call("GET", "/api/v1/nodes/node-q").json()["status"]
        assert status["capacity"] == {"cpu": MAX, "memory": "1n"}
        assert status["allocatable"] == {"cpu": MAX}
    finally:
        api.call("DELETE", "/api/v1/nodes/node-q")


def test_what_parse_quantity_refuses_is_refused_in_its_words(api: LiveAPI) -> None:
    for cpu, reason in (("1e9223372036854775808", "unable to parse quantity's suffix"),
                        ("x" * 1_000_000, "quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad-q"},
               "spec": {"containers": [{"name": "c", "image": "busybox",
                                        "resources": {"requests": {"cpu": cpu}}}]}}
        reply = api.call("POST", "/api/v1/namespaces/default/pods", pod)
        assert reply.status == 400, reply.body[:300]
        assert reply.json()["message"].endswith(f": {reason}")
        assert len(reply.body) < 2048
        assert reply.seconds < 1
