"""Bodies and parameters read as upstream's typed decoding reads them (issue 24 items 9,
10, 19, 20): an int64 grace period of any size deletes (its deletionTimestamp capped at the
last time metav1.Time writes), one past int64 is 400; DeleteOptions, Binding and Eviction
bodies of the wrong shape are 400 and never stored; int32 fields keep their range; a
propagationPolicy upstream does not know is 422."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from cp_live import LiveAPI

from pykubelet.controlplane.controllers.nodelifecycle import eviction_delay

NS = "/api/v1/namespaces/default"
INT64_MAX = 2**63 - 1


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


@pytest.fixture
def bound_pod(api: LiveAPI) -> Iterator[str]:
    reply = api.call("POST", f"{NS}/pods", pod("slow", nodeName="node-x",
                                               terminationGracePeriodSeconds=10**15))
    assert reply.status == 201, reply.body[:300]
    try:
        yield "slow"
    finally:
        api.call("DELETE", f"{NS}/pods/slow?gracePeriodSeconds=0")


def test_a_huge_grace_period_from_the_spec_deletes(api: LiveAPI, bound_pod: str) -> None:
    reply = api.call("DELETE", f"{NS}/pods/{bound_pod}")
    assert reply.status == 200, reply.body[:300]
    meta = reply.json()["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 10**15
    assert meta["deletionTimestamp"] == "9999-12-31T23:59:59Z"


def test_the_largest_int64_grace_period_deletes(api: LiveAPI, bound_pod: str) -> None:
    reply = api.call("DELETE", f"{NS}/pods/{bound_pod}?gracePeriodSeconds={INT64_MAX}")
    assert reply.status == 200, reply.body[:300]
    reply = api.call("DELETE", f"{NS}/pods/{bound_pod}", {"gracePeriodSeconds": INT64_MAX})
    assert reply.status == 200, reply.body[:300]
    # what the namespace controller does: every pod of the namespace at once
    reply = api.call("DELETE", f"{NS}/pods")
    assert reply.status == 200, reply.body[:300]


def test_past_int64_is_a_bad_request(api: LiveAPI, bound_pod: str) -> None:
    for query in (f"gracePeriodSeconds={2**63}", "gracePeriodSeconds=1_0",
                  "gracePeriodSeconds=%201"):
        reply = api.call("DELETE", f"{NS}/pods/{bound_pod}?{query}")
        assert reply.status == 400, (query, reply.body[:300])
    reply = api.call("DELETE", f"{NS}/pods/{bound_pod}", {"gracePeriodSeconds": 2**63})
    assert reply.status == 400
    reply = api.call("POST", f"{NS}/pods", pod("p2", terminationGracePeriodSeconds=2**63))
    assert reply.status == 400, reply.body[:300]
    assert "cannot unmarshal number 9223372036854775808 into Go value of type int64" in (
        reply.json()["message"])


def test_taint_eviction_with_any_int64_toleration() -> None:
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    p = {"spec": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                                   "tolerationSeconds": INT64_MAX}]}}
    taint = {"key": "k", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}
    assert eviction_delay(p, [taint], at) == float(INT64_MAX)


def test_malformed_delete_options_are_bad_requests(api: LiveAPI, bound_pod: str) -> None:
    for body in ({"preconditions": "x"}, {"gracePeriodSeconds": "5"}, "x", [1]):
        reply = api.call("DELETE", f"{NS}/pods/{bound_pod}", body)
        assert reply.status == 400, (body, reply.body[:300])
        assert reply.json()["reason"] == "BadRequest"
    reply = api.call("POST", f"{NS}/pods/{bound_pod}/eviction",
                     {"apiVersion": "policy/v1", "kind": "Eviction",
                      "metadata": {"name": bound_pod}, "deleteOptions": "x"})
    assert reply.status == 400, reply.body[:300]
    assert reply.json()["message"] == ('Eviction in version "policy/v1" cannot be handled as '
                                       "a Eviction: deleteOptions: expected an object, got "
                                       "string")


def test_unknown_propagation_policy_is_invalid(api: LiveAPI, bound_pod: str) -> None:
    reply = api.call("DELETE", f"{NS}/pods/{bound_pod}", {"propagationPolicy": "Bogus"})
    assert reply.status == 422, reply.body[:300]
    assert reply.json()["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Bogus": supported values: "Foreground", "Background", "Orphan", "nil"')
    reply = api.call("DELETE", f"{NS}/pods/{bound_pod}?propagationPolicy=Bogus")
    assert reply.status == 422
    assert api.call("GET", f"{NS}/pods/{bound_pod}").json()["metadata"].get(
        "deletionTimestamp") is None


def test_binding_targets_are_typed(api: LiveAPI) -> None:
    assert api.call("POST", f"{NS}/pods", pod("unbound")).status == 201
    try:
        for target in (5, None):
            body: Any = {"apiVersion": "v1", "kind": "Binding",
                         "metadata": {"name": "unbound"}, "target": "node-a"}
            if target is not None:
                body["target"] = {"name": target}
            reply = api.call("POST", f"{NS}/pods/unbound/binding", body)
            assert reply.status == 400, reply.body[:300]
            assert reply.json()["message"].startswith(
                'Binding in version "v1" cannot be handled as a Binding: target')
        spec = api.call("GET", f"{NS}/pods/unbound").json()["spec"]
        assert "nodeName" not in spec
    finally:
        api.call("DELETE", f"{NS}/pods/unbound")


def test_int32_fields_keep_their_range(api: LiveAPI) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "big"}, "spec": {"leaseDurationSeconds": 10**12}}
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    reply = api.call("POST", path, lease)
    assert reply.status == 400, reply.body[:300]
    assert reply.json()["message"] == (
        'Lease in version "v1" cannot be handled as a Lease: spec.leaseDurationSeconds: '
        "cannot unmarshal number 1000000000000 into Go value of type int32")
    lease["spec"]["leaseDurationSeconds"] = 2**31 - 1
    assert api.call("POST", path, lease).status == 201
    api.call("DELETE", f"{path}/big")


def test_times_are_rfc3339(api: LiveAPI) -> None:
    token = api.node_token("node-t")
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-t"}}
    assert api.call("POST", "/api/v1/nodes", node, token=token).status == 201
    try:
        cond = {"type": "Ready", "status": "True", "lastHeartbeatTime": "yesterday",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}
        reply = api.call("PATCH", "/api/v1/nodes/node-t/status",
                         {"status": {"conditions": [cond]}}, token=token,
                         content_type="application/strategic-merge-patch+json")
        assert reply.status == 400, reply.body[:300]
        assert ('status.conditions[0].lastHeartbeatTime: parsing time "yesterday" as '
                '"2006-01-02T15:04:05Z07:00"') in reply.json()["message"]
        cond["lastHeartbeatTime"] = "2026-02-30T00:00:00Z"
        reply = api.call("PATCH", "/api/v1/nodes/node-t/status",
                         {"status": {"conditions": [cond]}}, token=token,
                         content_type="application/strategic-merge-patch+json")
        assert reply.status == 400, reply.body[:300]
        cond["lastHeartbeatTime"] = "2026-01-01T00:00:00.5+02:00"
        reply = api.call("PATCH", "/api/v1/nodes/node-t/status",
                         {"status": {"conditions": [cond]}}, token=token,
                         content_type="application/strategic-merge-patch+json")
        assert reply.status == 200, reply.body[:300]
    finally:
        api.call("DELETE", "/api/v1/nodes/node-t")
